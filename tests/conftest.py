"""Shared test helpers: a unit on the virtual clock, driven as players drive it."""

from __future__ import annotations

import os
import random
from collections.abc import Iterator

import pytest

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

from cityunit.events import Event
from cityunit.gestures import Button
from cityunit.rules import Rules
from cityunit.unit import Unit


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite tests/golden/*.png from the current renderer instead of comparing",
    )
    parser.addoption(
        "--target",
        default="sim",
        help="where tests/hil run: 'sim' (the headless simulator, virtual clock) or a serial "
        "port / pyserial URL of a real unit, e.g. /dev/ttyACM0 or serial:///dev/ttyACM0",
    )


class Table:
    """A unit, a virtual clock, and every event it produced."""

    def __init__(self, rules: Rules | None = None, seed: int = 1, on: bool = True) -> None:
        self.unit = Unit(rules or Rules(), random.Random(seed))
        self.t = 0
        self.log: list[Event] = []
        self.shutdowns = 0  # confirmed safe-shutdown gestures
        if on:
            self.switch(True)

    def _collect(self) -> None:
        effects = self.unit.drain()
        self.log += effects.events
        self.shutdowns += effects.shutdown

    def wait(self, ms: int) -> Table:
        self.t += ms
        self.unit.advance(self.t)
        self._collect()
        return self

    def until(self, event: str, limit_ms: int = 10 * 3_600_000) -> Event:
        """Advance deadline by deadline until `event` appears; return it."""
        start = len(self.log)
        end = self.t + limit_ms
        while self.t < end:
            nxt = self.unit.next_deadline()
            if nxt is None:
                break
            self.t = max(self.t, min(nxt, end))
            self.unit.advance(self.t)
            self._collect()
            for e in self.log[start:]:
                if e.event == event:
                    return e
        raise AssertionError(f"no {event} within {limit_ms} ms")

    def hold(self, button: Button, ms: int) -> Table:
        self.unit.press(button, self.t)
        self._collect()
        self.wait(ms)
        self.unit.release(button, self.t)
        self._collect()
        return self

    def tap(self, button: Button, ms: int = 60) -> Table:
        return self.hold(button, ms)

    def switch(self, on: bool) -> Table:
        self.unit.switch(on, self.t)
        self._collect()
        return self

    def edge(self, name: str, level: bool, at: int) -> Table:
        self.wait(at - self.t)
        self.unit.edge(name, level, self.t)
        self._collect()
        return self

    def events(self, name: str, since: int = 0) -> list[Event]:
        return [e for e in self.log if e.event == name and e.t_ms >= since]

    def names(self, since: int = 0) -> list[str]:
        return [e.event for e in self.log if e.t_ms >= since and e.event not in ("led", "tone")]

    def state(self) -> dict:
        return self.unit.state()


@pytest.fixture
def table() -> Iterator[Table]:
    yield Table()
