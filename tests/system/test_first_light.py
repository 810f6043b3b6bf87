"""First light: the service's first stage puts on the glass what the unit kept at its last
stop, through a model of the kernel (the GPIO character device's v2 requests parsed as
linux/gpio.h lays them out, i2c-dev and spidev feeding a modelled controller), and the
unit takes the glass over with no DISPLAYOFF and a diff for its first frame."""

from __future__ import annotations

import errno
import itertools
import logging
import marshal
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from cityunit.board import Board
from cityunit.config import Config, load
from cityunit.display.memory import pages
from cityunit.display.oled import LumaPanel
from cityunit.loop.clock import VirtualClock
from cityunit.parts.gpio import Parts
from cityunit.service import first_light, keepsake
from fakes import INTERFACES, WHOLE, Controller, State, kernel_pwm, mock_factory

ROOT = Path(__file__).resolve().parents[2]
CHIP, SWITCH, LED = "/dev/gpiochip0", 22, 13


class Kernel:
    """What the first stage asks of Linux, modelled: a GPIO chip (lines' levels, requests
    held until their descriptor closes), i2c-dev and spidev in front of `bus`."""

    def __init__(self, bus: Controller, switch_on: bool = False) -> None:
        self.bus = bus
        self.levels = {SWITCH: 0 if switch_on else 1}  # pulled up; the switch closes to ground
        self.files = {CHIP: "chip", "/dev/i2c-1": "i2c", "/dev/spidev0.0": "spi"}
        self.open: dict[int, tuple[str, object]] = {}
        self.requests: list[tuple[tuple[int, ...], int, int | None]] = []  # lines, flags, values
        self.held: dict[int, tuple[int, ...]] = {}
        self.address: int | None = None
        self.dc = 0
        self.hz = 0
        self.writes: list[bytes] = []
        self._next = 1000

    def _fd(self, what: str, detail: object = None) -> int:
        self._next += 1
        self.open[self._next] = (what, detail)
        return self._next

    # os, as the stage calls it
    def os_open(self, path: str, flags: int, mode: int = 0o777) -> int:
        if path not in self.files:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", path)
        return self._fd(self.files[path])

    def os_write(self, fd: int, data: bytes) -> int:
        what, _ = self.open[fd]
        self.writes.append(bytes(data))
        if what == "i2c":
            assert self.address == 0x3C
            self.bus.write_i2c_block_data(self.address, data[0], list(data[1:]))
        elif what == "spi":
            assert self.hz == 8_000_000 and self.levels.get(25, 1) == 1, "RST high"
            self.bus.wire_bytes += len(data)
            self.bus._take(not self.dc, list(data))
        return len(data)

    def os_close(self, fd: int) -> None:
        self.open.pop(fd)
        self.held.pop(fd, None)

    def ioctl(self, fd: int, request: int, arg: object = 0, mutate: bool = True) -> int:
        what, _ = self.open[fd]
        if request == first_light.GET_LINE:
            assert what == "chip" and isinstance(arg, bytearray) and len(arg) == 592
            offsets = struct.unpack_from("<64I", arg, 0)
            consumer = arg[256:288].rstrip(b"\0")
            flags, attrs = struct.unpack_from("<QI", arg, 288)
            count = struct.unpack_from("<I", arg, 560)[0]
            lines = offsets[:count]
            values = None
            if attrs:
                kind, _, bits, mask = struct.unpack_from("<IIQQ", arg, 320)
                assert kind == first_light.OUTPUT_VALUES and mask == (1 << count) - 1
                values = bits
                self._drive(lines, bits)
            assert consumer == b"cityunit" and 1 <= count <= 2
            self.requests.append((lines, flags, values))
            fd_out = self._fd("lines", lines)
            self.held[fd_out] = lines
            struct.pack_into("<i", arg, 588, fd_out)
        elif request == first_light.GET_VALUES:
            lines = self.held[fd]
            bits = sum(self.levels.get(line, 0) << i for i, line in enumerate(lines))
            struct.pack_into("<Q", arg, 0, bits & struct.unpack_from("<Q", arg, 8)[0])
        elif request == first_light.SET_VALUES:
            bits, _ = struct.unpack("<QQ", bytes(arg))
            self._drive(self.held[fd], bits)
        elif request == first_light.I2C_SLAVE:
            assert what == "i2c"
            self.address = int(arg)
        elif request == first_light.SPI_SPEED:
            self.hz = struct.unpack("<I", bytes(arg))[0]
        else:
            raise OSError(errno.ENOTTY, "Inappropriate ioctl for device")
        return 0

    def _drive(self, lines: tuple[int, ...], bits: int) -> None:
        for i, line in enumerate(lines):
            self.levels[line] = bits >> i & 1
        self.dc = self.levels.get(24, 0)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        kernel = self

        class Os:  # the devices modelled; the keepsake and the config real files
            def __getattr__(self, name: str) -> object:
                return getattr(os, name)

            def open(self, path: str, flags: int, mode: int = 0o777) -> int:
                if path.startswith("/dev/"):
                    return kernel.os_open(path, flags)
                return os.open(path, flags, mode)

            def write(self, fd: int, data: bytes) -> int:
                return kernel.os_write(fd, data) if fd in kernel.open else os.write(fd, data)

            def close(self, fd: int) -> None:
                kernel.os_close(fd) if fd in kernel.open else os.close(fd)

        class Fcntl:
            ioctl = self.ioctl

        monkeypatch.setattr(first_light, "os", Os())
        monkeypatch.setattr(first_light, "fcntl", Fcntl)
        monkeypatch.setattr(first_light, "LIT", first_light.Lit())


def config_file(tmp_path: Path) -> tuple[str, bytes]:
    """The config file the unit read good, as run.py hands it over: ARGV names it."""
    path = tmp_path / "config.toml"
    if not path.exists():
        path.write_text("# the defaults\n")
    return (str(path), path.read_bytes())


def argv(tmp_path: Path) -> list[str]:
    return ["cityunit", "run", "--config", str(tmp_path / "config.toml"), "--or-last-good"]


def kept_by_a_unit(
    tmp_path: Path, config: Config, switch_on: bool, bus: Controller, pwm_root: Path | None = None
) -> Path:
    """A unit on mock pins (the kernel's PWM channels under `pwm_root`, if given), played
    a little and stopped cleanly, keeping its first light in `tmp_path` (its lines on
    CHIP, as lgpio's would be)."""
    factory = mock_factory()
    if switch_on:
        factory.pin(SWITCH).on = True  # left ON before the start
    clock = VirtualClock()
    board = Board(config, clock, pin_factory=factory, seed=5, state_dir=tmp_path,
                  pwm_root=pwm_root, panel=LumaPanel(config.hardware, bus=bus, pins=bus.pins))  # fmt: skip
    keeper = keepsake.Keeper(board, tmp_path, config_file(tmp_path))
    board.runtime.on_save = board.attach(keeper).saved
    board.runtime.pump()
    board.runtime.advance_to(61_000, clock)  # a minute of play, if ON
    board.close()
    assert keeper.path.exists()
    return keeper.path


@pytest.fixture(autouse=True)
def _on_the_chip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keepsake, "gpio_chip", lambda factory: CHIP)


def controller(kind: str, interface: str) -> Controller:
    bus = Controller(kind, spi=interface == "spi")
    return bus


def config_for(bus: Controller) -> Config:
    return Config().replace(hardware=bus.hardware)


@pytest.mark.parametrize("switch_on", [False, True], ids=["off", "on"])
@pytest.mark.parametrize("interface", INTERFACES)
@pytest.mark.parametrize("kind", ["ssd1306", "ssd1309", "sh1106"])
def test_first_light_shows_the_kept_screen_and_the_unit_takes_it_over_without_a_blink(
    tmp_path, monkeypatch, kind, interface, switch_on
) -> None:
    config = config_for(controller(kind, interface))
    path = kept_by_a_unit(tmp_path, config, switch_on, controller(kind, interface))
    glass = controller(kind, interface)  # a new power-on: noise in memory, glass dark
    kernel = Kernel(glass, switch_on)
    kernel.install(monkeypatch)

    lit = first_light.light(str(path), argv(tmp_path))

    assert lit.switch is switch_on and lit.glass is not None
    assert glass.on and not glass.inverted
    memory = [lit.glass[2][p * 128 : (p + 1) * 128] for p in range(8)]
    assert glass.visible() == memory, "the glass shows the frame kept, whole"
    assert not any(0xAE in w[1:] for w in kernel.writes if w[0] == 0), "no DISPLAYOFF sent"
    # A unit booted from the saved game with the switch so shows the same screen first.
    kept = marshal.loads(path.read_bytes())
    assert kept["pages"][switch_on] == lit.glass[2]
    assert (SWITCH,) in [r[0] for r in kernel.requests], "the switch read"
    assert (LED,) not in [r[0] for r in kernel.requests], "dark at the unit's start"
    held = len(kernel.held)
    assert held == (1 if interface == "spi" else 0), "DC and RST held"
    lit.release()
    assert kernel.held == {}, "every line given back before gpiozero claims it"

    # The unit takes over with no DISPLAYOFF: on I2C nothing sent, the first frame a
    # diff; on SPI (RST may have floated meanwhile) the init again and a whole frame.
    offs: list[int] = []
    single = glass._single
    glass._single = lambda byte: (offs.append(byte) if byte == 0xAE else None, single(byte))[1]
    before = glass.wire_bytes
    panel = LumaPanel(config.hardware, bus=glass, pins=glass.pins, lit=lit.glass)
    panel.start()
    assert glass.visible() == memory, "still the frame first light put there"
    assert (glass.wire_bytes == before) is (interface == "i2c"), "I2C: nothing sent at start"
    image = Image.new("1", (128, 64))
    image.paste(1, (10, 10, 20, 20))
    panel.display(image)
    assert glass.visible() == pages(image) and offs == [], "no dark frame between"
    if interface == "i2c":
        assert panel.sent < WHOLE[kind, interface], "a diff from what first light left"


def test_the_switch_chooses_the_frame_and_an_unread_switch_shows_off(tmp_path, monkeypatch) -> None:
    bus = controller("ssd1306", "i2c")
    path = kept_by_a_unit(tmp_path, config_for(bus), True, controller("ssd1306", "i2c"))
    kept = marshal.loads(path.read_bytes())
    assert kept["pages"][True] != kept["pages"][False], "the hour's screen, OFF's screen"
    kernel = Kernel(controller("ssd1306", "i2c"))
    del kernel.files[CHIP]  # no GPIO chip: the glass still lit, with OFF's frame
    kernel.install(monkeypatch)
    lit = first_light.light(str(path), argv(tmp_path))
    assert lit.switch is None and lit.glass is not None
    assert lit.glass[2] == kept["pages"][False]


@pytest.mark.parametrize(
    "damage",
    [
        "missing",
        "empty",
        "garbage",
        "other format",
        "no bus",
        "bus refuses",
        "no display",
        "no keys",
        "wrong types",
        "short frame",
        "a link",
        "a fifo",
        "too big",
        "config edited",
        "another config",
        "config a fifo",
        "config missing",
    ],
)
def test_what_the_first_stage_cannot_do_is_skipped_and_the_unit_starts_as_before(
    tmp_path, monkeypatch, damage
) -> None:
    bus = controller("ssd1306", "i2c")
    path = kept_by_a_unit(tmp_path, config_for(bus), False, controller("ssd1306", "i2c"))
    kept = marshal.loads(path.read_bytes())
    glass = controller("ssd1306", "i2c")
    kernel = Kernel(glass)
    if damage == "missing":
        path.unlink()
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "garbage":
        path.write_bytes(os.urandom(300))
    elif damage == "other format":
        path.write_bytes(marshal.dumps({**kept, "format": 99}))
    elif damage == "no bus":
        del kernel.files["/dev/i2c-1"]
    elif damage == "bus refuses":
        glass.unplugged = True
    elif damage == "no display":
        path.write_bytes(marshal.dumps({**kept, "bus": ("spi", "/dev/spidev0.0", 1, 24, 25),
                                        "chip": None}))  # fmt: skip
    elif damage == "no keys":
        path.write_bytes(marshal.dumps({"format": first_light.FORMAT, "config": kept["config"]}))
    elif damage == "wrong types":
        path.write_bytes(marshal.dumps({**kept, "frames": {False: 7}, "bus": 5, "led": "x"}))
    elif damage == "short frame":
        path.write_bytes(marshal.dumps({**kept, "pages": {False: b"\xff" * 10}}))
    elif damage == "a link":
        os.replace(path, tmp_path / "elsewhere")
        path.symlink_to(tmp_path / "elsewhere")
    elif damage == "a fifo":
        path.unlink()
        os.mkfifo(path)  # would hang a plain open() and read()
    elif damage == "too big":
        path.write_bytes(path.read_bytes() + bytes(2 * first_light.CONFIG_BYTES))
    elif damage == "config edited":
        (tmp_path / "config.toml").write_text("[pins]\nled = 12\n")
    elif damage == "config a fifo":
        (tmp_path / "config.toml").unlink()
        os.mkfifo(tmp_path / "config.toml")  # would hang a plain open() and read()
    elif damage == "config missing":
        (tmp_path / "config.toml").unlink()
    kernel.install(monkeypatch)
    given = argv(tmp_path)
    if damage == "another config":
        given[given.index("--config") + 1] = "/etc/cityunit/config.toml"
    lit = first_light.light(str(path), given)
    if damage == "short frame":  # lit, but the unit will not take a memory it cannot be
        assert lit.glass is not None and len(lit.glass[2]) == 10
    else:
        assert lit.glass is None
    read = ("no bus", "bus refuses", "short frame", "wrong types")
    assert lit.switch is (False if damage in read else None)
    lit.release()
    # The unit then starts as it always did: its init, and a whole first frame.
    glass.unplugged = False
    panel = LumaPanel(bus.hardware, bus=glass, lit=lit.glass)
    panel.start()
    panel.display(Image.new("1", (128, 64)))
    assert glass.visible() == [bytes(128)] * 8 and glass.on
    assert panel.sent == WHOLE["ssd1306", "i2c"] + 3, "whole, and the glass lit"


def test_the_first_stage_reads_a_config_as_large_as_the_unit_does() -> None:
    """Past it, a config the unit reads good would never light early."""
    from cityunit import config

    assert first_light.CONFIG_BYTES == config.MAX_BYTES


def test_the_same_config_written_anew_still_lights(tmp_path, monkeypatch) -> None:
    """The card's case: its FAT gives cityunit.toml a new inode at each mount, and a copy
    a new time. The config is the one kept with as long as its bytes are."""
    bus = controller("ssd1306", "i2c")
    path = kept_by_a_unit(tmp_path, config_for(bus), False, controller("ssd1306", "i2c"))
    config = tmp_path / "config.toml"
    text = config.read_bytes()
    config.unlink()
    config.write_bytes(text)
    os.utime(config, (1, 1))
    Kernel(controller("ssd1306", "i2c")).install(monkeypatch)
    lit = first_light.light(str(path), argv(tmp_path))
    assert lit.glass is not None and lit.switch is False
    lit.release()


@pytest.mark.parametrize("lit", [False, True])
def test_the_led_is_lit_only_where_the_unit_lights_it_and_only_on_a_plain_line(
    tmp_path, monkeypatch, lit
) -> None:
    """At its start the unit's LED is dark (OFF, or an hour resumed), so first light
    leaves it; where it is lit (GAME OVER resumed), the stage lights it, on a line the
    config makes a plain GPIO. One on the PWM hardware is never requested: its pin has
    that function, which a line request would take from it."""
    bus = controller("ssd1306", "i2c")
    plain = config_for(bus).hardware.replace(led_pwm=False)
    config = config_for(bus).replace(hardware=plain)
    path = kept_by_a_unit(tmp_path, config, False, controller("ssd1306", "i2c"))
    kept = marshal.loads(path.read_bytes())
    assert kept["led"] == LED and kept["level"] == {False: 0.0, True: 0.0}
    path.write_bytes(marshal.dumps({**kept, "level": {False: 1.0 * lit, True: 1.0 * lit}}))
    kernel = Kernel(controller("ssd1306", "i2c"))
    kernel.install(monkeypatch)
    first_light.light(str(path), argv(tmp_path))
    assert (
        ((LED,), first_light.OUTPUT, 1) in kernel.requests
        if lit
        else kernel.requests == [((SWITCH,), first_light.INPUT | first_light.PULL_UP, None)]
    )
    (tmp_path / "pwm").mkdir()
    pwm = kept_by_a_unit(tmp_path / "pwm", config_for(bus), False, controller("ssd1306", "i2c"))
    assert marshal.loads(pwm.read_bytes())["led"] is None, "the PWM hardware's: never"


@pytest.mark.parametrize("case", ["udev-in-time", "udev-late", "chips-renumbered"])
def test_an_led_on_the_pwm_hardware_is_lit_on_its_channel_and_taken_over_as_it_is(
    tmp_path, monkeypatch, case
) -> None:
    """The LED on the PWM hardware (the default), lit at the unit's start (GAME OVER
    resumed): the stage exports its channel, waits for udev to hand the new channel's
    files over (a while only), and lights it at the unit's level, through the kernel's
    sysfs files (fakes.KernelPWM: what it refuses, Linux refuses); the unit's parts take
    the channel as they find it, where a buzzer left playing is stopped; at the unit's
    same level nothing more is written. udev too late, or the kept chip now another PWM
    block's: the stage leaves it, and the unit lights it."""
    kernel = kernel_pwm(tmp_path / "sys", monkeypatch)  # udev: two checks after an export
    chip = kernel.chip()
    bus = controller("ssd1306", "i2c")
    path = kept_by_a_unit(tmp_path, config_for(bus), False, bus, pwm_root=kernel.root)
    kept = marshal.loads(path.read_bytes())
    assert kept["led"] is None and kept["level"] == {False: 0.0, True: 0.0}
    assert kept["pwm"] == (str(chip), "fe20c000.pwm", 1, 1_000_000), "GPIO13: PWM1"
    assert kernel.exported == set()
    pwm = (
        (str(chip), "another.pwm", *kept["pwm"][2:]) if case == "chips-renumbered" else kept["pwm"]
    )
    path.write_bytes(marshal.dumps({**kept, "pwm": pwm, "level": {False: 0.5, True: 0.5}}))
    Kernel(controller("ssd1306", "i2c")).install(monkeypatch)
    monkeypatch.setattr(first_light, "pwm_write", lambda p, v: kernel.write(Path(p), str(v)))
    monkeypatch.setattr(first_light, "pwm_read", lambda p: int(kernel.read(Path(p))))
    monkeypatch.setattr(first_light, "pwm_writable", lambda p: kernel.writable(Path(p)))
    if case == "udev-late":
        monkeypatch.setattr(first_light, "PWM_WAIT_S", 0.0)

    first_light.light(str(path), argv(tmp_path))
    lit = State(1_000_000, 500_000, 1)
    by_stage = {"udev-in-time": lit, "udev-late": State(), "chips-renumbered": State()}[case]
    assert kernel.state(chip / "pwm1") == by_stage and kernel.refused == []
    assert (chip / "pwm1" in kernel.exported) is (case != "chips-renumbered")

    kernel.left(chip / "pwm0", State(500_000, 250_000, 1), exported=False)  # a tone left on
    with Parts(config_for(bus), lambda name, level: None, mock_factory(),
               pwm_root=kernel.root) as parts:  # fmt: skip
        assert parts.pwm_hardware == ["buzzer", "led"]
        assert kernel.state(chip / "pwm1") == by_stage, "the LED as the stage left it"
        assert kernel.state(chip / "pwm0").enable == 0, "the buzzer stopped at once"
        applied = len(kernel.applied.get(chip / "pwm1", []))
        parts.light(0.5)
        assert kernel.state(chip / "pwm1") == lit
        assert (len(kernel.applied[chip / "pwm1"]) == applied) is (case == "udev-in-time")
    assert kernel.state(chip / "pwm1").enable == 0 and kernel.exported == set()


def test_a_panel_configured_otherwise_than_kept_starts_afresh(tmp_path, monkeypatch) -> None:
    """Another controller since (another init), or another address: the unit's own
    init, as without first light."""
    bus = controller("ssd1306", "i2c")
    path = kept_by_a_unit(tmp_path, config_for(bus), False, controller("ssd1306", "i2c"))
    for change in ({"driver": "sh1106"}, {"i2c_address": 0x3D}):
        glass = controller("ssd1306", "i2c")
        Kernel(glass).install(monkeypatch)
        lit = first_light.light(str(path), argv(tmp_path))
        assert lit.glass is not None
        hardware = bus.hardware.replace(**change)
        panel = LumaPanel(hardware, bus=glass, lit=lit.glass)
        before = glass.wire_bytes
        panel.start()
        assert glass.wire_bytes > before and not glass.on, "its init, DISPLAYOFF first"


def test_the_keepsake_is_written_when_due_and_changed_and_a_full_card_stops_nothing(
    tmp_path, monkeypatch, caplog
) -> None:
    bus = controller("ssd1306", "i2c")
    config = config_for(bus)
    factory = mock_factory()
    factory.pin(SWITCH).on = True  # the hour runs: its clock on the screen
    clock = VirtualClock()
    board = Board(config, clock, pin_factory=factory, seed=5, state_dir=tmp_path,
                  panel=LumaPanel(config.hardware, bus=bus))  # fmt: skip
    keeper = keepsake.Keeper(board, tmp_path, config_file(tmp_path))
    board.runtime.on_save = board.attach(keeper).saved
    writes: list[int] = []
    save = keepsake.save_atomic
    monkeypatch.setattr(keepsake, "save_atomic", lambda p, d: (writes.append(clock.now_ms()),
                                                                save(p, d))[1])  # fmt: skip
    board.runtime.pump()
    caplog.set_level(logging.INFO, logger="cityunit")
    for t in range(1_000, 181_000, 1_000):  # three minutes of play, a save every 5 s
        board.runtime.advance_to(t, clock)
        keeper.flush()  # (each write in its turn: the times below are the clock's)
    assert writes[0] >= keepsake.FIRST_MS and len(writes) == 3, writes
    assert all(b - a >= keepsake.EVERY_MS for a, b in itertools.pairwise(writes))
    told = [r.getMessage() for r in caplog.records if "next start" in r.getMessage()]
    assert told == [f"{keeper.path}: kept, for the first light of the next start"], told
    caplog.clear()

    def full(path: Path, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(keepsake, "save_atomic", full)
    caplog.set_level(logging.WARNING)
    for t in range(181_000, 311_000, 1_000):
        board.runtime.advance_to(t, clock)
        keeper.flush()
    said = [r.getMessage() for r in caplog.records if "first-light" in r.getMessage()]
    assert said == [f"{keeper.path}: not kept: No space left on device"], "said once"
    assert board.unit.power and board.display is not None and board.display.up
    board.close()


def test_the_first_keepsake_of_a_run_is_kept_soon_with_the_switch_off_too(tmp_path) -> None:
    """OFF, no game is saved: the keepsake still comes FIRST_MS after the start (a pulled
    plug later finds it), and not again until something changes or the stop."""
    bus = controller("ssd1306", "i2c")
    config = config_for(bus)
    clock = VirtualClock()
    board = Board(config, clock, pin_factory=mock_factory(), seed=5, state_dir=tmp_path,
                  panel=LumaPanel(config.hardware, bus=bus))  # fmt: skip
    keeper = keepsake.Keeper(board, tmp_path, config_file(tmp_path))
    board.runtime.on_save = board.attach(keeper).saved
    board.runtime.pump()
    board.runtime.advance_to(keepsake.FIRST_MS - 1, clock)
    assert not keeper.path.exists() and not board.unit.power
    board.runtime.advance_to(keepsake.FIRST_MS, clock)
    assert keeper.flush() and keeper.path.exists()
    board.close()


def test_a_start_does_not_write_the_keepsake_it_finds_again(tmp_path, monkeypatch) -> None:
    """Each start keeps its first light 5 s in; where the card has that very keepsake
    already (a unit OFF, stopped and started again), it is not written again."""
    bus = controller("ssd1306", "i2c")
    kept_by_a_unit(tmp_path, config_for(bus), False, controller("ssd1306", "i2c"))
    writes: list[Path] = []
    monkeypatch.setattr(keepsake, "save_atomic", lambda path, data: writes.append(path))
    kept_by_a_unit(tmp_path, config_for(bus), False, controller("ssd1306", "i2c"))
    assert writes == []


def test_the_first_stage_imports_nothing_but_builtins_os_and_fcntl() -> None:
    code = ("import sys, os, fcntl; before = set(sys.modules);"
            " from cityunit.service import first_light; print(sorted(set(sys.modules) - before))")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT / "firmware")}
    out = subprocess.run([sys.executable, "-S", "-c", code], env=env, capture_output=True,
                         text=True, check=True).stdout  # fmt: skip
    assert eval(out) == ["cityunit", "cityunit.service", "cityunit.service.first_light"]


def test_the_launcher_runs_the_unit_after_the_first_stage(tmp_path) -> None:
    """systemd/start under `python -S`, as ExecStart runs it: no keepsake here, so the
    first stage does nothing, and the unit's command line is the unit's."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "firmware"), "STATE_DIRECTORY": str(tmp_path)}
    done = subprocess.run([sys.executable, "-S", str(ROOT / "systemd" / "start"), "--version"],
                          env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0 and done.stdout.startswith("cityunit "), done.stderr


def test_the_early_signals_are_the_stop_signals() -> None:
    import signal

    from cityunit import EARLY

    assert EARLY == (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)


def test_the_gpio_chip_kept_is_the_one_the_pins_are_on(monkeypatch) -> None:
    """lgpio's chip (4 on a Pi 5 with an older kernel), else the first; none for mock
    pins, whose lines are no kernel's."""
    monkeypatch.undo()  # the fixture's stand-in, off
    lgpio = type("LGPIOFactory", (), {"chip": 4})()
    assert keepsake.gpio_chip(lgpio) == "/dev/gpiochip4"
    assert keepsake.gpio_chip(object()) == "/dev/gpiochip0"
    assert keepsake.gpio_chip(mock_factory()) is None and keepsake.gpio_chip(None) is None


def keep_unstarted(config: Path, to: Path) -> subprocess.CompletedProcess[str]:
    """`cityunit run --keepsake`, as the installer and the image's build run it."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "firmware")}
    return subprocess.run(
        [sys.executable, "-m", "cityunit", "run", "--config", str(config), "--keepsake", str(to)],
        env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip


@pytest.mark.parametrize("switch_on", [False, True], ids=["off", "on"])
@pytest.mark.parametrize("interface", INTERFACES)
def test_a_unit_never_started_lights_its_first_start_with_the_frame_it_then_shows(
    tmp_path, monkeypatch, interface, switch_on
) -> None:
    """The installer's and the image's keepsake (`run --keepsake`), made with no display:
    at the first start the stage lights the glass, and the unit, starting a new game,
    takes it over showing the very same screen (on I2C not a byte sent)."""
    path = tmp_path / "config.toml"
    path.write_text('[display]\ninterface = "spi"\n' if interface == "spi" else "# defaults\n")
    kept = tmp_path / "state" / "first-light"
    kept.parent.mkdir()
    done = keep_unstarted(path, kept)
    assert done.returncode == 0 and f"{kept}: the first light" in done.stdout, done.stderr
    assert marshal.loads(kept.read_bytes())["chip"] == CHIP, "lgpio's chip on a Pi Zero-4"
    glass = controller("ssd1306", interface)
    Kernel(glass, switch_on).install(monkeypatch)

    lit = first_light.light(str(kept), ["cityunit", "run", "--config", str(path)])
    assert lit.glass is not None and lit.switch is switch_on and glass.on
    shown = glass.visible()
    lit.release()

    factory = mock_factory()
    factory.pin(SWITCH).on = switch_on
    config = load(path)
    clock = VirtualClock(start_ms=8_123_456)  # not the keepsake's 0: a time shown would differ
    board = Board(config, clock, pin_factory=factory, seed=5, state_dir=kept.parent,
                  panel=LumaPanel(config.hardware, bus=glass, pins=glass.pins, lit=lit.glass))  # fmt: skip
    before = glass.wire_bytes
    board.runtime.pump()
    assert board.unit.power is switch_on and board.display is not None and board.display.up
    assert glass.visible() == shown, "the unit's first screen is the one first light showed"
    assert (glass.wire_bytes == before) is (interface == "i2c"), "I2C: nothing to send"
    board.close()


def test_a_keepsake_is_not_made_for_no_display_a_config_with_mistakes_or_nowhere(
    tmp_path,
) -> None:
    """Nor where the config keeps its game in a state.dir of its own that holds anything
    (a game's first screen is not a new one's); and `--keepsake` does that alone."""
    path, kept = tmp_path / "config.toml", tmp_path / "first-light"
    nothing = f"{path}: no display, or a state.dir that holds a game: no first light"
    path.write_text('[display]\ndriver = "none"\n')
    done = keep_unstarted(path, kept)
    assert done.returncode == 0 and done.stdout.startswith(nothing), done.stdout
    games = tmp_path / "games"
    path.write_text(f'[state]\ndir = "{games}"\n')
    games.mkdir()
    assert keep_unstarted(path, kept).returncode == 0 and kept.exists(), "an empty one: none"
    kept.unlink()
    (games / "game.json").write_text("{}")
    done = keep_unstarted(path, kept)
    assert done.returncode == 0 and done.stdout.startswith(nothing) and not kept.exists()
    path.write_text("[display]\ndriver = 7\n")
    done = keep_unstarted(path, kept)
    assert done.returncode == 2 and str(path) in done.stderr and "driver" in done.stderr
    assert not kept.exists()
    path.write_text("# defaults\n")
    done = keep_unstarted(path, tmp_path / "gone" / "first-light")
    assert done.returncode == 2 and "gone/first-light: No such file" in done.stderr
    assert "Traceback" not in done.stderr
    for other in ("--check", "--off"):
        refused = subprocess.run(
            [sys.executable, "-m", "cityunit", "run", other, "--keepsake", str(kept)],
            env={**os.environ, "PYTHONPATH": str(ROOT / "firmware")}, capture_output=True,
            text=True, timeout=60,
        )  # fmt: skip
        assert refused.returncode == 2 and "not allowed with" in refused.stderr
    assert not kept.exists()


@pytest.mark.parametrize(
    ("model", "chip4", "chip"),
    [
        ("Raspberry Pi 5 Model B Rev 1.0", True, 4),
        ("Raspberry Pi 5 Model B Rev 1.0", False, 0),
        ("Raspberry Pi 4 Model B Rev 1.5", True, 0),
        ("Raspberry Pi Compute Module 5 Rev 1.0", True, 0),
        ("Raspberry Pi 500 Rev 1.0", True, 0),
        (None, True, 0),
    ],
)
def test_a_keepsake_made_before_a_start_names_the_chip_lgpio_opens(
    tmp_path, monkeypatch, model, chip4, chip
) -> None:
    """gpiozero's LGPIOFactory: chip 4 on a Pi 5 Model B (its board type, 0x17; known here
    by the model's name) where the kernel has one, else 0 (a Compute Module 5 and a Pi 500
    are other types); a machine with no device tree (an image's build) gets a Pi's 0."""
    tree, dev = tmp_path / "device-tree", tmp_path / "dev"
    tree.mkdir(), dev.mkdir()
    if model is not None:
        (tree / "model").write_bytes(model.encode() + b"\0")
    if chip4:
        (dev / "gpiochip4").touch()
    monkeypatch.setattr(keepsake.glass, "DEV", str(dev))
    assert keepsake.header_chip(tree) == f"{dev}/gpiochip{chip}"
