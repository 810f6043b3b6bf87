"""The hardware-in-the-loop suite: written only against the console protocol.

By default each test gets a fresh headless simulator on the virtual clock. With
`--target PORT` (a serial port or pyserial URL) the same tests talk to a real unit;
those that need the virtual clock (long stretches of time, SEED) are skipped there.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

REPLY_TIMEOUT = 30.0


class Client:
    """One console connection: commands in, replies and events out."""

    def __init__(self, write, close) -> None:
        self._write = write
        self._close = close
        self.lines: queue.Queue[str] = queue.Queue()
        self.events: list[dict[str, Any]] = []
        self.raw_events: list[str] = []

    def feed(self, text: str) -> None:
        """Called by the reader thread with each line received."""
        self.lines.put(text)

    def send_bytes(self, data: bytes) -> None:
        self._write(data)

    def reply(self) -> str:
        while True:
            text = self.lines.get(timeout=REPLY_TIMEOUT)
            if text.startswith("EVT "):
                self.raw_events.append(text)
                self.events.append(json.loads(text[4:]))
            else:
                return text

    def cmd(self, line: str) -> str:
        self._write((line + "\n").encode())
        return self.reply()

    def ok(self, line: str) -> str:
        reply = self.cmd(line)
        assert reply == "OK" or reply.startswith("OK "), f"{line!r} -> {reply!r}"
        return reply[3:]

    def state(self) -> dict[str, Any]:
        return json.loads(self.ok("STATE"))

    @property
    def virtual(self) -> bool:
        return self.state()["clock"] == "virtual"

    def advance(self, ms: int) -> None:
        self.ok(f"ADVANCE {ms}")

    def named(self, name: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e["event"] == name]

    def until(self, name: str, limit_ms: int, step_ms: int = 1_000) -> dict[str, Any]:
        """Advance in steps until an event called `name` arrives; return it."""
        seen = len(self.named(name))
        for _ in range(0, limit_ms, step_ms):
            self.advance(step_ms)
            found = self.named(name)
            if len(found) > seen:
                return found[seen]
        raise AssertionError(f"no {name} within {limit_ms} ms")

    def close(self) -> None:
        self._close()


def _reader(stream, client: Client) -> None:
    buffer = b""
    while True:
        data = stream()
        if not data:
            return
        buffer += data
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            client.feed(line.decode("utf-8", "replace").rstrip("\r"))


def simulator(*args: str) -> Client:
    proc = subprocess.Popen(
        [sys.executable, "-m", "cityunit", "sim", "--headless", "--console", "stdio", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        bufsize=0,
    )
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout

    def write(data: bytes) -> None:
        stdin.write(data)

    def close() -> None:
        stdin.close()
        try:
            assert proc.wait(timeout=10) == 0, "the simulator exits 0 at the end of its input"
        finally:
            proc.kill()

    client = Client(write, close)
    threading.Thread(target=_reader, args=(lambda: stdout.read(65536), client), daemon=True).start()
    return client


def serial_target(url: str) -> Client:
    import serial

    port = serial.serial_for_url(url.removeprefix("serial://"), baudrate=115200, timeout=None)
    client = Client(port.write, port.close)

    def read() -> bytes:
        try:
            return port.read(max(1, port.in_waiting))
        except (serial.SerialException, OSError, TypeError):
            return b""

    threading.Thread(target=_reader, args=(read, client), daemon=True).start()
    # A real unit keeps its state (and maybe unread lines) between tests: skip whatever
    # an earlier session left, then start each test from the switch OFF, quiet.
    client.send_bytes(b"EVENTS OFF\nHELP\n")
    while not client.reply().startswith("OK PING"):
        pass
    client.events.clear()
    client.raw_events.clear()
    client.ok("SWITCH OFF")
    return client


@pytest.fixture
def target(request: pytest.FixtureRequest) -> str:
    return request.config.getoption("--target")


@pytest.fixture
def unit(target: str) -> Iterator[Client]:
    client = (
        simulator("--clock", "virtual", "--seed", "1") if target == "sim" else serial_target(target)
    )
    yield client
    client.close()


@pytest.fixture
def virtual(unit: Client) -> Client:
    """The unit, for a test that needs the virtual clock (skipped on a real one)."""
    if not unit.virtual:
        pytest.skip("needs the virtual clock (the simulator)")
    return unit


@pytest.fixture
def playing(virtual: Client) -> Client:
    """The unit on the virtual clock, switched ON, with its events on."""
    virtual.ok("EVENTS ON")
    virtual.ok("SWITCH ON")
    return virtual
