"""The OLED on the Pi: luma's SSD1306, SSD1309 and SH1106 drivers, on I2C or SPI, sending
only what changed, behind one panel made once for the whole run.

The bus is the cost: a full frame is 1,034 bytes on the Pi's I2C bus (23 ms at 400 kHz,
93 ms at 100 kHz; 1,030 bytes, 1 ms, on SPI at 8 MHz), during which the loop cannot flash
the LED, while a clock tick changes a few digits. So each frame is compared with what the
controller's memory holds, and only the changed bytes are sent, in whichever shape costs
the fewest bytes on the wire: boxes over bands of pages (the SSD1306's and SSD1309's
column and page window), or runs of columns per page (SH1106).
After a start or any failed write, the memory is unknown and the next frame is whole.

Frames are packed and compared as display memory (display/memory.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

from luma.oled.device import sh1106, ssd1306, ssd1309
from PIL import Image

from cityunit.config import Hardware
from cityunit.display import glass
from cityunit.display.glass import Write
from cityunit.display.i2c import I2cDev
from cityunit.display.memory import Pages, changed_bytes, differences, inverse, pages, runs, spans
from cityunit.display.spi import SpiDev, SpiPins

# What one write costs on the Pi's bus besides its payload: on I2C the address and control
# bytes; on SPI nothing (the DC line says command or data).
TRANSACTION = 2
OVERHEAD = {"i2c": TRANSACTION, "spi": 0}
NORMAL, INVERTED = 0xA6, 0xA7  # the glass shows memory as it is, or every pixel flipped
DISPLAYON = 0xAF


class Block(NamedTuple):
    """A block of memory to write: pages p0..p1, columns c0..c1."""

    p0: int
    p1: int
    c0: int
    c1: int

    @property
    def size(self) -> int:
        return (self.p1 - self.p0 + 1) * (self.c1 - self.c0 + 1)


class Windowed:
    """What writing windows costs a controller on the bus: each is a command write (SEEK
    bytes placing it) and a data write, `transaction` bytes of the bus's own each."""

    SEEK: int
    transaction = TRANSACTION  # the bus's own bytes a write (the panel sets its interface's)

    @property
    def window_start(self) -> int:
        """A window's bytes on the bus besides its data."""
        return 2 * self.transaction + self.SEEK

    def cost(self, windows: list[Block]) -> int:
        """Bytes on the bus, every window's."""
        return sum(self.window_start + w.size for w in windows)


class SSD1306(Windowed, ssd1306):
    """Horizontal addressing: a window of columns and pages is filled row by row."""

    SEEK = 6  # COLUMNADDR c0 c1 PAGEADDR p0 p1

    def display(self, image: Image.Image) -> None:
        assert image.mode == self.mode and image.size == self.size
        frame = pages(self.preprocess(image))
        self.send(frame, self.plan(frame, None))

    def plan(self, new: Pages, old: Pages | None) -> list[Block]:
        """The writes that take the memory from `old` (None: unknown) to `new`, in the
        fewest bytes over every way of cutting the pages into bands, each band written as
        boxes around its changed columns. One band over every change is the single box;
        bands of one page are runs per page; two bands side by side catch changes far
        apart (a dot moving, the two edges of the screen)."""
        if old is None:
            return [Block(0, len(new) - 1, 0, len(new[0]) - 1)]
        changed, width, start = differences(new, old), len(new[0]), self.window_start
        best: list[tuple[int, list[Block]]] = [(0, [])]  # the best plan for pages < p
        for last, bits in enumerate(changed):
            if not bits:
                best.append(best[last])
                continue
            chosen: tuple[int, list[Block]] | None = None
            union = 0
            for first in range(last, -1, -1):  # bands that start and end on a change
                union |= changed[first]
                if not changed[first]:
                    continue
                height, columns = last - first + 1, union.to_bytes(width)
                floor = best[first][0] + start + height * (width - columns.count(0))
                if chosen is not None and floor >= chosen[0]:
                    continue  # even one box over the changed bytes alone costs more
                boxes = [Block(first, last, *span) for span in spans(columns, start, height)]
                cost = best[first][0] + self.cost(boxes)
                if chosen is None or cost < chosen[0]:  # the first of equals
                    chosen = (cost, best[first][1] + boxes)
            assert chosen is not None  # the band of `last` alone is always one
            best.append(chosen)
        return best[-1][1]

    def send(self, new: Pages, windows: list[Block]) -> None:
        start = self._colstart
        for p0, p1, c0, c1 in windows:
            self.command(
                self._const.COLUMNADDR, start + c0, start + c1, self._const.PAGEADDR, p0, p1
            )
            self.data(list(b"".join(page[c0 : c1 + 1] for page in new[p0 : p1 + 1])))


class SSD1309(SSD1306, ssd1309):
    """The SSD1306's addressing (horizontal mode, column and page windows) and luma's same
    init; its charge-pump command is none of the SSD1309's, and is ignored."""


class SH1106(Windowed, sh1106):
    """Page addressing only: each run says its page and first column."""

    SEEK = 3  # page, column low nibble, column high nibble

    def display(self, image: Image.Image) -> None:
        assert image.mode == self.mode and image.size == self.size
        frame = pages(self.preprocess(image))
        self.send(frame, self.plan(frame, None))

    def plan(self, new: Pages, old: Pages | None) -> list[Block]:
        if old is None:
            return [Block(page, page, 0, len(new[0]) - 1) for page in range(len(new))]
        changed = runs(new, old, self.window_start)
        return [Block(page, page, first, last) for page, first, last in changed]

    def send(self, new: Pages, windows: list[Block]) -> None:
        for page, _, first, last in windows:
            column = self._page_address_offset + first
            self.command(0xB0 + page, column & 0x0F, 0x10 | column >> 4)
            self.data(list(new[page][first : last + 1]))


DRIVERS = {"ssd1306": SSD1306, "ssd1309": SSD1309, "sh1106": SH1106}
Plan = tuple[int, Pages, bool, list[Block]]  # bytes on the bus, memory, inverted, writes


class _Wire:
    """luma's serial interface, as the driver sees it; it can record instead of sending."""

    def __init__(self, serial: Any, gpio: SpiPins | None = None) -> None:
        self.serial, self.gpio = serial, gpio
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
        try:
            self.serial.cleanup()
        finally:
            if self.gpio is not None:
                self.gpio.cleanup()


class LumaPanel:
    """The OLED for the whole run: one I2C or SPI interface, one luma driver, made once.

    luma sends its init sequence from the driver's constructor, and each driver it makes
    registers an exit hook, so a driver re-made on every retry would pile them up. Ours is
    made once, with the init sequence recorded instead of sent; `start()` sends that
    sequence (again, after a loss) to the same driver over the same interface.
    """

    def __init__(
        self, hardware: Hardware, bus: Any = None, pins: Any = None, lit: glass.Lit | None = None
    ) -> None:
        self._hardware = hardware
        # What the service's first stage lit, taken over at the first start if it is this
        # panel's bus and init: no init, no DISPLAYOFF, the first frame a diff from it.
        self._first_light = lit if lit is not None and lit[0] == glass.bus(hardware) else None
        self._bus = bus  # an smbus or spidev stand-in (tests); None: the Pi's port
        self._pins = pins  # SPI's DC and RST: a gpiozero pin factory; None: gpiozero's own
        self._wire: _Wire | None = None
        self._device: Any = None
        self._init: list[Write] = []
        self._ram: Pages | None = None  # what the controller's memory holds, if known
        self._inverted = False  # whether the glass shows that memory flipped
        self._lit = False  # whether the glass is on
        self.sent = 0  # bytes the last frame put on the Pi's bus
        self._planned: dict[bytes, Plan] = {}  # by frame, from the memory `_planned_from`
        self._planned_from: Pages | None = None
        self._readied: dict[int, tuple[Image.Image, bytes]] = {}  # by id: the image, its frame

    def _made(self) -> tuple[_Wire, Any]:
        """The interface and the driver, made once, luma's init recorded, nothing sent."""
        if self._wire is None:
            self._wire = self._interface()
        if self._device is None:
            recorded: list[Write] = []
            self._wire.recording = recorded
            try:
                self._device = DRIVERS[self._hardware.driver](
                    self._wire, rotate=self._hardware.rotate
                )
            finally:
                self._wire.recording = None
            self._device.transaction = OVERHEAD[self._hardware.interface]
            self._init = glass.setup(recorded)
        return self._wire, self._device

    def start(self) -> None:
        """(Re)initialise the display; raises OSError or a luma Error if it does not answer."""
        wire, device = self._made()
        lit, self._first_light = self._first_light, None
        interface = self._hardware.interface
        if lit is not None and lit[1] == glass.lit_init(interface, self._init):
            memory, width = lit[2], device.width
            if isinstance(memory, bytes) and len(memory) == width * device.height // 8:
                self._ram = [memory[at : at + width] for at in range(0, len(memory), width)]
                self._inverted, self._lit = False, True
                if interface == "i2c":
                    return
            # SPI's RST floated from the stage's release to its claim (a kernel may free
            # lines as inputs, pulled down): the init again less DISPLAYOFF, a whole
            # frame, DISPLAYON: no blink where nothing was reset, a repair where it was.
            self._ram, self._lit = None, False
            for write in lit[1]:
                wire.serial.command(*write[1:])
            return
        # The init leaves the glass dark and normal, its memory unknown (noise at power-on).
        self._ram, self._inverted, self._lit = None, False, False
        for kind, args in self._init:
            getattr(wire.serial, kind)(*args)

    def _interface(self) -> _Wire:
        from luma.core.interface.serial import i2c, spi

        p = self._hardware
        if p.interface == "i2c" and self._bus is None:
            return _Wire(I2cDev(p.i2c_port, p.i2c_address))
        if p.interface == "i2c":  # an smbus stand-in (tests, the bench): luma's own
            return _Wire(i2c(bus=self._bus, port=p.i2c_port, address=p.i2c_address))
        gpio, bus = SpiPins(self._pins), SpiDev() if self._bus is None else self._bus
        reset: int | None = p.reset_pin
        try:  # luma opens DC and RST, pulses RST, then opens the bus
            if self._first_light is not None:  # a lit glass: RST held high, not pulsed
                gpio.setup(p.reset_pin, gpio.OUT, initial=gpio.HIGH)
                reset = None
            serial = spi(
                spi=bus, gpio=gpio, port=p.spi_port, device=p.spi_device,
                bus_speed_hz=p.spi_speed_hz, gpio_DC=p.dc_pin, gpio_RST=reset,
            )  # fmt: skip
        except BaseException:
            gpio.cleanup()  # free for the next attempt, as is the bus (its speed can fail)
            bus.close()
            raise
        return _Wire(serial, gpio)

    def readying(self, image: Image.Image) -> Iterator[None]:
        """Work out, a slice a step while the loop idles, what showing `image` would send:
        packed, then each way planned against the memory as it is (kept until that
        changes). Shown later, the same image is not packed again: it must not change."""
        if self._planned_from is not self._ram:
            self._planned, self._readied, self._planned_from = {}, {}, self._ram
        frame = pages(self._device.preprocess(image))
        key = b"".join(frame)
        self._readied[id(image)] = (image, key)  # kept alive: its id stays its own
        old, best = self._ram, None
        if old is None or key in self._planned:
            return
        for way in self._ways(frame, old):
            yield
            if self._ram is not old:
                return  # another frame went out: this one is planned again when shown
            best = self._better(best, way, old)
        assert best is not None
        self._planned[key] = best

    def display(self, image: Image.Image) -> None:
        """Send what changed since the last frame, the whole frame when that is unknown."""
        old, self._ram = self._ram, None  # unknown until every write has gone through
        self.sent, ram, inverted, plan = self._plan_for(image, old)
        self._device.send(ram, plan)
        if inverted != self._inverted:
            self._device.command(INVERTED if inverted else NORMAL)
            self._inverted = inverted
        if not self._lit:  # the first frame is in: light the glass
            self._device.command(DISPLAYON)
            self._lit = True
            self.sent += self._device.transaction + 1
        self._ram = ram

    def _plan_for(self, image: Image.Image, old: Pages | None) -> Plan:
        """The plan readied for this very image (not even packed again) or for the same
        frame, else one made now."""
        planned = self._planned if self._planned_from is old else {}
        readied = self._readied.get(id(image)) if planned else None
        if readied is not None and readied[0] is image and readied[1] in planned:
            return planned[readied[1]]
        frame = pages(self._device.preprocess(image))
        return planned.get(b"".join(frame)) or self._cheapest(frame, old)

    def _cheapest(self, frame: Pages, old: Pages | None) -> Plan:
        """The frame as it is, or its inverse with the glass flipped (a screen that turns
        mostly white, SOLD!, then costs a fraction of the bytes): whichever costs less."""
        best = None
        for way in self._ways(frame, old):
            best = self._better(best, way, old)
        assert best is not None
        return best

    def _ways(self, frame: Pages, old: Pages | None) -> list[tuple[Pages, bool]]:
        """What the memory can hold to show `frame`, and whether the glass is inverted
        then: as the glass is first (usually best)."""
        ways = [(frame, False)] if old is None else [(frame, False), (inverse(frame), True)]
        return sorted(ways, key=lambda way: way[1] != self._inverted)

    def _better(self, best: Plan | None, way: tuple[Pages, bool], old: Pages | None) -> Plan:
        """`way` planned, if it can cost less than `best`: whichever costs less."""
        ram, inverted = way
        flip = (self._device.transaction + 1) * (inverted != self._inverted)
        if best is not None and old is not None and flip + changed_bytes(ram, old) >= best[0]:
            return best  # its data alone costs more: not worth planning
        plan = self._device.plan(ram, old)
        cost = self._device.cost(plan) + flip
        return (cost, ram, inverted, plan) if best is None or cost < best[0] else best

    def first_light(self, image: Image.Image) -> glass.Keepsake:
        """What the service's first stage sends to show `image` on a dark glass, as the
        bus carries it (display/glass.py): its bus, the init less DISPLAYOFF, the whole
        frame with the glass lit, and the memory they leave. Nothing is sent: a panel on
        a bus that carries nothing works it out too (service/keepsake.py's `unstarted`)."""
        wire, device = self._made()
        frame = pages(device.preprocess(image))
        recorded: list[Write] = []
        wire.recording = recorded
        try:
            device.send(frame, device.plan(frame, None))
            device.command(NORMAL)
            device.command(DISPLAYON)
        finally:
            wire.recording = None
        interface = self._hardware.interface
        init, writes = glass.lit_init(interface, self._init), glass.wire(interface, recorded)
        return glass.bus(self._hardware), init, writes, b"".join(frame)

    def blank(self) -> None:
        """The glass dark at once (its memory is rewritten whole by the next start)."""
        self._device.hide()
        self._lit = False

    def close(self) -> None:
        if self._wire is not None:
            self._wire.cleanup()
            self._wire = None
