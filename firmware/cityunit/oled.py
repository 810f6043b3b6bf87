"""luma's SSD1306 and SH1106 drivers, with the frame packed by Pillow instead of Python.

luma packs a frame into display RAM pixel by pixel in Python: a few milliseconds here,
tens on a Pi Zero, during which the loop cannot flash the LED. Transposing the image
and reading it as LSB-first bytes gives the same bytes (bit k of byte x on page p is
pixel (x, 8p + k)) in C. The commands sent around the data are luma's own.
"""

from __future__ import annotations

from luma.oled.device import sh1106, ssd1306
from PIL import Image


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
