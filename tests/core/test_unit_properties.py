"""Whatever the players do, in any order and at any speed, the unit stays sane, and the
core keeps its contract: modes hold only their own timers, time and revisions only move on."""

from __future__ import annotations

import json
import random
import weakref
from collections.abc import Callable, Iterator

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cityunit.core import modes
from cityunit.core.gestures import Button
from cityunit.core.hour import HOUR_MS
from cityunit.core.rules import Rules
from cityunit.core.timers import Timer
from cityunit.core.unit import Unit

buttons = st.sampled_from(list(Button))
steps = st.one_of(
    st.integers(0, 100), st.integers(0, 3_000), st.integers(0, 70_000), st.integers(0, 1_200_000)
)
MODE_NAMES = {cls.name for cls in modes.ALL}
OWNER: weakref.WeakKeyDictionary[Timer, modes.Mode] = weakref.WeakKeyDictionary()


@pytest.fixture(autouse=True)
def _owners(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Note which mode made each timer."""
    made = modes.Mode.timer

    def timer(self: modes.Mode, run: Callable[[], None]) -> Timer:
        OWNER[t := made(self, run)] = self
        return t

    monkeypatch.setattr(modes.Mode, "timer", timer)
    yield


class UnitMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.unit = Unit(Rules(length_hours=1, permit_show_s=5), random.Random(0))
        self.t = 0
        self.last_t = 0
        self.revision = -1
        self.open_auctions = 0

    @rule(button=buttons)
    def press(self, button: Button) -> None:
        self.unit.press(button, self.t)

    @rule(button=buttons)
    def release(self, button: Button) -> None:
        self.unit.release(button, self.t)

    @rule(name=st.sampled_from(["auction", "build", "power"]), level=st.booleans())
    def raw_edge(self, name: str, level: bool) -> None:
        self.unit.edge(name, level, self.t)

    @rule(on=st.booleans())
    def switch(self, on: bool) -> None:
        self.unit.switch(on, self.t)

    @rule(ms=steps)
    def wait(self, ms: int) -> None:
        self.t += ms
        self.unit.advance(self.t)

    @precondition(lambda self: self.unit.power)
    @rule()
    def tap_auction(self) -> None:
        self.unit.press(Button.AUCTION, self.t)
        self.unit.release(Button.AUCTION, self.t + 50)

    @invariant()
    def sane(self) -> None:
        u = self.unit
        snap = u.snapshot()
        state = snap.state()
        json.dumps(state)
        assert snap.mode in MODE_NAMES
        if snap.mode == "off":
            assert snap.light.level == 0.0 and snap.sound.hz is None
            # dark, or saying the Pi runs on; SWITCH OFF only on a unit never yet ON
            said = ["UNIT OFF"] if u.game.begun else ["SWITCH OFF"]
            assert state["screen"][:1] in ([], said), state["screen"]
        if not snap.power:
            assert snap.mode in ("off", "shutdown")
        if snap.permit is not None:
            assert snap.mode == "permit"
        assert 0 <= state["hour_elapsed_ms"] <= HOUR_MS
        assert 0.0 <= snap.light.level <= 1.0
        assert snap.revision >= self.revision
        self.revision = snap.revision
        for e in u.drain().events:
            assert e.t_ms >= self.last_t
            self.last_t = e.t_ms
            json.dumps(e.as_dict())
            if e.event == "auction.start":
                self.open_auctions += 1
            elif e.event == "auction.end":
                self.open_auctions -= 1
        assert self.open_auctions == (1 if snap.mode == "auction" else 0)
        nxt = u.next_deadline()
        assert nxt is None or nxt >= u.now

    @invariant()
    def only_the_current_mode_holds_timers(self) -> None:
        for timer, mode in list(OWNER.items()):
            if timer.pending and mode.unit is self.unit:
                assert mode is self.unit.mode, "a mode left a timer behind"


UnitMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
TestUnitMachine = UnitMachine.TestCase
