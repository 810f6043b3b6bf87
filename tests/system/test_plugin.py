"""The pytest plugin as a third party uses it: its options, and a session that cannot
start said once, not as a traceback per test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cityunit.console.client import Client

TESTS = """
def test_one(cityunit):
    cityunit.switch(True)

def test_two(cityunit):
    pass

def test_three(cityunit):
    pass
"""


def pytest_run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (folder / "test_unit.py").write_text(TESTS)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=folder, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_target_that_cannot_be_opened_is_one_line_for_the_session(tmp_path: Path) -> None:
    """It was a SerialException traceback per test."""
    run = pytest_run(tmp_path, "--cityunit-target", "/dev/pts/999999")
    out = run.stdout + run.stderr
    assert run.returncode == 4, out
    line = "cityunit: cannot start with the unit on /dev/pts/999999: No such file or directory"
    assert out.count(line) == 1, out
    assert "Traceback" not in out and "SerialException" not in out, out


def test_a_simulator_that_will_not_start_says_why_once(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[game]\nlength_hours = 99\n")
    run = pytest_run(tmp_path, "--cityunit-config", str(bad))
    out = run.stdout + run.stderr
    assert run.returncode == 4, out
    assert out.count("cityunit: cannot start with the simulator:") == 1, out
    assert f"{bad}: game.length_hours" in out, "the simulator's own reason"


def test_simulator_options_with_a_target_are_one_usage_error(tmp_path: Path) -> None:
    """`--cityunit-target X --cityunit-clock real` repeated a UsageError per test."""
    run = pytest_run(tmp_path, "--cityunit-target", "/dev/null", "--cityunit-clock", "real")
    out = run.stdout + run.stderr
    assert run.returncode == 4, out
    assert out.count("--cityunit-clock: the simulator's, and --cityunit-target is a real unit") == 1


def test_the_fixture_takes_a_seed_and_a_config(tmp_path: Path) -> None:
    config = tmp_path / "fr.toml"
    config.write_text('[game]\nlanguage = "fr"\n')
    with Client.simulator(seed=7) as unit:
        unit.switch(True)
        unit.press("build")
        seven = unit.wait_for("permit", within_ms=5_000)["value"]
    (tmp_path / "test_options.py").write_text(f"""
def test_seed_and_config(cityunit):
    assert cityunit.settings()["language"] == "fr"
    cityunit.switch(True)
    cityunit.press("build")
    assert cityunit.wait_for("permit", within_ms=5_000)["value"] == {seven!r}
""")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_options.py",
         "--cityunit-seed", "7", "--cityunit-config", str(config)],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
