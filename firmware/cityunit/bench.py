"""`cityunit bench`: the figures that say whether the unit reacts at once and keeps time.

Everything runs the real firmware: gpiozero mock pins (timestamped as they change), the
real luma SSD1306 driver over an I2C recorder that counts bytes, the real clock where
latency matters, the virtual clock for the hour of play. Figures, not pass/fail tests:
docs/performance.md says what they mean on a Pi.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gpiozero.pins.mock import MockFactory, MockPWMPin

from cityunit.board import Board
from cityunit.clock import MonotonicClock, VirtualClock
from cityunit.config import Config, Parts
from cityunit.console import Session
from cityunit.events import EventKind
from cityunit.oled import LumaPanel
from cityunit.permit import Permit
from cityunit.render import render
from cityunit.rules import Rules
from cityunit.screens import (
    AuctionScreen,
    HourEndScreen,
    HourScreen,
    PermitScreen,
    Screen,
    SoldScreen,
)

TARGETS = {
    "press_to_led_ms_p50": 5, "press_to_led_ms_p99": 5, "press_to_tone_ms_p99": 5,
    "press_to_frame_ms_p99": 5, "auction_end_error_ms_p99": 10,
    "final_blink_period_error_pct_p95": 10, "frame_render_ms_p99": 2, "frame_bytes_max": 1100,
    "idle_cpu_pct": 1, "startup_to_first_frame_ms": 400, "rss_mb": 60,
    "virtual_hour_wall_ms": 1000,
}  # fmt: skip


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


class TimedPin(MockPWMPin):
    """A mock pin that notes, to the nanosecond, when its level or frequency changes."""

    def __init__(self, factory: Any, info: Any) -> None:
        super().__init__(factory, info)
        self.changes: list[tuple[int, Any]] = []
        self.changed = threading.Condition()

    def _note(self, what: Any) -> None:
        with self.changed:
            self.changes.append((time.perf_counter_ns(), what))
            self.changed.notify_all()

    def _change_state(self, value: Any) -> bool:
        changed = bool(super()._change_state(value))
        if changed and self._function == "output":
            self._note(value)
        return changed

    def _set_frequency(self, value: Any) -> None:
        super()._set_frequency(value)
        self._note(("hz", value))

    def wait_change(self, after: int, timeout: float = 2.0) -> int | None:
        """The time of the first change after `after` (perf_counter_ns)."""
        end = time.monotonic() + timeout
        with self.changed:
            while True:
                for t, _ in self.changes:
                    if t > after:
                        return t
                left = end - time.monotonic()
                if left <= 0 or not self.changed.wait(left):
                    return None


class I2CRecorder:
    """An smbus stand-in that counts the bytes of each frame a display is sent."""

    FRAME_DATA = 128 * 64 // 8

    def __init__(self) -> None:
        self.frames: list[int] = []  # bytes on the wire per frame, commands included
        self.frame_times: list[int] = []
        self._bytes = self._data = 0

    def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
        if register == 0x00 and data[:1] == [0x21]:  # COLUMNADDR: a frame begins
            self._bytes = self._data = 0
        self._bytes += len(data) + 1  # the control byte rides along
        if register == 0x40:
            self._data += len(data)
            if self._data >= self.FRAME_DATA:
                self.frames.append(self._bytes)
                self.frame_times.append(time.perf_counter_ns())
                self._data = 0

    def close(self) -> None:
        pass


class Rig:
    """The firmware on timed mock pins, a recorded SSD1306 and a real clock, in a thread."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.factory = MockFactory(pin_class=TimedPin)
        self.bus = I2CRecorder()
        panel = LumaPanel(config.parts, bus=self.bus)
        self.board = Board(config, MonotonicClock(), pin_factory=self.factory, panel=panel, seed=1)
        self.runtime = self.board.runtime
        self.events: list[tuple[int, EventKind]] = []
        self.runtime.listeners.append(
            lambda e: self.events.append((time.perf_counter_ns(), e.event))
        )
        self.thread = threading.Thread(target=self.runtime.run, daemon=True)
        self.thread.start()

    def pin(self, part: str) -> TimedPin:
        pin: TimedPin = self.factory.pin(getattr(self.config.pins, part))
        return pin

    def __enter__(self) -> Rig:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """The loop stopped first: the board closes only once nothing else runs it."""
        self.runtime.stop()
        self.thread.join(5)
        if self.thread.is_alive():
            raise RuntimeError("the unit's loop did not stop within 5 s")
        self.board.close()


def _ms(ns: float) -> float:
    return ns / 1e6


def latency(presses: int) -> dict[str, float]:
    """From a pin edge to the LED, the buzzer and the display, over many AUCTION taps."""
    with Rig(Config()) as rig:
        power, button = rig.pin("power"), rig.pin("auction")
        led, buzzer = rig.pin("led"), rig.pin("buzzer")
        power.drive_low()
        time.sleep(0.5)
        to_led, to_tone, to_frame = [], [], []
        for _ in range(presses):
            t0 = time.perf_counter_ns()
            button.drive_low()
            t_led, t_tone = led.wait_change(t0), buzzer.wait_change(t0)
            if t_led and t_tone:
                to_led.append(_ms(t_led - t0))
                to_tone.append(_ms(t_tone - t0))
            time.sleep(0.04)
            frames = len(rig.bus.frame_times)
            t1 = time.perf_counter_ns()
            button.drive_high()  # the tap is decided on release: a new screen
            end = time.monotonic() + 2
            while len(rig.bus.frame_times) == frames and time.monotonic() < end:
                time.sleep(0.0002)
            if len(rig.bus.frame_times) > frames:
                to_frame.append(_ms(rig.bus.frame_times[frames] - t1))
            time.sleep(0.04)
    return {
        "press_to_led_ms_p50": statistics.median(to_led),
        "press_to_led_ms_p99": pct(to_led, 99),
        "press_to_tone_ms_p99": pct(to_tone, 99),
        "press_to_frame_ms_p99": pct(to_frame, 99),
        "presses": len(to_led),
        "frame_bytes_max": max(rig.bus.frames),
    }


def auctions(count: int) -> dict[str, float]:
    """Fixed 2 s auctions on the real clock: how late each ends; how true its final flashes are."""
    rules = Rules(auction_mode="fixed", auction_fixed_s=2, auction_final_s=1)
    with Rig(Config(rules=rules)) as rig:
        rig.pin("power").drive_low()
        time.sleep(0.3)
        errors, periods = [], []
        led = rig.pin("led")
        for _ in range(count):
            button = rig.pin("auction")
            button.drive_low()
            time.sleep(0.03)
            seen = len(rig.events)
            button.drive_high()
            time.sleep(2.3)
            new = rig.events[seen:]
            start = next(t for t, name in new if name is EventKind.AUCTION_START)
            final = next(t for t, name in new if name is EventKind.AUCTION_FINAL)
            end = next(t for t, name in new if name is EventKind.AUCTION_END)
            errors.append(abs(_ms(end - start) - 2000))
            rises = [t for t, v in led.changes if final <= t < end and v == 1.0]
            periods += [_ms(b - a) for a, b in itertools.pairwise(rises)]
            time.sleep(0.2)
    target = 250.0
    return {
        "auction_end_error_ms_p99": pct(errors, 99),
        "final_blink_period_error_pct_p95": pct(
            [abs(p - target) / target * 100 for p in periods], 95
        ),
        "auctions": count,
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


def idle_cpu(seconds: float) -> dict[str, float]:
    """CPU of this whole process while the unit idles, switch ON, on the real clock."""
    with Rig(Config()) as rig:
        rig.pin("power").drive_low()
        time.sleep(1)
        cpu0, wall0 = time.process_time(), time.monotonic()
        time.sleep(seconds)
        cpu = time.process_time() - cpu0
        wall = time.monotonic() - wall0
    return {"idle_cpu_pct": cpu / wall * 100}


def startup(runs: int = 5) -> dict[str, float]:
    """Fresh simulator processes: from the start to the first frame (READY=1); the median."""
    results = [_startup_once() for _ in range(runs)]
    return {
        "startup_to_first_frame_ms": statistics.median(r[0] for r in results),
        "rss_mb": max(r[1] for r in results),
    }


def _startup_once() -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "notify")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        sock.settimeout(20)
        t0 = time.perf_counter_ns()
        proc = subprocess.Popen(
            [sys.executable, "-m", "cityunit", "sim", "--headless", "--console", "none"],
            env={**os.environ, "NOTIFY_SOCKET": path},
            stderr=subprocess.DEVNULL,
        )
        while b"READY=1" not in sock.recv(4096):
            pass
        ready = _ms(time.perf_counter_ns() - t0)
        rss = _rss_mb(proc.pid)
        proc.terminate()
        proc.wait(10)
        sock.close()
    return ready, rss


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def virtual_hour() -> dict[str, float]:
    """An hour of play through the console protocol, on the virtual clock, events on."""
    config = Config(parts=Parts(display="none"))
    factory = MockFactory(pin_class=MockPWMPin)
    lines: list[str] = []
    script = [b"EVENTS ON", b"SWITCH ON"]
    for _ in range(60):  # an auction run to its end every minute, a permit every 30 s
        script += [b"PRESS BUILD", b"ADVANCE 1000", b"PRESS AUCTION", b"ADVANCE 50000"]
        script += [b"PRESS BUILD", b"ADVANCE 9000"]
    with Board(config, VirtualClock(), pin_factory=factory, seed=3) as board:
        session = Session(board.runtime, lines.append, simulator=True)
        t0 = time.perf_counter_ns()
        for line in script:
            session.receive(line)
        wall = _ms(time.perf_counter_ns() - t0)
    events = sum(line.startswith("EVT ") for line in lines)
    return {"virtual_hour_wall_ms": wall, "virtual_hour_events": events}


def run(quick: bool = False) -> dict[str, Any]:
    steps: list[Callable[[], dict[str, float]]] = [
        lambda: latency(40 if quick else 500),
        lambda: auctions(2 if quick else 20),
        lambda: rendering(300 if quick else 2000),
        lambda: idle_cpu(1 if quick else 10),
        lambda: startup(3 if quick else 5),
        virtual_hour,
    ]
    figures: dict[str, Any] = {}
    for step in steps:
        figures.update(step())
    figures["machine"] = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, {sys.platform}"
    figures["within_target"] = {k: figures[k] <= v for k, v in TARGETS.items()}
    return figures


def main(as_json: bool, quick: bool) -> int:
    logging.getLogger("cityunit").setLevel(logging.WARNING)  # the unit's events are not news here
    figures = run(quick)
    if as_json:
        print(json.dumps(figures, indent=None))
        return 0
    for key, target in TARGETS.items():
        mark = "ok " if figures["within_target"][key] else "OVER"
        print(f"{mark} {key:34} {figures[key]:10.2f}   (target <= {target})")
    print(f"    on {figures['machine']}")
    return 0
