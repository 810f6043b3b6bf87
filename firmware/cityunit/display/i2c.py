"""The I2C display's bus: /dev/i2c-N through the standard library, as luma's own i2c
interface sends it (smbus2 with ctypes, which it needs for that: 20 M instructions on the
way to READY, for writes alone)."""

from __future__ import annotations

import errno
import fcntl
import os
from collections.abc import Sequence
from pathlib import Path

from luma.core.error import DeviceNotFoundError, DevicePermissionError

from cityunit.display import glass

I2C_SLAVE = 0x0703  # linux/i2c-dev.h: the address each write goes to
BLOCK = 4096  # the most one write carries, as luma's managed bus sends


class I2cDev:
    """luma's serial interface on I2C (`command`, `data`, `cleanup`), each call one
    transaction on the bus, its control byte first (0x00 commands, 0x40 data): the bytes
    luma's managed i2c sends, and its errors, in its words."""

    def __init__(self, port: int, address: int, dev: Path | None = None) -> None:
        path = (Path(glass.DEV) if dev is None else dev) / f"i2c-{port}"
        self._address = address
        try:
            self._fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as e:
            if e.errno == errno.ENOENT:
                raise DeviceNotFoundError(f"I2C device not found: {path}") from e
            if e.errno in (errno.EPERM, errno.EACCES):
                raise DevicePermissionError(f"I2C device permission denied: {path}") from e
            raise
        try:
            fcntl.ioctl(self._fd, I2C_SLAVE, address)
        except OSError:
            self.cleanup()
            raise

    def command(self, *cmd: int) -> None:
        self._write(b"\x00" + bytes(cmd))

    def data(self, data: Sequence[int]) -> None:
        for at in range(0, len(data), BLOCK):
            self._write(b"\x40" + bytes(data[at : at + BLOCK]))

    def _write(self, payload: bytes) -> None:
        try:
            os.write(self._fd, payload)
        except OSError as e:
            if e.errno in (errno.EREMOTEIO, errno.EIO):  # no ACK: nobody at the address
                raise DeviceNotFoundError(
                    f"I2C device not found on address: 0x{self._address:02X}"
                ) from e
            raise

    def cleanup(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
