"""Every screen, pixel for pixel, in English and French (golden PNGs in tests/golden/).

After a deliberate change to the look: `pytest tests/parts/test_screens.py --update-goldens`,
then look at the new PNGs before committing them.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageChops, ImageFont

from cityunit.core.screens import Blank
from cityunit.display.render import SIZE, font, render
from goldens import GOLDEN, SCREENS


@pytest.mark.parametrize("lang", ["en", "fr"])
@pytest.mark.parametrize("name", sorted(SCREENS))
def test_screen_matches_its_golden_image(
    name: str, lang: str, request: pytest.FixtureRequest
) -> None:
    screen = SCREENS[name]
    image = render(screen(lang) if callable(screen) else screen, lang)
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
    images = {
        name: render(s("en") if callable(s) else s, "en").tobytes() for name, s in SCREENS.items()
    }
    assert len(set(images.values())) == len(images)


def test_text_lines_are_translated() -> None:
    for screen in SCREENS.values():
        if isinstance(screen, Blank):
            continue
        if callable(screen):
            assert screen("en").lines("en") != screen("fr").lines("fr")
        else:
            assert screen.lines("en") != screen.lines("fr"), screen


@settings(max_examples=150, deadline=None)
@given(
    text=st.text(
        st.characters(min_codepoint=32, max_codepoint=255, exclude_categories=["Cc"]), max_size=24
    ),
    size=st.integers(8, 40),
    y=st.integers(-10, 60),
    fill=st.sampled_from([0, 1]),
)
def test_stamped_text_is_pixel_for_pixel_what_freetype_draws(text, size, y, fill) -> None:
    """Text is drawn once and stamped after: the same pixels as drawing it each time."""
    from PIL import ImageDraw

    from cityunit.display.render import _fitted, _text

    stamped, drawn = Image.new("1", SIZE, 1 - fill), Image.new("1", SIZE, 1 - fill)
    _text(ImageDraw.Draw(stamped), y, text, size, fill)
    draw = ImageDraw.Draw(drawn)
    draw.fontmode = "1"
    draw.text((SIZE[0] // 2, y), text, font=_fitted(text, size), fill=fill, anchor="mt")
    assert ImageChops.logical_xor(stamped, drawn).getbbox() is None


def test_text_is_laid_out_alike_on_every_machine() -> None:
    """Pillow lays text out with RAQM only where the system has libfribidi (Pi OS Lite and
    the virtual Pi have none), and RAQM spaces letters otherwise: with it, the goldens
    held only on machines like the one that made them."""
    assert {
        font(size, condensed).layout_engine for size in (9, 12, 22) for condensed in (False, True)
    } == {ImageFont.Layout.BASIC}


def test_a_screen_is_a_value_of_its_kind() -> None:
    """Equal and hashed alike to a screen of its kind with the same fields (the display
    keys what it rendered by screen), never to another kind with the same values."""
    from cityunit.core.permit import Permit
    from cityunit.core.screens import AuctionScreen, HourScreen, PermitScreen, SoldScreen

    assert HourScreen(1, "00:01") == HourScreen(1, "00:01", paused=False)
    assert hash(HourScreen(1, "00:01")) == hash(HourScreen(1, "00:01"))
    assert HourScreen(1, "00:01") != HourScreen(1, "00:02")
    assert HourScreen(1, None, paused=True) != HourScreen(1, None, resumed=True)
    assert AuctionScreen(3) != SoldScreen(3)  # type: ignore[arg-type]
    assert len({PermitScreen(Permit.TWO), PermitScreen(Permit.TWO), Blank()}) == 2
    assert repr(AuctionScreen(2, 30)) == "AuctionScreen(frame=2, countdown_s=30)"
    for screen in (HourScreen(1, "00:01"), Blank(), SoldScreen(True)):
        with pytest.raises(AttributeError):
            screen.extra = 1  # type: ignore[attr-defined]
