"""Every screen, pixel for pixel, in English and French (golden PNGs in tests/golden/).

After a deliberate change to the look: `pytest tests/test_screens.py --update-goldens`,
then look at the new PNGs before committing them.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image, ImageChops

from cityunit.render import SIZE, render
from cityunit.screens import (
    AuctionScreen,
    Blank,
    HourEndScreen,
    HourScreen,
    PermitScreen,
    ShutdownScreen,
    SoldScreen,
)

GOLDEN = Path(__file__).with_name("golden")

SCREENS = {
    "blank": Blank(),
    "hour": HourScreen(1, "12:34"),
    "hour-hidden-clock": HourScreen(3, None),
    "hour-paused": HourScreen(2, "47:05", paused=True),
    "hour-resumed": HourScreen(4, "21:07", resumed=True),
    "auction": AuctionScreen(1),
    "auction-fixed": AuctionScreen(2, countdown_s=37),
    "sold": SoldScreen(stopped=False),
    "stopped": SoldScreen(stopped=True),
    "draw": PermitScreen(2, drawing=True),
    "draw-station": PermitScreen("station", drawing=True),
    "permit-1": PermitScreen(1),
    "permit-2": PermitScreen(2),
    "permit-3": PermitScreen(3),
    "permit-station": PermitScreen("station"),
    "permit-station-off": PermitScreen("station", visible=False),
    "hour-end": HourEndScreen(1),
    "hour-end-3h": HourEndScreen(3),
    "shutdown": ShutdownScreen(),
}


@pytest.mark.parametrize("lang", ["en", "fr"])
@pytest.mark.parametrize("name", sorted(SCREENS))
def test_screen_matches_its_golden_image(
    name: str, lang: str, request: pytest.FixtureRequest
) -> None:
    image = render(SCREENS[name], lang)
    assert image.mode == "1" and image.size == SIZE
    path = GOLDEN / f"{name}.{lang}.png"
    if request.config.getoption("--update-goldens"):
        image.save(path)
        return
    assert path.exists(), f"no golden image {path.name}: run with --update-goldens and look at it"
    golden = Image.open(path).convert("1")
    diff = ImageChops.logical_xor(image, golden).getbbox()  # 1-bit images: XOR
    assert diff is None, f"{path.name} differs in the box {diff}"


def test_different_screens_look_different() -> None:
    images = {name: render(s, "en").tobytes() for name, s in SCREENS.items()}
    assert len(set(images.values())) == len(images)


def test_text_lines_are_translated() -> None:
    for screen in SCREENS.values():
        if isinstance(screen, Blank):
            continue
        assert screen.lines("en") != screen.lines("fr"), screen
