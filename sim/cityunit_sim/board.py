"""The simulated board: the real firmware on gpiozero mock pins and a luma dummy display.

Everything the simulator shows or presses goes through the same parts as on a Pi:
MockFactory pins (PWM-capable, so the LED level and the buzzer frequency are real pin
states) and a luma `dummy` device holding the exact image an OLED would get.
"""

from __future__ import annotations

import contextlib
import errno
import os
from functools import partial
from pathlib import Path

from gpiozero.pins.mock import MockPWMPin
from PIL import Image

from cityunit.board import Board
from cityunit.config import Config
from cityunit.console.controls import SimulatorControls
from cityunit.core.events import Event
from cityunit.core.gestures import Button
from cityunit.core.modes.settings import Settings
from cityunit.display.mirror import Mirror
from cityunit.display.panel import Display
from cityunit.loop import store
from cityunit.loop.clock import Clock
from cityunit.loop.inbox import Inbox
from cityunit.parts.gpio import mock_pins
from cityunit_sim.clock import HandClock


def event_line(event: Event) -> str:
    """An event for the simulator's log pane, in words: '   12.3 s  auction.end not
    stopped', '    0.0 s  power on', '    5.1 s  tone 2093 Hz'."""
    words = " ".join(_said(key, value) for key, value in event.data.items())
    return f"{event.t_ms / 1000:9.1f} s  {event.event} {words}".rstrip()


PLAIN = {"value", "level", "hour", "part", "name", "count"}  # said by their value alone


def _said(key: str, value: object) -> str:
    """One field as a person says it: on/off for the switch, a flag by its name (or "not"
    it), times in seconds, a tone in Hz, a detail in brackets, the rest by value."""
    name = key.replace("_", " ")
    if key == "on" and isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, bool):
        return name if value else f"not {name}"
    if key == "hz":
        return "silent" if value is None else f"{value} Hz"
    if key.endswith("_ms") and isinstance(value, int):
        return f"{value / 1000:g} s {'left' if key == 'remaining_ms' else name[:-3]}"
    if key == "detail":
        return f"({value})"
    return str(value) if key in PLAIN else f"{name} {value}"


class Breakage:
    """A part as a tester breaks it (FAULT): failing every use until mended, or its next
    n uses, with the OSError the real part gives."""

    def __init__(self, error: int) -> None:
        self.error = error
        self.broken = False
        self.failing = 0  # uses still to fail

    def mend(self) -> None:
        self.broken, self.failing = False, 0

    def use(self) -> None:
        if self.broken or self.failing:
            self.failing = max(0, self.failing - 1)
            raise OSError(self.error, os.strerror(self.error))


class Glass:
    """The simulator's panel: its bus breaks as a real one fails (EREMOTEIO, errno 121);
    else the mirror's (or nothing, headless)."""

    def __init__(self, mirror: Mirror | None) -> None:
        self.mirror = mirror
        self.bus = Breakage(errno.EREMOTEIO)

    def start(self) -> None:
        self.bus.use()

    def display(self, image: Image.Image) -> None:
        self.bus.use()
        if self.mirror is not None:
            self.mirror.display(image)

    def blank(self) -> None:
        if self.mirror is not None:
            self.mirror.blank()

    def close(self) -> None:
        """Nothing held."""


def _count(word: str) -> bool:
    return word.isascii() and word.isdigit() and int(word) <= 10**6


class SwitchPin(MockPWMPin):  # type: ignore[misc]  # gpiozero has no types
    """A contact that can be closed before the unit opens its pin (gpiozero's mock pins
    follow their pull-up when opened): the switch left ON when the simulator last stopped."""

    on = False  # held ON before the unit opens the pin

    def _set_pull(self, value: str) -> None:
        super()._set_pull(value)
        if self.on:
            self.drive_low()


class SimBoard(Board):
    def __init__(
        self,
        config: Config,
        clock: Clock,
        seed: int,
        state_dir: Path | None = None,
        inbox: Inbox | None = None,
        observed: bool = True,
    ) -> None:
        """`observed`: a window or a terminal shows the OLED. Headless, nobody looks, so
        no frame is rendered at all (STATE's screen is text, from the core). `state_dir`:
        where the game is kept; None, in memory, as long as the process lives (a FAULT
        POWER CUT resumes from it)."""
        self.seed = seed
        self.factory = mock_pins()
        saved = None
        if state_dir is not None:  # a peek: the Board says what is wrong with it, once
            with contextlib.suppress(store.Unusable):
                saved = store.read(state_dir / store.FILENAME)
        if saved is not None and saved.power:  # as a Pi whose switch stayed ON
            switch = self.factory.pin(config.pins.power, pin_class=SwitchPin)
            switch.on = True
        self.oled = Mirror() if observed else None
        self.glass = Glass(self.oled)
        self.card = Breakage(errno.ENOSPC)  # where the game is saved, as a full card fails
        saver = store.Saver(state_dir, threaded=not clock.virtual, check=self.card.use)
        super().__init__(
            config, clock, pin_factory=self.factory, panel=self.glass if observed else None,
            seed=seed, saver=saver, inbox=inbox,
        )  # fmt: skip
        self.controls = SimulatorControls(self)  # SEED, EDGE, SCREEN, FAULT, RESET
        self.hands = clock if isinstance(clock, HandClock) else None
        if self.hands is not None:
            self.runtime.on_step(self._menu_in_real_time)

    @property
    def oled_image(self) -> Image.Image | None:
        """What the OLED shows (None: nothing yet, or nobody observes it)."""
        return None if self.oled is None else self.oled.image

    def pin(self, part: str) -> MockPWMPin:
        """The mock pin of a part: 'auction', 'build', 'power', 'led' or 'buzzer'."""
        pin: MockPWMPin = self.factory.pin(getattr(self.config.pins, part))
        return pin

    def press(self, part: str, down: bool) -> None:
        """A hand pressing or letting go of a button: on a HandClock, held in real time."""
        if self.hands is not None:
            self.hands.handled(part, down)
        pin = self.pin(part)
        pin.drive_low() if down else pin.drive_high()  # buttons pull the pin low

    def switch(self, on: bool) -> None:
        """A hand moving the switch: its contact closes to GND when ON."""
        pin = self.pin("power")
        pin.drive_low() if on else pin.drive_high()

    def inject(self, words: list[str]) -> None:
        """FAULT's words (loop thread): DISPLAY GONE|BACK, BUS <n> (its next n writes
        fail), SAVE FAIL|OK|<n> (every save, or the next n), POWER CUT. From the first
        display fault on, every frame is drawn at its time, also inside an ADVANCE, and
        headless, the glass gets a Display of its own, as the Pi's would."""
        bus = self.glass.bus
        match words:
            case ["display", "gone"]:
                bus.broken = True
            case ["display", "back"]:
                bus.mend()
            case ["bus", count] if _count(count):
                bus.failing = int(count)
            case ["save", "fail"]:
                self.card.broken = True
            case ["save", "ok"]:
                self.card.mend()
            case ["save", count] if _count(count):
                self.card.failing = int(count)
            case ["power", "cut"]:
                self.power_cut()
            case _:
                raise ValueError(
                    "expected DISPLAY GONE|BACK, BUS <writes>, SAVE FAIL|OK|<saves> or POWER CUT"
                )
        if bus.broken or bus.failing:  # each frame counts now, as a Pi's write does
            if self.runtime.display is None:  # headless: a display of its own, an output
                fault = partial(self.runtime.fault, "display")
                display = Display(self.glass, fault, self.clock.now_ms, self._ahead)
                self.display = self.runtime.display = self.attach(display)
                self.runtime.outputs.append(display)
            self.runtime.display.each_frame = True

    def mend(self) -> None:
        """Every part FAULT broke works again (RESET: a test after another starts whole),
        and frames are drawn where commands end again."""
        self.glass.bus.mend()
        self.card.mend()
        if self.runtime.display is not None:
            self.runtime.display.each_frame = False

    def power_cut(self) -> None:
        """The power lost and back (loop thread): all that was not saved is gone, and the
        unit starts again from what the card holds (a save on its way may or may not have
        landed, as on a Pi), the switch where it stood, the parts as they are. The
        simulator's own clock goes on."""
        runtime, unit = self.runtime, self.unit
        runtime.deliver()  # what happened before the cut is told first
        assert runtime.saver is not None
        switch_on, saved = unit.power, runtime.saver.restore()
        unit.reset()
        unit.boot(switch_on, saved, unit.now)
        runtime.restarted()
        runtime.step()

    def _menu_in_real_time(self) -> None:
        """(The loop's thread, after each step, so its next sleep is at the new rate.)"""
        assert self.hands is not None
        self.hands.handled("menu", isinstance(self.unit.mode, Settings))


class SimHands:
    """A phone's hands on the simulator's unit: its buttons and its switch moved through
    their pins, as the window's are (web/hands.py)."""

    switch_on_page = True

    def __init__(self, board: SimBoard) -> None:
        self._board = board

    def press(self, button: Button, down: bool) -> None:
        self._board.press(button.value, down)

    def switch(self, on: bool) -> None:
        self._board.switch(on)
