"""Test doubles at the edges of the unit: an I2C bus that fails on demand, fresh mock pins,
the kernel's PWM channels."""

from __future__ import annotations

import contextlib
import errno
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import tty
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest
from gpiozero.pins.mock import MockFactory

from cityunit.config import Hardware
from cityunit.parts import pwm
from cityunit.parts.gpio import mock_pins
from cityunit.tools.bench.rig import WireCounter
from cityunit_sim.board import SwitchPin

SSD1306_DISPLAYOFF = 0xAE


class FlakyBus(WireCounter):
    """An smbus2 stand-in for luma's i2c interface that records writes and fails on demand.

    `unplugged` fails every write; `error_rate` fails that share of writes (seeded).
    Failures raise OSError(EREMOTEIO), errno 121, as a real I2C bus does. What gets
    through is counted as the Pi's bus would carry it (`wire_bytes`).
    """

    def __init__(self, error_rate: float = 0.0, seed: int = 0) -> None:
        super().__init__()
        self.error_rate = error_rate
        self.unplugged = False
        self.rng = random.Random(seed)
        self.commands: list[list[int]] = []
        self.data_bytes = 0
        self.failures = 0

    def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
        self.carried(register, data)
        super().write_i2c_block_data(addr, register, data)

    def carried(self, register: int, data: list[int]) -> None:
        """The write recorded, or failed as the bus fails (on SPI too)."""
        if self.unplugged or self.rng.random() < self.error_rate:
            self.failures += 1
            raise OSError(errno.EREMOTEIO, "Remote I/O error")
        if register == 0x00:
            self.commands.append(list(data))
        else:
            self.data_bytes += len(data)

    def inits(self) -> int:
        """How many times the display's init sequence was sent."""
        return sum(1 for c in self.commands if c[:1] == [SSD1306_DISPLAYOFF] and len(c) > 1)

    def close(self) -> None:
        pass


def mock_factory() -> MockFactory:
    """Mock pins as the simulator's: PWM-capable, and a switch that can be left ON (`on`)."""
    return mock_pins(SwitchPin)


class State(NamedTuple):
    """A PWM channel's state as the kernel keeps it (struct pwm_state, polarity aside)."""

    period: int = 0
    duty_cycle: int = 0
    enable: int = 0


U64, INT = (0, 2**64 - 1), (-(2**31), 2**31 - 1)
NUMBER = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)\n?")


def kstrto(text: str, limits: tuple[int, int]) -> int:
    """The kernel's kstrtou64 / kstrtoint with base 0: 10, 0x16 or 017, one newline after."""
    match = NUMBER.fullmatch(text)
    if match is None or (match[1] == "-" and limits[0] == 0):
        raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
    digits = match[2]
    base = 16 if digits[:2].lower() == "0x" else 8 if digits.startswith("0") else 10
    value = int(digits, base) * (-1 if match[1] == "-" else 1)
    if not limits[0] <= value <= limits[1]:
        raise OSError(errno.ERANGE, os.strerror(errno.ERANGE))
    return value


class KernelPWM(pwm.Sysfs):
    """The PWM chips' sysfs files as Linux 6.1 keeps them (drivers/pwm/sysfs.c and
    pwm_apply_state in core.c), in place of `pwm.Channel.sysfs`:

    - a write to period, duty_cycle or enable applies the channel's whole new state, and
      is refused (EINVAL) when its period is 0 or its duty above the period; period and
      duty_cycle take an unsigned 64-bit number, enable 0 or 1, anything else EINVAL;
    - export: a number >= npwm is ENODEV, a channel exported or held by a driver
      (`claim`) EBUSY; unexport of one not exported, ENODEV;
    - a channel keeps its state across unexport and export (pwm-bcm2835 in 6.1 has no
      .get_state: the hardware is not read back), and a fresh one's is all 0;
    - udev makes a new channel's files writable `udev_checks` checks after the export
      (None: never, as for a user outside the gpio group); until then a write is EACCES.

    The chips are folders under `root` (pwmchipN/device a link to the PWM block, for
    `pwm.chip()`), and an exported channel's files are there with its state in them.
    `applied` has every state each channel took, in order; `refused` every refused
    write: (file, text, errno).
    """

    def __init__(self, root: Path, udev_checks: int | None = 2) -> None:
        self.root, self.udev_checks = root, udev_checks
        self.npwm: dict[Path, int] = {}
        self.states: dict[Path, State] = {}  # by the channel's folder, chip/pwmN
        self.exported: set[Path] = set()
        self.claimed: set[Path] = set()
        self.pending: dict[Path, int | None] = {}  # udev's checks still to come
        self.faults: dict[Path, int] = {}
        self.applied: dict[Path, list[State]] = {}
        self.refused: list[tuple[Path, str, int]] = []

    def chip(self, block: str = "fe20c000.pwm", npwm: int = 2, name: str = "pwmchip0") -> Path:
        """A pwmchip as the kernel shows it once the overlay is on: no channel exported."""
        device = self.root / "devices" / block
        device.mkdir(parents=True)
        chip = self.root / name
        chip.mkdir(parents=True)
        (chip / "device").symlink_to(device)
        for file in ("export", "unexport"):
            (chip / file).touch()
        (chip / "npwm").write_text(f"{npwm}\n")
        self.npwm[chip] = npwm
        return chip

    def left(self, channel: Path, state: State, exported: bool = True) -> None:
        """`channel` (chip/pwmN) as a killed process left it."""
        self.states[channel] = state
        if exported and channel not in self.exported:
            self._export(channel)
            self.pending[channel] = 0

    def claim(self, channel: Path) -> None:
        """A kernel driver holds `channel` (pwm-fan, pwm-beeper, ...)."""
        self.claimed.add(channel)

    def fail(self, file: Path, error: int = errno.ENODEV) -> None:
        """Writes to `file` fail from now on with `error`, as a driver's or a lost chip's."""
        self.faults[file] = error

    def state(self, channel: Path) -> State:
        return self.states.get(channel, State())

    def read(self, path: Path) -> str:
        if path.parent in self.exported and path.name in State._fields:
            return f"{getattr(self.state(path.parent), path.name)}\n"
        return super().read(path)

    def writable(self, path: Path) -> bool:
        left = self.pending.get(path.parent, 0)
        if left:
            self.pending[path.parent] = left - 1
            return False
        return left is not None and super().writable(path)

    def write(self, path: Path, text: str) -> None:
        try:
            if path in self.faults:
                raise OSError(self.faults[path], os.strerror(self.faults[path]))
            if path.parent in self.npwm and path.name in ("export", "unexport"):
                channel = path.parent / f"pwm{self._index(path.parent, text)}"
                (self._export if path.name == "export" else self._unexport)(channel)
            elif path.parent in self.exported and path.name in State._fields:
                if self.pending.get(path.parent, 0) != 0:  # still root's: udev is not done
                    raise OSError(errno.EACCES, os.strerror(errno.EACCES), str(path))
                self._apply(path.parent, path.name, text)
            else:
                raise OSError(errno.ENOENT, os.strerror(errno.ENOENT), str(path))
        except OSError as e:
            self.refused.append((path, text, e.errno))
            raise

    def _index(self, chip: Path, text: str) -> int:
        index = kstrto(text, (0, 2**32 - 1))
        if index >= self.npwm[chip]:
            raise OSError(errno.ENODEV, os.strerror(errno.ENODEV))
        return index

    def _export(self, channel: Path) -> None:
        if channel in self.exported or channel in self.claimed:
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY))
        self.exported.add(channel)
        self.pending[channel] = self.udev_checks
        channel.mkdir()
        self._show(channel)

    def _unexport(self, channel: Path) -> None:
        if channel not in self.exported:
            raise OSError(errno.ENODEV, os.strerror(errno.ENODEV))
        self.exported.remove(channel)
        shutil.rmtree(channel)

    def _apply(self, channel: Path, name: str, text: str) -> None:
        value = kstrto(text, INT if name == "enable" else U64)
        if name == "enable" and value not in (0, 1):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        new = self.state(channel)._replace(**{name: value})
        if new.period == 0 or new.duty_cycle > new.period:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))
        if new != self.state(channel):
            self.states[channel] = new
            self.applied.setdefault(channel, []).append(new)
            self._show(channel)

    def _show(self, channel: Path) -> None:
        for name, value in self.state(channel)._asdict().items():
            (channel / name).write_text(f"{value}\n")


def kernel_pwm(
    root: Path, monkeypatch: pytest.MonkeyPatch, udev_checks: int | None = 2
) -> KernelPWM:
    """A KernelPWM under `root`, behind every pwm.Channel until the test ends."""
    kernel = KernelPWM(root, udev_checks)
    monkeypatch.setattr(pwm.Channel, "sysfs", kernel)
    return kernel


class Unit(subprocess.Popen):
    """`cityunit run` on mock pins; its log is read as it comes (a full pipe would stall it)."""

    def __init__(self, config: Path, *args: str, **env: str) -> None:
        super().__init__(
            [sys.executable, "-m", "cityunit", "run", "--config", str(config), *args],
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "GPIOZERO_PIN_FACTORY": "mock", **env},
        )
        self.log: list[str] = []
        running = threading.Event()

        def read() -> None:
            assert self.stderr is not None
            for line in self.stderr:
                self.log.append(line)
                if "running" in line:
                    running.set()
            running.set()

        self._reader = threading.Thread(target=read, daemon=True)
        self._reader.start()
        running.wait(60)
        assert self.poll() is None, f"cityunit run ended early: {''.join(self.log)}"

    def finish(self, timeout: float = 10) -> int:
        """Wait for the exit and its last log lines; a unit that does not stop is killed."""
        try:
            code = self.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            self.wait()
            raise
        self._reader.join(timeout)
        return code


def run_unit(config: Path, *args: str, **env: str) -> Unit:
    return Unit(config, *args, **env)


def cable() -> tuple[str, str]:
    """Two pty device paths joined back to back, like a null-modem cable."""
    ends = []
    for _ in range(2):
        master, slave = os.openpty()
        tty.setraw(slave)
        ends.append((master, slave, os.ttyname(slave)))

    def pump(src: int, dst: int) -> None:
        while True:
            try:
                data = os.read(src, 4096)
            except OSError:
                return
            os.write(dst, data)

    (a, _, a_path), (b, _, b_path) = ends
    threading.Thread(target=pump, args=(a, b), daemon=True).start()
    threading.Thread(target=pump, args=(b, a), daemon=True).start()
    return a_path, b_path


# ----- the display controller's memory, as the I2C or SPI bytes leave it ---------------------

SSD1306_ARGS = {0x20: 1, 0x21: 2, 0x22: 2, 0x26: 6, 0x27: 6, 0x29: 5, 0x2A: 5, 0x81: 1,
                0x8D: 1, 0xA3: 2, 0xA8: 1, 0xD3: 1, 0xD5: 1, 0xD9: 1, 0xDA: 1, 0xDB: 1}  # fmt: skip
# No charge pump (0x8D is no command: luma's 0x8D 0x14 is an unknown byte and a column
# nibble); a command lock (0xFD) instead.
SSD1309_ARGS = {k: v for k, v in SSD1306_ARGS.items() if k != 0x8D} | {0xFD: 1}
SH1106_ARGS = {0x81: 1, 0xA8: 1, 0xAD: 1, 0xD3: 1, 0xD5: 1, 0xD9: 1, 0xDA: 1, 0xDB: 1}
ARGS = {"ssd1306": SSD1306_ARGS, "ssd1309": SSD1309_ARGS, "sh1106": SH1106_ARGS}


# What a whole frame costs on the Pi's bus through each model, by bus: a driver's diff
# plan is measured against it (tests/parts/test_oled.py).
INTERFACES = ["i2c", "spi"]
WHOLE = {("ssd1306", "i2c"): 1034, ("ssd1306", "spi"): 1030, ("sh1106", "i2c"): 8 * (2 + 3 + 2 + 128),
         ("sh1106", "spi"): 8 * (3 + 128)}  # fmt: skip
WHOLE |= {("ssd1309", i): WHOLE["ssd1306", i] for i in INTERFACES}


class Controller(FlakyBus):
    """An SSD1306, SSD1309 or SH1106 as its datasheet says, fed the exact bytes on the bus:
    an smbus stand-in on I2C, or (`spi=True`) a spidev stand-in whose DC and RST lines are
    mock pins (`pins`, a gpiozero factory for the panel): DC low, command bytes; high,
    data; RST low, deaf.

    Commands are parsed with their arguments; data bytes land where the controller's
    address pointers say (SSD1306 and SSD1309: horizontal or page addressing with their
    column and page window; SH1106: page addressing over 132 columns). `visible()` is what
    the glass shows, as display-RAM pages; `wire_bytes` counts the bytes the Pi's bus would
    carry (on I2C luma sends each command call, and each data call, as one transaction
    with an address and a control byte; SPI has neither).
    Its memory starts as noise and its glass dark, as after power-on.
    """

    def __init__(
        self, kind: str, error_rate: float = 0.0, seed: int = 0, spi: bool = False
    ) -> None:
        super().__init__(error_rate, seed)
        self.kind = kind
        self.windowed = kind != "sh1106"  # the SSD130x: horizontal addressing, windows
        self.width = 128 if self.windowed else 132
        self.ram = [bytearray(self.rng.randbytes(self.width)) for _ in range(8)]  # power-on noise
        self.on = False  # the glass is lit (DISPLAYON): dark after reset
        self.offset = 0 if self.windowed else 2  # where the glass's column 0 is in RAM
        self.pins = MockFactory() if spi else None
        self.hardware = Hardware(driver=kind, interface="spi" if spi else "i2c")
        self.opened: tuple[int, int] | None = None  # SPI: (port, device)
        self.max_speed_hz = 0
        self.mode = 2  # page addressing after reset
        self.window = (0, 127, 0, 7)  # SSD1306 horizontal mode: c0, c1, p0, p1
        self.col = self.page = 0
        self.inverted = False  # the glass shows every pixel flipped
        self._pending: list[int] = []  # a command waiting for its arguments

    def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
        super().write_i2c_block_data(addr, register, data)  # may fail, as the bus does
        self._take(register == 0x00, data)

    def open(self, port: int, device: int) -> None:
        self.opened = (port, device)

    def writebytes(self, data: list[int]) -> None:
        """spidev's write, one chip-select frame: DC says what the bytes are."""
        assert self.pins is not None and self.opened is not None
        dc, rst = (
            self.pins.pin(pin).state for pin in (self.hardware.dc_pin, self.hardware.reset_pin)
        )
        self.carried(0x40 if dc else 0x00, data)  # may fail
        self.wire_bytes += len(data)  # SPI: no address, no control byte
        if rst:
            self._take(not dc, data)

    def _take(self, command: bool, data: list[int]) -> None:
        for byte in data:
            (self._command_byte if command else self._data_byte)(byte)

    def _command_byte(self, byte: int) -> None:
        args = ARGS[self.kind]
        if self._pending:
            self._pending.append(byte)
        elif byte in args:
            self._pending = [byte]
        else:
            self._single(byte)
            return
        if len(self._pending) == args[self._pending[0]] + 1:
            command, self._pending = self._pending, []
            self._with_args(command[0], command[1:])

    def _single(self, byte: int) -> None:
        if byte in (0xA6, 0xA7):
            self.inverted = byte == 0xA7
            return
        if byte in (0xAE, 0xAF):
            self.on = byte == 0xAF
            return
        if not (0xB0 <= byte <= 0xB7 or byte <= 0x1F):
            return  # settings the memory does not care about
        if self.windowed and self.mode != 2:
            return  # the SSD130x obey page and column nibbles in page addressing only
        if byte >= 0xB0:
            self.page = byte - 0xB0
        elif byte <= 0x0F:
            self.col = (self.col & 0xF0) | byte
        else:
            self.col = (self.col & 0x0F) | (byte - 0x10) << 4

    def _with_args(self, command: int, args: list[int]) -> None:
        if not self.windowed:
            return
        if command == 0x20:
            self.mode = args[0] & 0x03
        elif command == 0x21:
            c0, c1, p0, p1 = args[0], args[1], *self.window[2:]
            self.window, self.col = (c0, c1, p0, p1), c0
        elif command == 0x22:
            c0, c1 = self.window[:2]
            self.window, self.page = (c0, c1, args[0] & 7, args[1] & 7), args[0] & 7

    def _data_byte(self, byte: int) -> None:
        if self.col < self.width:
            self.ram[self.page][self.col] = byte
        if self.windowed and self.mode == 0:
            c0, c1, p0, p1 = self.window
            self.col += 1
            if self.col > c1:
                self.col = c0
                self.page = p0 if self.page >= p1 else self.page + 1
        elif self.windowed:
            self.col = self.col + 1 if self.col < 127 else 0
        else:
            self.col = min(self.col + 1, self.width - 1)

    def visible(self) -> list[bytes]:
        if not self.on:
            return [bytes(128)] * 8
        flip = 0xFF if self.inverted else 0x00
        return [bytes(b ^ flip for b in page[self.offset : self.offset + 128]) for page in self.ram]


@contextlib.contextmanager
def simulator_pty(clock: str = "virtual") -> Iterator[str]:
    """`cityunit sim --headless --console pty`: its pty's path; stopped (rc 0) after."""
    sim = subprocess.Popen(
        [sys.executable, "-m", "cityunit", "sim", "--headless", "--console", "pty",
         "--clock", clock, "--seed", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert sim.stdout is not None
        yield sim.stdout.readline().strip()
    finally:
        sim.terminate()
        assert sim.wait(timeout=30) == 0


class RealTime:
    """Real time for a HandClock, moved by the test: nothing sleeps."""

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns
