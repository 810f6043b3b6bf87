"""Our frame packing sends exactly the bytes luma's own drivers send, in a fraction of the time."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from luma.core.interface.serial import i2c
from luma.oled.device import sh1106, ssd1306
from PIL import Image

from cityunit.oled import SH1106, SSD1306
from cityunit.render import render
from cityunit.screens import HourEndScreen


class Recorder:
    def __init__(self) -> None:
        self.writes: list[tuple[int, list[int]]] = []

    def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
        self.writes.append((register, list(data)))


def stream(driver, image: Image.Image, rotate: int = 0) -> list[tuple[int, list[int]]]:
    bus = Recorder()
    device = driver(i2c(bus=bus, address=0x3C), rotate=rotate)
    bus.writes.clear()
    device.display(image)
    return bus.writes


def noise(seed: int) -> Image.Image:
    rng = random.Random(seed)
    image = Image.new("1", (128, 64))
    image.putdata([rng.getrandbits(1) for _ in range(128 * 64)])
    return image


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32))
@pytest.mark.parametrize(("ours", "theirs"), [(SSD1306, ssd1306), (SH1106, sh1106)])
def test_the_same_bytes_as_luma(ours, theirs, seed: int) -> None:
    image = noise(seed)
    assert stream(ours, image) == stream(theirs, image)


@pytest.mark.parametrize("rotate", [1, 2, 3])
def test_the_same_bytes_when_rotated(rotate: int) -> None:
    image = render(HourEndScreen(2), "fr")
    if rotate % 2:  # a quarter turn: the device takes portrait images
        image = image.transpose(Image.Transpose.TRANSPOSE)
    assert stream(SSD1306, image, rotate) == stream(ssd1306, image, rotate)
