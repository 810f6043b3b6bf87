"""The OLED on the Pi: luma's SSD1306 and SH1106 drivers sending only what changed,
behind one panel made once for the whole run.

The bus is the cost: a full frame is 1,034 bytes on the Pi's I2C bus (23 ms at 400 kHz,
93 ms at 100 kHz), during which the loop cannot flash the LED, while a clock tick
changes a few digits. So each frame is compared with what the controller's memory
holds, and only the changed bytes are sent, in whichever shape costs the fewest bytes
on the wire: one box (SSD1306's column and page window), or a run of columns per page.
After a start or any failed write, the memory is unknown and the next frame is whole.

Frames are packed by Pillow, not pixel by pixel in Python as luma does: transposing
the image and reading it as LSB-first bytes gives display RAM directly (bit k of byte x
on page p is pixel (x, 8p + k)).
"""

from __future__ import annotations

import re
from typing import Any

from luma.oled.device import sh1106, ssd1306
from PIL import Image

from cityunit.config import Parts

Pages = list[bytes]  # display RAM, top page first: one byte per column, LSB at the top
Run = tuple[int, int, int]  # (page, first column, last column) of a change
# What one write costs on the Pi's bus besides its payload: the address and control bytes.
TRANSACTION = 2
_CHANGED = re.compile(rb"[^\x00]+")


def pages(image: Image.Image) -> Pages:
    """The image as display-RAM pages, top first."""
    count = image.height // 8
    columns = image.convert("1").transpose(Image.Transpose.TRANSPOSE).tobytes("raw", "1;R")
    return [columns[page::count] for page in range(count)]


def runs(new: Pages, old: Pages, overhead: int) -> list[Run]:
    """The columns that differ, page by page; two runs closer than `overhead` bytes (what
    starting a new run costs) are sent as one."""
    out: list[Run] = []
    for page, (a, b) in enumerate(zip(new, old, strict=True)):
        if a == b:
            continue
        xor = (int.from_bytes(a) ^ int.from_bytes(b)).to_bytes(len(a))
        for m in _CHANGED.finditer(xor):
            first, last = m.start(), m.end() - 1
            if out and out[-1][0] == page and first - out[-1][2] - 1 < overhead:
                first = out.pop()[1]
            out.append((page, first, last))
    return out


def wire_bytes(commands: int, data: int) -> int:
    """Bytes on the Pi's bus for one command write and one data write."""
    return TRANSACTION + commands + TRANSACTION + data


class SSD1306(ssd1306):
    """Horizontal addressing: a window of columns and pages is filled row by row."""

    WINDOW = 6  # COLUMNADDR c0 c1 PAGEADDR p0 p1

    def display(self, image: Image.Image) -> None:
        assert image.mode == self.mode and image.size == self.size
        self.update(pages(self.preprocess(image)), None)

    def update(self, new: Pages, old: Pages | None) -> None:
        """Take the controller's memory from `old` (None: unknown) to `new`."""
        if old is None:
            self._window(new, 0, len(new[0]) - 1, 0, len(new) - 1)
            return
        changed = runs(new, old, wire_bytes(self.WINDOW, 0))
        if not changed:
            return
        c0, c1 = min(r[1] for r in changed), max(r[2] for r in changed)
        p0, p1 = changed[0][0], changed[-1][0]
        box = wire_bytes(self.WINDOW, (c1 - c0 + 1) * (p1 - p0 + 1))
        if box <= sum(wire_bytes(self.WINDOW, last - first + 1) for _, first, last in changed):
            self._window(new, c0, c1, p0, p1)
        else:
            for page, first, last in changed:
                self._window(new, first, last, page, page)

    def _window(self, new: Pages, c0: int, c1: int, p0: int, p1: int) -> None:
        start = self._colstart
        self.command(self._const.COLUMNADDR, start + c0, start + c1, self._const.PAGEADDR, p0, p1)
        self.data(list(b"".join(page[c0 : c1 + 1] for page in new[p0 : p1 + 1])))


class SH1106(sh1106):
    """Page addressing only: each run says its page and first column."""

    SEEK = 3  # page, column low nibble, column high nibble

    def display(self, image: Image.Image) -> None:
        assert image.mode == self.mode and image.size == self.size
        self.update(pages(self.preprocess(image)), None)

    def update(self, new: Pages, old: Pages | None) -> None:
        if old is None:
            changed = [(page, 0, len(new[0]) - 1) for page in range(len(new))]
        else:
            changed = runs(new, old, wire_bytes(self.SEEK, 0))
        for page, first, last in changed:
            column = self._page_address_offset + first
            self.command(0xB0 + page, column & 0x0F, 0x10 | column >> 4)
            self.data(list(new[page][first : last + 1]))


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
        self._ram: Pages | None = None  # what the controller's memory holds, if known

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
        self._ram = None
        for kind, args in self._init:
            getattr(self._wire.serial, kind)(*args)

    def display(self, image: Image.Image) -> None:
        """Send what changed since the last frame; the whole frame when that is unknown."""
        new = pages(self._device.preprocess(image))
        old, self._ram = self._ram, None  # unknown until every write has gone through
        self._device.update(new, old)
        self._ram = new

    def blank(self) -> None:
        self._device.clear()
        self._device.hide()

    def close(self) -> None:
        if self._wire is not None:
            self._wire.cleanup()
            self._wire = None
