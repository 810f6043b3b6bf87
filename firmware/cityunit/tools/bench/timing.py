"""What the unit does on the real clock: how fast a press is seen and heard, how true its
deadlines are, what it costs at rest, how fast it starts."""

from __future__ import annotations

import contextlib
import itertools
import os
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cityunit.config import Config
from cityunit.core.events import EventKind
from cityunit.core.rules import Rules
from cityunit.tools.bench.rig import Rig, pct
from cityunit.tools.bench.rig import ms as _ms


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
            frames = len(rig.panel.frames)
            t1 = time.perf_counter_ns()
            button.drive_high()  # the tap is decided on release: a new screen
            if rig.panel.wait_frames(frames + 1):
                to_frame.append(_ms(rig.panel.frames[frames][0] - t1))
            time.sleep(0.04)
    return {
        "press_to_led_ms_p50": statistics.median(to_led),
        "press_to_led_ms_p99": pct(to_led, 99),
        "press_to_tone_ms_p99": pct(to_tone, 99),
        "press_to_frame_ms_p99": pct(to_frame, 99),
        "presses": len(to_led),
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
        try:
            while b"READY=1" not in sock.recv(4096):
                pass
            ready = _ms(time.perf_counter_ns() - t0)
            rss = _rss_mb(proc.pid)
        finally:  # a simulator that never got ready is not left running (nor in --slow's group)
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
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


def config_check(rounds: int = 3) -> dict[str, float]:
    """The slowest check of a config at its 64 KiB limit, over the shapes that cost the
    parser most (each its best of `rounds`): a start, `--check` and a reload wait for it."""
    from cityunit import config

    lines = config.MAX_BYTES // 8
    shapes = [
        "x = [" + "1," * (config.MAX_BYTES // 2 - 4) + "]\n",  # a long array
        "[game]\n" + "".join(f"k{i} = 1\n" for i in range(lines)),  # thousands of keys
        "".join(f"[t{i}]\n" for i in range(lines)),  # thousands of tables
        "[" + ".".join(["a"] * (config.MAX_BYTES // 2 - 2)) + "]\n",  # a long dotted key
        " \t" * (config.MAX_BYTES // 2 - 1) + "\n",  # a blank line
        "a = " + "[" * 496 + "]" * 496 + "\n",  # nesting to the parser's limit
        'x = "' + "\\n" * (config.MAX_BYTES // 2 - 4) + '"\n',  # a string of escapes
    ]
    worst = 0.0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "config.toml"
        for shape in shapes:
            path.write_text(shape[: config.MAX_BYTES])
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter_ns()
                with contextlib.suppress(config.ConfigError):
                    config.load(path)
                times.append(_ms(time.perf_counter_ns() - t0))
            worst = max(worst, min(times))
    return {"config_check_worst_ms": round(worst, 1)}
