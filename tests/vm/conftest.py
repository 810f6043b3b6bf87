"""The virtual Pi tier: tests that only a real kernel, OS and service manager can run.

Every test here is marked `vm` (tests/conftest.py: `pytest -m "not vm"` runs the mock
suite alone), and runs after the mock suite. They share one guest (booted once per
session, the checkout installed in it by the unmodified installer) and run in file
order, as a maker's first evening would: install, reboot, check, play, break it, switch
to SPI, shut down (beside the card's tier, a worker each). That is on Debian bookworm (Pi
OS Bookworm's); the tests marked `trixie` run again, in the same order, on a second
guest of Debian trixie (Pi OS Trixie's: Linux 6.12, Python 3.13, systemd 257). Where
this machine cannot build or boot a guest, its tests are skipped with the reason.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from guest_image import RELEASES, ROOT, Release, build, image_for, recipe  # noqa: E402
from virtual_pi import QEMU, VirtualPi  # noqa: E402


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Each test of the guest on bookworm's; the marked ones on trixie's as well. The
    release is a session-wide parameter: pytest runs every test of one guest before it
    boots the next."""
    if "release" in metafunc.fixturenames:
        suites = ["bookworm"]
        if metafunc.definition.get_closest_marker("trixie"):
            suites.append("trixie")
        metafunc.parametrize("release", suites, indirect=True, scope="session")


@pytest.fixture(scope="session")
def release(request: pytest.FixtureRequest) -> Release:
    return RELEASES[request.param]


def unavailable(release: Release) -> str | None:
    """Why the virtual Pi cannot run here, or None."""
    if sys.platform != "linux":
        return "the virtual Pi needs Linux"
    why = recipe.missing(QEMU, "qemu-img", "ssh", "ssh-keygen")
    if why is None and not image_for(release).ready:
        why = recipe.cannot_build()
    return why


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
def pi(release: Release, tmp_path_factory: pytest.TempPathFactory) -> Iterator[VirtualPi]:
    """The virtual Pi, booted, with the checkout at /home/pi/cityunit (not installed)."""
    why = unavailable(release)
    if why:
        pytest.skip(why)
    runs = os.environ.get("CITYUNIT_VM_RUN")
    run_dir = Path(runs) / release.suite if runs else tmp_path_factory.mktemp(release.suite)
    run_dir.mkdir(parents=True, exist_ok=True)
    machine = VirtualPi(build(release), run_dir)
    try:
        machine.boot()
        machine.put(clone(), "/home/pi/cityunit")
        yield machine
    finally:
        machine.stop()
