"""The SD-card image tier: the image that `python3 bootstrap.py image` makes, booted under
QEMU's Raspberry Pi 3B as a player's card would boot in a Pi.

Every test here is marked `vm` and `image` (`pytest -m "not vm"` runs the mock suite
alone). They share one card, booted once, and run in file order, as a player's first
evening would: plug in, play, pull the plug, plug in again, edit the card. Where this
machine cannot build the image or run QEMU, they are skipped with the reason.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from emulated_pi import Card, EmulatedPi, image_build  # noqa: E402

# Per test: the first builds the image when its inputs changed (the base OS ~15 min, the
# firmware on it ~5), then boots it under software emulation.
IMAGE_TIMEOUT_S = 3_600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.vm)
            item.add_marker(pytest.mark.image)
            item.add_marker(pytest.mark.timeout(IMAGE_TIMEOUT_S))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "image: boots the SD-card image under QEMU (tests/image); also marked vm"
    )
    config.addinivalue_line("markers", "vm: runs under QEMU; deselect with -m 'not vm'")


@pytest.fixture(scope="session")
def sd_image() -> Path:
    """The raw image for this checkout: cached, or built now."""
    why = image_build.missing_tools() or (
        None if shutil.which("mmdebstrap") else "no mmdebstrap for QEMU's chroot"
    )
    if sys.platform != "linux" or why:
        pytest.skip(why or "the image needs Linux")
    log = image_build.cache_root() / "build.log"
    with open(log, "w") as out:
        return image_build.image(image_build.Log(out))


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
