"""systemd's notify protocol through a test NOTIFY_SOCKET: READY, STATUS, WATCHDOG."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from cityunit.board import Board
from cityunit.config import Config, Hardware
from cityunit.loop.clock import MonotonicClock
from cityunit.parts.notify import Notifier
from fakes import mock_factory


@pytest.fixture
def listener(tmp_path: Path) -> Iterator[socket.socket]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(str(tmp_path / "notify"))
    sock.settimeout(10)
    yield sock
    sock.close()


def receive(sock: socket.socket, want: str) -> list[str]:
    """Messages up to and including the first one containing `want`."""
    got = []
    while True:
        msg = sock.recv(4096).decode()
        got.append(msg)
        if want in msg:
            return got


def test_the_watchdog_interval_is_half_of_systemds() -> None:
    assert Notifier({"WATCHDOG_USEC": "10000000"}).watchdog_ms == 5_000
    assert Notifier({"WATCHDOG_USEC": "10000000", "WATCHDOG_PID": "1"}).watchdog_ms is None
    assert Notifier({}).watchdog_ms is None and Notifier({}).address is None
    assert Notifier({"NOTIFY_SOCKET": "@x"}).address == "\0x"


def test_cityunit_run_says_ready_then_feeds_the_watchdog_then_stopping(
    listener: socket.socket, tmp_path: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[display]\ndriver = "none"\n')
    env = {**os.environ, "GPIOZERO_PIN_FACTORY": "mock",
           "NOTIFY_SOCKET": listener.getsockname(), "WATCHDOG_USEC": "100000"}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "cityunit", "run", "--config", str(config)],
        env=env, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        first = receive(listener, "READY=1")
        assert "STATUS=switch OFF" in first
        beats = [m for m in receive(listener, "WATCHDOG=1")]
        for _ in range(5):
            beats += receive(listener, "WATCHDOG=1")
        assert sum(m == "WATCHDOG=1" for m in beats) >= 6
        proc.send_signal(signal.SIGTERM)
        receive(listener, "STOPPING=1")
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()


def test_a_blocked_loop_stops_feeding_the_watchdog(listener: socket.socket) -> None:
    notifier = Notifier({"NOTIFY_SOCKET": listener.getsockname(), "WATCHDOG_USEC": "40000"})
    assert notifier.watchdog_ms == 20
    config = Config(hardware=Hardware(driver="none"))
    with Board(
        config, MonotonicClock(), pin_factory=mock_factory(),
        heartbeat=(notifier.watchdog_ms, notifier.watchdog),
    ) as board:  # fmt: skip
        runtime = board.runtime
        loop = threading.Thread(target=runtime.run, daemon=True)
        loop.start()
        gate, blocked = threading.Event(), threading.Event()
        try:
            receive(listener, "WATCHDOG=1")
            runtime.call(lambda: (blocked.set(), gate.wait(10)))
            assert blocked.wait(10)
            while True:  # what was sent before the block took hold
                listener.settimeout(0.1)
                try:
                    listener.recv(4096)
                except TimeoutError:
                    break
            listener.settimeout(0.3)  # fifteen intervals: a live loop would have beaten often
            with pytest.raises(TimeoutError):
                listener.recv(4096)
            gate.set()
            listener.settimeout(10)
            assert "WATCHDOG=1" in receive(listener, "WATCHDOG=1")
        finally:
            gate.set()
            runtime.stop()
            loop.join(10)
