"""The OLED on the Pi: luma's SSD1306 and SH1106 drivers, with the frame packed by Pillow,
behind one panel made once for the whole run.

luma packs a frame into display RAM pixel by pixel in Python: a few milliseconds here,
tens on a Pi Zero, during which the loop cannot flash the LED. Transposing the image
and reading it as LSB-first bytes gives the same bytes (bit k of byte x on page p is
pixel (x, 8p + k)) in C. The commands sent around the data are luma's own.
"""

from __future__ import annotations

from typing import Any

from luma.oled.device import sh1106, ssd1306
from PIL import Image

from cityunit.config import Parts


def pages(image: Image.Image) -> list[bytes]:
    """The image as display-RAM pages, top first: one byte per column, LSB at the top."""
    count = image.height // 8
    columns = image.convert("1").transpose(Image.Transpose.TRANSPOSE).tobytes("raw", "1;R")
    return [columns[page::count] for page in range(count)]


class SSD1306(ssd1306):
    def display(self, image: Image.Image) -> None:
        assert image.mode == self.mode and image.size == self.size
        image = self.preprocess(image)
        self.command(
            self._const.COLUMNADDR, self._colstart, self._colend - 1,
            self._const.PAGEADDR, 0x00, self._pages - 1,
        )  # fmt: skip
        self.data(list(b"".join(pages(image))))


class SH1106(sh1106):
    def display(self, image: Image.Image) -> None:
        assert image.mode == self.mode and image.size == self.size
        image = self.preprocess(image)
        for n, page in enumerate(pages(image)):
            self.command(0xB0 + n, self._page_address_offset, 0x10)
            self.data(list(page))


DRIVERS = {"ssd1306": SSD1306, "sh1106": SH1106}
Write = tuple[str, tuple[Any, ...]]  # ("command" or "data", its arguments)


class _Wire:
    """luma's serial interface, as the driver sees it; it can record instead of sending."""

    def __init__(self, serial: Any) -> None:
        self.serial = serial
        self.recording: list[Write] | None = None

    def command(self, *cmd: int) -> None:
        self._write("command", cmd)

    def data(self, data: Any) -> None:
        self._write("data", (data,))

    def _write(self, kind: str, args: tuple[Any, ...]) -> None:
        if self.recording is not None:
            self.recording.append((kind, args))
        else:
            getattr(self.serial, kind)(*args)

    def cleanup(self) -> None:
        self.serial.cleanup()


class LumaPanel:
    """The OLED for the whole run: one I2C interface, one luma driver, made once.

    luma sends its init sequence from the driver's constructor, and each driver it makes
    registers an exit hook, so a driver re-made on every retry would pile them up. Ours is
    made once, with the init sequence recorded instead of sent; `start()` sends that
    sequence (again, after a loss) to the same driver over the same interface.
    """

    def __init__(self, parts: Parts, bus: Any = None) -> None:
        self._parts = parts
        self._bus = bus  # an smbus stand-in (tests, the bench); None: the Pi's I2C port
        self._wire: _Wire | None = None
        self._device: Any = None
        self._init: list[Write] = []

    def start(self) -> None:
        """(Re)initialise the display; raises OSError or a luma Error if it does not answer."""
        if self._wire is None:
            from luma.core.interface.serial import i2c

            port, address = self._parts.i2c_port, self._parts.i2c_address
            self._wire = _Wire(i2c(bus=self._bus, port=port, address=address))
        if self._device is None:
            self._wire.recording = self._init
            try:
                self._device = DRIVERS[self._parts.display](self._wire, rotate=self._parts.rotate)
            finally:
                self._wire.recording = None
        for kind, args in self._init:
            getattr(self._wire.serial, kind)(*args)

    def display(self, image: Image.Image) -> None:
        self._device.display(image)

    def blank(self) -> None:
        self._device.clear()
        self._device.hide()

    def close(self) -> None:
        if self._wire is not None:
            self._wire.cleanup()
            self._wire = None
