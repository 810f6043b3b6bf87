"""Settings made on the unit (two buttons and the OLED) or with SET: each changes what
the players get, and each survives a restart."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from cityunit.config import Config
from cityunit.console.protocol import Session
from cityunit.core import settings
from cityunit.core.gestures import Button
from cityunit.core.hour import HOUR_MS
from cityunit.core.permit import Permit
from cityunit.core.rules import ODDS_PRESETS, Rules
from cityunit.loop.clock import VirtualClock
from cityunit_sim.board import SimBoard
from conftest import BUZZER, Table, chi_square

A, B = Button.AUCTION, Button.BUILD


# ----- the menu, by the buttons ------------------------------------------------------------


def test_a_long_build_press_opens_the_menu_and_the_buttons_work_it() -> None:
    table = Table()
    table.hold(B, 1_600)
    assert table.state()["mode"] == "settings"
    assert table.state()["screen"][:3] == ["SETTINGS 1/8", "GAME LENGTH", "1 hour"]
    table.tap(A)  # change: 1 hour -> 2 hours
    assert table.state()["screen"][2] == "2 hours"
    assert table.unit.settings()["game_length"] == "2h"
    assert table.events("setting")[-1].data == {"name": "game_length", "value": "2h"}
    table.tap(B)  # next item
    assert table.state()["screen"][:3] == ["SETTINGS 2/8", "VOLUME", "high"]
    for _ in range(3):  # high -> off -> low -> medium
        table.tap(A)
    assert table.unit.settings()["volume"] == "medium"
    table.hold(A, 1_600)  # a long press leaves
    assert table.state()["mode"] == "idle"
    assert table.events("permit") == [] and table.events("auction.start") == []


def test_both_buttons_held_in_the_menu_do_not_pause_the_game_unseen() -> None:
    """Issue 38: the chord paused the clock while the menu stayed on the screen, with no
    sign of it until the menu timed out."""
    table = Table()
    table.hold(B, 1_600)
    table.unit.press(A, table.t)
    table.unit.press(B, table.t + 30)
    table.wait(1_600)
    table.unit.release(A, table.t)
    table.unit.release(B, table.t)
    assert table.state()["mode"] == "settings" and table.state()["paused"] is False
    assert table.events("pause") == []


def test_the_menu_walks_every_item_and_wraps() -> None:
    table = Table()
    table.hold(B, 1_600)
    seen = []
    for _ in range(9):
        seen.append(table.state()["screen"][0])
        table.tap(B)
    assert seen == [f"SETTINGS {i}/8" for i in range(1, 9)] + ["SETTINGS 1/8"]


def test_the_menu_closes_by_itself_and_never_opens_during_an_auction() -> None:
    table = Table()
    table.hold(B, 1_600).wait(29_000)
    assert table.state()["mode"] == "settings"
    table.wait(2_000)
    assert table.state()["mode"] == "idle"
    table.tap(A).hold(B, 1_600)
    assert table.state()["mode"] == "auction", "not while an auction runs"


def test_the_history_item_shows_the_last_permits() -> None:
    table = Table()
    for _ in range(4):
        table.tap(B).wait(1_000)
    table.hold(B, 1_600).wait(20_000)
    table.hold(B, 1_600)
    for _ in range(6):
        table.tap(B)
    values = [e.data["value"] for e in table.events("permit")][::-1]
    screen = table.state()["screen"]
    assert screen[1] == "LAST PERMITS"
    assert screen[2] == " ".join("S" if v == "station" else str(v) for v in values)


def test_a_new_game_from_the_menu_starts_hour_1() -> None:
    table = Table()
    table.wait(10 * 60_000).switch(False).switch(True)
    assert table.state()["hour"] == 2
    table.hold(B, 1_600)
    for _ in range(7):
        table.tap(B)
    assert table.state()["screen"][1] == "NEW GAME"
    table.tap(A)
    assert table.state()["mode"] == "idle" and table.state()["hour"] == 1
    assert table.state()["hour_elapsed_ms"] == 0 and table.events("new_game")


# ----- each setting changes the game ------------------------------------------------------


def with_setting(name: str, value: str, **rules) -> Table:
    table = Table(Rules(**rules))
    table.unit.set_setting(name, value, table.t)
    return table


def test_volume_off_silences_every_tone_but_keeps_every_light() -> None:
    table = with_setting("volume", "off")
    table.tap(A).until("auction.end")
    table.tap(B).wait(2_000)
    table.until("hour.end")
    tones = [e for e in table.log if e.event == "tone" and e.t_ms > 0]
    assert tones == [] and table.state()["tone_hz"] is None
    assert len(table.events("led")) > 50


@pytest.mark.parametrize(("choice", "length"), [("fixed50", 50_000), ("fixed30", 30_000)])
def test_a_fixed_auction_lasts_exactly_that_and_shows_its_countdown(
    choice: str, length: int
) -> None:
    table = with_setting("auction", choice)
    for _ in range(5):
        table.tap(A)
        start = table.t
        assert table.state()["screen"][-1] == str(length // 1000)
        end = table.until("auction.end", limit_ms=60_000)
        assert end.t_ms - start == length
        table.wait(4_000)


def test_untimed_games_signal_each_hour_and_never_end() -> None:
    table = with_setting("game_length", "untimed")
    table.wait(3 * HOUR_MS + 1_000)
    assert [e.t_ms for e in table.events("hour.end")] == [HOUR_MS, 2 * HOUR_MS, 3 * HOUR_MS]
    assert table.state()["mode"] == "idle" and table.events("hour.warning") == []


def test_a_two_hour_game_ends_after_two_hours() -> None:
    table = with_setting("game_length", "2h")
    table.wait(2 * HOUR_MS + 1_000)
    assert table.state()["mode"] == "hour_end" and table.state()["screen"][-1] == "2 h played"


def test_the_odds_presets_change_the_draws() -> None:
    table = with_setting("odds", "uniform", permit_show_s=1)
    for _ in range(2_000):
        table.tap(B).wait(900)
    counts = Counter(Permit(e.data["value"]) for e in table.events("permit"))
    assert chi_square(counts, ODDS_PRESETS["uniform"]) < 16.27
    assert chi_square(counts, ODDS_PRESETS["classic"]) > 16.27


def test_language_and_clock_change_the_screen() -> None:
    table = with_setting("language", "fr")
    table.wait(61_000)
    assert table.state()["screen"] == ["HEURE 1", "01:01"]
    table.unit.set_setting("show_clock", "off", table.t)
    assert table.state()["screen"] == ["HEURE 1"]


def test_the_volume_sets_the_buzzer_loudness_on_the_pin(make_rig) -> None:
    rig = make_rig(switch_on=True)
    assert rig.pin(BUZZER).state == pytest.approx(0.5), "high: a square wave"
    rig.unit.set_setting("volume", "low", rig.clock.now_ms())
    rig.at(10)
    assert rig.pin(BUZZER).state == pytest.approx(0.03)


# ----- the console -------------------------------------------------------------------------


@pytest.fixture
def console() -> Iterator[tuple[Session, list[str]]]:
    with SimBoard(Config(), VirtualClock(), seed=1) as board:
        replies: list[str] = []
        yield Session(board.runtime, replies.append, controls=board.controls), replies


def test_settings_answers_every_setting_by_name(console) -> None:
    session, replies = console
    session.receive(b"SETTINGS")
    assert replies[-1].startswith("OK ")
    assert json.loads(replies[-1][3:]) == {
        "game_length": "1h", "volume": "high", "auction": "random", "odds": "classic",
        "language": "en", "show_clock": "on",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("line", "reply"),
    [
        (b"SET volume off", "OK"),
        (b"set VOLUME Low", "OK"),
        (b"SET volume loud", "ERR bad-argument volume is one of: off, low, medium, high"),
        (b"SET speed 3", "ERR bad-argument unknown setting speed; settings: game_length, volume"),
        (b"SET volume", "ERR bad-argument usage: SET <name> <value>"),
        (b"SET game_length untimed", "OK"),
        (b"SET auction fixed50", "OK"),
        (b"SET odds builder", "OK"),
        (b"SET language fr", "OK"),
        (b"SET show_clock off", "OK"),
    ],
)
def test_set_changes_one_or_names_what_is_allowed(console, line: bytes, reply: str) -> None:
    session, replies = console
    session.receive(line)
    assert replies[-1].startswith(reply), replies[-1]


def test_set_takes_effect_at_once(console) -> None:
    session, replies = console
    for line in (b"SWITCH ON", b"SET language fr", b"SET show_clock off", b"STATE"):
        session.receive(line)
    assert json.loads(replies[-1][3:])["screen"] == ["HEURE 1"]


# ----- kept across restarts ----------------------------------------------------------------


def test_settings_survive_a_restart(make_rig, tmp_path: Path) -> None:
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    for name, value in (("volume", "off"), ("auction", "fixed30"), ("language", "fr")):
        rig.unit.set_setting(name, value, rig.clock.now_ms())
    rig.at(100)
    rig.board.close()
    again = make_rig(switch_on=True, state_dir=tmp_path)
    got = again.unit.settings()
    assert (got["volume"], got["auction"], got["language"]) == ("off", "fixed30", "fr")


def test_an_edit_of_the_config_file_since_wins_over_the_saved_setting(
    make_rig, tmp_path: Path
) -> None:
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    rig.unit.set_setting("volume", "low", rig.clock.now_ms())
    rig.unit.set_setting("language", "fr", rig.clock.now_ms())
    rig.at(100)
    rig.board.close()
    edited = Config(rules=Rules(volume="medium"))  # the maker edited sound.volume
    again = make_rig(edited, switch_on=True, state_dir=tmp_path)
    got = again.unit.settings()
    assert got["volume"] == "medium" and got["language"] == "fr"


def test_every_setting_and_choice_round_trips() -> None:
    rules = Rules()
    for setting in settings.SETTINGS:
        for choice in setting.choices:
            assert setting.get(setting.put(rules, choice)) == choice
    values = {s.name: random.Random(1).choice(s.choices) for s in settings.SETTINGS}
    assert settings.read(settings.apply(rules, values)) == values


def test_a_new_language_redraws_a_screen_that_would_not_change_by_itself(make_rig) -> None:
    rig = make_rig(Config(rules=Rules(show_clock=False)), switch_on=True)
    rig.at(1_000)
    sent = rig.board.display.frames_sent
    rig.unit.set_setting("language", "fr", rig.clock.now_ms())
    rig.at(1_010)
    assert rig.board.display.frames_sent == sent + 1


def test_a_setting_changed_while_paused_is_saved_at_once(make_rig, tmp_path: Path) -> None:
    from cityunit.loop import store

    rig = make_rig(switch_on=True, state_dir=tmp_path)
    unit = rig.unit
    unit.press(A, 100)
    unit.press(B, 100)
    rig.at(2_000)
    assert unit.state()["paused"]
    unit.set_setting("volume", "off", rig.clock.now_ms())
    rig.at(2_010)
    rig.runtime.saver.flush()
    assert store.load(tmp_path / store.FILENAME).settings["volume"] == "off"


def test_the_protocols_table_of_settings_is_the_settings_own() -> None:
    """docs/protocol.md's Settings table, row by row, from the one definition of each:
    its choices, the default's choice and the config key it comes from."""
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "protocol.md").read_text()
    table = doc.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]
    row = re.compile(r"\| `(\w+)` \| (.*?) \| `(\w+)` \(`([\w.]+)`\) \| .* \|")
    rows = {m[1]: m.groups()[1:] for m in map(row.fullmatch, table.splitlines()) if m}
    assert sorted(rows) == sorted(settings.BY_NAME)
    paths = {key.name: key.path for key in Rules.KEYS}
    for name, (values, default, key) in rows.items():
        setting = settings.BY_NAME[name]
        assert values == ", ".join(f"`{c}`" for c in setting.choices), name
        assert default == setting.get(Rules()), name
        assert key in {paths[field] for o in setting.options for field in o.sets}, name
