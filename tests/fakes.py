"""Test doubles at the edges of the unit: an I2C bus that fails on demand, fresh mock pins."""

from __future__ import annotations

import contextlib
import errno
import os
import random
import subprocess
import sys
import threading
import tty
from collections.abc import Iterator
from pathlib import Path

from gpiozero.pins.mock import MockFactory, MockPWMPin

from cityunit.config import Parts

SSD1306_DISPLAYOFF = 0xAE


class FlakyBus:
    """An smbus2 stand-in for luma's i2c interface that records writes and fails on demand.

    `unplugged` fails every write; `error_rate` fails that share of writes (seeded).
    Failures raise OSError(EREMOTEIO), errno 121, as a real I2C bus does.
    """

    def __init__(self, error_rate: float = 0.0, seed: int = 0) -> None:
        self.error_rate = error_rate
        self.unplugged = False
        self.rng = random.Random(seed)
        self.commands: list[list[int]] = []
        self.data_bytes = 0
        self.failures = 0

    def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
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


class ContactPin(MockPWMPin):
    """A mock pin that can be wired closed before the program starts: a switch left ON.

    (gpiozero's mock pins follow their pull-up when a device opens them, which would
    open the contact.)"""

    closed = False

    def _set_pull(self, value):
        super()._set_pull(value)
        if self.closed:
            self.drive_low()


def mock_factory() -> MockFactory:
    return MockFactory(pin_class=ContactPin)


class Unit(subprocess.Popen):
    """`cityunit run` on mock pins; its log is read as it comes (a full pipe would stall it)."""

    def __init__(self, config: Path, **env: str) -> None:
        super().__init__(
            [sys.executable, "-m", "cityunit", "run", "--config", str(config)],
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


def run_unit(config: Path, **env: str) -> Unit:
    return Unit(config, **env)


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


class Controller(FlakyBus):
    """An SSD1306, SSD1309 or SH1106 as its datasheet says, fed the exact bytes on the bus:
    an smbus stand-in on I2C, or (`spi=True`) a spidev stand-in whose DC and RST lines are
    mock pins (`pins`, a gpiozero factory for the panel): DC low, command bytes; high,
    data; RST low, deaf.

    Commands are parsed with their arguments; data bytes land where the controller's
    address pointers say (SSD1306 and SSD1309: horizontal or page addressing with their
    column and page window; SH1106: page addressing over 132 columns). `visible()` is what
    the glass shows, as display-RAM pages; `pi_bytes` counts the bytes the Pi's bus would
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
        self.parts = Parts(display=kind, interface="spi" if spi else "i2c")
        self.opened: tuple[int, int] | None = None  # SPI: (port, device)
        self.max_speed_hz = 0
        self.mode = 2  # page addressing after reset
        self.window = (0, 127, 0, 7)  # SSD1306 horizontal mode: c0, c1, p0, p1
        self.col = self.page = 0
        self.inverted = False  # the glass shows every pixel flipped
        self.pi_bytes = 0
        self._pending: list[int] = []  # a command waiting for its arguments
        self._in_data = False

    def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
        super().write_i2c_block_data(addr, register, data)  # may fail, as the bus does
        command = register == 0x00
        self.pi_bytes += len(data) + (0 if self._in_data and not command else 2)
        self._take(command, data)

    def open(self, port: int, device: int) -> None:
        self.opened = (port, device)

    def writebytes(self, data: list[int]) -> None:
        """spidev's write, one chip-select frame: DC says what the bytes are."""
        assert self.pins is not None and self.opened is not None
        dc, rst = (self.pins.pin(pin).state for pin in (self.parts.dc_pin, self.parts.reset_pin))
        FlakyBus.write_i2c_block_data(self, 0, 0x40 if dc else 0x00, data)  # may fail
        self.pi_bytes += len(data)
        if rst:
            self._take(not dc, data)

    def _take(self, command: bool, data: list[int]) -> None:
        self._in_data = not command
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
