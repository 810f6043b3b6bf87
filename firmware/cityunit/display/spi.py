"""The SPI display's bus and its two pins, with what the unit already has: /dev/spidevP.D
through the standard library (python3-spidev is not always installed), and DC and RST
through gpiozero, so that neither RPi.GPIO nor rpi-lgpio is needed."""

from __future__ import annotations

import fcntl
import os
import struct
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from luma.core.error import Error as LumaError


class SpiDev:
    """What luma's spi asks of the spidev module, on /dev/spidevP.D with the standard
    library: python3-spidev is not always installed, and its writebytes is this write()."""

    SET_SPEED = 0x40046B04  # SPI_IOC_WR_MAX_SPEED_HZ, linux/spi/spidev.h

    def __init__(self, dev: Path = Path("/dev")) -> None:
        self._dev, self._fd, self._hz = dev, -1, 0

    def open(self, port: int, device: int) -> None:
        self._fd = os.open(self._dev / f"spidev{port}.{device}", os.O_RDWR | os.O_CLOEXEC)

    @property
    def max_speed_hz(self) -> int:
        return self._hz

    @max_speed_hz.setter
    def max_speed_hz(self, hz: int) -> None:
        fcntl.ioctl(self._fd, self.SET_SPEED, struct.pack("=I", hz))
        self._hz = hz

    def writebytes(self, data: Sequence[int]) -> None:
        os.write(self._fd, bytes(data))

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1


class SpiPins:
    """What luma's spi asks of RPi.GPIO for DC and RST, on gpiozero: the pin factory the
    parts use (lgpio on a Pi, mock pins in tests), so that neither RPi.GPIO nor rpi-lgpio
    is needed and the two pins are held as the unit's others are."""

    LOW, HIGH, OUT = 0, 1, "out"

    def __init__(self, factory: Any) -> None:
        self._factory = factory
        self._pins: dict[int, Any] = {}

    def setup(self, pin: int, mode: str, initial: int = LOW) -> None:
        from gpiozero import DigitalOutputDevice

        try:
            self._pins[pin] = DigitalOutputDevice(
                pin, initial_value=bool(initial), pin_factory=self._factory
            )
        except Exception as e:  # gpiozero's errors, lgpio's 'GPIO busy': a display down
            raise LumaError(f"GPIO{pin}: {e}") from e

    def output(self, pin: int, level: int) -> None:
        self._pins[pin].value = level

    def cleanup(self) -> None:
        for device in self._pins.values():
            device.close()
        self._pins.clear()
