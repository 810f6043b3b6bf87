"""The composition root: the whole unit, built one way for the Pi's service, the simulator,
the bench and the tests.

What differs between them is injected: the clock (real or virtual), the pin factory
(lgpio on a Pi, mock pins elsewhere), the kernel's PWM channels (on a Pi), the
display's panel (by default the one the config names), the random seed, where the game
is kept (a directory, or a Saver the caller made: a simulator's). A Board is a context
manager; leaving it, or closing it, saves the game as it stands, blanks the screen,
leaves the LED off and the buzzer silent, and releases every pin. A board that fails
half-built closes what it had opened.
"""

from __future__ import annotations

import contextlib
import logging
import random
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self, TypeVar

from gpiozero.pins import Factory

from cityunit.config import SECTIONS, Config
from cityunit.console.links import Link
from cityunit.console.protocol import Controls
from cityunit.console.server import Served
from cityunit.core.screens import Screen
from cityunit.core.snapshot import Output
from cityunit.core.unit import Unit
from cityunit.display.panel import Display, Panel
from cityunit.loop import store
from cityunit.loop.clock import Clock
from cityunit.loop.inbox import Inbox, Input
from cityunit.loop.runtime import Runtime
from cityunit.parts.gpio import BuzzerOutput, LedOutput, Parts

if TYPE_CHECKING:
    import socket

    from PIL import Image

    from cityunit.display.glass import Lit
    from cityunit.display.oled import LumaPanel
    from cityunit.web.hands import Hands
    from cityunit.web.server import Page

log = logging.getLogger(__name__)


class Closes(Protocol):
    def close(self) -> None:
        """Release what it holds; once is enough, more is harmless."""


C = TypeVar("C", bound=Closes)


def configured_panel(
    config: Config, bus: Any = None, pins: Any = None, lit: Lit | None = None
) -> LumaPanel | None:
    """The panel the config names, on the Pi's port (or on `bus`, and SPI's DC and RST on
    the pin factory `pins`, for the bench), taking over what the service's first stage
    `lit`; None for no display."""
    if config.hardware.driver == "none":
        return None
    from cityunit.display.oled import LumaPanel  # luma's drivers, only where a panel is wired

    return LumaPanel(config.hardware, bus=bus, pins=pins, lit=lit)


def loose_parts(
    config: Config, factory: Factory | None, pwm_root: Path | None = None, inputs: bool = True
) -> Parts:
    """The unit's GPIO parts with no game behind them (the wiring test, the bench, `run
    --off`): the outputs start off (a hardware LED as found, until it is first set);
    closing them leaves them off."""
    return Parts(config, lambda name, level: None, factory, pwm_root, inputs=inputs)


def leave_off(config: Config, factory: Factory | None, pwm_root: Path | None) -> None:
    """What a killed unit could not do (SIGKILL, the watchdog): the kernel keeps a hardware
    PWM channel playing after its process is gone, and the pins and the glass keep their
    last state. Opening and closing the outputs sets them off (closing quiets them all)
    and gives them back, and the panel is started if it answers, and blanked."""
    with loose_parts(config, factory, pwm_root, inputs=False):
        panel = configured_panel(config)
        if panel is not None:
            Display(panel).close()


# Rules the unit built its parts from: the button timings live in the debouncers.
RESTART_RULES = {"buttons.debounce_ms", "buttons.long_press_ms"}


def _differences(a: Config, b: Config) -> list[tuple[str, str]]:
    """What differs between two configs: (section, the key's path in the file)."""
    return [
        (section, key.path)
        for section, kind in SECTIONS.items()
        for key in kind.KEYS
        if getattr(getattr(a, section), key.name) != getattr(getattr(b, section), key.name)
    ]


def _reread(path: Path | None) -> tuple[Config, bytes | None] | None:
    """The file read again, with its bytes (None: the defaults, no file), or None after a
    log line saying why the unit keeps its config."""
    from cityunit.config import ConfigError, load_raw

    try:
        return load_raw(path)
    except ConfigError as e:
        log.error("config not reloaded, the unit keeps the one it has: %s", " | ".join(e.lines))
    except Exception as e:  # a file the checks missed must not stop a game in play
        log.error("config not reloaded, the unit keeps the one it has: reading it failed "
                  "(%s: %s), a bug to report with the file", type(e).__name__, e)  # fmt: skip
    return None


class _Rereader:
    """The config file read again on a thread of its own, which the board joins on
    closing (a read under way is waited for: bounded, at most a second on a Pi Zero; the
    thread is a daemon only so that a board never closed cannot hold the process up).
    Reloads asked for while it reads come to one more read: a burst of SIGHUPs is neither
    a burst of threads nor of reads."""

    def __init__(
        self, path: Path | None, deliver: Callable[[Config], None], keep: Callable[[bytes], None]
    ) -> None:
        self._path, self._deliver, self._keep = path, deliver, keep
        self._cond = threading.Condition()
        self._asked = self._closing = False
        self._thread = threading.Thread(target=self._read, name="config-reload", daemon=True)
        self._thread.start()

    def ask(self) -> None:
        with self._cond:
            self._asked = True
            self._cond.notify()

    def _read(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._asked or self._closing)
                if self._closing:
                    return
                self._asked = False
            read = _reread(self._path)
            if read is not None:
                config, raw = read
                self._deliver(config)
                if raw is not None:
                    self._keep(raw)

    def close(self) -> None:
        with self._cond:
            self._closing = True
            self._cond.notify()
        self._thread.join()


class Board:
    def __init__(
        self,
        config: Config,
        clock: Clock,
        *,
        pin_factory: Factory | None = None,
        pwm_root: Path | None = None,
        panel: Panel | Literal["config"] | None = "config",
        seed: int | None = None,
        state_dir: Path | None = None,
        saver: store.Saver | None = None,
        inbox: Inbox | None = None,
        heartbeat: tuple[int, Callable[[], None]] | None = None,
        status: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self._built = config  # what the parts were made from, until a restart
        self.clock = clock
        with contextlib.ExitStack() as opened:
            self.inbox = inbox if inbox is not None else opened.enter_context(Inbox())
            if saver is None and state_dir is not None:  # virtual clock: each save in its turn
                saver = store.Saver(state_dir, threaded=not clock.virtual)
            saved = None if saver is None else opened.enter_context(saver).restore()
            self.parts = opened.enter_context(
                Parts(config, self._edge, pin_factory, pwm_root, on_fault=self._fault)
            )
            if panel == "config":
                panel = configured_panel(config)
            self.display = (
                None
                if panel is None
                else Display(panel, partial(self._fault, "display"), clock.now_ms, self._ahead)
            )
            if self.display is not None:
                opened.callback(self.display.close)
            self.unit = Unit(config.rules, random.Random(seed), now=clock.now_ms())
            # The outputs, light and sound first: the slow display after them.
            outputs: list[Output] = [LedOutput(self.parts), BuzzerOutput(self.parts)]
            outputs += [] if self.display is None else [self.display]
            self.runtime = Runtime(
                self.unit, clock, self.inbox, outputs, self.display, saver,
                config.system.shutdown_command, heartbeat, status,
            )  # fmt: skip
            # The switch may already be ON at start, and a game may be waiting to go on.
            self.unit.boot(self.parts.is_pressed("power"), saved, clock.now_ms())
            self._opened = opened.pop_all()

    def _ahead(self, now: int) -> list[Screen]:
        """The screens the mode shown may lead to next, for a display that readies them."""
        return self.unit.mode.ahead(now)

    def attach(self, front_end: C) -> C:
        """`front_end` (a console, a display the simulator adds, the page) closes with
        the board: after the game is saved and its last events are told, before the parts
        it uses. Returned, for `x = board.attach(X(...))`."""
        self._opened.callback(front_end.close)
        return front_end

    def serve(
        self,
        link: Link,
        controls: Controls | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> Served:
        """The console protocol on `link`, with `controls`' commands too (a simulator's)."""
        return self.attach(Served(self.runtime, link, controls, on_end))

    def serve_page(
        self,
        sock: socket.socket,
        address: str | None = None,
        hands: Hands | None = None,
        frames: Callable[[], Image.Image | None] | None = None,
    ) -> Page:
        """The players' page on `sock` (listening), reached by phones at `address` (None:
        this machine's LAN address, followed); `hands` and `frames` for a phone that is
        the unit (the simulator's)."""
        from cityunit.web.server import Page

        return self.attach(Page(self.runtime, sock, address, hands, frames))

    def serve_web(self) -> Page | None:
        """The page on the configured port, if `web.enabled`; the unit plays without it
        when the page cannot start (the port taken, no network: the journal says why)."""
        system = self.config.system
        if not system.web_enabled:
            return None
        from cityunit.web.http import listening

        try:
            page = self.serve_page(listening(system.web_port))
        except Exception as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else e
            log.error("the players' page: cannot serve on port %d: %s", system.web_port, why)
            return None
        log.info("the players' page is at %s (the menu's ON PHONES shows its QR code)",
                 page.link.address)  # fmt: skip
        return page

    def serve_console(self) -> None:
        """The console on the configured serial port, if any; the unit plays without it
        when the port cannot be opened (the journal says why)."""
        system = self.config.system
        if not system.console_port:
            return
        from cityunit.console.links import open_serial, said_once

        try:
            link = open_serial(system.console_port, system.console_baudrate)
        except Exception as e:
            log.error("console: cannot open %s: %s", system.console_port, said_once(e))
            return
        log.info("console on %s", system.console_port)
        self.serve(link)

    def reread_on_reload(
        self, path: Path | None, keep: Callable[[bytes], None] = lambda raw: None
    ) -> None:
        """Each Reload (SIGHUP: `systemctl reload cityunit`) reads `path` again (None: the
        system's file) off the loop, since a 64 KiB file takes a Pi Zero a second and the
        LED and the clock must not wait; what it gives is applied on the loop, in its turn,
        and its bytes handed to `keep` (the service's last good copy). A bad file changes
        nothing, and says why."""
        rereader = _Rereader(
            path, lambda config: self.runtime.call(partial(self.apply_config, config)), keep
        )
        self._opened.callback(rereader.close)
        self.runtime.on_reload = rereader.ask

    def apply_config(self, config: Config) -> list[str]:
        """A config re-read while running (loop thread): the game's rules and settings
        apply at once; what the parts were built from cannot change under them, and the
        journal says which keys wait for a restart (returned too)."""
        waiting = [
            path
            for section, path in _differences(self._built, config)
            if section != "rules" or path in RESTART_RULES
        ]
        self.unit.reconfigure(config.rules, self.clock.now_ms())
        self.config = self.config.replace(rules=config.rules, source=config.source)
        log.info("config reloaded from %s", config.source)
        if waiting:
            log.warning(
                "%s apply at the next restart (systemctl restart cityunit)", ", ".join(waiting)
            )
        return waiting

    def _edge(self, name: str, level: bool) -> None:
        """A GPIO callback's thread: stamped now, handled by the loop at that time."""

        def act(t: int, present: int) -> None:
            self.unit.edge(name, level, t, present)

        self.inbox.put(Input(self.clock.now_ms(), act))

    def _fault(self, part: str, detail: str) -> None:
        self.runtime.fault(part, detail)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self.parts.closed

    def close(self) -> None:
        """Once the loop has returned (or was never run). Idempotent."""
        if self.closed:
            return
        try:
            self.runtime.finish()
        finally:  # whatever the last step did, the outputs go quiet and the pins free
            self._opened.close()
            log.info("stopped: LED off, buzzer silent, screen blank")
