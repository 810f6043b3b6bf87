"""Build permits: odds, the draw animation, the station, how long a permit shows."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from cityunit.core.gestures import Button
from cityunit.core.permit import Permit, draw
from cityunit.core.rules import DEFAULT_ODDS, Rules
from conftest import Table, chi_square

B = Button.BUILD
ONE, TWO, THREE, STATION = Permit

# Chi-square critical value for 3 degrees of freedom at p = 0.001.
CHI2_CRITICAL = 16.27


def test_10000_draws_match_the_default_odds() -> None:
    rng = random.Random(2009)
    counts = Counter(draw(rng, DEFAULT_ODDS) for _ in range(10_000))
    assert chi_square(counts, DEFAULT_ODDS) < CHI2_CRITICAL


def test_the_chi_square_check_rejects_wrong_odds() -> None:
    rng = random.Random(2009)
    uniform = {ONE: 25, TWO: 25, THREE: 25, STATION: 25}
    counts = Counter(draw(rng, uniform) for _ in range(10_000))
    assert chi_square(counts, DEFAULT_ODDS) > CHI2_CRITICAL


def test_draws_through_the_button_follow_a_configured_table() -> None:
    odds = {ONE: 0, TWO: 0, THREE: 1, STATION: 3}
    table = Table(Rules(odds=odds, permit_show_s=1))
    for _ in range(400):
        table.tap(B).wait(900)
    counts = Counter(Permit(e.data["value"]) for e in table.events("permit"))
    assert set(counts) == {THREE, STATION} and sum(counts.values()) == 400
    assert chi_square(counts, {THREE: 1, STATION: 3}) < 10.83  # 1 degree of freedom


def test_a_draw_animates_then_shows_the_permit_with_its_own_sound() -> None:
    table = Table(Rules(odds={ONE: 0, TWO: 1, THREE: 0, STATION: 0}))
    table.tap(B)
    assert table.state()["mode"] == "permit" and table.state()["permit"] is None
    faces = set()
    for _ in range(7):
        table.wait(100)
        faces.add(table.state()["screen"][1])
        assert table.state()["screen"][-1] == "..."
    assert len(faces) >= 3, "the faces spin"
    permit = table.until("permit")
    assert permit.data == {"value": 2}
    assert table.state()["screen"] == ["PERMIT", "2", "buildings"]
    table.wait(1_000)
    beeps = [e for e in table.events("tone", since=permit.t_ms) if e.data["hz"]]
    assert len(beeps) == 2, "two beeps for two buildings"


def test_two_equal_permits_in_a_row_are_two_visible_events() -> None:
    table = Table(Rules(odds={ONE: 1, TWO: 0, THREE: 0, STATION: 0}))
    table.tap(B).wait(1_000)
    first = table.t
    table.tap(B)
    assert table.state()["screen"][-1] == "...", "the animation runs again"
    table.wait(1_000)
    assert [e.data["value"] for e in table.events("permit")] == [1, 1]
    assert table.events("permit")[1].t_ms > first


def test_the_station_flashes_on_screen_and_on_the_led() -> None:
    table = Table(Rules(odds={ONE: 0, TWO: 0, THREE: 0, STATION: 1}))
    table.tap(B)
    table.until("permit")
    shown = set()
    for _ in range(10):
        table.wait(200)
        shown.add(table.state()["screen"][1])
    assert shown == {"STATION", ""}
    levels = {e.data["level"] for e in table.events("led", since=table.t - 2_000)}
    assert levels == {0.0, 1.0}


def test_a_permit_shows_for_its_time_then_the_hour_comes_back() -> None:
    table = Table(Rules(permit_show_s=20))
    table.tap(B)
    permit = table.until("permit")
    table.wait(19_000)
    assert table.state()["permit"] == permit.data["value"]
    table.wait(2_000)
    assert table.state()["mode"] == "idle" and table.state()["permit"] is None


@pytest.mark.parametrize("when", ["auction", "drawing"])
def test_build_is_ignored_during_an_auction_and_during_a_draw(when: str) -> None:
    table = Table()
    table.tap(Button.AUCTION if when == "auction" else B).wait(100)
    table.tap(B)
    table.wait(2_000)
    expected = 0 if when == "auction" else 1
    assert len(table.events("permit")) == expected


def test_auction_press_on_a_permit_starts_an_auction() -> None:
    table = Table()
    table.tap(B).wait(1_000).tap(Button.AUCTION)
    assert table.state()["mode"] == "auction" and table.state()["permit"] is None


def test_history_keeps_the_last_ten_permits_newest_first() -> None:
    table = Table()
    for _ in range(12):
        table.tap(B).wait(1_000)
    values = [e.data["value"] for e in table.events("permit")]
    assert [p.value for p in table.unit.game.history] == values[::-1][:10]
