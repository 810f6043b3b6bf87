"""The SD-card image tier: the image that `python3 bootstrap.py image` makes, booted under
QEMU's Raspberry Pi 3B as a player's card would boot in a Pi.

Every test here is marked `vm` and `image` (tests/conftest.py: `pytest -m "not vm"` runs
the mock suite alone), and runs after the mock suite, beside the virtual Pi (a worker
each: bootstrap.py's --dist loadfile). They share one card, booted once, and run in file
order, as a player's first evening would: plug in, play, pull the plug, plug in again,
edit the card. Where this machine cannot build the image or run QEMU, they are skipped
with the reason.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from emulated_pi import Card, EmulatedPi, image_build, recipe  # noqa: E402


class Background:
    """The card image's build, started in the background, what it says kept: waited
    for by the first test that boots the card, or stopped as a Ctrl-C stops it (it
    cleans up after itself) if none did. In pytest's process group, so that a Ctrl-C
    or a CI's stop of the run reaches it too."""

    def __init__(self) -> None:
        self.said = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        build = [sys.executable, str(Path(image_build.__file__)), "--raw"]
        # on the CPU and the disk only when nothing else wants them: the virtual Pi's
        # guest, emulated meanwhile, keeps its pace (with a plain nice its udev and
        # systemd missed their deadlines)
        idle = ["chrt", "--idle", "0", "ionice", "-c", "3", "nice", "-n", "19"]
        self.process = subprocess.Popen([*idle, *build], stdout=subprocess.DEVNULL,
                                        stderr=self.said)  # fmt: skip

    def failed(self) -> str | None:
        """Waited for: what it said if it failed, else None."""
        if self.process.wait() == 0:
            return None
        self.said.seek(0)
        return self.said.read().decode(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.said.close()


BUILDING = pytest.StashKey[Background]()


def unavailable() -> str | None:
    """Why this machine cannot build the image and boot it, or None."""
    return "the image needs Linux" if sys.platform != "linux" else image_build.missing_tools()


def pytest_collection_finish(session: pytest.Session) -> None:
    """The card image built in the background from the start of a run that will boot it
    (it takes longest, and needs one core): the tiers before it run meanwhile, first
    served; the first test here waits for it."""
    if session.config.option.collectonly or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if not any(HERE in Path(str(item.fspath)).parents for item in session.items):
        return
    if unavailable() or image_build.ready():
        return
    session.config.stash[BUILDING] = Background()


def pytest_unconfigure(config: pytest.Config) -> None:
    if (background := config.stash.get(BUILDING, None)) is not None:
        background.close()


@pytest.fixture(scope="session")
def sd_image(request: pytest.FixtureRequest) -> Path:
    """The raw image for this checkout: cached, built in the background (waited for), or
    built now."""
    why = unavailable()
    if why:
        pytest.skip(why)
    background = request.config.stash.get(BUILDING, None)
    if background is None and not image_build.ready():  # an xdist worker's: none started
        background = request.config.stash[BUILDING] = Background()
    if background is not None and (said := background.failed()) is not None:
        pytest.fail(f"building the card image failed: {said}")
    try:
        return image_build.image()
    except recipe.BuildFailed as e:
        pytest.fail(f"building the card image failed: {e}")


@pytest.fixture(scope="session")
def card(sd_image: Path, tmp_path_factory: pytest.TempPathFactory) -> Card:
    """A 4 GiB card with the image flashed on it, and the tests' config on its FAT."""
    return Card.flash(sd_image, tmp_path_factory.mktemp("card") / "card.img")


@pytest.fixture(scope="session")
def emulated(card: Card, tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmulatedPi]:
    """The card's Pi, not yet booted: each test boots, cuts the power, boots as it needs."""
    pi = EmulatedPi(card, tmp_path_factory.mktemp("run"))
    try:
        yield pi
    finally:
        pi.cut_power()
