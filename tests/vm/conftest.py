"""The virtual Pi tier: tests that only a real kernel, OS and service manager can run.

Every test here is marked `vm` (`pytest -m "not vm"` runs the mock suite alone). They
share one guest (booted once per session, the checkout installed in it by the
unmodified installer) and run in file order, as a maker's first evening would: install,
reboot, check, play, break it, switch to SPI, shut down. Where this machine cannot build
or boot the guest, they are skipped with the reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guest_image import ROOT, Image, build, cache_root, key, missing_tools  # noqa: E402
from virtual_pi import QEMU, VirtualPi  # noqa: E402

VM_TIMEOUT_S = 1_500  # per test: a boot, an install and a reboot under emulation


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.vm)
            item.add_marker(pytest.mark.timeout(VM_TIMEOUT_S))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "vm: runs on the virtual Pi (QEMU); deselect with -m 'not vm'"
    )


def unavailable() -> str | None:
    """Why the virtual Pi cannot run here, or None."""
    if sys.platform != "linux":
        return "the virtual Pi needs Linux"
    for tool in (QEMU, "ssh", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"no {tool} (bootstrap.py installs it where it is root with apt-get)"
    if not Image(cache_root() / key()).ready:
        return missing_tools()
    return None


def clone() -> dict[str, tuple[bytes, int]]:
    """The checkout as a clone has it: the files git tracks (and new ones it does not
    ignore), as they are now, executable or not: a test run tries what is on disk."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    files = {}
    for name in filter(None, listed):
        path = ROOT / name.decode()
        if path.is_file() and not path.is_symlink():
            files[name.decode()] = (path.read_bytes(), 0o755 if os.access(path, os.X_OK) else 0o644)
    return files


@pytest.fixture(scope="session")
def pi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtualPi]:
    """The virtual Pi, booted, with the checkout at /home/pi/cityunit (not installed)."""
    why = unavailable()
    if why:
        pytest.skip(why)
    run_dir = Path(os.environ.get("CITYUNIT_VM_RUN") or tmp_path_factory.mktemp("vpi"))
    machine = VirtualPi(build(), run_dir)
    try:
        machine.boot()
        machine.put(clone(), "/home/pi/cityunit")
        yield machine
    finally:
        machine.stop()
