"""The OLED drivers: a whole frame is exactly luma's bytes, packed in a fraction of the time;
a changed frame sends only what changed, and the controller's memory (modelled from the
bytes on the bus) always ends up equal to the frame."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from luma.core.error import Error as LumaError
from luma.core.interface.serial import i2c
from luma.oled.device import sh1106, ssd1306
from PIL import Image, ImageDraw

from cityunit.config import Parts
from cityunit.gestures import Button
from cityunit.oled import SH1106, SSD1306, LumaPanel, pages
from cityunit.render import render
from cityunit.rules import Rules
from cityunit.screens import HourEndScreen
from cityunit.unit import Unit
from fakes import Controller


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


# ----- only what changed is sent, and the controller ends up showing the frame -------------


DRIVERS = ["ssd1306", "sh1106"]
rects = st.lists(
    st.tuples(st.integers(0, 127), st.integers(0, 63), st.integers(0, 40), st.integers(0, 20),
              st.sampled_from(["fill", "clear", "invert"])),
    max_size=4,
)  # fmt: skip
steps = st.lists(
    st.one_of(rects.map(lambda r: ("frame", r)), st.just(("restart",)),
              st.integers(1, 40).map(lambda n: ("fail", n))),
    min_size=1, max_size=25,
)  # fmt: skip


def edited(image: Image.Image, edits: list) -> Image.Image:
    image = image.copy()
    draw = ImageDraw.Draw(image)
    for x, y, w, h, how in edits:
        box = (x, y, min(127, x + w), min(63, y + h))
        if how == "invert":
            region = image.crop(box).point(lambda v: 255 - v)
            image.paste(region, box[:2])
        else:
            draw.rectangle(box, fill=1 if how == "fill" else 0)
    return image


class Glass:
    """A panel over a modelled controller: what is shown must be what the glass shows."""

    def __init__(self, kind: str, rotate: int = 0) -> None:
        self.bus = Controller(kind)
        self.panel = LumaPanel(Parts(display=kind, rotate=rotate), bus=self.bus)
        self.start()
        self.image = Image.new("1", (128, 64))

    def start(self) -> None:
        """As Display does: start the panel again until it answers."""
        while True:
            try:
                self.panel.start()
                return
            except (OSError, LumaError):
                pass

    def show(self, image: Image.Image) -> bool:
        try:
            self.panel.display(image)
        except (OSError, LumaError):
            self.start()
            return False
        self.image = image
        expected = pages(self.panel._device.preprocess(image))
        assert self.bus.visible() == expected
        return True


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(DRIVERS), rotate=st.sampled_from([0, 2]), plan=steps)
def test_any_frames_with_restarts_and_failures_end_on_the_glass(kind, rotate, plan) -> None:
    glass = Glass(kind, rotate)
    image = glass.image
    for step in plan:
        if step[0] == "frame":
            image = edited(image, step[1])
            while not glass.show(image):
                pass
        elif step[0] == "restart":
            glass.start()
        else:  # the bus fails at the n-th write from now, once
            bus, n = glass.bus, step[1]
            real = bus.write_i2c_block_data
            count = [0]

            def flaky(addr, register, data, bus=bus, real=real, count=count, n=n):
                count[0] += 1
                if count[0] == n:
                    bus.write_i2c_block_data = real
                    raise OSError(121, "Remote I/O error")
                real(addr, register, data)

            bus.write_i2c_block_data = flaky
    glass.bus.write_i2c_block_data = Controller.write_i2c_block_data.__get__(glass.bus)
    assert glass.show(edited(image, [(0, 0, 127, 63, "invert")]))


@pytest.mark.parametrize("kind", DRIVERS)
def test_a_game_of_real_screens_ends_each_frame_on_the_glass_for_far_fewer_bytes(kind) -> None:
    unit = Unit(Rules(auction_mode="random"), random.Random(7))
    unit.switch(True, 0)
    glass = Glass(kind)
    whole = glass.bus.pi_bytes
    sent = frames = 0
    last = None
    for t in range(0, 15 * 60_000, 100):
        if t % 20_000 == 0:
            unit.press(Button.AUCTION if t % 40_000 else Button.BUILD, t)
            unit.release(Button.AUCTION if t % 40_000 else Button.BUILD, t + 60)
        unit.advance(t + 100)
        snapshot = unit.snapshot()
        if (snapshot.screen, snapshot.language) != last:
            last = (snapshot.screen, snapshot.language)
            before = glass.bus.pi_bytes
            assert glass.show(render(snapshot.screen, snapshot.language))
            sent += glass.bus.pi_bytes - before
            frames += 1
    assert frames > 900
    assert sent * 4 < frames * 1034, "on average far below a quarter of a full frame"
    assert whole > 1000, "the start sent the whole memory once"


@pytest.mark.parametrize("kind", DRIVERS)
def test_a_screen_that_turns_white_is_sent_inverted_for_a_fraction_of_the_bytes(kind) -> None:
    from cityunit.screens import AuctionScreen, SoldScreen

    glass = Glass(kind)
    assert glass.show(render(AuctionScreen(3), "en"))
    before = glass.bus.pi_bytes
    assert glass.show(render(SoldScreen(stopped=True), "en"))  # white, with black letters
    assert glass.bus.inverted and glass.bus.pi_bytes - before < 700
    assert glass.show(render(AuctionScreen(0), "en"))
    assert not glass.bus.inverted
