"""The protocol suite runs unchanged against a unit behind a serial port.

`cityunit run` (the hardware path: real clock, its console on the configured serial
port) runs on mock pins, its port one end of a pty "cable"; the suite in tests/hil
runs against the other end with --cityunit-target, as it would against /dev/ttyACM0.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cityunit.console.client import Client
from fakes import cable, run_unit, simulator_pty

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("in_play", [False, True], ids=["off", "in-play"])
def test_the_hil_suite_passes_against_cityunit_run_over_a_serial_port(
    tmp_path: Path, in_play: bool
) -> None:
    """Also against a unit in play (found on the virtual Pi): each test then starts by
    switching it OFF, and the still-on notice shows."""
    unit_end, tester_end = cable()
    config = tmp_path / "config.toml"
    config.write_text(f'[display]\ndriver = "none"\n[console]\nport = "{unit_end}"\n')
    unit = run_unit(config)
    try:
        if in_play:
            with Client.port(tester_end) as player:
                assert player.is_simulator is False, "a real unit refuses SCREEN"
                player.switch(True)
        suite = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/hil",
             "--cityunit-target", tester_end],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        summary = suite.stdout.strip().splitlines()[-1]
        assert suite.returncode == 0, suite.stdout[-3000:]
        assert " passed" in summary and " skipped" in summary, summary
    finally:
        unit.terminate()
        assert unit.finish() == 0


@pytest.mark.parametrize("clock", ["virtual", "real"])
def test_the_hil_suite_passes_against_the_simulators_pty(clock: str) -> None:
    """`cityunit sim --console pty` stands in for a board: RESET starts each test afresh."""
    with simulator_pty(clock) as path:
        suite = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/hil",
             "--cityunit-target", path],
            cwd=ROOT, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert suite.returncode == 0, suite.stdout[-3000:]
