"""Shared test helpers: the core on a virtual clock driven as players drive it (Table), and
the whole unit on mock pins (Rig)."""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gpiozero.pins.mock import MockFactory

os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")

from cityunit.board import Board
from cityunit.config import Config
from cityunit.core.events import Event
from cityunit.core.gestures import Button
from cityunit.core.rules import Rules
from cityunit.core.unit import Unit
from cityunit.display.oled import LumaPanel
from cityunit.loop.clock import VirtualClock
from fakes import FlakyBus, mock_factory


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite tests/golden/*.png from the current renderer instead of comparing",
    )


# ----- the tiers: the mock suite first, then the virtual Pi, then the card ---------------

TESTS = Path(__file__).resolve().parent
# A folder of tests under QEMU, its tests in one module (under `--dist loadfile` a tier is
# one worker's story, in order, beside the other's): its place in a run, its markers, each
# test's timeout (s):
# a boot, an install and a reboot under emulation; the card's first test may build it
# (Debian's packages under qemu-user: most of an hour on a machine that never built it).
TIERS = {"vm": (1, ("vm",), 1_500), "image": (2, ("vm", "image"), 4_800)}
TALLY = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    # bootstrap.py's tally is this run's own: not a run this one starts (tests/hil's)
    config.stash[TALLY] = os.environ.pop("CITYUNIT_TALLY", "")
    for line in (
        "vm: runs under QEMU (tests/vm, tests/image); deselect with -m 'not vm'",
        "image: boots the SD-card image under QEMU (tests/image); also marked vm",
        "trixie: runs on the virtual Pi's Debian trixie guest too, after its bookworm one",
        "slow: minutes of a tool's work on a machine that never ran it (OpenSCAD, KiCad,"
        " a wheel built and installed); the quick loop: -m 'not vm and not slow'",
    ):
        config.addinivalue_line("markers", line)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The run's counts, for bootstrap.py's one closing line over its two runs (written
    by the run that reports them: not by an xdist worker)."""
    tally = terminalreporter.config.stash.get(TALLY, "")
    if tally and not os.environ.get("PYTEST_XDIST_WORKER"):
        with open(tally, "w") as out:
            for what in ("passed", "failed", "skipped", "error"):
                out.write(f"{what} {len(terminalreporter.stats.get(what, ()))}\n")


def tier(item: pytest.Item) -> str | None:
    """The QEMU tier an item is in (its folder under tests/), or None: the mock suite."""
    path = Path(str(item.fspath))
    folder = path.relative_to(TESTS).parts[0] if path.is_relative_to(TESTS) else None
    return folder if folder in TIERS else None


def pytest_itemcollected(item: pytest.Item) -> None:
    """A QEMU tier's markers (which -m selects by) and timeout, on each of its tests."""
    if (name := tier(item)) is not None:
        _, markers, timeout_s = TIERS[name]
        for marker in markers:
            item.add_marker(marker)
        item.add_marker(pytest.mark.timeout(timeout_s))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The fast tier first, so that its failures are told within its own minutes; each
    tier's tests in the order pytest gave them (the QEMU tiers run as a story)."""
    items.sort(key=lambda item: TIERS[name][0] if (name := tier(item)) else 0)


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


# ----- the whole unit on mock pins ------------------------------------------------------

AUCTION, BUILD, POWER, LED, BUZZER = 17, 27, 22, 13, 18


class Rig:
    """A unit on fresh mock pins, a virtual clock and an SSD1306 on a bus that can fail."""

    def __init__(
        self,
        config: Config | None = None,
        switch_on: bool = False,
        state_dir: Path | None = None,
        clock: VirtualClock | None = None,
        bus: FlakyBus | None = None,
    ) -> None:
        self.factory: MockFactory = mock_factory()
        self.factory.pin(POWER).on = switch_on  # a switch left ON before the start
        self.config = config or Config()
        self.clock = clock or VirtualClock()
        self.bus = bus or FlakyBus()
        self.board = Board(
            self.config, self.clock, pin_factory=self.factory,
            panel=LumaPanel(self.config.hardware, bus=self.bus), seed=5, state_dir=state_dir,
        )  # fmt: skip
        self.runtime = self.board.runtime
        self.unit = self.board.unit  # read on this thread only, while no loop runs
        self.events: list = []
        self.runtime.on_event(self.events.append)
        self.on_at_start = self.unit.power
        self.runtime.pump()

    def pin(self, number: int):
        return self.factory.pin(number)

    def at(self, t: int) -> Rig:
        self.clock.set_ms(t)
        self.runtime.pump()
        return self

    def press(self, number: int, ms: int = 80) -> Rig:
        self.pin(number).drive_low()
        self.runtime.pump()
        self.at(self.clock.now_ms() + ms)
        self.pin(number).drive_high()
        self.runtime.pump()
        return self

    def names(self) -> list[str]:
        return [e.event for e in self.events if e.event not in ("led", "tone")]

    def crash(self) -> None:
        """The process dies: no clean stop; only what the saver already wrote survives."""
        saver = self.runtime.saver
        assert saver is not None
        saver.close()
        self.runtime.saver = None
        self.board.close()


@pytest.fixture
def make_rig() -> Iterator[Callable[..., Rig]]:
    """Rigs for one test, each closed at its end (whatever the asserts did)."""
    rigs: list[Rig] = []

    def make(*args, **kwargs) -> Rig:
        rigs.append(Rig(*args, **kwargs))
        return rigs[-1]

    yield make
    for rig in rigs:
        rig.board.close()


@pytest.fixture
def rig(make_rig) -> Rig:
    return make_rig()


def chi_square(counts: Counter[Any], odds: dict[Any, int]) -> float:
    """Pearson's statistic of `counts` against the weights `odds` (the permit draws)."""
    n, total = sum(counts.values()), sum(odds.values())
    return sum((counts[v] - n * w / total) ** 2 / (n * w / total) for v, w in odds.items())
