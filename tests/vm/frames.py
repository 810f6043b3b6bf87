"""What the display showed, from the bytes the virtual Pi's bus carried: the recorded
I2C messages or SPI transfers fed to the controller model of tests/fakes.py, in order,
and the glass looked at after each one."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from PIL import Image
from virtual_pi import I2CWrite, SPIWrite

from cityunit.core.screens import Screen
from cityunit.display.render import render
from fakes import Controller


def picture(pages: list[bytes]) -> Image.Image:
    """Display RAM pages (8 rows a byte, least significant bit on top) as a 128x64 image."""
    image = Image.new("1", (128, 64))
    pixels = image.load()
    assert pixels is not None
    for page, row in enumerate(pages):
        for x, byte in enumerate(row):
            for bit in range(8):
                if byte >> bit & 1:
                    pixels[x, page * 8 + bit] = 1
    return image


def shown_i2c(writes: Iterable[I2CWrite], kind: str = "ssd1306") -> Iterator[Image.Image]:
    """The glass after each message: a control byte (0x00 commands, 0x40 data), then bytes."""
    panel = Controller(kind)
    for write in writes:
        if write.data:
            panel.write_i2c_block_data(write.addr, write.data[0], list(write.data[1:]))
            yield picture(panel.visible())


def shown_spi(
    writes: Iterable[SPIWrite], dc_pin: int, reset_pin: int, kind: str = "ssd1309"
) -> Iterator[Image.Image]:
    """The glass after each transfer: D/C low, commands; high, data; RST low, deaf."""
    panel = Controller(kind, spi=True)
    panel.open(0, 0)
    assert panel.pins is not None
    pins = {panel.hardware.dc_pin: dc_pin, panel.hardware.reset_pin: reset_pin}
    for write in writes:
        for model, line in pins.items():
            pin = panel.pins.pin(model)
            pin.drive_high() if write.lines >> line & 1 else pin.drive_low()
        panel.writebytes(list(write.data))
        yield picture(panel.visible())


def showed(
    frames: Iterable[Image.Image], *screens: Screen | Image.Image, lang: str = "en"
) -> Screen | Image.Image | None:
    """The first of `screens` (as the renderer draws them, or as images) that the glass
    showed at some point, or None."""
    seen = {frame.convert("1").tobytes() for frame in frames}
    for screen in screens:
        wanted = screen if isinstance(screen, Image.Image) else render(screen, lang)
        if wanted.convert("1").tobytes() in seen:
            return screen
    return None
