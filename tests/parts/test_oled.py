"""The OLED drivers: a whole frame is exactly luma's bytes, packed in a fraction of the time;
a changed frame sends only what changed, and the controller's memory (modelled from the
bytes on the bus, I2C or SPI) always ends up equal to the frame."""

from __future__ import annotations

import errno
import random

import pytest
from gpiozero import DigitalOutputDevice
from gpiozero.pins.mock import MockFactory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from luma.core.error import DeviceNotFoundError
from luma.core.error import Error as LumaError
from luma.core.interface.serial import i2c
from luma.oled.device import sh1106, ssd1306, ssd1309
from PIL import Image, ImageDraw

from cityunit.config import Hardware
from cityunit.core.gestures import Button
from cityunit.core.rules import Rules
from cityunit.core.screens import HourEndScreen, HourScreen
from cityunit.core.unit import Unit
from cityunit.display import i2c as i2c_module
from cityunit.display import oled, spi
from cityunit.display.i2c import I2cDev
from cityunit.display.memory import inverse, pages
from cityunit.display.oled import SH1106, SSD1306, SSD1309, LumaPanel
from cityunit.display.render import render
from cityunit.display.spi import SpiDev
from fakes import INTERFACES, WHOLE, Controller
from goldens import GOLDEN


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
@pytest.mark.parametrize(
    ("ours", "theirs"), [(SSD1306, ssd1306), (SSD1309, ssd1309), (SH1106, sh1106)]
)
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


DRIVERS = sorted(oled.DRIVERS)  # a new driver is tested here at once (docs/architecture.md)
rects = st.lists(
    st.tuples(st.floats(0, 1), st.floats(0, 1), st.integers(0, 40), st.integers(0, 20),
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
    w, h = image.size
    for fx, fy, dx, dy, how in edits:
        x, y = int(fx * (w - 1)), int(fy * (h - 1))
        box = (x, y, min(w - 1, x + dx), min(h - 1, y + dy))
        if how == "invert":
            region = image.crop(box).point(lambda v: 255 - v)
            image.paste(region, box[:2])
        else:
            draw.rectangle(box, fill=1 if how == "fill" else 0)
    return image


def naive_costs(kind: str, new: list[bytes], old: list[bytes], flip: int, t: int) -> list[int]:
    """What simpler shapes would cost on the Pi's bus to go from `old` to `new` (`t` bytes a
    write besides its payload): the whole frame, one window around every change (SSD130x),
    one run per changed page."""
    seek = 3 if kind == "sh1106" else 6
    changed = [
        (p, [c for c in range(128) if a[c] != b[c]])
        for p, (a, b) in enumerate(zip(new, old, strict=True))
    ]
    changed = [(p, cols) for p, cols in changed if cols]
    if not changed:
        return [flip]
    per_page = sum(2 * t + seek + cols[-1] - cols[0] + 1 for _, cols in changed)
    whole = 8 * (2 * t + seek + 128) if kind == "sh1106" else 2 * t + seek + 1024
    costs = [whole + flip, per_page + flip]
    if kind != "sh1106":
        c0, c1 = min(cols[0] for _, cols in changed), max(cols[-1] for _, cols in changed)
        costs.append(2 * t + seek + (c1 - c0 + 1) * (changed[-1][0] - changed[0][0] + 1) + flip)
    return costs


DARK = [bytes(128)] * 8


class Glass:
    """A panel over a modelled controller: what is shown must be what the glass shows, for
    the bytes the panel says, and never more than a simpler way would have cost."""

    def __init__(self, kind: str, rotate: int = 0, interface: str = "i2c") -> None:
        self.kind = kind
        self.bus = Controller(kind, spi=interface == "spi")
        self.t = oled.OVERHEAD[interface]
        parts = self.bus.hardware.replace(rotate=rotate)
        self.panel = LumaPanel(parts, bus=self.bus, pins=self.bus.pins)
        self.start()
        self.image = Image.new("1", (64, 128) if rotate % 2 else (128, 64))
        self.known = False  # whether the panel knows the memory (a frame went through)

    def start(self) -> None:
        """As Display does: start the panel again until it answers."""
        self.known = False
        while True:
            try:
                self.panel.start()
                break
            except (OSError, LumaError):
                pass
        assert self.bus.visible() == DARK, "no noise, no old memory: dark until a frame is in"

    def show(self, image: Image.Image) -> bool:
        before, glass, inverted = self.bus.wire_bytes, self.bus.visible(), self.bus.inverted
        try:
            self.panel.display(image)
        except (OSError, LumaError):
            self.start()
            return False
        sent = self.bus.wire_bytes - before
        expected = pages(self.panel._device.preprocess(image))
        assert self.bus.visible() == expected, "the glass shows the frame"
        assert self.panel.sent == sent, "the panel's costs are the bytes on the bus"
        if self.known:
            memory = inverse(glass) if inverted else glass
            for flipped, ram in ((False, expected), (True, inverse(expected))):
                flip = self.t + 1 if flipped != inverted else 0
                assert sent <= min(naive_costs(self.kind, ram, memory, flip, self.t)), sent
        self.image, self.known = image, True
        return True


def break_the_bus_once(bus: Controller, n: int) -> None:
    """The n-th write from now fails, once (as a glitch on the wire does)."""
    name = "write_i2c_block_data" if bus.pins is None else "writebytes"
    real, count = getattr(bus, name), [0]

    def flaky(*args: object) -> None:
        count[0] += 1
        if count[0] == n:
            setattr(bus, name, real)
            raise OSError(121, "Remote I/O error")
        real(*args)

    setattr(bus, name, flaky)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(DRIVERS), interface=st.sampled_from(INTERFACES),
    rotate=st.sampled_from([0, 1, 2, 3]), plan=steps,
)  # fmt: skip
def test_any_frames_with_restarts_and_failures_end_on_the_glass(
    kind, interface, rotate, plan
) -> None:
    glass = Glass(kind, rotate, interface)
    image = glass.image
    for step in plan:
        if step[0] == "frame":
            image = edited(image, step[1])
            while not glass.show(image):
                pass
        elif step[0] == "restart":
            glass.start()
        else:
            break_the_bus_once(glass.bus, step[1])
    vars(glass.bus).pop("write_i2c_block_data", None)  # a failure still to come: none
    vars(glass.bus).pop("writebytes", None)
    assert glass.show(image.point(lambda v: 255 - v))  # everything flips


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("kind", ["ssd1306", "ssd1309"])
def test_a_wrong_plan_is_caught_by_the_model(kind, interface) -> None:
    """The model obeys the datasheet: page-mode commands sent to an SSD1306 or SSD1309 in
    horizontal addressing land nowhere, and the glass check fails."""

    class PageMode(oled.DRIVERS[kind]):
        def send(self, new, windows):  # type: ignore[no-untyped-def]
            for p0, _, c0, c1 in windows:
                self.command(0xB0 + p0, c0 & 0x0F, 0x10 | c0 >> 4)
                self.data(list(new[p0][c0 : c1 + 1]))

    glass = Glass(kind, interface=interface)
    glass.show(render(HourEndScreen(1), "en"))
    glass.panel._device.__class__ = PageMode
    with pytest.raises(AssertionError, match="the glass shows the frame"):
        glass.show(render(HourEndScreen(2), "en"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(DRIVERS),
    interface=st.sampled_from(INTERFACES),
    seed=st.integers(0, 2**16),
    presses=st.lists(st.tuples(st.sampled_from(list(Button)), st.sampled_from([60, 1_600]),
                               st.integers(200, 30_000), st.booleans()), max_size=30),
)  # fmt: skip
def test_real_games_end_each_frame_on_the_glass_for_far_fewer_bytes(
    kind, interface, seed, presses
) -> None:
    """Screens as a game shows them (taps, long presses, the menu, auctions, permits), the
    panel sometimes restarted: every frame on the glass, for a fraction of whole frames."""
    unit = Unit(Rules(length_hours=1), random.Random(seed))
    unit.switch(True, 0)
    glass, t, last, sent, frames = Glass(kind, interface=interface), 0, None, 0, 0
    for button, hold, wait, restart in [*presses, (Button.AUCTION, 60, 60_000, False)]:
        unit.press(button, t)
        unit.release(button, t + hold)
        end = t + hold + wait
        while t < end:
            t = min(end, t + 100)
            unit.advance(t)
            snapshot = unit.snapshot()
            if tuple(snapshot.picture) != last:
                last = tuple(snapshot.picture)
                before = glass.bus.wire_bytes
                assert glass.show(render(*snapshot.picture))
                sent, frames = sent + glass.bus.wire_bytes - before, frames + 1
        if restart:
            glass.start()
    assert sent < frames * WHOLE[kind, interface] * 2 / 3


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("kind", DRIVERS)
def test_a_screen_that_turns_white_is_sent_inverted_for_a_fraction_of_the_bytes(
    kind, interface
) -> None:
    from cityunit.core.screens import AuctionScreen, SoldScreen

    glass = Glass(kind, interface=interface)
    assert glass.show(render(AuctionScreen(3), "en"))
    before = glass.bus.wire_bytes
    assert glass.show(render(SoldScreen(stopped=True), "en"))  # white, with black letters
    assert glass.bus.inverted and glass.bus.wire_bytes - before < 700
    assert glass.show(render(AuctionScreen(0), "en"))
    assert not glass.bus.inverted


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("kind", DRIVERS)
def test_the_glass_lights_with_the_first_frame_and_blanks_at_once(kind, interface) -> None:
    """A start sends no blank frame of its own (the first frame is whole anyway), and a
    blank is one command: the glass never shows a negative or noise on the way."""
    bus = Controller(kind, spi=interface == "spi")
    panel = LumaPanel(bus.hardware, bus=bus, pins=bus.pins)
    panel.start()
    assert bus.data_bytes == 0 and bus.visible() == DARK
    white = Image.new("1", (128, 64), 1)  # SOLD!-like: sent inverted, over noise
    panel.display(white)
    assert bus.visible() == [b"\xff" * 128] * 8
    assert bus.wire_bytes - WHOLE[kind, interface] < 40, "the init's commands and a frame, no more"
    before = bus.wire_bytes
    panel.blank()
    assert bus.visible() == DARK and bus.wire_bytes - before == oled.OVERHEAD[interface] + 1


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("kind", ["ssd1306", "ssd1309"])
def test_changes_far_apart_are_sent_as_separate_boxes(kind, interface) -> None:
    """Two 1-pixel lines down the screen's edges: two 8-page boxes, 1 column each (36 bytes
    on I2C), not one box over the whole screen (1,034) nor 16 runs (176)."""
    glass = Glass(kind, interface=interface)
    assert glass.show(Image.new("1", (128, 64)))
    edges = Image.new("1", (128, 64))
    ImageDraw.Draw(edges).line([(0, 0), (0, 63)], fill=1)
    ImageDraw.Draw(edges).line([(127, 0), (127, 63)], fill=1)
    assert glass.show(edges)
    assert glass.panel.sent == 2 * (2 * glass.t + 6 + 8)


# ----- SPI on the Pi: the kernel's spidev, DC and RST through gpiozero --------------------------


def test_spi_is_opened_as_configured_and_the_reset_is_released() -> None:
    bus = Controller("ssd1309", spi=True)
    parts = bus.hardware.replace(spi_device=1, spi_speed_hz=1_000_000)
    LumaPanel(parts, bus=bus, pins=bus.pins).start()
    assert bus.opened == (0, 1) and bus.max_speed_hz == 1_000_000
    assert bus.pins.pin(25).state == 1, "RST high: the controller listens"


@pytest.mark.parametrize("device", ["missing", "not a spidev"])
def test_a_spi_bus_that_does_not_open_is_a_display_down_and_frees_its_pins(
    tmp_path, device
) -> None:
    """SPI off (no /dev/spidev0.0), or the wrong file: luma's error or an OSError, as
    Display expects, and DC and RST are free again for the next attempt."""
    if device != "missing":
        (tmp_path / "spidev0.0").write_bytes(b"")
    pins, bus = MockFactory(), SpiDev(tmp_path)
    panel = LumaPanel(Hardware(interface="spi"), bus=bus, pins=pins)
    for _ in range(2):  # the retry meets the same error, not a pin in use
        with pytest.raises((OSError, LumaError)):
            panel.start()
        assert bus._fd == -1, "no file left open"
    DigitalOutputDevice(24, pin_factory=pins).close()


def test_a_dc_pin_held_elsewhere_is_a_display_down_not_a_crash() -> None:
    pins = MockFactory()
    held = DigitalOutputDevice(24, pin_factory=pins)
    bus = Controller("ssd1306", spi=True)
    with pytest.raises(LumaError, match="GPIO24"):
        LumaPanel(bus.hardware, bus=bus, pins=pins).start()
    held.close()


def test_spidev_sets_its_speed_and_writes_the_bytes_as_they_are(tmp_path, monkeypatch) -> None:
    """The kernel's calls (SPI_IOC_WR_MAX_SPEED_HZ, write), on a file standing in for
    /dev/spidev0.0."""
    calls = []
    monkeypatch.setattr(spi.fcntl, "ioctl", lambda fd, op, arg: calls.append((op, arg)))
    (tmp_path / "spidev0.1").write_bytes(b"")
    dev = SpiDev(tmp_path)
    dev.open(0, 1)
    dev.max_speed_hz = 8_000_000
    dev.writebytes([0xAE, 0x00, 0xFF])
    dev.close()
    dev.close()
    assert calls == [(0x40046B04, (8_000_000).to_bytes(4, "little"))]
    assert (tmp_path / "spidev0.1").read_bytes() == b"\xae\x00\xff"


def test_the_bench_times_a_panel_on_spi_with_its_bus_time_at_its_speed() -> None:
    """`cityunit bench --device` on an SPI display: one panel (a second would want the same
    DC and RST pins), its bytes as the bus counts them, their time at the bus's speed."""
    from cityunit.config import Config
    from cityunit.tools.bench.device import KINDS, frames

    bus = Controller("ssd1309", spi=True)
    parts = bus.hardware.replace(spi_speed_hz=4_000_000)
    before = bus.wire_bytes
    lines = frames(Config(hardware=parts), bus=bus, gpio=bus.pins)
    assert lines[0] == "  display: ssd1309 on SPI0.0 at 4 MHz (DC GPIO24, RST GPIO25)"
    for kind in KINDS:
        assert any(line.startswith(f"  {kind}: on the wire") for line in lines), kind
    assert bus.visible() == DARK, "blanked after"
    assert bus.wire_bytes > before


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("kind", DRIVERS)
def test_every_golden_screen_ends_on_each_drivers_glass(kind, interface) -> None:
    """The golden images are what is drawn, whatever the driver: each, one after another
    (the diff from the one before), is what every controller's glass shows, on either bus."""
    glass = Glass(kind, interface=interface)
    for path in sorted(GOLDEN.glob("*.png")):
        assert glass.show(Image.open(path).convert("1")), path.name


class Writes(Controller):
    """The controller, and every write that reached it, in order."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.log: list[tuple[int, tuple[int, ...]]] = []

    def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
        super().write_i2c_block_data(addr, register, data)
        self.log.append((register, tuple(data)))


def play_with(kind: str, ready: bool, seed: int) -> tuple[list, int, int]:
    """A game's screens through Display on a modelled controller; `ready`: the screens
    the mode expects next are readied between frames, as the loop does when idle. The
    bus's writes; how many shown frames had to be planned at the tap; how many shown."""
    from functools import partial

    from cityunit.display.panel import Display

    bus = Writes(kind)
    panel = LumaPanel(bus.hardware, bus=bus)
    display = Display(panel)
    unit = Unit(Rules(), random.Random(seed))
    unit.switch(True, 0)
    planned_at_show = 0
    real = panel._cheapest

    def counted(*args):
        nonlocal planned_at_show
        planned_at_show += 1
        return real(*args)

    rng, t, shown = random.Random(seed), 0, 0
    display.poll(0)
    for _ in range(60):
        button = rng.choice(list(Button))
        unit.press(button, t)
        t += rng.choice([60, 60, 60, 1_600])
        unit.release(button, t)
        start = t
        for t in range(start, start + rng.choice([100, 2_000, 9_000]), 100):
            unit.advance(t)
            snapshot = unit.snapshot()
            before = len(bus.log)
            panel._cheapest = counted  # only what showing costs is counted
            display.show(snapshot.picture.screen, "en", t, partial(unit.mode.ahead, t))
            panel._cheapest = real
            if len(bus.log) > before:
                shown += 1
                assert bus.visible() == pages(render(snapshot.picture.screen, "en"))
            while ready and display.preparing:
                display.prepare_next()
    return bus.log, planned_at_show, shown


@pytest.mark.parametrize("kind", ["ssd1306", "sh1106"])
def test_screens_readied_ahead_send_the_same_bytes_and_cost_a_tap_no_planning(kind) -> None:
    """Issue 23: what a tap or the next frame shows is rendered, packed and planned while
    the loop idles, so showing it costs only the bus; the writes are the very same."""
    ahead, planned, shown = play_with(kind, ready=True, seed=3)
    plain, planned_plain, shown_plain = play_with(kind, ready=False, seed=3)
    assert ahead == plain and shown == shown_plain > 100
    assert planned_plain == shown_plain
    assert planned < shown / 10, f"{planned} of {shown} frames were planned when shown"


def test_readying_goes_a_short_slice_at_a_time(monkeypatch) -> None:
    """Issue 41: a press waits behind one slice of readying at most, so no slice does two
    of the costly things: a render, a pack, a way's plan (as the glass is, or inverted)."""
    from cityunit.display import panel as panel_module
    from cityunit.display.panel import Display

    bus = Controller("ssd1306")
    panel = LumaPanel(bus.hardware, bus=bus)
    display = Display(panel)
    display.poll(0)
    costly: list[str] = []
    for module, name in ((panel_module, "render"), (oled, "pages")):
        real = getattr(module, name)
        monkeypatch.setattr(
            module, name, lambda *a, _n=name, _r=real: (costly.append(_n), _r(*a))[1]
        )
    plan = panel._device.plan
    monkeypatch.setattr(panel._device, "plan", lambda *a: (costly.append("plan"), plan(*a))[1])
    display.show(
        HourScreen(1, "00:01"), "en", 0, lambda: [HourEndScreen(1), HourScreen(1, "00:02")]
    )
    costly.clear()
    slices = []
    while display.preparing:
        display.prepare_next()
        slices.append(costly.copy())
        costly.clear()
    assert all(len(work) <= 1 for work in slices), slices
    done = [name for work in slices for name in work]
    assert done.count("render") == done.count("pages") == 2 and 2 <= done.count("plan") <= 4


@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("kind", DRIVERS)
def test_a_screen_readied_before_another_frame_went_out_is_planned_again(kind, interface) -> None:
    """Issue 23: a plan readied against the memory as it was is worth nothing once another
    frame changed it (the next tick went out before the tap's screen): followed, it
    would leave the old tick's digits on the glass."""
    bus = Controller(kind, spi=interface == "spi")
    panel = LumaPanel(bus.hardware, bus=bus, pins=bus.pins)
    panel.start()
    panel.display(render(HourScreen(1, "00:01"), "en"))
    tap, tick = render(HourScreen(1, "00:03"), "en"), render(HourScreen(2, "00:01"), "en")
    list(panel.readying(tap))  # readied against 00:01, slice by slice
    panel.display(tick)
    panel.display(tap)
    assert bus.visible() == pages(tap)


def test_i2c_dev_writes_each_call_as_one_transaction_with_luma_s_errors(
    tmp_path, monkeypatch
) -> None:
    """The unit's I2C without smbus2: the address set once (I2C_SLAVE), each command and
    each block of data one write, its control byte first, as luma's managed bus sends
    them; a missing bus and a missing device are luma's errors, in its words."""
    calls = []
    monkeypatch.setattr(i2c_module.fcntl, "ioctl", lambda fd, op, arg: calls.append((op, arg)))
    (tmp_path / "i2c-1").write_bytes(b"")
    dev = I2cDev(1, 0x3C, tmp_path)
    dev.command(0xAE, 0xD5, 0x80)
    dev.data(list(range(256)) * 20)  # 5,120 bytes: two writes, 4,096 and 1,024
    dev.cleanup()
    dev.cleanup()
    assert calls == [(0x0703, 0x3C)]
    sent = (tmp_path / "i2c-1").read_bytes()
    whole = bytes(range(256)) * 20
    assert sent == b"\x00\xae\xd5\x80" + b"\x40" + whole[:4096] + b"\x40" + whole[4096:]
    with pytest.raises(DeviceNotFoundError, match=r"I2C device not found: .*i2c-9"):
        I2cDev(9, 0x3C, tmp_path)

    def no_ack(fd: int, data: bytes) -> int:
        raise OSError(errno.EREMOTEIO, "Remote I/O error")

    dev = I2cDev(1, 0x3D, tmp_path)
    monkeypatch.setattr(i2c_module.os, "write", no_ack)
    with pytest.raises(DeviceNotFoundError, match="not found on address: 0x3D"):
        dev.command(0xAF)
    dev.cleanup()
