"""The OLED, owned by the loop thread. A failing display is not a failing unit.

luma raises DeviceNotFoundError from `command()` but a raw OSError from `data()` on an
I2C error; both mean the same here: drop the device, keep the unit running, try again
about once a second, and re-create the device (which re-sends the init sequence) when
it answers. Identical frames are never re-sent: the bus is slow (~23 ms a frame).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol

from luma.core.error import Error as LumaError
from PIL import Image

from cityunit.config import Parts

log = logging.getLogger(__name__)

RETRY_MS = 1_000


class Device(Protocol):
    def display(self, image: Image.Image) -> None: ...
    def hide(self) -> None: ...
    def clear(self) -> None: ...


class Display:
    def __init__(
        self, make: Callable[[], Device], fault: Callable[[str], None] = lambda detail: None
    ) -> None:
        self._make = make
        self._fault = fault
        self.device: Device | None = None
        self._wanted: Image.Image | None = None
        self._shown: bytes | None = None
        self.retry_at: int | None = 0  # open it on the first poll
        self.lost = False  # a fault was reported and the display has not come back
        self.frames_sent = 0

    def show(self, image: Image.Image, now: int) -> None:
        self._wanted = image
        if self.device is not None:
            self._send(now)

    def poll(self, now: int) -> None:
        """Open the display (again) once its retry time has come."""
        if self.device is not None or self.retry_at is None or now < self.retry_at:
            return
        try:
            self.device = self._make()
        except (OSError, LumaError) as e:
            self._failed(now, e)
            return
        self.retry_at = None
        if self.lost:
            self.lost = False
            log.info("display answers again")
            self._fault("back")
        self._shown = None
        self._send(now)

    def _send(self, now: int) -> None:
        image = self._wanted
        if image is None or self.device is None:
            return
        frame = image.tobytes()
        if frame == self._shown:
            return
        try:
            self.device.display(image)
        except (OSError, LumaError) as e:
            self._failed(now, e)
            return
        self._shown = frame
        self.frames_sent += 1

    def _failed(self, now: int, error: Exception) -> None:
        if not self.lost:
            self.lost = True
            log.warning("display lost (%s); the unit goes on, retrying every second", error)
            self._fault(f"lost: {error}")
        self.device = None
        self._shown = None
        self.retry_at = now + RETRY_MS

    def blank(self) -> None:
        """Screen off on exit; a display that is gone needs nothing."""
        if self.device is None:
            return
        try:
            self.device.clear()
            self.device.hide()
        except (OSError, LumaError):
            pass


def luma_device(parts: Parts, bus: Any = None) -> Callable[[], Device]:
    """A maker of the configured OLED on its own I2C bus (opened anew on each retry)."""
    from luma.core.interface.serial import i2c

    from cityunit.oled import SH1106, SSD1306

    driver = {"ssd1306": SSD1306, "sh1106": SH1106}[parts.display]
    opened: list[Any] = []  # the one serial interface in use, closed before the next

    def make() -> Device:
        while opened:
            opened.pop().cleanup()
        serial = i2c(bus=bus, port=parts.i2c_port, address=parts.i2c_address)
        opened.append(serial)
        return driver(serial, rotate=parts.rotate)

    return make
