"""An hour of play on the virtual clock, as the simulator plays it: in the process (the
firmware's own cost) and through `cityunit sim --headless` over pipes (what a tester's
script waits for)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from functools import partial

from cityunit.config import Config
from cityunit.console.controls import SimulatorControls
from cityunit.console.protocol import Session
from cityunit.loop.clock import VirtualClock
from cityunit.loop.inbox import Input
from cityunit.tools.bench.rig import ms


def script() -> list[str]:
    """An auction run to its end every minute and a permit every 30 s, events on."""
    lines = ["EVENTS ON", "SWITCH ON"]
    for _ in range(60):
        lines += ["PRESS BUILD", "ADVANCE 1000", "PRESS AUCTION", "ADVANCE 50000"]
        lines += ["PRESS BUILD", "ADVANCE 9000"]
    return lines


def virtual_hour() -> dict[str, float]:
    """In the process, as a window observes it: the screen at the end of each command
    rendered and sent to the OLED's mirror, every event encoded as the console sends it."""
    from cityunit.board import Board
    from cityunit.display.mirror import Mirror
    from cityunit.parts.gpio import mock_pins

    out: list[str] = []
    board = Board(Config(), VirtualClock(), pin_factory=mock_pins(), panel=Mirror(), seed=3)
    with board:
        receive = Session(board.runtime, out.append, controls=SimulatorControls()).receive
        t0 = time.perf_counter_ns()
        for line in script():  # through the loop, as a client's lines arrive
            board.inbox.put(Input(0, partial(receive, line.encode())))
            board.runtime.pump()
        wall = ms(time.perf_counter_ns() - t0)
    events = sum(line.startswith("EVT ") for line in out)
    return {"virtual_hour_wall_ms": wall, "virtual_hour_events": events}


def console_hour() -> dict[str, float]:
    """The same hour sent whole through `cityunit sim --headless --clock virtual`, from the
    first line written to the last reply read (the process's start-up not counted)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "cityunit", "sim", "--headless", "--clock", "virtual",
         "--console", "stdio", "--seed", "3"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    read = proc.stdout.fileno()

    def replies_until(count: int) -> int:
        seen, buffer = 0, b""
        while seen < count:
            data = os.read(read, 1 << 16)
            if not data:
                raise RuntimeError("the simulator ended early")
            *lines, buffer = (buffer + data).split(b"\n")
            seen += sum(not line.startswith(b"EVT ") for line in lines)
        return seen

    try:
        proc.stdin.write(b"PING\n")
        replies_until(1)  # it is up
        lines = script()
        t0 = time.perf_counter_ns()
        proc.stdin.write(("\n".join(lines) + "\n").encode())
        replies_until(len(lines))
        wall = ms(time.perf_counter_ns() - t0)
        proc.stdin.close()
        proc.wait(10)
    finally:  # never left running (nor in --slow's group)
        proc.kill()
        proc.wait()
    return {"console_hour_wall_ms": wall}
