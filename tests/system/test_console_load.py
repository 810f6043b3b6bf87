"""The simulator's console from outside, as a client program: piped scripts, fuzzed lines
over stdio and a pty on both clocks, and clients that never read."""

from __future__ import annotations

import contextlib
import os
import random
import re
import select
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

SIM = [sys.executable, "-m", "cityunit", "sim", "--headless", "--seed", "1"]
MAX_LINE = 256


def run_script(script: bytes, clock: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*SIM, "--console", "stdio", "--clock", clock], input=script, capture_output=True,
        timeout=120,
    )  # fmt: skip


def replies(out: bytes) -> list[bytes]:
    return [line for line in out.splitlines() if not line.startswith(b"EVT ")]


@pytest.mark.parametrize("clock", ["real", "virtual"])
def test_twenty_thousand_piped_pings_get_twenty_thousand_replies(clock: str) -> None:
    result = run_script(b"PING\n" * 20_000, clock)
    assert result.returncode == 0 and b"Traceback" not in result.stderr
    assert replies(result.stdout) == [b"OK PONG"] * 20_000


def test_a_hold_pending_at_end_of_input_is_answered_and_so_is_what_follows() -> None:
    result = run_script(b"PING\nHOLD AUCTION 2000\nPING\nSTATE\n", "real")
    assert result.returncode == 0
    lines = replies(result.stdout)
    assert lines[:3] == [b"OK PONG", b"OK", b"OK PONG"] and lines[3].startswith(b'OK {"power"')
    assert len(lines) == 4


WORDS = [
    "PING", "VERSION", "HELP", "STATE", "SETTINGS", "EVENTS ON", "EVENTS OFF", "SWITCH ON",
    "SWITCH OFF", "PRESS AUCTION", "PRESS BUILD", "HOLD AUCTION 30", "HOLD BUILD 20",
    "ADVANCE 5000", "ADVANCE 60000", "SEED 7", "SET volume low", "SET language fr",
    "set Volume HIGH", "HELP x", "PRESS", "HOLD AUCTION +5", "ADVANCE 1_000", "BOGUS",
    "SWITCH\u3000ON", "\x1b[2J", "", " \t ", "SET nope 1", "ADVANCE -1", "SEED \u0661",
]  # fmt: skip


def fuzz_script(seed: int, lines: int = 400) -> tuple[bytes, int]:
    """Random commands, broken ones, random bytes and over-long lines, with CR or not:
    the script, and how many replies it must get (one per line that is not blank)."""
    rng = random.Random(seed)
    out, expected = bytearray(), 0
    for _ in range(lines):
        kind = rng.random()
        if kind < 0.7:
            line = rng.choice(WORDS).encode()
        elif kind < 0.9:
            line = bytes(
                rng.choice([*range(1, 10), *range(11, 256)]) for _ in range(rng.randrange(40))
            )
        else:
            line = b"X" * rng.randrange(MAX_LINE - 2, MAX_LINE + 40)
        end = rng.choice([b"\n", b"\r\n"])
        body = line[:-1] if end == b"\n" and line.endswith(b"\r") else line
        expected += bool(body.strip(b" \t"))
        out += line + end
    return bytes(out + b"PING\n"), expected + 1


@pytest.mark.parametrize("clock", ["real", "virtual"])
def test_fuzzed_lines_over_stdio_get_one_reply_each(clock: str) -> None:
    for seed in range(3):
        script, expected = fuzz_script(seed)
        result = run_script(script, clock)
        assert result.returncode == 0 and b"Traceback" not in result.stderr
        lines = replies(result.stdout)
        assert len(lines) == expected and lines[-1] == b"OK PONG", seed
        assert all(re.fullmatch(rb"OK( .*)?|ERR [a-z-]+ .*", line) for line in lines)
        assert all(32 <= b < 127 for line in lines for b in line if not line.startswith(b"OK {"))


class Sim:
    """`cityunit sim --console pty`, and a client on its pty."""

    def __init__(self, clock: str) -> None:
        self.process = subprocess.Popen(
            [*SIM, "--console", "pty", "--clock", clock],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        assert self.process.stdout is not None
        self.path = self.process.stdout.readline().decode().strip()
        self.fd = os.open(self.path, os.O_RDWR | os.O_NOCTTY | os.O_NONBLOCK)

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        return int(status.split("VmRSS:")[1].split()[0]) / 1024

    def stop(self) -> bytes:
        os.close(self.fd)
        self.process.terminate()
        _, err = self.process.communicate(timeout=30)
        assert self.process.returncode == 0, err
        return err


@pytest.mark.parametrize("clock", ["real", "virtual"])
def test_fuzzed_lines_over_a_pty_get_one_reply_each(clock: str) -> None:
    script, expected = fuzz_script(10)
    sim = Sim(clock)
    got = bytearray()

    def read() -> None:
        deadline = time.monotonic() + 60
        while len(replies(bytes(got))) < expected and time.monotonic() < deadline:
            if select.select([sim.fd], [], [], 1)[0]:
                got.extend(os.read(sim.fd, 65536))

    reader = threading.Thread(target=read)
    reader.start()
    view = memoryview(script)
    while view:
        select.select([], [sim.fd], [], 1)
        with contextlib.suppress(BlockingIOError):
            view = view[os.write(sim.fd, view[:512]) :]
    reader.join(90)
    err = sim.stop()
    assert b"Traceback" not in err
    assert len(replies(bytes(got))) == expected


@pytest.mark.parametrize("clock", ["real", "virtual"])
def test_a_client_that_never_reads_leaves_the_units_memory_flat(clock: str) -> None:
    """It sends and sends (events on, time moving) and reads nothing: the unit stops
    reading it, and its memory stays where it was."""
    sim = Sim(clock)
    load = b"EVENTS ON\nSWITCH ON\n" + b"PRESS AUCTION\nADVANCE 60000\nPING\nSTATE\n" * 4
    sim.process.stdout.close()  # type: ignore[union-attr]
    samples, accepted, end = [], 0, time.monotonic() + 4  # load for a while, not a wait
    while time.monotonic() < end:
        if select.select([], [sim.fd], [], 0.05)[1]:
            with contextlib.suppress(BlockingIOError):
                accepted += os.write(sim.fd, load)
        samples.append(sim.rss_mb())
    err = sim.stop()
    assert b"Traceback" not in err
    assert accepted < 200_000, "the unit stopped reading a client that does not read"
    settled = samples[len(samples) // 4 :]
    assert max(settled) - min(settled) < 3, (min(settled), max(settled))
