"""What the service's first stage (service/first_light.py) does at the next start, kept
beside the saved game: the lines of the switch and the LED, the display's bus, and for
each position of the switch the screen the unit will show then, as the writes that put
it on a dark glass. The screens are those of a unit booted from the game as saved now, so
the unit's own first frame differs from first light's by no more than the time gone by.

Kept soon after a start (not on the way to READY), at each clean stop, and with the saves
of a game at most once a minute: the hour's clock moves on the screen, and the card is
not worn for it. Written whole (marshal: the stage reads it with builtins alone), and
only when it changed.
"""

from __future__ import annotations

import contextlib
import logging
import marshal
import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from luma.core.error import Error as LumaError

from cityunit.core.unit import Unit
from cityunit.display import glass
from cityunit.display.oled import LumaPanel
from cityunit.display.render import render
from cityunit.loop.store import save_atomic
from cityunit.parts.gpio import LED_HZ
from cityunit.service.first_light import FORMAT, NAME

if TYPE_CHECKING:
    from cityunit.board import Board

log = logging.getLogger(__name__)

FIRST_MS = 5_000  # the first keepsake of a run, this long after its start
EVERY_MS = 60_000  # with a game's saves, at most this often


def gpio_chip(factory: Any) -> str | None:
    """The GPIO chip the unit's pins are on, as the first stage opens it: lgpio's (chip 4
    on a Pi 5 with an older kernel), else the first; None for gpiozero's mock pins."""
    if factory is None or type(factory).__name__ == "MockFactory":
        return None
    return f"{glass.DEV}/gpiochip{getattr(factory, '_chip', 0)}"


class Keeper:
    """Writes the keepsake for one board, in `directory` (systemd's StateDirectory)."""

    def __init__(self, board: Board, directory: Path) -> None:
        self._board = board
        self.path = directory / NAME
        for stale in directory.glob(f".{NAME}.*.tmp"):  # a killed writer's
            with contextlib.suppress(OSError):
                stale.unlink()
        self._due = board.clock.now_ms() + FIRST_MS
        self._kept: bytes | None = None
        self._trouble: str | None = None
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
            if data is not None and data != self._kept:
                save_atomic(self.path, data)
                self._kept = data
            trouble = None
        except (OSError, LumaError) as e:
            trouble = f"{self.path}: not kept: {getattr(e, 'strerror', None) or e}"
        except Exception:  # a bug, said with its traceback; the game is not its to stop
            log.exception("%s: not kept", self.path)
            return
        if trouble != self._trouble:
            self._trouble = trouble
            log.warning("%s", trouble or f"{self.path}: kept again")

    def keepsake(self, now: int) -> bytes | None:
        """The keepsake as it stands now; None without a started OLED."""
        board = self._board
        display = board.display
        panel = None if display is None else display.panel
        if display is None or not display.up or not isinstance(panel, LumaPanel):
            return None
        saved = board.unit.saved()
        frames, pages = {}, {}
        for on in (False, True):  # what a unit booted from this game shows first
            unit = Unit(board.config.rules, random.Random(0), now=now)
            unit.boot(on, saved, now)
            bus, init, writes, memory = panel.first_light(render(*unit.snapshot().picture))
            frames[on], pages[on] = init + writes, memory
        pins, parts = board.config.pins, board.parts
        chip = gpio_chip(parts.factory)
        channel = parts.channel("led")
        led: tuple[str, str, int] | None = None
        if channel is not None:
            led = ("pwm", str(channel.path), 1_000_000_000 // LED_HZ)
        elif chip is not None:
            led = ("gpio", str(pins.led), 0)
        return marshal.dumps({
            "format": FORMAT, "chip": chip, "switch": pins.power, "led": led, "bus": bus,
            "init": init, "frames": frames, "pages": pages,
        })  # fmt: skip
