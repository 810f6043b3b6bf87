"""Nothing lost: the game survives crashes, kill -9 and power cuts; bad files never crash it."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cityunit import store
from cityunit.gestures import Button
from cityunit.rules import HOUR_MS
from fakes import run_unit
from test_runtime import POWER, Rig

STATE = {
    "power": True,
    "hour": 3,
    "session_hours": 1,
    "hour_elapsed_ms": 1_234_000,
    "paused": False,
    "history": [2, "station", 1],
}


def test_a_saved_state_reads_back(tmp_path: Path) -> None:
    path = tmp_path / store.FILENAME
    store.save_atomic(path, store.encode(STATE))
    assert store.load(path) == {"version": store.VERSION, **STATE}
    assert [p.name for p in tmp_path.iterdir()] == [store.FILENAME], "no temp file left behind"


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b'{"version": 1, "power": tr',
        b"\x00\x00\x00\x00",
        b"[1, 2, 3]",
        json.dumps({**STATE, "version": 99}).encode(),
        json.dumps({**STATE, "version": 1, "hour": -1}).encode(),
        json.dumps({**STATE, "version": 1, "hour_elapsed_ms": HOUR_MS + 1}).encode(),
        json.dumps({**STATE, "version": 1, "history": [4]}).encode(),
        json.dumps({**STATE, "version": 1, "paused": "no"}).encode(),
        json.dumps({**STATE, "version": 1, "settings": ["volume", "off"]}).encode(),
        json.dumps({**STATE, "version": 1, "settings": {"volume": 0}}).encode(),
    ],
)
def test_a_truncated_or_corrupt_file_is_logged_and_ignored(
    tmp_path: Path, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / store.FILENAME
    path.write_bytes(content)
    with caplog.at_level(logging.WARNING):
        assert store.load(path) is None
    assert "starting afresh" in caplog.text and str(path) in caplog.text


def _saver_child(path: Path, die_at: int) -> None:
    """In a forked child: save numbered states, SIGKILL self at the die_at-th file step."""
    steps = 0
    real = {name: getattr(os, name) for name in ("open", "write", "fsync", "replace", "close")}

    def step(name: str):
        def wrapped(*args, **kwargs):
            nonlocal steps
            steps += 1
            if steps == die_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return real[name](*args, **kwargs)

        return wrapped

    for name in real:
        setattr(os, name, step(name))
    n = 0
    while True:
        n += 1
        store.save_atomic(path, store.encode({**STATE, "hour": n, "history": [1] * (n % 10)}))


def test_kill_9_at_any_point_of_a_save_leaves_the_old_or_the_new_state(tmp_path: Path) -> None:
    path = tmp_path / store.FILENAME
    store.save_atomic(path, store.encode({**STATE, "hour": 0}))
    rng = random.Random(121)
    hours = set()
    for _ in range(200):
        die_at = rng.randint(1, 60)  # a save is about 6 steps: this lands on every one
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child dies by SIGKILL
            try:
                _saver_child(path, die_at)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        saved = store.load(path)
        assert saved is not None, f"unreadable after a kill at step {die_at}"
        hours.add(saved["hour"])
    assert len(hours) > 5, "kills landed after some saves had finished, and before others"


def test_kill_9_at_random_times_during_a_stream_of_saves(tmp_path: Path) -> None:
    path = tmp_path / store.FILENAME
    code = (
        "import json, sys; from pathlib import Path; from cityunit import store\n"
        "p, state, n = Path(sys.argv[1]), json.loads(sys.argv[2]), 0\n"
        "print('ready', flush=True)\n"
        "while True:\n"
        "    n += 1; store.save_atomic(p, store.encode({**state, 'hour': n}))\n"
    )
    rng = random.Random(7)
    for _ in range(20):
        proc = subprocess.Popen(
            [sys.executable, "-c", code, str(path), json.dumps(STATE)], stdout=subprocess.PIPE
        )
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
        threading.Event().wait(rng.uniform(0, 0.02))  # the kill lands anywhere in the stream
        proc.kill()
        proc.wait()
        if path.exists():
            assert store.load(path) is not None


def test_the_saver_hands_off_and_never_blocks_its_caller(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    real = store.save_atomic
    monkeypatch.setattr(store, "save_atomic", lambda p, d: (gate.wait(10), real(p, d)))
    saver = store.Saver(tmp_path)
    for hour in range(1, 50):
        saver.save({**STATE, "hour": hour})  # returns at once though the disk is "stuck"
    assert not saver.flush(timeout=0.05)
    gate.set()
    saver.close()
    assert store.load(saver.path)["hour"] == 49, "the latest snapshot wins"


# ----- the unit comes back in the same hour ----------------------------------------------


def crash(rig: Rig) -> None:
    """The process dies: no clean stop, only what the saver already wrote survives."""
    assert rig.runtime.saver is not None
    rig.runtime.saver.flush()
    rig.runtime.parts.close()


def test_after_a_crash_the_same_hour_goes_on_and_the_screen_says_so(tmp_path: Path) -> None:
    rig = Rig(state_dir=tmp_path)
    rig.pin(POWER).drive_low()
    for t in range(0, 20 * 60_000 + 3_000, 1_000):
        rig.at(t)
    crash(rig)
    again = Rig(switch_on=True, state_dir=tmp_path)
    unit = again.runtime.unit
    assert unit.hour == 1 and unit.power and unit.mode == "idle"
    assert 20 * 60_000 - 5_000 <= unit.hour_elapsed() <= 20 * 60_000 + 3_000
    assert "resume" in again.names() and "hour.start" not in again.names()
    assert unit.state()["screen"][1] == "RESUMED"
    again.at(10_000)
    assert unit.state()["screen"][1] != "RESUMED", "the note goes after a few seconds"
    end = HOUR_MS - unit.hour_elapsed()
    again.at(10_000 + end)
    assert "hour.end" in again.names()
    again.runtime.close()


def test_switching_off_then_on_across_a_restart_starts_a_new_hour(tmp_path: Path) -> None:
    rig = Rig(switch_on=True, state_dir=tmp_path)
    rig.at(60_000)
    rig.pin(POWER).drive_high()
    rig.at(61_000)
    rig.runtime.close()
    again = Rig(switch_on=True, state_dir=tmp_path)
    assert again.runtime.unit.hour == 2 and again.runtime.unit.hour_elapsed() == 0
    assert "hour.start" in again.names() and "resume" not in again.names()
    again.runtime.close()


def test_the_switch_found_off_at_start_means_off_and_then_a_new_hour(tmp_path: Path) -> None:
    rig = Rig(switch_on=True, state_dir=tmp_path)
    rig.at(60_000)
    crash(rig)
    again = Rig(state_dir=tmp_path)  # switched OFF while the Pi was down
    assert not again.runtime.unit.power
    again.pin(POWER).drive_low()
    again.at(100)
    assert again.runtime.unit.hour == 2
    again.runtime.close()


def test_a_paused_game_and_a_finished_game_come_back_as_they_were(tmp_path: Path) -> None:
    rig = Rig(switch_on=True, state_dir=tmp_path)
    rig.at(1_000)
    rig.runtime.unit.press(Button.AUCTION, rig.clock.now_ms())  # both held: pause
    rig.runtime.unit.press(Button.BUILD, rig.clock.now_ms())
    rig.at(3_000)
    assert rig.runtime.unit.paused
    crash(rig)
    again = Rig(switch_on=True, state_dir=tmp_path)
    assert again.runtime.unit.paused and "PAUSED" in again.runtime.unit.state()["screen"]
    again.runtime.close()

    (tmp_path / store.FILENAME).write_bytes(
        store.encode({**STATE, "hour": 5, "hour_elapsed_ms": HOUR_MS})
    )
    over = Rig(switch_on=True, state_dir=tmp_path)
    assert over.runtime.unit.mode == "hour_end" and over.runtime.unit.hour == 5
    over.runtime.close()


def test_a_corrupt_state_file_means_a_fresh_start_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / store.FILENAME).write_bytes(b'{"version": 1, "hour": ')
    rig = Rig(switch_on=True, state_dir=tmp_path)
    assert rig.runtime.unit.hour == 1 and "hour.start" in rig.names()
    rig.runtime.close()
    assert store.load(tmp_path / store.FILENAME) is not None, "and a good file replaces it"


def test_saves_come_every_few_seconds_and_on_each_change_of_mode(tmp_path: Path) -> None:
    rig = Rig(switch_on=True, state_dir=tmp_path)
    saver = rig.runtime.saver
    assert saver is not None
    handed: list[tuple[int, dict]] = []
    real_save = saver.save
    saver.save = lambda state: (handed.append((rig.clock.now_ms(), state)), real_save(state))
    for t in range(0, 60_000, 100):
        rig.at(t)
    assert [t for t, _ in handed] == list(range(5_000, 60_000, 5_000))
    rig.press(17)  # AUCTION: a change of mode is saved at once
    assert handed[-1][0] == 60_000 - 100 + 80 and handed[-1][1]["power"]
    rig.runtime.close()


def test_cityunit_run_keeps_the_game_in_its_state_directory(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[display]\ndriver = "none"\n[state]\ndir = "{tmp_path / "state"}"\n')
    proc = run_unit(config)
    proc.send_signal(signal.SIGTERM)
    assert proc.finish() == 0
    saved = store.load(tmp_path / "state" / store.FILENAME)
    assert saved is not None and saved["power"] is False  # mock pins: the switch reads OFF
