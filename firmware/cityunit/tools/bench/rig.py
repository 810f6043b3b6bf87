"""The bench's instruments: pins that note when they change, a bus that counts the bytes the
Pi's I2C bus would carry, a panel that notes each frame, and the unit running on them."""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

from gpiozero.pins.mock import MockFactory, MockPWMPin
from PIL import Image

from cityunit.board import Board, configured_panel
from cityunit.config import Config
from cityunit.core.events import EventKind
from cityunit.display.oled import TRANSACTION, LumaPanel
from cityunit.loop.clock import Clock, MonotonicClock
from cityunit.parts.gpio import mock_pins

I2C_HZ = 400_000  # the installer's bus speed
BITS_PER_BYTE = 9  # eight bits and the acknowledge


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """The unit's events are not news in a measurement: its logger at WARNING meanwhile,
    then as it was (a caller's own level, a test's capture, is left as it found it).
    Usable as a decorator."""
    logger = logging.getLogger("cityunit")
    level = logger.level
    logger.setLevel(logging.WARNING)
    try:
        yield
    finally:
        logger.setLevel(level)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def ms(ns: float) -> float:
    return ns / 1e6


def bus_ms(wire_bytes: float, hz: int = I2C_HZ) -> float:
    """How long `wire_bytes` hold the I2C bus."""
    return wire_bytes * BITS_PER_BYTE / hz * 1000


class TimedPin(MockPWMPin):
    """A mock pin that notes, to the nanosecond, when its level or frequency changes."""

    def __init__(self, factory: Any, info: Any) -> None:
        super().__init__(factory, info)
        self.changes: list[tuple[int, Any]] = []
        self.changed = threading.Condition()

    def _note(self, what: Any) -> None:
        with self.changed:
            self.changes.append((time.perf_counter_ns(), what))
            self.changed.notify_all()

    def _change_state(self, value: Any) -> bool:
        changed = bool(super()._change_state(value))
        if changed and self._function == "output":
            self._note(value)
        return changed

    def _set_frequency(self, value: Any) -> None:
        super()._set_frequency(value)
        self._note(("hz", value))

    def wait_change(self, after: int, timeout: float = 2.0) -> int | None:
        """The time of the first change after `after` (perf_counter_ns)."""
        end = time.monotonic() + timeout
        with self.changed:
            while True:
                for t, _ in self.changes:
                    if t > after:
                        return t
                left = end - time.monotonic()
                if left <= 0 or not self.changed.wait(left):
                    return None


class WireCounter:
    """An smbus stand-in that counts the bytes the Pi's I2C bus would carry: the one
    counting rule of the bench, the tests' controller model and the virtual Pi's frames.

    luma writes data in 32-byte blocks; on the Pi (smbus2, i2c_rdwr) each data call is one
    transaction, so consecutive data blocks count as one: address and control byte once,
    then the payload. Each command call is a transaction of its own."""

    def __init__(self) -> None:
        self.wire_bytes = 0
        self._in_data = False

    def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
        data_block = register == 0x40
        self.wire_bytes += len(data) + (0 if data_block and self._in_data else TRANSACTION)
        self._in_data = data_block

    def close(self) -> None:
        """Nothing held."""


class MeasuredPanel:
    """A panel that notes, for each frame, when it was sent and its bytes on the bus."""

    def __init__(self, panel: LumaPanel, bus: WireCounter) -> None:
        self.panel, self.bus = panel, bus
        self.frames: list[tuple[int, int]] = []  # (perf_counter_ns after the send, bytes)
        self._arrived = threading.Condition()

    def start(self) -> None:
        self.panel.start()

    def readying(self, image: Image.Image) -> Iterator[None]:
        return self.panel.readying(image)

    def display(self, image: Image.Image) -> None:
        before = self.bus.wire_bytes
        self.panel.display(image)
        with self._arrived:
            self.frames.append((time.perf_counter_ns(), self.bus.wire_bytes - before))
            self._arrived.notify_all()

    def wait_frames(self, count: int, timeout: float = 2.0) -> bool:
        """Until `count` frames were sent (True) or `timeout` s passed: asleep, never
        polling, so that the waiting costs the CPU share under test nothing."""
        with self._arrived:
            return self._arrived.wait_for(lambda: len(self.frames) >= count, timeout)

    def blank(self) -> None:
        self.panel.blank()

    def close(self) -> None:
        self.panel.close()


def measured_board(
    config: Config, clock: Clock, factory: MockFactory
) -> tuple[Board, MeasuredPanel]:
    bus = WireCounter()
    luma = configured_panel(config, bus=bus)
    assert luma is not None, "the bench measures a display"
    panel = MeasuredPanel(luma, bus)
    return Board(config, clock, pin_factory=factory, panel=panel, seed=1), panel


class Rig:
    """The firmware on timed mock pins, a measured SSD1306 and a real clock, in a thread."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.factory = mock_pins(TimedPin)
        self.board, self.panel = measured_board(config, MonotonicClock(), self.factory)
        self.runtime = self.board.runtime
        self.events: list[tuple[int, EventKind]] = []
        self.runtime.on_event(lambda e: self.events.append((time.perf_counter_ns(), e.event)))
        self.thread = threading.Thread(target=self.runtime.run, daemon=True)
        self.thread.start()

    def pin(self, part: str) -> TimedPin:
        pin: TimedPin = self.factory.pin(getattr(self.config.pins, part))
        return pin

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """The loop stopped first: the board closes only once nothing else runs it."""
        self.runtime.stop()
        self.thread.join(5)
        if self.thread.is_alive():
            raise RuntimeError("the unit's loop did not stop within 5 s")
        self.board.close()
