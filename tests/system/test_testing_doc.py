"""docs/testing.md's examples run as written: the complete test through the installed
pytest plugin, on both clocks, the client example and the faults' tests."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_the_complete_test_passes_through_the_plugin(tmp_path: Path) -> None:
    (tmp_path / "test_auction.py").write_text(blocks()[0])
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_auction.py"]
    virtual = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert virtual.returncode == 0 and "3 passed" in virtual.stdout, virtual.stdout
    real = subprocess.run(
        [*run, "--cityunit-clock", "real", "-k", "stops or hour", "-rs"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert real.returncode == 0, real.stdout
    assert "1 passed, 1 skipped" in real.stdout and "needs the virtual clock" in real.stdout


def test_the_client_example_runs(tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(blocks()[1])
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "permit" in result.stdout


def test_the_fault_examples_pass(tmp_path: Path) -> None:
    (tmp_path / "test_faults.py").write_text(blocks()[2])
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_faults.py"]
    result = subprocess.run(run, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and "3 passed" in result.stdout, result.stdout
