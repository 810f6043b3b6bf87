"""Whatever the players do, in any order and at any speed, the unit stays sane."""

from __future__ import annotations

import json
import random

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from cityunit.gestures import Button
from cityunit.rules import HOUR_MS, Rules
from cityunit.unit import Mode, Unit

buttons = st.sampled_from(list(Button))
steps = st.one_of(
    st.integers(0, 100), st.integers(0, 3_000), st.integers(0, 70_000), st.integers(0, 1_200_000)
)


class UnitMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.unit = Unit(Rules(game_hours=1, permit_show_s=5), random.Random(0))
        self.t = 0
        self.seen = 0
        self.last_t = 0
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
        state = u.state()
        json.dumps(state)
        assert u.mode in Mode
        if u.mode is Mode.OFF:
            assert u.led_level == 0.0 and u.tone_hz is None
            assert state["screen"] == []
        if not u.power:
            assert u.mode in (Mode.OFF, Mode.SHUTDOWN)
        if u.permit is not None:
            assert u.mode is Mode.PERMIT
        assert 0 <= state["hour_elapsed_ms"] <= HOUR_MS
        assert 0.0 <= u.led_level <= 1.0
        for e in u.drain():
            assert e.t_ms >= self.last_t
            self.last_t = e.t_ms
            json.dumps(e.as_dict())
            if e.event == "auction.start":
                self.open_auctions += 1
            elif e.event == "auction.end":
                self.open_auctions -= 1
        assert self.open_auctions == (1 if u.mode is Mode.AUCTION else 0)
        nxt = u.next_deadline()
        assert nxt is None or nxt >= u.now


UnitMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=60, deadline=None)
TestUnitMachine = UnitMachine.TestCase
