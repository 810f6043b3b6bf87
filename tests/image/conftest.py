"""The SD-card image tier: the image that `python3 bootstrap.py image` makes, booted under
QEMU's Raspberry Pi 3B as a player's card would boot in a Pi.

Every test here is marked `vm` and `image` (tests/conftest.py: `pytest -m "not vm"` runs
the mock suite alone), and runs last. They share one card, booted once, and run in file
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
from typing import IO

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from emulated_pi import Card, EmulatedPi, image_build, recipe  # noqa: E402

# the card image's build in the background, and what it says on stderr
BUILDING = pytest.StashKey[tuple[subprocess.Popen[bytes], IO[bytes]]]()


def unavailable() -> str | None:
    """Why this machine cannot build the image and boot it, or None."""
    return "the image needs Linux" if sys.platform != "linux" else image_build.missing_tools()


def pytest_collection_finish(session: pytest.Session) -> None:
    """The card image built in the background from the start of a run that will boot it
    (it takes longest, and needs one core): the tiers before it run meanwhile. Niced, so
    that they keep their pace; the first test here waits for it."""
    if session.config.option.collectonly or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if not any(HERE in Path(str(item.fspath)).parents for item in session.items):
        return
    if unavailable() or image_build.ready():
        return
    said = tempfile.NamedTemporaryFile(prefix="cityunit-image-", suffix=".err")  # noqa: SIM115
    build = [sys.executable, str(Path(image_build.__file__)), "--raw"]
    process = subprocess.Popen(["nice", "-n", "10", *build], stdout=subprocess.DEVNULL,
                               stderr=said, start_new_session=True)  # fmt: skip
    session.config.stash[BUILDING] = (process, said)


def pytest_unconfigure(config: pytest.Config) -> None:
    """A background build that no test waited for (a run stopped early) is stopped, as a
    Ctrl-C would: it cleans up after itself, and the next run starts it again."""
    process, said = config.stash.get(BUILDING, (None, None))
    if process is None or said is None:
        return
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(timeout=120)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    said.close()


@pytest.fixture(scope="session")
def sd_image(request: pytest.FixtureRequest) -> Path:
    """The raw image for this checkout: cached, built in the background (waited for), or
    built now."""
    why = unavailable()
    if why:
        pytest.skip(why)
    process, said = request.config.stash.get(BUILDING, (None, None))
    if process is not None and said is not None and process.wait() != 0:
        said.seek(0)
        pytest.fail(f"building the card image failed: {said.read().decode(errors='replace')}")
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
