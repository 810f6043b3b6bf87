"""The Pi's kernel as the processes `cityunit bench --instructions` counts (probe.py)
find it: for the first stage, the GPIO chip and the bus are files in the run's folder and
their ioctls are answered here; for the unit, the display's bus drops what it is sent.
Imported by the probe, top-level, from its folder."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing: imported by the unit after the first light, not before
if TYPE_CHECKING:
    from typing import Any


class Ioctl:
    """fcntl as the first stage finds it on a Pi, here: its ioctls on the run's files
    answered as the kernel would (a line request's descriptor, the switch OFF), the rest
    fcntl's own."""

    def __init__(self, fcntl: Any, dev: str) -> None:
        self._fcntl, self._dev = fcntl, dev

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fcntl, name)

    def ioctl(self, fd: int, request: int, arg: Any = 0, mutate: bool = True) -> int:
        if request == 0xC250B407:  # GPIO_V2_GET_LINE_IOCTL: the request's fd, at its end
            line = os.open(os.path.join(self._dev, "line"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
            arg[588:592] = line.to_bytes(4, "little")
        elif request == 0xC010B40E:  # GPIO_V2_LINE_GET_VALUES_IOCTL: high, the switch OFF
            arg[0] |= 1
        return 0


class Dropped:
    """A bus that drops what it is sent: smbus2's SMBus and spidev as luma uses them."""

    max_speed_hz = 0

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def open(self, port: int, device: int) -> None:
        pass

    def write_i2c_block_data(self, *args: object) -> None:
        pass

    def i2c_rdwr(self, *args: object) -> None:
        pass

    def writebytes(self, data: object) -> None:
        pass

    def close(self) -> None:
        pass


def drop_i2c() -> None:
    """smbus2's bus, which luma opens on the Pi's I2C port: a Dropped."""
    import smbus2

    setattr(smbus2, "SMBus", Dropped)  # noqa: B010 (a class mypy knows, replaced)


def drop_spi() -> None:
    """The unit's spidev: a Dropped (imports the panel, luma and Pillow: never before a
    count's READY, whose start defers some of Pillow's modules first)."""
    from cityunit.display import oled

    setattr(oled, "SpiDev", Dropped)  # noqa: B010
