"""Test doubles at the edges of the unit: an I2C bus that fails on demand, fresh mock pins."""

from __future__ import annotations

import errno
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

from gpiozero.pins.mock import MockFactory, MockPWMPin

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
