"""Nothing lost: the game survives crashes, kill -9 and power cuts; bad files never crash it."""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from cityunit.core.hour import HOUR_MS
from cityunit.core.saved import SavedGame
from cityunit.loop import store
from conftest import AUCTION, BUILD, POWER, Rig
from fakes import run_unit

STATE = {  # a saved game as its file's JSON holds it
    "power": True,
    "hour": 3,
    "session_hours": 1,
    "hour_elapsed_ms": 1_234_000,
    "paused": False,
    "history": [2, "station", 1],
}


def game(**changes: Any) -> SavedGame:
    """STATE, with `changes`, as the unit hands it to the saver."""
    saved = SavedGame.from_json({**STATE, **changes})
    assert saved is not None
    return saved


def test_a_saved_state_reads_back(tmp_path: Path) -> None:
    path = tmp_path / store.FILENAME
    store.save_atomic(path, store.encode(game()))
    assert store.load(path) == game()
    assert json.loads(path.read_bytes()) == {
        "version": store.VERSION,
        **STATE,
        "settings": {},
        "config": {},
    }
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
        # Issue 20's second look: what json.loads takes but a saved game never is
        json.dumps({**STATE, "version": True}).encode(),
        json.dumps({**STATE, "version": 1.0}).encode(),
        json.dumps({**STATE, "version": 1, "power": True, "hour": 0}).encode(),  # hour 0: OFF
        b"\xef\xbb\xbf" + json.dumps({**STATE, "version": 1}).encode(),
        json.dumps({**STATE, "version": 1}).encode("utf-16"),
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
        store.save_atomic(path, store.encode(game(hour=n, history=[1] * (n % 10))))


def test_kill_9_at_any_point_of_a_save_leaves_the_old_or_the_new_state(tmp_path: Path) -> None:
    path = tmp_path / store.FILENAME
    store.save_atomic(path, store.encode(game(power=False, hour=0)))
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
        hours.add(saved.hour)
    assert len(hours) > 5, "kills landed after some saves had finished, and before others"


def test_kill_9_at_random_times_during_a_stream_of_saves(tmp_path: Path) -> None:
    path = tmp_path / store.FILENAME
    code = (
        "import json, sys; from pathlib import Path; from cityunit.loop import store\n"
        "from cityunit.core.saved import SavedGame\n"
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
        saver.save(game(hour=hour))  # returns at once though the disk is "stuck"
    assert not saver.flush(timeout=0.05)
    gate.set()
    saver.close()
    assert store.load(saver.path).hour == 49, "the latest snapshot wins"


# ----- the unit comes back in the same hour ----------------------------------------------


def test_after_a_crash_the_same_hour_goes_on_and_the_screen_says_so(
    make_rig, tmp_path: Path
) -> None:
    rig = make_rig(state_dir=tmp_path)
    rig.pin(POWER).drive_low()
    for t in range(0, 20 * 60_000 + 3_000, 1_000):
        rig.at(t)
    rig.crash()
    again = make_rig(switch_on=True, state_dir=tmp_path)
    state = again.unit.state()
    assert state["hour"] == 1 and state["power"] == "on" and state["mode"] == "idle"
    assert 20 * 60_000 - 5_000 <= state["hour_elapsed_ms"] <= 20 * 60_000 + 3_000
    assert "resume" in again.names() and "hour.start" not in again.names()
    assert state["screen"][1] == "RESUMED"
    again.at(10_000)
    assert again.unit.state()["screen"][1] != "RESUMED", "the note goes after a few seconds"
    end = HOUR_MS - again.unit.state()["hour_elapsed_ms"]
    again.at(10_000 + end)
    assert "hour.end" in again.names()


def test_switching_off_then_on_across_a_restart_starts_a_new_hour(make_rig, tmp_path: Path) -> None:
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    rig.at(60_000)
    rig.pin(POWER).drive_high()
    rig.at(61_000)
    rig.board.close()
    again = make_rig(switch_on=True, state_dir=tmp_path)
    assert again.unit.state()["hour"] == 2 and again.unit.state()["hour_elapsed_ms"] == 0
    assert "hour.start" in again.names() and "resume" not in again.names()


def test_the_switch_found_off_at_start_means_off_and_then_a_new_hour(
    make_rig, tmp_path: Path
) -> None:
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    rig.at(60_000)
    rig.crash()
    again = make_rig(state_dir=tmp_path)  # switched OFF while the Pi was down
    assert not again.unit.power
    again.pin(POWER).drive_low()
    again.at(100)
    assert again.unit.state()["hour"] == 2


def test_a_paused_game_and_a_finished_game_come_back_as_they_were(make_rig, tmp_path: Path) -> None:
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    rig.at(1_000)
    rig.pin(AUCTION).drive_low()  # both held: pause
    rig.pin(BUILD).drive_low()
    rig.at(3_000)
    assert rig.unit.state()["paused"]
    rig.crash()
    again = make_rig(switch_on=True, state_dir=tmp_path)
    assert again.unit.state()["paused"] and "PAUSED" in again.unit.state()["screen"]
    again.board.close()

    (tmp_path / store.FILENAME).write_bytes(store.encode(game(hour=5, hour_elapsed_ms=HOUR_MS)))
    over = make_rig(switch_on=True, state_dir=tmp_path)
    assert over.unit.state()["mode"] == "hour_end" and over.unit.state()["hour"] == 5


def test_a_corrupt_state_file_means_a_fresh_start_not_a_crash(make_rig, tmp_path: Path) -> None:
    (tmp_path / store.FILENAME).write_bytes(b'{"version": 1, "hour": ')
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    assert rig.unit.state()["hour"] == 1 and "hour.start" in rig.names()
    rig.board.close()
    assert store.load(tmp_path / store.FILENAME) is not None, "and a good file replaces it"


def saves_of(rig: Rig) -> list[tuple[int, SavedGame]]:
    """Every snapshot the loop hands the saver from now on, with its unit time."""
    saver = rig.runtime.saver
    assert saver is not None
    handed: list[tuple[int, SavedGame]] = []
    real_save = saver.save
    saver.save = lambda state: (handed.append((rig.clock.now_ms(), state)), real_save(state))
    return handed


def test_saves_come_every_few_seconds_and_on_each_change_of_mode(make_rig, tmp_path: Path) -> None:
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    handed = saves_of(rig)
    for t in range(0, 60_000, 100):
        rig.at(t)
    assert [t for t, _ in handed] == list(range(5_000, 60_000, 5_000))
    rig.press(AUCTION)  # a change of mode is saved at once
    assert handed[-1][0] == 60_000 - 100 + 80 and handed[-1][1].power


def test_a_permit_drawn_while_paused_with_a_full_history_is_saved_at_once(
    make_rig, tmp_path: Path
) -> None:
    """Once the history holds its ten permits its length stops changing, and the game is
    paused (no periodic save): each new permit must still reach the disk when it shows."""
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    for t in range(1_000, 13_000, 1_000):  # twelve permits: the history is full
        rig.at(t)
        rig.press(BUILD)
    rig.at(14_000)
    rig.pin(AUCTION).drive_low()  # both held: pause
    rig.pin(BUILD).drive_low()
    rig.at(16_000)
    rig.pin(AUCTION).drive_high()
    rig.pin(BUILD).drive_high()
    rig.at(17_000)
    assert rig.unit.state()["paused"] and rig.unit.state()["mode"] == "permit"
    rig.press(BUILD)
    rig.at(18_500)  # the new permit shows, far from its 20 s end
    rig.runtime.saver.flush()
    permits = [e.data["value"] for e in rig.events if e.event == "permit"]
    on_disk = store.load(tmp_path / store.FILENAME)
    assert on_disk is not None and [p.value for p in on_disk.history] == permits[::-1][:10]


def test_cityunit_run_keeps_the_game_in_its_state_directory(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[display]\ndriver = "none"\n[state]\ndir = "{tmp_path / "state"}"\n')
    proc = run_unit(config)
    proc.send_signal(signal.SIGTERM)
    assert proc.finish() == 0
    saved = store.load(tmp_path / "state" / store.FILENAME)
    assert saved is not None and saved.power is False  # mock pins: the switch reads OFF


def test_the_clock_under_resumed_keeps_ticking_on_the_display(make_rig, tmp_path: Path) -> None:
    (tmp_path / store.FILENAME).write_bytes(store.encode(game()))
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    assert rig.unit.state()["screen"][1] == "RESUMED"
    sent = rig.board.display.frames_sent
    for t in range(1_000, 6_000, 1_000):
        rig.at(t)
    assert rig.unit.state()["screen"][1] == "RESUMED"
    assert rig.board.display.frames_sent - sent == 5, "a new frame each second"


def test_a_board_that_fails_to_start_leaves_the_saved_game_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cityunit.core.unit import Unit

    path = tmp_path / store.FILENAME
    path.write_bytes(store.encode(game()))
    before = path.read_bytes()

    def broken(*args, **kwargs):
        raise RuntimeError("boot failed")

    monkeypatch.setattr(Unit, "boot", broken)
    with pytest.raises(RuntimeError):
        Rig(switch_on=True, state_dir=tmp_path)
    assert path.read_bytes() == before


def test_a_save_that_fails_is_told_once_and_tried_again_until_it_works(
    make_rig, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A real failure (state.json became a directory: the kernel refuses the rename): one
    `fault` of the state and one journal line however long it lasts; the game handed over
    again every 5 s though the switch is OFF (the core asks for no save of its own then),
    and `back`, with the game on disk, at the first try after it is mended. Before, each
    failure was a journal line and nothing else, and an OFF unit never tried again."""
    caplog.set_level(logging.INFO, logger="cityunit.loop.store")
    rig = make_rig(state_dir=tmp_path)
    blocker = tmp_path / store.FILENAME
    blocker.unlink()
    blocker.mkdir()
    (blocker / "in the way").touch()
    rig.at(1_000)
    rig.pin(POWER).drive_low()  # ON: a new hour, saved at once (it fails)
    rig.runtime.pump()
    rig.at(2_000)
    rig.pin(POWER).drive_high()  # OFF: saved at once (it fails), then no save of its own
    rig.runtime.pump()
    for t in range(3_000, 60_000, 1_000):
        rig.at(t)
    faults = [(e.t_ms, e.data["part"], e.data["detail"]) for e in rig.events if e.event == "fault"]
    assert faults == [(1_000, "state", "cannot save: Is a directory")]
    said = [r.getMessage() for r in caplog.records if "save" in r.getMessage()]
    assert len(said) == 1 and said[0].endswith("cannot save the game's state: Is a directory")
    (blocker / "in the way").unlink()
    blocker.rmdir()
    rig.at(61_000)
    faults = [(e.t_ms, e.data["detail"]) for e in rig.events if e.event == "fault"]
    assert faults[1:] == [(61_000, "back")], "tried again every 5 s from 1 s: 61 s"
    assert store.load(blocker) == rig.unit.saved()
    assert not store.load(blocker).power and store.load(blocker).hour == 1


# ----- issue 20: a hostile state file, two writers -----------------------------------------


def _fifo(path: Path) -> None:
    os.mkfifo(path)


def _link_to_zero(path: Path) -> None:
    path.symlink_to("/dev/zero")


def _deep(text: bytes) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(text)


@pytest.mark.parametrize(
    "plant",
    [
        _deep(b"[" * 100_000),
        _deep(b'{"a":' * 50_000),
        _deep(b'{"version": 1, "hour": 1' + b"0" * 5_000 + b"}"),  # past int's digit limit
        _deep(b" " * (store.MAX_BYTES + 1)),
        _fifo,
        _link_to_zero,
        lambda path: path.mkdir(),
    ],
    ids=["100k [", "50k {", "5000 digits", "too large", "fifo", "link to /dev/zero", "a dir"],
)
def test_a_hostile_state_file_is_set_aside_and_the_unit_starts_afresh(
    make_rig, tmp_path: Path, plant: Callable[[Path], None], caplog: pytest.LogCaptureFixture
) -> None:
    """Each of these stopped the unit starting (a RecursionError at every start, a hang
    that only SIGKILL ended, a read until MemoryError)."""
    path = tmp_path / store.FILENAME
    plant(path)
    with caplog.at_level(logging.WARNING):
        rig = make_rig(switch_on=True, state_dir=tmp_path)
    assert rig.unit.state()["hour"] == 1 and "hour.start" in rig.names()
    assert f"{path}: " in caplog.text and "starting afresh" in caplog.text
    aside = tmp_path / store.ASIDE
    assert aside.is_symlink() or aside.exists(), "kept for a person to look at"
    rig.board.close()
    assert store.load(path) is not None, "and a good file takes its place"


def test_a_planted_temp_link_is_never_written_through(make_rig, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious")
    (tmp_path / f".{store.FILENAME}.tmp").symlink_to(victim)  # the old fixed temp name
    rig = make_rig(switch_on=True, state_dir=tmp_path)
    rig.at(10_000)
    rig.board.close()
    assert victim.read_bytes() == b"precious"
    path = tmp_path / store.FILENAME
    assert not path.is_symlink() and store.load(path) is not None


def test_a_second_writer_on_one_state_dir_is_refused_until_the_first_is_gone(
    tmp_path: Path,
) -> None:
    first = store.Saver(tmp_path)
    with pytest.raises(store.Busy, match=f"process {os.getpid()}.*state.dir of its own"):
        store.Saver(tmp_path)
    first.close()
    store.Saver(tmp_path).close()  # the lock goes with its holder


def test_a_killed_writer_leaves_no_lock_and_its_temp_files_are_cleared(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from cityunit.loop import store\n"
        "saver = store.Saver(Path(sys.argv[1]))\n"
        "(Path(sys.argv[1]) / '.state.json.x1y2.tmp').write_bytes(b'half')\n"
        "print('ready', flush=True); sys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, stdin=subprocess.PIPE
    )
    assert proc.stdout is not None and proc.stdout.readline() == b"ready\n"
    with pytest.raises(store.Busy, match=f"process {proc.pid}"):
        store.Saver(tmp_path)
    proc.kill()
    proc.wait()
    store.Saver(tmp_path).close()
    assert not list(tmp_path.glob("*.tmp"))


def test_two_simulators_on_one_state_dir_the_second_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    first = subprocess.Popen(
        [sys.executable, "-m", "cityunit", "sim", "--headless", "--config", str(config)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        assert first.stdin is not None and first.stdout is not None
        first.stdin.write(b"PING\n")
        first.stdin.flush()
        assert first.stdout.readline().startswith(b"OK"), "the first is up and holds the lock"
        second = subprocess.run(
            [sys.executable, "-m", "cityunit", "sim", "--headless", "--config", str(config)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert second.returncode == 2
        assert f"another cityunit (process {first.pid}) keeps its game here" in second.stderr
        assert "Traceback" not in second.stderr
    finally:
        first.stdin.close()  # end of input: a clean stop
        first.wait(60)


def test_a_card_that_takes_no_byte_at_start_is_logged_and_the_game_plays(tmp_path: Path) -> None:
    """Issue 38: every write at start (the lock's pid, the config's last good copy, the
    game) fails as on a full card (`ulimit -f 0`: EFBIG), twice, the first start's empty
    lock left for the second: each start plays, and says what it could not keep."""
    config = tmp_path / "config.toml"
    config.write_text(f'[state]\ndir = "{tmp_path / "state"}"\n')
    (tmp_path / "state").mkdir()
    sim = f"{sys.executable} -m cityunit sim --headless --clock virtual --config {config}"
    for start in (1, 2):
        done = subprocess.run(
            ["sh", "-c", f"ulimit -f 0 && exec {sim}"], input="SWITCH ON\nADVANCE 5000\nSTATE\n",
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0 and "Traceback" not in done.stderr, (start, done.stderr)
        state = json.loads(done.stdout.splitlines()[-1].removeprefix("OK "))
        assert state["power"] == "on" and state["hour_elapsed_ms"] >= 5000, done.stdout
        assert "without this process's id" in done.stderr, done.stderr
        assert "not kept" in done.stderr or "cannot" in done.stderr, done.stderr
    assert (tmp_path / "state" / store.LOCK).read_bytes() == b"", "nothing could be written"


def test_advances_ok_comes_once_what_it_reached_is_on_disk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the virtual clock a kill right after ADVANCE's OK lost the whole advance: the
    saver had not written it yet. A slow disk (each save 0.2 s here) must not change that."""
    from cityunit.config import Config
    from cityunit.console.protocol import Session
    from cityunit.loop.clock import VirtualClock
    from cityunit_sim.board import SimBoard

    real = store.save_atomic
    monkeypatch.setattr(
        store, "save_atomic", lambda p, d: (threading.Event().wait(0.2), real(p, d))
    )
    on_disk: list[dict | None] = []
    with SimBoard(Config(), VirtualClock(), seed=1, state_dir=tmp_path) as board:

        def reply(line: str) -> None:
            if line == "OK":  # the moment a script could kill the simulator
                on_disk.append(store.load(tmp_path / store.FILENAME))

        session = Session(board.runtime, reply, controls=board.controls)
        for line in (b"SWITCH ON", b"ADVANCE 60000"):
            session.receive(line)
    saved = on_disk[-1]
    assert saved is not None and saved.hour_elapsed_ms >= 60_000 - 5_000, saved


@pytest.mark.parametrize("plant", ["fifo", "directory", "link", "/dev/null"])
def test_a_lock_planted_as_anything_but_a_file_is_set_aside_and_the_lock_holds(
    tmp_path: Path, plant: str
) -> None:
    """A FIFO or a device planted as .lock stopped every start (ftruncate's EINVAL); a
    directory, a socket or a link turned the lock off, and two units shared one game."""
    lock = tmp_path / store.LOCK
    if plant == "fifo":
        os.mkfifo(lock)
    elif plant == "directory":
        lock.mkdir()
    elif plant == "link":
        lock.symlink_to(tmp_path / "elsewhere")
    else:
        os.mknod(lock, 0o666 | stat.S_IFCHR, os.stat(plant).st_rdev)
    with store.Saver(tmp_path) as first:
        with pytest.raises(store.Busy):
            store.Saver(tmp_path)
        first.save(game())
    assert (tmp_path / f"{store.LOCK}.bad").is_symlink() or (
        tmp_path / f"{store.LOCK}.bad"
    ).exists()
    assert store.load(tmp_path / store.FILENAME) is not None


def test_a_unit_that_cannot_lock_leaves_other_writers_temp_files_alone(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / store.LOCK).mkdir()
    # nor can it be set aside (a read-only card, where root too is refused)
    monkeypatch.setattr(store, "set_aside", lambda path: "not set aside: Read-only file system")
    temp = tmp_path / f".{store.FILENAME}.abc123.tmp"
    temp.write_bytes(b"another writer's, mid-save")
    with caplog.at_level(logging.ERROR):
        store.Saver(tmp_path).close()
    assert "cannot lock the state directory" in caplog.text
    assert temp.exists(), "not ours to clear without the lock"


def test_a_stop_while_saves_fail_says_the_game_is_not_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The journal's last word for the next start: the stop's own save failed too."""

    def full() -> None:
        raise OSError(28, "No space left on device")

    saver = store.Saver(tmp_path, check=full)
    saver.save(game())
    saver.close()
    said = [r.getMessage() for r in caplog.records]
    assert said[-1].endswith("the game as it stood at the stop is not saved"), said
    saver.save(game())  # after the close: said, not written through a lock let go
    assert caplog.records[-1].getMessage().endswith("after the saver closed, not saved")
