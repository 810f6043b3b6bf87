"""What the service's first stage (service/first_light.py) does at the next start, kept
beside the saved game: the lines of the switch and the LED (or the LED's PWM channel),
the display's bus, and for each position of the switch the screen the unit will show
then, as the writes that put it on a dark glass, and the LED's level. The screens are
those of a unit booted from the game as saved now, so the unit's own first frame differs
from first light's by no more than the time gone by.

Kept 5 s after a start (not on the way to READY), at each clean stop, and with the saves
of a game at most once a minute: the hour's clock moves on the screen, and the card is
not worn for it. Written whole (marshal: the stage reads it with builtins alone), and
only when it changed. It is for the config file as the unit read it: edited since, the
stage leaves it, and the unit keeps a new one. A unit that has not started yet gets one
from the installer and the image (`cityunit run --keepsake`: `unstarted`), for the
config as they ship it, so that the very first start lights at once too.
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import os
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gpiozero.pins.mock import MockFactory

from cityunit.config import load_raw
from cityunit.core.unit import Unit
from cityunit.display import glass
from cityunit.display.oled import LumaPanel
from cityunit.display.render import render
from cityunit.loop.store import Latest, save_atomic
from cityunit.parts.gpio import LED_HZ
from cityunit.service.first_light import FORMAT, NAME

if TYPE_CHECKING:
    from cityunit.board import Board
    from cityunit.config import Config
    from cityunit.core.saved import SavedGame

log = logging.getLogger(__name__)

FIRST_MS = 5_000  # the first keepsake of a run, this long after its start
LED_PERIOD = round(1e9 / LED_HZ)  # ns: the hardware-PWM LED's, as parts/pwm.py sets it
EVERY_MS = 60_000  # with a game's saves, at most this often


def gpio_chip(factory: Any) -> str | None:
    """The GPIO chip the unit's pins are on, as the first stage opens it: lgpio's (chip 4
    on a Pi 5 with an older kernel), else the first; None for gpiozero's mock pins."""
    if factory is None or isinstance(factory, MockFactory):
        return None
    return f"{glass.DEV}/gpiochip{getattr(factory, 'chip', 0)}"


class Keeper:
    """Keeps the keepsake for one board in `directory` (systemd's StateDirectory), for
    the config file `config` (its path as given, and the bytes the unit read good):
    worked out on the loop thread, where the game and the panel are, and written (two
    fsyncs) on a thread of its own, as the game is, the latest winning. `close()` (the
    board's, after the stop's keepsake) waits for the last write."""

    def __init__(self, board: Board, directory: Path, config: tuple[str, bytes]) -> None:
        self._board = board
        self._config = config
        self.path = directory / NAME
        for stale in directory.glob(f".{NAME}.*.tmp"):  # a killed writer's
            with contextlib.suppress(OSError):
                stale.unlink()
        self._due = board.clock.now_ms() + FIRST_MS
        self._kept: bytes | None = None  # as on the card: the same is not written again
        with contextlib.suppress(OSError):
            self._kept = self.path.read_bytes()
        self._trouble: str | None = None
        self._told = False  # the journal was told a keepsake was kept
        self._writer = Latest(self._write, "keepsake")
        # The first, due whether or not a game is saved then (with the switch OFF, none is).
        board.runtime.later(self._due, lambda at: self.saved(at, final=False))

    def saved(self, now: int, final: bool) -> None:
        """A save was handed over (the runtime's `on_save`; `final`, the stop's): the
        keepsake kept too, when due. Never raises: the unit plays on without it."""
        if not final and now < self._due:
            return
        self._due = now + EVERY_MS
        try:
            data = self.keepsake(now)
        except Exception:  # a bug, said with its traceback; the game is not its to stop
            log.exception("%s: not kept", self.path)
            return
        if data is not None and data != self._kept:
            self._kept = data
            self._writer.hand(data)
        elif data is not None:  # found as it is: kept all the same
            self._say_kept()

    def _write(self, data: bytes) -> None:
        """On the writer's thread: written, or why not, said when that changes."""
        try:
            save_atomic(self.path, data)
            trouble = None
        except OSError as e:
            trouble = f"{self.path}: not kept: {e.strerror or e}"
        if trouble != self._trouble:
            self._trouble = trouble
            log.warning("%s", trouble or f"{self.path}: kept again")
        elif trouble is None:
            self._say_kept()

    def _say_kept(self) -> None:
        """Once a run, in the journal: the next start lights at once."""
        if not self._told:
            self._told = True
            log.info("%s: kept, for the first light of the next start", self.path)

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until what was handed over is written (or has failed)."""
        return self._writer.flush(timeout)

    def close(self) -> None:
        """The last keepsake handed over is written, then the thread ends."""
        self._writer.close()

    def keepsake(self, now: int) -> bytes | None:
        """The keepsake as it stands now; None without a started OLED."""
        board = self._board
        display = board.display
        panel = None if display is None else display.panel
        if display is None or not display.up or not isinstance(panel, LumaPanel):
            return None
        parts = board.parts
        led = parts.channel("led")
        pwm = None
        if led is not None:  # its chip, by number and by the PWM block it is
            block = os.path.basename(os.path.realpath(led.path.parent / "device"))
            pwm = (str(led.path.parent), block, int(led.path.name[3:]), LED_PERIOD)
        chip = gpio_chip(parts.factory)
        return kept(board.config, self._config, panel, chip, board.unit.saved(), now, pwm)


def kept(
    config: Config, source: tuple[str, bytes], panel: LumaPanel, chip: str | None,
    saved: SavedGame | None, now: int, pwm: tuple[str, str, int, int] | None = None,
) -> bytes:  # fmt: skip
    """The keepsake for the config file `source` (its path as the service names it, and
    its bytes): for each position of the switch, what `panel` sends to show the first
    screen of a unit booted at `now` from `saved` (None: a new game), and the LED's
    level then; the switch's and the LED's lines on `chip`, or the LED's PWM channel
    (`pwm`: its chip's folder, the PWM block's device, its number, the LED's period in
    ns)."""
    frames, pages, level = {}, {}, {}
    for on in (False, True):
        unit = Unit(config.rules, random.Random(0), now=now)
        unit.boot(on, saved, now)
        snapshot = unit.snapshot()
        bus, init, writes, memory = panel.first_light(render(*snapshot.picture))
        frames[on], pages[on], level[on] = init + writes, memory, snapshot.light.level
    # A line request only for an LED on a plain GPIO line by the config: on the PWM
    # hardware its pin has another function, which a request would take from it.
    plain = not (config.hardware.led_pwm and config.hardware.pwm_hardware)
    return marshal.dumps({
        "format": FORMAT, "config": source, "chip": chip, "switch": config.pins.power,
        "led": config.pins.led if plain else None, "pwm": None if plain else pwm,
        "level": level, "bus": bus, "init": init, "frames": frames, "pages": pages,
    })  # fmt: skip


class _Nowhere:
    """An I2C or SPI bus that carries nothing: an unstarted keepsake is worked out on it
    (luma's drivers open their bus as they are made), never sent."""

    max_speed_hz = 0

    def open(self, port: int, device: int) -> None:
        """Nothing to open."""

    def close(self) -> None:
        """Nothing held."""


def header_chip(device_tree: Path = Path("/proc/device-tree")) -> str:
    """The GPIO chip of the header, as gpiozero's lgpio factory opens it on this machine:
    a Pi 5's is chip 4 where its kernel numbers it so, every other's chip 0 (a machine
    that is no Pi, an image's build, gets a Pi's usual chip 0). By the model's name, as
    gpiozero's board type 0x17 is: not a Compute Module 5, not a Pi 500."""
    from cityunit.header import raspberry_pi

    pi5 = (raspberry_pi(device_tree) or "").startswith("Raspberry Pi 5 ")
    return f"{glass.DEV}/gpiochip{4 if pi5 and Path(glass.DEV, 'gpiochip4').exists() else 0}"


def unstarted(path: Path) -> bytes | None:
    """The keepsake of a unit that has not started yet (a new game), for the config file
    at `path` as it is now; None for a config with no display, or one that keeps its game
    in a state.dir of its own that holds anything (a game may be there: its first screen
    is not a new game's). For the installer and the image, so that their first start
    lights at once too; no display is needed."""
    config, raw = load_raw(path)
    elsewhere = Path(config.system.state_dir) if config.system.state_dir else None
    if config.hardware.driver == "none" or (elsewhere and _holds_anything(elsewhere)):
        return None
    assert raw is not None  # a file was read
    pins = MockFactory()  # SPI's DC and RST, as luma's driver opens them: never driven
    with (
        contextlib.closing(pins),
        contextlib.closing(LumaPanel(config.hardware, bus=_Nowhere(), pins=pins)) as panel,
    ):
        return kept(config, (config.source, raw), panel, header_chip(), None, 0)


def _holds_anything(directory: Path) -> bool:
    """Whether `directory` has an entry, or cannot be looked into (then it may)."""
    try:
        return any(directory.iterdir())
    except FileNotFoundError:
        return False
    except OSError:
        return True
