"""The hour of play: warnings, the end, OFF/ON, longer games, pause."""

from __future__ import annotations

import itertools

from cityunit.core.gestures import Button
from cityunit.core.hour import HOUR_MS
from cityunit.core.rules import Rules
from conftest import Table

A, B = Button.AUCTION, Button.BUILD


def test_switching_on_starts_hour_1_and_shows_it() -> None:
    table = Table()
    assert [e.event for e in table.log if e.event not in ("led", "tone")] == ["power", "hour.start"]
    assert table.state() | {"screen": None} == {
        "power": "on", "mode": "idle", "hour": 1, "hour_elapsed_ms": 0, "paused": False,
        "led": 0.0, "tone_hz": 2093, "permit": None, "volume": "high", "screen": None,
    }  # fmt: skip
    table.wait(75_000)
    assert table.state()["screen"] == ["HOUR 1", "01:15"]


def test_warnings_come_more_and_more_often_then_the_hour_ends_at_exactly_60_00() -> None:
    table = Table()
    end = table.until("hour.end")
    assert end.t_ms == HOUR_MS and end.data == {"hour": 1}
    warnings = [e.t_ms for e in table.events("hour.warning")]
    assert warnings[0] == HOUR_MS - 5 * 60_000
    gaps = [b - a for a, b in itertools.pairwise(warnings)]
    assert all(b <= a for a, b in itertools.pairwise(gaps)), gaps
    assert gaps[0] >= 25_000 and gaps[-1] <= 2_000
    for w in table.events("hour.warning"):
        assert w.data["remaining_ms"] == HOUR_MS - w.t_ms
        assert any(e.t_ms == w.t_ms and e.data["hz"] for e in table.events("tone"))
    assert table.state()["mode"] == "hour_end"
    assert table.state()["hour_elapsed_ms"] == HOUR_MS


def test_the_end_is_distinct_steady_and_repeats_a_reminder_until_switched_off() -> None:
    table = Table()
    table.until("hour.end")
    assert table.state()["led"] == 1.0
    assert table.state()["screen"][:3] == [
        "GAME OVER",
        "Total your wealth:",
        "cash + district rents",
    ]
    tunes_before = len(table.events("tone"))
    table.wait(5 * 60_000)
    assert table.state()["led"] == 1.0
    reminders = [e for e in table.events("tone") if e.t_ms > HOUR_MS + 10_000 and e.data["hz"]]
    assert len(reminders) >= 4 * 2 and len(table.events("tone")) > tunes_before
    table.switch(False)
    assert table.state() | {"screen": None} == {
        "power": "off", "mode": "off", "hour": 0, "hour_elapsed_ms": 0, "paused": False,
        "led": 0.0, "tone_hz": None, "permit": None, "volume": "high", "screen": None,
    }  # fmt: skip
    assert table.state()["screen"][0] == "UNIT OFF", "the Pi runs on: said for a while"
    assert table.wait(8_000).state()["screen"] == []


def test_off_then_on_starts_hour_2() -> None:
    table = Table()
    table.wait(20 * 60_000).switch(False).wait(5_000).switch(True)
    assert [e.data["hour"] for e in table.events("hour.start")] == [1, 2]
    assert table.state()["hour"] == 2 and table.state()["hour_elapsed_ms"] == 0
    end = table.until("hour.end")
    assert end.t_ms == 20 * 60_000 + 5_000 + HOUR_MS


def test_an_auction_running_at_the_end_finishes_first() -> None:
    table = Table(Rules(auction_mode="fixed", auction_fixed_s=50))
    table.wait(HOUR_MS - 20_000).tap(A)
    table.until("hour.end")
    assert table.state()["mode"] == "auction"
    end = table.until("auction.end")
    assert end.data == {"stopped": False}
    table.wait(10)
    assert table.state()["mode"] == "hour_end"


def test_a_two_hour_game_signals_each_hour_and_ends_after_the_second() -> None:
    table = Table(Rules(length_hours=2))
    first = table.until("hour.end")
    assert first.t_ms == HOUR_MS and table.state()["mode"] == "idle"
    assert table.events("hour.warning") == [], "no end-of-game warnings before the last hour"
    assert [e.data["hour"] for e in table.events("hour.start")] == [1, 2]
    table.until("hour.warning")
    second = table.until("hour.end", limit_ms=2 * HOUR_MS)
    assert second.t_ms == 2 * HOUR_MS and table.state()["mode"] == "hour_end"
    assert table.state()["screen"][-1] == "2 h played"


def test_an_untimed_game_signals_hours_but_never_ends() -> None:
    table = Table(Rules(length_hours=0))
    table.wait(3 * HOUR_MS + 1)
    assert [e.t_ms for e in table.events("hour.end")] == [HOUR_MS, 2 * HOUR_MS, 3 * HOUR_MS]
    assert table.events("hour.warning") == [] and table.state()["mode"] == "idle"


def test_both_buttons_held_pause_and_resume_the_game_clock() -> None:
    table = Table()
    table.wait(60_000)
    table.unit.press(A, table.t)
    table.unit.press(B, table.t + 30)
    table.wait(1_600)
    assert table.state()["paused"] is True and "PAUSED" in table.state()["screen"]
    table.unit.release(A, table.t)
    table.unit.release(B, table.t)
    assert table.events("auction.start") == [] and table.events("permit") == []
    paused_at = table.state()["hour_elapsed_ms"]
    table.wait(10 * 60_000)
    assert table.state()["hour_elapsed_ms"] == paused_at
    table.tap(A).until("auction.end")  # auctions still work while paused
    assert table.state()["hour_elapsed_ms"] == paused_at
    table.unit.press(A, table.t)
    table.unit.press(B, table.t)
    table.wait(1_600)
    table.unit.release(A, table.t)
    table.unit.release(B, table.t)
    assert table.state()["paused"] is False
    pauses = table.events("pause")
    assert [e.data["paused"] for e in pauses] == [True, False]
    resumed = pauses[1].t_ms
    end = table.until("hour.end")
    assert end.t_ms == resumed + HOUR_MS - paused_at


def test_a_long_auction_press_after_the_end_starts_a_new_hour() -> None:
    table = Table()
    table.until("hour.end")
    table.tap(A).tap(B)
    assert table.state()["mode"] == "hour_end", "taps do nothing once the game is over"
    table.hold(A, 1_600)
    assert table.state()["mode"] == "idle" and table.state()["hour"] == 2


def test_no_pause_once_the_game_is_over_even_while_an_auction_finishes() -> None:
    """The last hour ended during an auction: both buttons held then must not restart
    the finished game's clock (nor end the hour a second time)."""
    table = Table(Rules(auction_mode="fixed", auction_fixed_s=50))
    table.wait(HOUR_MS - 20_000).tap(A)
    table.until("hour.end")
    for _ in range(2):  # pause, then resume: both ignored
        table.unit.press(A, table.t)
        table.unit.press(B, table.t)
        table.wait(1_600)
        table.unit.release(A, table.t)
        table.unit.release(B, table.t)
    table.until("auction.end")
    table.wait(60_000)
    assert len(table.events("hour.end")) == 1 and table.events("pause") == []
    assert table.state()["mode"] == "hour_end" and table.state()["paused"] is False
