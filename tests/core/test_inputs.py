"""Buttons as players press them: chatter, feedback on the edge, long presses, chords."""

from __future__ import annotations

from cityunit.core.debounce import Debouncer
from cityunit.core.gestures import STUCK_MS, Button
from conftest import Table

A, B = Button.AUCTION, Button.BUILD


def chatter(table: Table, name: str, level: bool, at: int, bounces: int = 5) -> None:
    """A contact that rings for a few ms before it settles at `level`."""
    for i in range(bounces):
        table.edge(name, level if i % 2 == 0 else not level, at + i * 3)
    if bounces % 2 == 0:
        table.edge(name, level, at + bounces * 3)


def test_a_burst_of_chatter_is_one_press() -> None:
    table = Table()
    chatter(table, "auction", True, 1_000)
    chatter(table, "auction", False, 1_100)
    table.wait(500)
    assert len(table.events("auction.start")) == 1


def test_presses_80_ms_apart_are_two_presses() -> None:
    table = Table()
    table.edge("build", True, 1_000).edge("build", False, 1_040)
    table.edge("build", True, 1_080).edge("build", False, 1_120)
    clicks = [e for e in table.events("tone", since=1_000) if e.data["hz"] == 4000]
    assert [e.t_ms for e in clicks] == [1_000, 1_080]


def test_a_release_hidden_in_chatter_is_not_lost() -> None:
    bouncer = Debouncer(25)
    assert bouncer.edge(True, 0) is True
    assert bouncer.edge(False, 10) is None  # chatter window
    assert bouncer.settle(25) is False  # the contact really is open


def test_debouncing_adds_no_latency() -> None:
    table = Table()
    table.edge("auction", True, 5_000)
    assert table.log[-1].t_ms == 5_000
    assert {e.event for e in table.log if e.t_ms == 5_000} >= {"led", "tone"}


def test_every_press_clicks_and_blips_the_moment_it_goes_down() -> None:
    table = Table()
    table.wait(1_000)
    for button in (A, B, A, B):  # idle, auction (light flashing), idle again, permit
        before = len(table.log)
        table.unit.press(button, table.t)
        table.wait(0)
        now = table.log[before:]
        assert [e.data["hz"] for e in now if e.event == "tone"] == [4000]
        assert len([e for e in now if e.event == "led"]) == 1
        table.wait(100)
        table.unit.release(button, table.t)
        table.wait(1_000)


def test_the_blip_shows_even_when_the_light_is_already_on() -> None:
    table = Table()
    table.until("hour.end")
    assert table.state()["led"] == 1.0
    table.unit.press(B, table.t)
    table.wait(0)
    assert table.state()["led"] == 0.0


def test_a_long_press_is_decided_when_the_threshold_passes_not_on_release() -> None:
    table = Table()
    table.tap(B).wait(1_000)
    table.unit.press(B, table.t)
    table.wait(1_600)
    assert table.state()["mode"] == "idle", "a long press on a permit puts it away at 1.5 s"
    table.unit.release(B, table.t)
    table.wait(10)
    assert len(table.events("permit")) == 1, "and its release draws nothing"


def test_a_stuck_button_is_reported_once_and_the_other_still_works() -> None:
    table = Table()
    table.unit.press(A, table.t)
    table.wait(60_000)
    faults = table.events("fault")
    assert [f.data for f in faults] == [{"part": "button.auction", "detail": "stuck down: ignored"}]
    assert faults[0].t_ms == STUCK_MS
    table.tap(B).wait(1_000)
    assert len(table.events("permit")) == 1
    table.unit.release(A, table.t)
    table.wait(10)
    assert table.events("fault")[-1].data["detail"] == "released"
    assert table.events("auction.start") == [], "a stuck button's release means nothing"


def test_both_held_five_seconds_while_off_asks_for_a_safe_shutdown() -> None:
    table = Table(on=False)
    table.unit.press(A, 0)
    table.unit.press(B, 10)
    table.wait(4_000)
    assert table.events("shutdown") == [] and table.state()["led"] == 0.0
    table.wait(1_100)
    assert [e.t_ms for e in table.events("shutdown")] == [5_010]
    assert table.state()["mode"] == "shutdown" and table.shutdowns == 0
    assert table.state()["tone_hz"] is not None, "the unit confirms it first"
    table.unit.release(A, table.t)
    table.unit.release(B, table.t)
    table.wait(3_000)
    assert table.state()["mode"] == "off" and table.state()["led"] == 0.0
    assert table.shutdowns == 1, "then asks for the halt, once"


def test_switching_on_during_the_confirmation_cancels_the_shutdown() -> None:
    table = Table(on=False)
    table.unit.press(A, 0)
    table.unit.press(B, 0)
    table.wait(6_000)
    assert table.state()["mode"] == "shutdown"
    table.switch(True).wait(1)
    table.unit.release(A, table.t)
    table.unit.release(B, table.t)
    table.wait(10_000).switch(False).wait(10_000)
    assert table.shutdowns == 0 and table.state()["mode"] == "off"


def test_presses_while_off_are_dark_and_silent() -> None:
    table = Table(on=False)
    table.tap(A).tap(B).hold(B, 2_000)
    assert table.log == []


def test_the_power_switch_is_debounced_too() -> None:
    table = Table(on=False)
    chatter(table, "power", True, 100)
    table.wait(100)
    assert [e.data for e in table.events("power")] == [{"on": True}]
    assert [e.data["hour"] for e in table.events("hour.start")] == [1]


def test_a_pause_held_across_switching_off_is_not_a_shutdown() -> None:
    """The 5 s hold for a safe shutdown counts from the switch going OFF."""
    table = Table().wait(1_000)
    table.unit.press(A, table.t)
    table.unit.press(B, table.t)
    table.wait(2_000)  # a pause ...
    table.switch(False).wait(3_000)  # ... and the switch OFF, both still held: 6 s in all
    assert table.events("shutdown") == []
    table.wait(2_100)  # 5 s held with the switch OFF
    assert [e.t_ms for e in table.events("shutdown")] == [8_000]
