"""`cityunit bench`: the figures that say whether the unit reacts at once, keeps time, and
what its frames cost on the Pi's bus.

Everything runs the real firmware: gpiozero mock pins (timestamped as they change), the
real luma SSD1306 driver over a recorder that counts the bytes the Pi's bus would carry,
the real clock where latency matters, the virtual clock for the hour of play and the
frames' bytes. Figures, not pass/fail tests: docs/performance.md says what they mean on
a Pi; `cityunit bench --device`, on a Pi, measures the real bus and pins.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

from cityunit.tools.bench.bus import frames, rendering
from cityunit.tools.bench.hour import console_hour, virtual_hour
from cityunit.tools.bench.page import page
from cityunit.tools.bench.rig import Rig, quiet
from cityunit.tools.bench.timing import auctions, config_check, idle_cpu, latency, startup

__all__ = ["TARGETS", "Rig", "main", "run"]

TARGETS = {
    "press_to_led_ms_p50": 5, "press_to_led_ms_p99": 5, "press_to_tone_ms_p99": 5,
    "press_to_frame_ms_p99": 5, "auction_end_error_ms_p99": 10,
    "final_blink_period_error_pct_p95": 10, "frame_render_ms_p99": 2,
    "frame_bus_bytes_idle_p50": 40, "frame_bus_bytes_auction_p50": 120,
    "frame_bus_bytes_max": 1100, "tap_to_frame_bus_ms_p99": 17,
    "idle_cpu_pct": 1, "startup_to_first_frame_ms": 400, "rss_mb": 60,
    "virtual_hour_wall_ms": 100, "console_hour_wall_ms": 200, "config_check_worst_ms": 200,
    # the players' page: 30 phones and a frozen one cost the loop nothing it would notice
    "page_idle_wakeups": 0, "loop_call_ms_p99_30_phones": 10, "page_rss_growth_kb": 4096,
    "page_first_paint_ms": 1000,
}  # fmt: skip


def run(quick: bool = False) -> dict[str, Any]:
    """Every figure, measured in turn (`quick`: fewer samples), with the machine it ran on
    and which figures are within TARGETS."""
    steps: list[Callable[[], dict[str, float]]] = [
        lambda: latency(40 if quick else 500),
        lambda: auctions(2 if quick else 20),
        lambda: rendering(300 if quick else 2000),
        lambda: frames(3 if quick else 10),
        lambda: idle_cpu(1 if quick else 10),
        lambda: startup(3 if quick else 5),
        virtual_hour,
        console_hour,
        lambda: config_check(1 if quick else 3),
        lambda: page(2 if quick else 10),
    ]
    figures: dict[str, Any] = {}
    for step in steps:
        figures.update(step())
    figures["machine"] = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}, {sys.platform}"
    # (a figure a machine cannot give, the first paint without Chromium, is not there)
    figures["within_target"] = {k: figures[k] <= v for k, v in TARGETS.items() if k in figures}
    return figures


@quiet()
def main(as_json: bool, quick: bool, slow: float | None = None) -> int:
    """The figures against their targets, or as one JSON object; `slow`: as a CPU that
    many times slower gives them (bench.slow). 0, since a figure over its target is news,
    not a failure; 2 where the CPU cannot be slowed, saying why."""
    if slow is None:
        figures = run(quick)
    else:
        from cityunit.tools.bench.slow import NoQuota, slowed

        try:
            with slowed(slow) as how:
                figures = run(quick)
        except NoQuota as e:
            print(f"cityunit bench --slow: {e}; nothing was measured", file=sys.stderr)
            return 2
        figures["machine"] += f", {how}"
    if as_json:
        print(json.dumps(figures, indent=None))
        return 0
    for key, target in TARGETS.items():
        if key not in figures:
            print(f"n/a {key:34} {'':10}   (target <= {target}; not measurable here)")
            continue
        mark = "ok " if figures["within_target"][key] else "OVER"
        print(f"{mark} {key:34} {figures[key]:10.2f}   (target <= {target})")
    print(f"    on {figures['machine']}")
    return 0
