"""cityunit.console.client against a port that is not a well-behaved unit (issue 38): bad event
lines, a port that answers everything, replies that come late, a picture too large. Each
port here is a few lines of script, answering in the client's own threads."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from cityunit.console.client import Client, ProtocolError

ROOT = Path(__file__).resolve().parents[2]
STATE = {"power": "off", "mode": "off", "clock": "real", "t_ms": 0}


class Port:
    """A port that answers each line it is sent with `answer(line)`'s lines, unless
    `hold` is set: then it keeps them until it is cleared (a slow unit)."""

    def __init__(self, answer: Callable[[str], list[str]]) -> None:
        self.answer = answer
        self.out: queue.Queue[bytes] = queue.Queue()
        self.hold = threading.Event()
        self.held: list[str] = []
        self.buffer = b""

    def write(self, data: bytes) -> None:
        self.buffer += data
        *lines, self.buffer = self.buffer.split(b"\n")
        for line in lines:
            said = self.answer(line.decode())
            if self.hold.is_set():
                self.held += said
            else:
                self.send(*said)

    def send(self, *lines: str) -> None:
        for line in lines:
            self.out.put(line.encode() + b"\n")

    def release(self) -> None:
        self.hold.clear()
        self.send(*self.held)
        self.held.clear()

    def read(self) -> bytes:
        return self.out.get()

    def close(self) -> None:
        self.out.put(b"")

    def client(self) -> Client:
        return Client(self.write, self.read, self.close)


def unit(
    extra: Callable[[str], list[str] | None] = lambda line: None,
) -> Callable[[str], list[str]]:
    """A unit's answers (a real unit's: SCREEN refused), `extra` first."""

    def answer(line: str) -> list[str]:
        said = extra(line)
        if said is not None:
            return said
        if line == "":
            return []
        if line == "HELP":
            return ["OK PING STATE HELP"]
        if line == "STATE":
            return ["OK " + json.dumps(STATE)]
        if line == "SCREEN":
            return ["ERR not-allowed a real unit"]
        return ["OK"]

    return answer


@pytest.mark.parametrize(
    "bad",
    [
        'EVT {"t_ms": 5}',  # no name
        'EVT {"event": ["power"], "t_ms": 5}',  # a list for a name
        "EVT " + "[" * 100_000 + "]" * 100_000,  # deeper than json can parse
        "EVT {not json",
    ],
    ids=["no-name", "list-name", "deep", "not-json"],
)
def test_a_bad_event_line_is_dropped_and_counted_and_the_reader_goes_on(bad: str) -> None:
    port = Port(unit(lambda line: [bad, 'EVT {"event": "power", "on": true}', "OK"]
                     if line == "PING" else None))  # fmt: skip
    with port.client() as c:
        c.ok("PING")
        assert c.dropped_lines == 1
        assert c.wait_for("power", within_ms=1_000)["on"] is True, "the next line was read"
        assert c.state()["mode"] == "off", "replies still come"


def test_a_reader_that_fails_fails_every_waiting_call_at_once_with_its_cause(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    port = Port(unit())
    c = port.client()
    monkeypatch.setattr(c, "_line", lambda line: 1 / 0)  # a bug of the reader's own
    waiting: queue.Queue[BaseException] = queue.Queue()

    def wait() -> None:
        try:
            c.wait_for("power", within_ms=30_000)
        except BaseException as e:
            waiting.put(e)

    waiter = threading.Thread(target=wait)
    waiter.start()
    port.send("EVT {}")  # the line the reader fails on
    failed = waiting.get(timeout=10)
    assert isinstance(failed, ConnectionError) and "ZeroDivisionError" in str(failed)
    with pytest.raises(ConnectionError, match="ZeroDivisionError"):
        c.state()  # at once, not after 30 s
    waiter.join()
    c.close()


@pytest.mark.parametrize(
    "answer",
    [
        lambda line: [line],  # an echo (a loopback plug, a terminal)
        lambda line: ["OK"],  # a modem: OK to anything
        lambda line: ["$GPGGA,0"] * 300,  # a device that talks on and on
    ],
    ids=["echo", "modem", "chatter"],
)
def test_a_port_that_answers_but_not_as_a_unit_is_said_so_in_bounded_time(
    answer: Callable[[str], list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a reply's wait shortened (30 s), as long still as a loaded CI needs to read a line
    monkeypatch.setattr(Client.reply, "__defaults__", (3.0,))
    with pytest.raises(ConnectionError, match="this port answers, but not as a cityunit does"):
        Port(answer).client()


def test_a_reply_that_comes_after_its_timeout_is_never_the_next_commands() -> None:
    port = Port(unit(lambda line: ["OK late"] if line == "SLOW" else None))
    with port.client() as c:
        port.hold.set()
        with pytest.raises(TimeoutError):
            c.send("SLOW", timeout_s=0.2)
        port.release()  # the late reply comes now, before anything else
        assert c.state()["mode"] == "off", "STATE's own reply, not SLOW's"
        assert c.ok("PING") == "", "and in step after it"


@pytest.mark.parametrize(
    "reply",
    ["OK 100000x100000 AAAA", "OK 128x64 AAAA", "OK 0x64 ", "OK 128x64 !!!!", "OK 128x64"],
)
def test_a_screen_reply_that_is_no_picture_of_its_size_is_refused(reply: str) -> None:
    port = Port(unit())  # a real unit's SCREEN while the client starts
    with port.client() as c:
        port.answer = unit(lambda line: [reply] if line == "SCREEN" else None)
        with pytest.raises(ProtocolError, match="SCREEN"):
            c.screen()


def test_a_type_checker_catches_a_mistyped_button_switch_part_or_state_key(
    tmp_path: Path,
) -> None:
    """Issue 38: the client took plain str, and mypy --strict passed each of these."""
    script = tmp_path / "script.py"
    script.write_text(
        "from cityunit.console.client import Client\n\n\ndef play(unit: Client) -> None:\n"
        '    unit.press("auctoin")\n    unit.switch("maybe")\n    unit.fault("displya", "gone")\n'
        '    print(unit.state()["mdoe"])\n'
        '    unit.press("auction")\n    unit.fault("bus", 3)\n    print(unit.state()["mode"])\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "cache"),
         str(script)],
        env={**os.environ, "MYPYPATH": str(ROOT / "firmware")}, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    errors = [
        line.split(": error: ")[0] for line in done.stdout.splitlines() if ": error: " in line
    ]
    assert errors == [f"{script}:{n}" for n in (5, 6, 7, 8)], done.stdout
