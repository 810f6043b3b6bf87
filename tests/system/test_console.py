"""The protocol engine in-process: framing, fuzzed input, and the console client."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cityunit.config import Config
from cityunit.console.lines import MAX_LINE, LineReader, TooLong
from cityunit.console.prompt import describe
from cityunit.console.protocol import Session, event_json
from cityunit.core.events import Event, EventKind
from cityunit.loop.clock import VirtualClock
from cityunit_sim.board import SimBoard
from fakes import simulator_pty


def test_line_reader_splits_joins_and_drops_long_lines() -> None:
    reader = LineReader()
    assert list(reader.feed(b"PI")) == []
    assert list(reader.feed(b"NG\r\nSTATE\nx")) == [b"PING", b"STATE"]
    out = list(reader.feed(b"y" * (MAX_LINE + 10)))
    assert out == []
    out = list(reader.feed(b"z\nPING\n"))
    assert isinstance(out[0], TooLong) and out[1:] == [b"PING"]


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.binary(max_size=400), max_size=8))
def test_any_bytes_get_only_ok_or_err_replies(chunks: list[bytes]) -> None:
    replies: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1) as board:
        session = Session(board.runtime, replies.append, controls=board.controls)
        reader = LineReader()
        for chunk in [*chunks, b"\nPING\n"]:
            for line in reader.feed(chunk):
                session.receive(line)
    replies = [r for r in replies if not r.startswith("EVT ")]
    assert replies[-1] == "OK PONG"
    assert all(r == "OK" or r.startswith(("OK ", "ERR ")) for r in replies)
    for r in replies:
        if r.startswith("ERR "):
            assert r.split()[1] in {
                "unknown-command",
                "bad-argument",
                "line-too-long",
                "not-allowed",
            }


def test_describe_makes_events_readable() -> None:
    line = 'EVT {"t_ms":21805,"event":"auction.end","stopped":false}'
    assert describe(line) == "     21.805 s  auction.end  stopped=false"
    assert describe("OK PONG") == "OK PONG"
    assert describe("EVT not json") == "EVT not json"


def test_console_json_mode_passes_lines_through_for_scripts() -> None:
    with simulator_pty() as path:
        assert os.path.exists(path)
        client = subprocess.Popen(
            [sys.executable, "-m", "cityunit", "console", path, "--json"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert client.stdin is not None and client.stdout is not None
        client.stdin.write("PING\nSWITCH ON\nSTATE\n")
        client.stdin.flush()
        assert client.stdout.readline() == "OK PONG\n"
        assert client.stdout.readline() == "OK\n"
        assert client.stdout.readline().startswith('OK {"power":"on"')
        client.stdin.close()
        assert client.wait(timeout=10) == 0


@pytest.mark.parametrize("mode", [["--json"], []])
def test_a_piped_console_answers_every_line_and_writes_no_escape_codes(mode: list[str]) -> None:
    with simulator_pty() as path:
        result = subprocess.run(
            [sys.executable, "-m", "cityunit", "console", path, *mode],
            input="PING\nSTATE\n\nbogus\nHOLD AUCTION 100\n", capture_output=True,
            text=True, timeout=30,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == "OK PONG" and lines[1].startswith('OK {"power"')
        assert lines[2].startswith("ERR unknown-command bogus") and lines[3] == "OK"
        assert len(lines) == 4 and "\x1b" not in result.stdout


def test_console_names_a_port_it_cannot_open() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cityunit", "console", "/dev/nonexistent-port"],
        capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert result.returncode == 2 and "cannot open /dev/nonexistent-port" in result.stderr
    assert result.stderr == (
        "cityunit console: cannot open /dev/nonexistent-port: No such file or directory\n"
    ), "said once (pyserial's own words said the port and the errno twice more)"


# ----- the protocol's own page says what the code does ---------------------------------------

PROTOCOL_DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"


def table_names(heading: str) -> set[str]:
    """The names in the first column of the table under `## heading` in docs/protocol.md."""
    section = PROTOCOL_DOC.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([^`]+)` \|", section, flags=re.MULTILINE))


def test_every_event_is_documented_and_every_documented_event_exists() -> None:
    assert table_names("Events") == {str(kind) for kind in EventKind} | {"dropped"}


def test_every_state_key_is_documented() -> None:
    replies: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1) as board:
        Session(board.runtime, replies.append, controls=board.controls).receive(b"STATE")
    assert table_names("STATE") == set(json.loads(replies[-1][3:]))


def test_a_served_console_closes_with_the_board() -> None:
    import select
    import time

    from cityunit.console.links import PtyLink

    link = PtyLink()
    with SimBoard(Config(), VirtualClock(), seed=1) as board:
        served = board.serve(link, controls=board.controls)
        client = os.open(link.path, os.O_RDWR | os.O_NOCTTY)
        os.write(client, b"EVENTS ON\nSWITCH ON\n")
        got, end = b"", time.monotonic() + 10
        while b'"hour.start"' not in got and time.monotonic() < end:
            board.runtime.pump()
            if select.select([client], [], [], 0.05)[0]:
                got += os.read(client, 4096)
        assert b'"hour.start"' in got
    os.close(client)
    assert served.closed and not served._out.is_alive()
    assert link.closed
    with pytest.raises(OSError):
        os.fstat(link._master)  # the pty is closed


@given(
    kind=st.sampled_from(list(EventKind)),
    t=st.integers(0, 10**12),
    level=st.floats(0, 1),
    hz=st.none() | st.integers(0, 20_000),
)
def test_event_lines_are_the_json_modules_bytes(kind, t, level, hz) -> None:
    data = {"level": level} if kind is EventKind.LED else {"hz": hz}
    event = Event(t, kind, data)
    assert event_json(event) == json.dumps(event.as_dict(), separators=(",", ":"))


# ----- strict parsing -------------------------------------------------------------------


def replies_to(*lines: bytes, simulator: bool = True) -> list[str]:
    out: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1) as board:
        session = Session(board.runtime, out.append, controls=board.controls if simulator else None)
        for line in lines:
            session.receive(line)
    return [r for r in out if not r.startswith("EVT ")]


@given(cut=st.integers(0, MAX_LINE + 2), ending=st.sampled_from([b"\n", b"\r\n"]))
def test_a_full_length_line_is_taken_wherever_the_reads_split_it(cut: int, ending: bytes) -> None:
    line = b"PING" + b" " * (MAX_LINE - 4)
    data = line + ending + b"PING\n"
    reader = LineReader()
    out = [*reader.feed(data[:cut]), *reader.feed(data[cut:])]
    assert out == [line, b"PING"]
    too_long = LineReader()
    assert isinstance([*too_long.feed(b"x" * (MAX_LINE + 1)), *too_long.feed(ending)][0], TooLong)


def test_blank_lines_get_no_reply_and_only_ascii_spaces_and_tabs_separate_words() -> None:
    assert replies_to(b"", b"  \t ", b"PING") == ["OK PONG"]
    assert replies_to(b"\tPING  \t", b"SWITCH \t ON") == ["OK PONG", "OK"]
    for line in ("SWITCH\u3000ON", "\u3000", "\u2028", "PING\x0b", "p\u0131ng"):
        (reply,) = replies_to(line.encode())
        assert reply.startswith("ERR unknown-command "), (line, reply)


@pytest.mark.parametrize(
    "number", ["1_000", "+5", "-0", "\u0661\u0662", "\uff11\uff12", "5.0", " "]
)
def test_numbers_are_ascii_digits_only(number: str) -> None:
    for command in (f"ADVANCE {number}", f"HOLD AUCTION {number}", f"SEED {number}"):
        (reply,) = replies_to(command.encode())
        assert reply.startswith("ERR bad-argument"), (command, reply)
    assert replies_to(b"ADVANCE 0010", b"SEED 18446744073709551615") == ["OK", "OK"]


def test_every_command_checks_its_arguments() -> None:
    for line in (b"HELP x", b"PING x", b"VERSION 1", b"STATE now", b"SETTINGS all"):
        (reply,) = replies_to(line)
        assert reply.startswith("ERR bad-argument usage:"), (line, reply)


def test_echoed_words_cannot_reach_the_clients_terminal() -> None:
    (reply,) = replies_to("\x1b[2J\x07bogus\x9b\u202e".encode())
    assert reply.startswith("ERR unknown-command \\x1b[2J\\x07bogus")
    assert all(" " <= c <= "~" for c in reply)
    (reply,) = replies_to(b"SET \x1b]0;pwned\x07 on")
    assert reply.startswith("ERR bad-argument unknown setting \\x1b]0;pwned\\x07")


# ----- RESET (protocol 1.1) ---------------------------------------------------------------

SCRIPT = [b"EVENTS ON", b"SWITCH ON", b"PRESS AUCTION", b"ADVANCE 60000", b"PRESS BUILD",
          b"ADVANCE 3000", b"STATE", b"SETTINGS"]  # fmt: skip


def relative(lines: list[str], t0: int) -> list[str]:
    """Replies and events with unit time counted from t0."""

    def shift(match: re.Match[str]) -> str:
        return f'"t_ms":{int(match.group(1)) - t0}'

    return [re.sub(r'"t_ms":(\d+)', shift, line) for line in lines]


@given(
    junk=st.lists(
        st.sampled_from(
            [
                b"SWITCH ON",
                b"PRESS AUCTION",
                b"PRESS BUILD",
                b"HOLD BUILD 1600",
                b"SET volume off",
                b"SET odds uniform",
                b"ADVANCE 7000",
                b"SWITCH OFF",
                b"SEED 5",
                b"EVENTS OFF",
            ]
        ),
        max_size=12,
    )
)
@settings(max_examples=40, deadline=None)
def test_after_reset_a_simulator_plays_as_one_just_started(junk: list[bytes]) -> None:
    fresh: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=3) as board:
        session = Session(board.runtime, fresh.append, controls=board.controls)
        for line in SCRIPT:
            session.receive(line)
    used: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=3) as board:
        session = Session(board.runtime, used.append, controls=board.controls)
        for line in [*junk, b"EVENTS OFF", b"RESET"]:
            session.receive(line)
        t0, start = board.unit.now, len(used)
        for line in SCRIPT:
            session.receive(line)
    assert relative(used[start:], t0) == fresh


def test_reset_and_protocol_are_there_and_reset_is_for_simulators() -> None:
    assert replies_to(b"PROTOCOL", b"RESET") == ["OK 1.2", "OK"]
    assert replies_to(b"RESET", simulator=False)[0].startswith("ERR not-allowed ")


# ----- SCREEN and EDGE (protocol 1.2) -------------------------------------------------------


def test_screen_is_the_picture_the_unit_draws_and_edge_a_raw_contact() -> None:
    import base64

    from PIL import Image

    from cityunit.display.render import render

    out: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1) as board:
        session = Session(board.runtime, out.append, controls=board.controls)
        for line in (b"EVENTS ON", b"EDGE POWER LOW", b"ADVANCE 1000", b"SCREEN"):
            session.receive(line)
        size, data = out[-1].split(" ")[1:]
        picture = Image.frombytes("1", (128, 64), base64.b64decode(data))
        snapshot = board.unit.snapshot()
        assert (
            size == "128x64"
            and picture.tobytes() == render(snapshot.picture.screen, "en").tobytes()
        )
        assert snapshot.power, "EDGE POWER LOW closed the switch: ON"
        chatter = [b"EDGE AUCTION LOW", b"ADVANCE 2", b"EDGE AUCTION HIGH", b"ADVANCE 3"] * 4
        for line in [*chatter, b"EDGE AUCTION LOW", b"ADVANCE 80", b"EDGE AUCTION HIGH"]:
            session.receive(line)
        session.receive(b"ADVANCE 100")
    events = [line for line in out if line.startswith("EVT ")]
    assert sum('"auction.start"' in e for e in events) == 1, "the chatter debounced to one tap"


def test_screen_and_edge_are_for_simulators_and_check_their_words() -> None:
    assert replies_to(b"SCREEN", b"EDGE BUILD LOW", simulator=False) == [
        "ERR not-allowed SCREEN is for the simulator only",
        "ERR not-allowed EDGE is for the simulator only",
    ]
    bad = replies_to(b"EDGE", b"EDGE START LOW", b"EDGE BUILD DOWN", b"SCREEN 1")
    assert [r.split(" ")[:2] for r in bad] == [["ERR", "bad-argument"]] * 4, bad


def test_fault_breaks_the_simulators_display_and_the_unit_reacts_as_on_a_pi() -> None:
    """Lost, tried again every second (the loop's own deadlines run inside ADVANCE), back."""
    out: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1, observed=False) as board:
        session = Session(board.runtime, out.append, controls=board.controls)
        for line in (b"EVENTS ON", b"SWITCH ON", b"FAULT DISPLAY GONE", b"ADVANCE 3500"):
            session.receive(line)
        for line in (b"FAULT DISPLAY BACK", b"ADVANCE 2000", b"FAULT BUS 2", b"FAULT DISPLAY"):
            session.receive(line)
        assert out[-1].startswith("ERR bad-argument expected DISPLAY GONE|BACK, BUS")
        session.receive(b"ADVANCE 3000")
    faults = [json.loads(line[4:]) for line in out if '"fault"' in line]
    found = [(f["t_ms"], f["detail"][:4]) for f in faults]
    # BUS 2 at 5.5 s: the next frame (the clock's, at 6 s) fails, then the start at 7 s;
    # back at 8 s. Each frame is drawn inside ADVANCE at its own time, as on a Pi.
    assert found == [(0, "lost"), (4000, "back"), (6000, "lost"), (8000, "back")]


def _faults_and_resumes(out: list[str]) -> list[tuple[int, str, object]]:
    seen = [json.loads(line[4:]) for line in out if line.startswith("EVT ")]
    return [
        (e["t_ms"], e["event"], e.get("detail", e.get("hour_elapsed_ms")))
        for e in seen
        if e["event"] in ("fault", "resume")
    ]


def test_fault_save_is_told_once_tried_every_5_s_and_a_power_cut_resumes_the_last_save() -> None:
    """The saves fail from 62 s: told once; tried again every 5 s, OFF too, until mended.
    A power cut then starts the unit again from its last good save, the switch ON still,
    and what was played since that save is lost, as on a Pi; the simulator without a
    state.dir keeps its game in memory for that."""
    out: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1, observed=False) as board:
        session = Session(board.runtime, out.append, controls=board.controls)
        script = [b"EVENTS ON", b"SWITCH ON", b"ADVANCE 62000", b"FAULT SAVE FAIL",
                  b"ADVANCE 3000", b"SWITCH OFF", b"ADVANCE 21000", b"FAULT SAVE OK",
                  b"ADVANCE 5000", b"SWITCH ON", b"ADVANCE 12000", b"FAULT SAVE 2",
                  b"ADVANCE 11000", b"FAULT POWER CUT", b"STATE"]  # fmt: skip
        for line in script:
            session.receive(line)
        state = json.loads(out[-1][3:])
    assert _faults_and_resumes(out) == [
        (65_000, "fault", "cannot save: No space left on device"),  # the 5-s save at 65 s
        (90_000, "fault", "back"),  # OFF from 65 s, yet tried at 70, 75 ... 90 s
        (106_000, "fault", "cannot save: No space left on device"),  # SAVE 2: 106 s, and
        (111_000, "fault", "back"),  # the retry at 111 s; the 5-s save there works
        (114_000, "resume", 111_000 - 91_000),  # the 3 s played since are lost
    ]
    assert state["power"] == "on" and state["hour"] == 2 and state["mode"] == "idle"


def test_a_power_cut_resumes_from_the_state_file_and_leaves_an_off_unit_off(
    tmp_path: Path,
) -> None:
    """With state.dir, the cut's restart reads the file, as the Pi's boot does."""
    out: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1, observed=False, state_dir=tmp_path) as board:
        session = Session(board.runtime, out.append, controls=board.controls)
        for line in (b"EVENTS ON", b"SWITCH ON", b"PRESS AUCTION", b"ADVANCE 7000"):
            session.receive(line)
        board.runtime.saver.flush()
        (tmp_path / "state.json").write_bytes(
            (tmp_path / "state.json").read_bytes().replace(b'"hour":1', b'"hour":7')
        )
        for line in (b"FAULT POWER CUT", b"STATE", b"SWITCH OFF", b"FAULT POWER CUT", b"STATE"):
            session.receive(line)
    on, off = (json.loads(line[3:]) for line in out if line.startswith("OK {"))
    assert (on["power"], on["hour"], on["mode"]) == ("on", 7, "idle"), "the auction is gone"
    assert (off["power"], off["mode"]) == ("off", "off")
    assert _faults_and_resumes(out) == [(7_000, "resume", 5_000)], "from the 5-s save"


def test_reset_mends_what_fault_broke_and_forgets_the_saved_game() -> None:
    """The pytest fixture RESETs one simulator between tests: a fault, its news or a saved
    game left by one test must not reach the next (a display gone stayed gone, a power
    cut resumed the last test's game, a `back` came in the next test)."""
    out: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1, observed=False) as board:
        session = Session(board.runtime, out.append, controls=board.controls)
        for line in (
            b"EVENTS ON",
            b"SWITCH ON",
            b"ADVANCE 9000",
            b"FAULT SAVE FAIL",
            b"FAULT DISPLAY GONE",
            b"ADVANCE 1000",
            b"RESET",
            b"ADVANCE 6000",
            b"FAULT POWER CUT",
            b"STATE",
        ):
            session.receive(line)  # fmt: skip
    state = json.loads(out[-1][3:])
    assert (state["power"], state["hour"]) == ("off", 0), "no game from before the RESET"
    faults = [json.loads(line[4:]) for line in out if '"fault"' in line]
    assert [(f["t_ms"], f["part"], f["detail"][:4]) for f in faults] == [
        (9_000, "display", "lost"), (10_000, "state", "cann"),
    ], "power-on says nothing of parts: no back for the next test to find"  # fmt: skip


def test_ok_and_back_mend_a_count_too_and_a_fault_that_breaks_nothing_costs_nothing() -> None:
    """SAVE OK after SAVE 3 left the next saves failing; BUS 0 turned on the frame by
    frame drawing (~10x slower ADVANCEs) though nothing was broken."""
    out: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1, observed=False) as board:
        session = Session(board.runtime, out.append, controls=board.controls)
        for line in (b"EVENTS ON", b"SWITCH ON", b"FAULT BUS 0", b"FAULT SAVE 3"):
            session.receive(line)
        assert board.runtime.display is None  # (no frame by frame drawing: no display at all)
        for line in (b"FAULT SAVE OK", b"FAULT BUS 2", b"FAULT DISPLAY BACK", b"ADVANCE 30000"):
            session.receive(line)
    assert [line for line in out if '"fault"' in line] == []


def test_reset_on_the_real_clock_leaves_no_news_of_a_save_for_the_next_test() -> None:
    """The saver's own thread (the real clock): a failing save's news, and its `back`
    after the mending, must come before RESET's OK or never."""
    from cityunit.loop.clock import MonotonicClock

    out: list[str] = []
    with SimBoard(Config(), MonotonicClock(), seed=1, observed=False) as board:
        session = Session(board.runtime, out.append, controls=board.controls)
        for line in (b"EVENTS ON", b"FAULT SAVE FAIL", b"SWITCH ON", b"SWITCH OFF"):
            session.receive(line)
        board.runtime.saver.flush()
        board.runtime.pump()  # the saver's thread woke the loop: told
        assert any('"cannot save' in line for line in out)
        session.receive(b"RESET")
        told = len(out)
        for _ in range(3):
            board.runtime.pump()
        board.runtime.saver.flush()
        board.runtime.pump()
    assert out[told - 1] == "OK" and out[told:] == [], out[told - 1 :]


def test_fault_is_for_simulators() -> None:
    assert replies_to(b"FAULT DISPLAY GONE", simulator=False) == [
        "ERR not-allowed FAULT is for the simulator only"
    ]


PROTOCOL_1_2 = st.one_of(
    st.tuples(st.sampled_from(["AUCTION", "BUILD", "POWER", "auction", "LEFT"]),
              st.sampled_from(["LOW", "HIGH", "low", "MID"])).map(lambda w: f"EDGE {w[0]} {w[1]}"),
    st.integers(0, 90_000).map(lambda ms: f"ADVANCE {ms}"),
    st.just("SCREEN"),
    st.sampled_from(["FAULT DISPLAY GONE", "FAULT DISPLAY BACK", "FAULT BUS 3", "FAULT BUS x",
                     "FAULT", "FAULT DISPLAY", "SWITCH ON", "PRESS BUILD", "FAULT SAVE FAIL",
                     "FAULT SAVE OK", "FAULT SAVE 2", "FAULT POWER CUT", "FAULT POWER"]),
)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(PROTOCOL_1_2, min_size=1, max_size=40))
def test_protocol_1_2_answers_every_line_and_screen_is_the_unit_s_picture(lines: list[str]) -> None:
    """Whatever the order: one reply a line, never a traceback, and each SCREEN the picture
    of the screen the unit is on at that moment."""
    import base64

    from cityunit.display.render import render

    out: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1, observed=False) as board:
        session = Session(board.runtime, out.append, controls=board.controls)
        for line in lines:
            before = len([r for r in out if not r.startswith("EVT ")])
            session.receive(line.encode())
            replies = [r for r in out if not r.startswith("EVT ")]
            assert len(replies) == before + 1, (line, replies[before:])
            reply = replies[-1]
            assert reply.startswith(("OK", "ERR bad-argument")), (line, reply)
            if line == "SCREEN":
                snapshot = board.unit.snapshot()
                drawn = render(*snapshot.picture).tobytes()
                assert base64.b64decode(reply.split(" ")[2]) == drawn
