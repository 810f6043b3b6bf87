"""The unit's picture against a golden PNG, as a tester checks a screen (`Client.assert_screen`)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image, ImageChops


def check(picture: Image.Image, golden: Path) -> None:
    """`picture` is the PNG `golden`, pixel for pixel. Otherwise (or with no such file yet)
    it is written beside it as NAME.actual.png, and where they differ as NAME.diff.png (the
    differing pixels lit), and AssertionError names them."""
    actual = golden.with_suffix(".actual.png")
    if not golden.exists():
        picture.save(actual)
        raise AssertionError(f"no {golden}: the screen is in {actual}; look, then rename")
    expected = Image.open(golden).convert("1")
    if expected.size != picture.size:
        picture.save(actual)
        raise AssertionError(
            f"the screen is {picture.size}, {golden} is {expected.size}: see {actual}"
        )
    difference = ImageChops.logical_xor(picture.convert("1"), expected)
    if difference.getbbox() is None:
        return
    picture.save(actual)
    difference.save(diff := golden.with_suffix(".diff.png"))
    raise AssertionError(f"the screen is not {golden}: it is in {actual}, the difference in {diff}")
