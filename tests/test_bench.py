"""`cityunit bench` runs and prints every figure (their values are reported, not tested)."""

from __future__ import annotations

import json
import subprocess
import sys

from cityunit.bench import TARGETS


def test_bench_quick_prints_every_figure_as_json() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cityunit", "bench", "--json", "--quick"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    for key in TARGETS:
        assert isinstance(figures[key], int | float) and figures[key] >= 0, key
    assert figures["presses"] >= 40 and figures["auctions"] >= 2
    assert figures["virtual_hour_events"] > 10_000
    assert set(figures["within_target"]) == set(TARGETS)
