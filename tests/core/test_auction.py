"""Auctions and deals: random length, final phase, early stop, the sold signal."""

from __future__ import annotations

import itertools
import statistics

from cityunit.core.gestures import Button
from cityunit.core.rules import Rules
from conftest import Table

A = Button.AUCTION


def run_auction(seed: int, rules: Rules | None = None) -> Table:
    table = Table(rules, seed=seed)
    table.tap(A)
    table.until("auction.end", limit_ms=120_000)
    return table


def lengths(table: Table) -> tuple[int, int, int]:
    start = table.events("auction.start")[0].t_ms
    final = table.events("auction.final")[0].t_ms
    end = table.events("auction.end")[0].t_ms
    return start, final, end


def test_every_auction_lasts_13_to_50_s_and_the_spread_covers_the_range() -> None:
    durations = []
    for seed in range(1000):
        start, final, end = lengths(run_auction(seed))
        durations.append(end - start)
        assert 4_500 <= end - final <= 5_500, "final phase about 5 s before the end"
    assert min(durations) >= 13_000 and max(durations) <= 50_000
    assert min(durations) < 14_500 and max(durations) > 48_500
    # Uniform: each quarter of the range gets about a quarter of the auctions.
    quarters = [0] * 4
    for d in durations:
        quarters[min(3, (d - 13_000) * 4 // 37_000)] += 1
    assert all(200 <= q <= 300 for q in quarters), quarters
    assert abs(statistics.mean(durations) - 31_500) < 1_500


def rising_edges(table: Table, start: int, end: int) -> list[int]:
    """Times the LED turned on between start and end, press blips excluded."""
    out, level = [], 0.0
    for e in table.events("led"):
        if start <= e.t_ms < end and e.data["level"] >= 0.5 > level:
            out.append(e.t_ms)
        level = e.data["level"] if e.t_ms < end else level
    return out


def test_final_phase_flashes_at_least_twice_as_fast_and_beeps() -> None:
    table = run_auction(7)
    start, final, end = lengths(table)
    steady = rising_edges(table, start + 100, final)
    fast = rising_edges(table, final, end)
    steady_period = statistics.median(b - a for a, b in itertools.pairwise(steady))
    fast_period = statistics.median(b - a for a, b in itertools.pairwise(fast))
    assert fast_period <= steady_period / 2
    beeps = [e for e in table.events("tone") if final <= e.t_ms < end and e.data["hz"]]
    assert len(beeps) >= 5, "beeps through the final seconds"
    steady_beeps = [e for e in table.events("tone") if start + 500 <= e.t_ms < final]
    assert steady_beeps == [], "no beeps before the final phase"


def test_the_end_turns_the_light_off_and_plays_a_distinct_sold_tune() -> None:
    table = run_auction(3)
    end = table.events("auction.end")[0]
    assert end.data == {"stopped": False}
    table.wait(1_000)
    assert table.state()["led"] == 0.0
    sold = [e.data["hz"] for e in table.events("tone") if e.t_ms >= end.t_ms and e.data["hz"]]
    start = table.events("auction.start")[0].t_ms
    opening = [e.data["hz"] for e in table.events("tone") if start <= e.t_ms < start + 300]
    assert sold and sold != opening
    assert table.state()["screen"] == ["SOLD!"]
    table.wait(2_000)
    assert table.state()["screen"][0] == "HOUR 1"


def test_a_second_press_stops_it_early() -> None:
    table = Table()
    table.tap(A).wait(5_000).tap(A)
    end = table.events("auction.end")
    assert [e.data for e in end] == [{"stopped": True}]
    assert end[0].t_ms == 5_120  # decided on release of the second tap
    assert table.state()["mode"] == "idle"
    table.wait(60_000)
    assert len(table.events("auction.end")) == 1, "the cancelled deadline never fires"


def test_a_long_press_cancels_and_never_starts_an_auction() -> None:
    table = Table()
    table.hold(A, 2_000)
    assert table.events("auction.start") == []
    table.tap(A).wait(1_000).hold(A, 2_000)
    assert [e.data for e in table.events("auction.end")] == [{"stopped": True, "cancelled": True}]


def test_the_screen_never_shows_the_time_left_of_a_random_auction() -> None:
    table = Table()
    table.tap(A)
    screens = set()
    while not table.events("auction.end"):
        table.wait(250)
        if table.state()["mode"] == "auction":
            screens.add(tuple(table.state()["screen"]))
            assert not any(ch.isdigit() for line in table.state()["screen"] for ch in line)
            assert set(table.state()) == {
                "power", "mode", "hour", "hour_elapsed_ms", "paused",
                "led", "tone_hz", "permit", "volume", "screen",
            }  # fmt: skip
    assert len(screens) >= 2, "the auction screen moves"


def test_fixed_length_auctions_last_exactly_that_and_count_down() -> None:
    rules = Rules(auction_mode="fixed", auction_fixed_s=50)
    for seed in range(20):
        start, final, end = lengths(run_auction(seed, rules))
        assert end - start == 50_000 and end - final == 5_000
    table = Table(rules)
    table.tap(A).wait(10_000)
    assert table.state()["screen"][-1] == "40"


def test_configured_bounds_are_respected() -> None:
    rules = Rules(auction_min_s=20, auction_max_s=22)
    for seed in range(50):
        start, _, end = lengths(run_auction(seed, rules))
        assert 20_000 <= end - start <= 22_000


def test_a_secret_auction_stays_secret_when_the_setting_changes_during_it() -> None:
    table = Table()
    table.tap(A).wait(3_000)
    table.unit.set_setting("auction", "fixed50", table.t)
    table.wait(1_000)
    assert not any(ch.isdigit() for line in table.state()["screen"] for ch in line)
    table.until("auction.end", limit_ms=60_000)
    table.tap(A).wait(1_000)  # the next one is fixed, and shows its countdown
    assert table.state()["screen"][-1] == "49"
