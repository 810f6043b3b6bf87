"""What a frame costs: its bytes on the Pi's I2C bus, counted on the virtual clock (bytes,
not seconds: the same on any machine), and the time to render it."""

from __future__ import annotations

import statistics
import time
from functools import partial

from cityunit.board import Board
from cityunit.config import Config
from cityunit.console.controls import SimulatorControls
from cityunit.console.protocol import Session
from cityunit.core.permit import Permit
from cityunit.core.rules import Rules
from cityunit.core.screens import (
    AuctionScreen,
    HourEndScreen,
    HourScreen,
    PermitScreen,
    Screen,
    SoldScreen,
)
from cityunit.display.render import render
from cityunit.loop.clock import VirtualClock
from cityunit.loop.inbox import Input
from cityunit.parts.gpio import mock_pins
from cityunit.tools.bench.rig import MeasuredPanel, bus_ms, measured_board, pct
from cityunit.tools.bench.rig import ms as _ms

# Every kind of press, from the screen it leaves to the one it brings: taps, and the long
# presses (the menu, a cancelled auction) reported apart.
TAPS = [
    ("PRESS AUCTION", "ADVANCE 3000"),  # the hour -> an auction
    ("PRESS AUCTION", "ADVANCE 4000"),  # the auction stopped -> STOPPED
    ("PRESS BUILD", "ADVANCE 2000"),  # the hour -> the draw
    ("PRESS BUILD", "ADVANCE 2000"),  # a permit -> the next draw
    ("PRESS AUCTION", "ADVANCE 3000"),  # a permit -> an auction
    ("HOLD AUCTION 1600", "ADVANCE 3000"),  # cancelled -> the hour
    ("HOLD BUILD 1600", "ADVANCE 500"),  # the hour -> the menu
    ("PRESS AUCTION", "ADVANCE 500"),  # a setting changed
    ("PRESS BUILD", "ADVANCE 500"),  # the next item
    ("HOLD BUILD 1600", "ADVANCE 500"),  # the menu -> the hour
]


class _Script:
    """Console lines through the loop, one at a time, as a client would send them."""

    def __init__(self, board: Board, panel: MeasuredPanel) -> None:
        self.board, self.panel = board, panel
        self.session = Session(board.runtime, lambda line: None, controls=SimulatorControls())

    def run(self, *lines: str) -> list[int]:
        """The bytes of each frame these lines caused."""
        first = len(self.panel.frames)
        for line in lines:
            self.board.inbox.put(Input(0, partial(self.session.receive, line.encode())))
            self.board.runtime.pump()
        return [size for _, size in self.panel.frames[first:]]


def frames(rounds: int = 10) -> dict[str, float]:
    """The idle clock ticking, an auction's animation, and the frame each press brings."""
    idle: list[float] = []
    auction: list[float] = []
    taps: list[float] = []
    holds: list[int] = []
    every: list[int] = []
    for seed in range(rounds):
        config = Config(rules=Rules(auction_min_s=40, auction_max_s=50))
        board, panel = measured_board(config, VirtualClock(), mock_pins())
        with board:
            script = _Script(board, panel)
            script.run(f"SEED {seed}", "SWITCH ON", "ADVANCE 1500")
            idle += script.run(*["ADVANCE 1000"] * 60)
            script.run("PRESS AUCTION")
            auction += script.run(*["ADVANCE 250"] * 120)
            script.run("ADVANCE 20000")
            for press, after in TAPS:
                (taps if press.startswith("PRESS") else holds).extend(script.run(press)[:1])
                script.run(after)
            every += [size for _, size in panel.frames]
    tap_bytes = pct(taps, 99)
    return {
        "frame_bus_bytes_idle_p50": statistics.median(idle),
        "frame_bus_bytes_auction_p50": statistics.median(auction),
        "frame_bus_bytes_max": max(every),
        "tap_to_frame_bus_ms_p99": bus_ms(tap_bytes),
        "tap_to_frame_bus_ms_p99_at_100khz": bus_ms(tap_bytes, 100_000),
        "tap_to_frame_bus_ms_p99_at_1mhz": bus_ms(tap_bytes, 1_000_000),
        "long_press_to_frame_bus_ms_max": bus_ms(max(holds)),
    }


def rendering(frames: int) -> dict[str, float]:
    screens: list[Screen] = [
        HourScreen(1, "12:34"), AuctionScreen(2), SoldScreen(False), PermitScreen(Permit.THREE),
        PermitScreen(Permit.STATION), PermitScreen(Permit.TWO, drawing=True), HourEndScreen(2),
    ]  # fmt: skip
    times = []
    for n in range(frames):
        screen = screens[n % len(screens)]
        t0 = time.perf_counter_ns()
        render(screen, "fr" if n % 2 else "en")
        times.append(_ms(time.perf_counter_ns() - t0))
    return {"frame_render_ms_p99": pct(times, 99)}
