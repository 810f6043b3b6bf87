"""A config refused at start, on a unit that must play (`run --or-last-good`, the
service's way): the last good file, else the defaults, and the screen says so."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from cityunit.config import ConfigError, load, load_raw
from cityunit.core.gestures import Button
from cityunit.core.notice import NOTICE_MS
from cityunit.core.rules import Rules
from cityunit.core.screens import HourScreen, RefusedScreen
from cityunit.core.unit import Unit
from cityunit.service import fallback, first_light
from fakes import cable, run_unit

GOOD = '[display]\ndriver = "none"\n[game]\nlanguage = "fr"\n'
BAD = '[display]\ndriver = "none"\n[auction]\nmin_s = 5000\nfixed_s = "x"\n'


def refused(tmp_path: Path, text: str | bytes) -> tuple[ConfigError, str]:
    path = tmp_path / "bad.toml"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(ConfigError) as e:
        load(path)
    return e.value, str(path)


def test_a_good_file_is_kept_once_and_played_when_a_later_one_is_refused(
    tmp_path: Path,
) -> None:
    good = tmp_path / "config.toml"
    good.write_text(GOOD)
    state = tmp_path / "state"
    state.mkdir()
    _, raw = load_raw(good)
    fallback.keep(raw, state)
    copy = state / fallback.COPY
    assert copy.read_text() == GOOD
    written = copy.stat().st_mtime_ns, copy.stat().st_ino
    fallback.keep(raw, state)  # the same bytes: no write at each boot
    assert (copy.stat().st_mtime_ns, copy.stat().st_ino) == written

    config, screen = fallback.instead(*refused(tmp_path, BAD), state)
    assert config.rules.language == "fr"
    assert screen == RefusedScreen("auction.min_s", 1, last_good=True)
    assert screen.lines("en") == [
        "CONFIG REFUSED", "auction.min_s", "and 1 more", "last good settings"
    ]  # fmt: skip


def test_with_no_good_file_kept_the_defaults_play(tmp_path: Path) -> None:
    config, screen = fallback.instead(*refused(tmp_path, BAD), tmp_path)
    assert config.rules == Rules()
    assert not screen.last_good
    config, screen = fallback.instead(*refused(tmp_path, BAD), None)
    assert config.rules == Rules() and not screen.last_good


def test_a_planted_copy_is_neither_read_nor_played(tmp_path: Path) -> None:
    """The copy is the unit's own file: a link or a FIFO in its place is refused (a FIFO
    would hang the boot), and the next good file replaces it."""
    elsewhere = tmp_path / "elsewhere.toml"
    elsewhere.write_text(GOOD)
    state = tmp_path / "state"
    state.mkdir()
    (state / fallback.COPY).symlink_to(elsewhere)
    config, screen = fallback.instead(*refused(tmp_path, BAD), state)
    assert config.rules == Rules() and not screen.last_good
    (state / fallback.COPY).unlink()
    os.mkfifo(state / fallback.COPY)
    config, _ = fallback.instead(*refused(tmp_path, BAD), state)
    assert config.rules == Rules()
    fallback.keep(GOOD.encode(), state)  # replaced by a regular file
    assert (state / fallback.COPY).read_text() == GOOD
    # issue 38: a directory in its place was never replaced (a warning at every start)
    (state / fallback.COPY).unlink()
    (state / fallback.COPY / "inside").mkdir(parents=True)
    fallback.keep(GOOD.encode(), state)
    assert (state / fallback.COPY).read_text() == GOOD
    assert (state / f"{fallback.COPY}.bad" / "inside").is_dir(), "set aside, for a person"


def test_every_mistake_is_counted_past_the_lines_shown(tmp_path: Path) -> None:
    text = "[game]\n" + "".join(f"k{i} = 1\n" for i in range(30))
    error, source = refused(tmp_path, text)
    _, screen = fallback.instead(error, source, None)
    assert screen.more == 29


def test_where_names_the_key_or_the_line_in_each_language(tmp_path: Path) -> None:
    error, source = refused(tmp_path, "[game\n")
    _, screen = fallback.instead(error, source, None)
    assert screen.lines("en")[1] == "line 1" and screen.lines("fr")[1] == "ligne 1"
    assert fallback.where(refused(tmp_path, "[nope]\n")[0].lines[0], source) == ("nope", None)
    error, source = refused(tmp_path, b"\xff")
    assert fallback.where(error.lines[0], source) == ("not UTF-8 text…", None)
    odd = tmp_path / "my: dir"  # a path holding ": " itself
    odd.mkdir()
    error, source = refused(odd, "[game]\nlanguage = 3\n")
    assert fallback.where(error.lines[0], source) == ("game.language", None)


def test_a_notice_shows_until_its_time_or_a_press() -> None:
    unit = Unit(Rules(), now=0)
    unit.boot(switch_on=True, saved=None, t=0)
    notice = RefusedScreen("auction.min_s", 0, last_good=False)
    unit.notice(notice, 1_000)
    assert unit.snapshot().picture.screen == notice
    unit.advance(1_000 + NOTICE_MS - 1)
    assert unit.snapshot().picture.screen == notice
    unit.advance(1_000 + NOTICE_MS)
    assert isinstance(unit.snapshot().picture.screen, HourScreen)
    unit.notice(notice, 40_000)
    unit.press(Button.AUCTION, 41_000)
    assert unit.snapshot().picture.screen != notice


def test_a_reload_of_a_good_file_ends_the_refused_notice() -> None:
    unit = Unit(Rules(), now=0)
    unit.boot(switch_on=True, saved=None, t=0)
    unit.notice(RefusedScreen("auction.min_s", 0, last_good=False), 1_000)
    unit.reconfigure(Rules(), 2_000)
    assert isinstance(unit.snapshot().picture.screen, HourScreen), "the file is good now"


def test_a_reload_keeps_its_file_as_the_last_good_one(tmp_path: Path) -> None:
    """Issue 38: the copy was made at start only, so a file reloaded good, then broken,
    played the start's settings after a restart."""
    unit_end, tester_end = cable()
    config = tmp_path / "config.toml"
    head = f'[console]\nport = "{unit_end}"\n'
    config.write_text(head + GOOD)  # French
    state = tmp_path / "state"
    state.mkdir()
    copy = state / fallback.COPY

    def settings(fd: int) -> bytes:
        os.write(fd, b"SETTINGS\n")
        got = b""
        while not got.endswith(b"\n"):
            got += os.read(fd, 4096)
        return got

    unit = run_unit(config, "--or-last-good", STATE_DIRECTORY=str(state))
    fd = os.open(tester_end, os.O_RDWR | os.O_NOCTTY)
    try:
        config.write_text(head + GOOD.replace('"fr"', '"en"'))
        unit.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while b'"en"' not in copy.read_bytes():
            settings(fd)  # a round trip through the unit's loop paces the wait
            assert time.monotonic() < deadline, "".join(unit.log)
    finally:
        unit.terminate()
        assert unit.finish() == 0
    config.write_text(head + BAD)
    unit = run_unit(config, "--or-last-good", STATE_DIRECTORY=str(state))
    try:
        assert b'"language":"en"' in settings(fd), "the file last read good: the reload's"
    finally:
        os.close(fd)
        unit.terminate()
        assert unit.finish() == 0


def test_the_service_plays_on_with_a_refused_file_and_says_so(tmp_path: Path) -> None:
    unit_end, tester_end = cable()
    config = tmp_path / "config.toml"
    head = f'[console]\nport = "{unit_end}"\n'
    config.write_text(head + GOOD)
    state = tmp_path / "state"
    state.mkdir()  # systemd makes the StateDirectory
    first = run_unit(config, "--or-last-good", STATE_DIRECTORY=str(state))
    first.terminate()
    assert first.finish() == 0
    assert (state / fallback.COPY).read_text() == head + GOOD

    config.write_text(head + BAD)
    (state / first_light.NAME).write_bytes(b"kept by an earlier run")
    unit = run_unit(config, "--or-last-good", STATE_DIRECTORY=str(state))
    try:
        fd = os.open(tester_end, os.O_RDWR | os.O_NOCTTY)
        deadline = time.monotonic() + 30
        reply = b""
        while b"CONFIG REFUS" not in reply:  # the notice is shown in the loop's turn
            assert time.monotonic() < deadline, "".join(unit.log)
            os.write(fd, b"STATE\n")
            reply = b""
            while not reply.endswith(b"\n"):
                reply += os.read(fd, 4096)
        os.write(fd, b"SETTINGS\n")
        settings = b""
        while not settings.endswith(b"\n"):
            settings += os.read(fd, 4096)
        assert b'"language":"fr"' in settings  # the last good file's
        os.close(fd)
    finally:
        unit.terminate()
        assert unit.finish() == 0
    assert any("auction.min_s: must be" in line for line in unit.log)
    assert any("plays with its last good copy" in line for line in unit.log)
    # An earlier game's first light is gone: the file put right, it would show its screen.
    assert not (state / first_light.NAME).exists()


def test_off_after_a_refused_start_silences_the_pins_the_unit_played_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ExecStopPost's `--off --or-last-good`: the last good copy's pins, as the unit
    played them, not what can be read of the refused file."""
    from cityunit import board
    from cityunit.service import run as service

    state = tmp_path / "state"
    state.mkdir()
    fallback.keep(b"[pins]\nled = 12\n", state)
    bad = tmp_path / "config.toml"
    bad.write_text("[pins]\nled = 19\n[game]\nlanguage = 3\n")
    monkeypatch.setenv("STATE_DIRECTORY", str(state))
    seen = []
    monkeypatch.setattr(board, "leave_off", lambda config, *_: seen.append(config.pins.led))
    service._leave_off(bad, or_last_good=True)
    service._leave_off(bad, or_last_good=False)
    assert seen == [12, 19]
