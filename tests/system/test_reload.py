"""`systemctl reload cityunit`: the config read again while the unit runs."""

from __future__ import annotations

import os
import signal
import threading
import time
import tomllib
from pathlib import Path

import pytest

from cityunit.board import Board
from cityunit.config import parse
from cityunit.loop.clock import VirtualClock
from cityunit.loop.inbox import Reload
from fakes import cable, mock_factory, run_unit

FILE = """
[game]
language = "en"
[sound]
volume = "high"
[auction]
min_s = 13
"""


def test_the_files_rules_apply_and_the_tables_settings_stay_unless_edited() -> None:
    board = Board(parse({}, "a"), VirtualClock(), pin_factory=mock_factory(), panel=None)
    with board:
        board.unit.set_setting("volume", "low", 0)  # the table's own choice
        edited = """
[game]
language = "fr"
[auction]
min_s = 20
[pins]
led = 12
[buttons]
long_press_ms = 2000
"""
        waiting = board.apply_config(parse(tomllib.loads(edited), "b"))
        rules = board.unit.game.rules
        assert rules.language == "fr", "the maker's edit applies at once"
        assert rules.volume == "low", "the table's setting stays: the file did not change it"
        assert rules.auction_min_s == 20
        assert waiting == ["buttons.long_press_ms", "pins.led"]
        assert board.config.rules == parse(tomllib.loads(edited), "b").rules


def test_sighup_reloads_a_running_unit_and_a_bad_file_changes_nothing(tmp_path: Path) -> None:
    unit_end, tester_end = cable()
    config = tmp_path / "config.toml"
    head = f'[display]\ndriver = "none"\n[console]\nport = "{unit_end}"\n'
    config.write_text(head + FILE)
    unit = run_unit(config)
    try:
        fd = os.open(tester_end, os.O_RDWR | os.O_NOCTTY)

        def settings() -> str:
            os.write(fd, b"SETTINGS\n")
            got = b""
            while not got.endswith(b"\n"):
                got += os.read(fd, 4096)
            return got.decode()

        assert '"language":"en"' in settings()
        config.write_text(head + FILE.replace('"en"', '"fr"'))
        unit.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 30
        while '"language":"fr"' not in settings():  # the reload is handled in its turn
            assert time.monotonic() < deadline, "".join(unit.log)
        config.write_text(head + "[game]\nlanguage = 3\n")
        unit.send_signal(signal.SIGHUP)
        while not any("config not reloaded" in line for line in unit.log):
            settings()  # a round trip through the unit's loop paces the wait
            assert time.monotonic() < deadline, "".join(unit.log)
        assert '"language":"fr"' in settings() and unit.poll() is None
        # Issue 20's hostile number: a traceback killed the unit (the choices' message)
        hostile = 'driver = "none"\nrotate = 0x' + "f" * 4000 + "\n"
        config.write_text(head.replace('driver = "none"\n', hostile))
        unit.send_signal(signal.SIGHUP)
        while not any("display.rotate: must be" in line for line in unit.log):
            settings()
            assert time.monotonic() < deadline and unit.poll() is None, "".join(unit.log)
        assert '"language":"fr"' in settings() and unit.poll() is None
        os.close(fd)
    finally:
        unit.terminate()
        assert unit.finish() == 0
    assert any("config.toml: game.language: must be" in line for line in unit.log)


def test_what_waits_for_a_restart_is_named_at_every_reload() -> None:
    with Board(parse({}, "a"), VirtualClock(), pin_factory=mock_factory(), panel=None) as board:
        edited = parse(tomllib.loads("[buttons]\nlong_press_ms = 2000\n"), "b")
        assert board.apply_config(edited) == ["buttons.long_press_ms"]
        assert board.apply_config(edited) == ["buttons.long_press_ms"], "still not applied"


def test_a_reload_that_fails_in_any_way_keeps_the_unit_and_its_config(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """No exception from reading the file reaches the loop: a bug in the checks is a
    logged refusal, not a stopped game."""
    from cityunit import board, config

    def broken(path: object) -> object:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(config, "load_raw", broken)
    assert board._reread(Path("config.toml")) is None
    assert "config not reloaded" in caplog.text and "RecursionError" in caplog.text


def test_the_loop_goes_on_while_a_reload_reads_and_checks_the_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading is off the loop (a Pi Zero takes a second over a 64 KiB file; the LED and
    the clock stopped for it); the checked config is applied on the loop, in its turn."""
    from cityunit import config

    reading, release = threading.Event(), threading.Event()
    slow_file = parse(tomllib.loads('[game]\nlanguage = "fr"\n'), "slow.toml")

    def slow(path: object) -> object:
        reading.set()
        release.wait(30)
        return slow_file, None

    monkeypatch.setattr(config, "load_raw", slow)
    clock = VirtualClock()
    with Board(parse({}, "a"), clock, pin_factory=mock_factory(), panel=None) as board:
        board.reread_on_reload(None)  # as `cityunit run` does
        board.runtime.inbox.put(Reload())
        board.runtime.pump()
        assert reading.wait(30), "the reload started"
        ran = []
        board.runtime.call(lambda: ran.append(board.unit.game.rules.language))
        clock.set_ms(1_000)
        assert board.runtime.pump() and ran == ["en"], "the loop went on while the file was read"
        release.set()
        work = board.runtime.inbox.get(timeout=30)  # the checked config, handed to the loop
        assert work is not None and board.unit.game.rules.language == "en"
        board.runtime.inbox.put(work)
        board.runtime.pump()
        assert board.unit.game.rules.language == "fr"


def test_a_burst_of_reloads_is_one_reader_and_one_more_read_and_closing_joins_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """100 SIGHUPs while the file is being read were 100 threads, each reading in turn,
    and none joined at the end: now the reloads that come during a read make one more."""
    from cityunit import config

    reads, reading, release = [], threading.Event(), threading.Semaphore(0)

    def slow(path: object) -> object:
        reads.append(path)
        reading.set()
        release.acquire(timeout=30)
        return parse({}, "again.toml"), None

    monkeypatch.setattr(config, "load_raw", slow)
    with Board(parse({}, "a"), VirtualClock(), pin_factory=mock_factory(), panel=None) as board:
        board.reread_on_reload(None)
        board.runtime.inbox.put(Reload())
        board.runtime.pump()
        assert reading.wait(30), "the first read is under way"
        for _ in range(99):
            board.runtime.inbox.put(Reload())
        board.runtime.pump()
        release.release()
        assert board.runtime.inbox.get(timeout=30) is not None, "the first read's config"
        release.release()
        assert board.runtime.inbox.get(timeout=30) is not None, "and one more, for the rest"
        assert len(reads) == 2
        readers = [t for t in threading.enumerate() if t.name == "config-reload"]
        assert len(readers) == 1
    assert not readers[0].is_alive(), "the board's close joined it"
