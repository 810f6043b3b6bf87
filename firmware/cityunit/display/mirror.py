"""A panel that only keeps the last image: luma's `dummy` device, the very image an OLED
would get. The simulator's window and terminal show it; the bench renders to it."""

from __future__ import annotations

from luma.core.device import dummy
from PIL import Image

from cityunit.display.render import HEIGHT, WIDTH


class Mirror:
    """A display.panel.Panel that is always there and never fails."""

    def __init__(self) -> None:
        self.device = dummy(width=WIDTH, height=HEIGHT, mode="1")

    @property
    def image(self) -> Image.Image | None:
        image: Image.Image | None = self.device.image
        return image

    def start(self) -> None:
        """Always there."""

    def display(self, image: Image.Image) -> None:
        self.device.display(image)

    def blank(self) -> None:
        self.device.clear()

    def close(self) -> None:
        """Nothing held."""
