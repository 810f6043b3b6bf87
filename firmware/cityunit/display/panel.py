"""The OLED's owner, on the loop thread. A failing display is not a failing unit.

luma raises DeviceNotFoundError from `command()` but a raw OSError from `data()` on an
I2C error; both mean the same here: mark the panel down, keep the unit running, and
initialise the same panel again until it answers: a second after a quick failure, and
longer after a slow one (a bus held low times out after about a second), so that a
dead bus never takes more than a tenth of the loop from the LED and the buzzer. A screen is
rendered only when it changes, and identical frames are never re-sent: the bus is slow
(~23 ms a frame at 400 kHz).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from functools import partial
from typing import Protocol, runtime_checkable

from luma.core.error import Error as LumaError
from PIL import Image

from cityunit.core.screens import Screen
from cityunit.core.snapshot import Snapshot
from cityunit.display.render import render

log = logging.getLogger(__name__)

RETRY_MS = 1_000
SLOW_SHARE = 10  # a failed attempt that took d ms is retried at least 10 d ms later


class Panel(Protocol):
    """A display's hardware: the Pi's OLED (cityunit.display.oled) or the simulator's mirror."""

    def start(self) -> None:
        """(Re)initialise it; raises OSError or a luma Error if it does not answer."""

    def display(self, image: Image.Image) -> None:
        """Show one whole frame; raises OSError or a luma Error if the bus fails."""

    def blank(self) -> None:
        """The glass dark at once; the next frame lights it again."""

    def close(self) -> None:
        """Release what it holds: the bus, and SPI's pins."""


@runtime_checkable
class Planning(Panel, Protocol):
    """A panel that can work a frame out ahead (the Pi's OLED: its bytes and the writes
    that take its memory there), so that showing it later costs only the bus."""

    def readying(self, image: Image.Image) -> Iterator[None]:
        """Work `image` out against the memory as it is now, one short slice a step; kept
        until that changes. `image` must not change after: the panel knows it again by
        identity (a render's image never changes)."""


RENDERED = 16  # screens kept rendered: the ones a tap or the next frame may show, and some


class Display:
    """A panel as the loop sees it: neither `show` nor `poll` raises for it. A failure
    is told once through `fault` ("lost: ...", then "back"), and the panel tried again."""

    def __init__(
        self,
        panel: Panel,
        fault: Callable[[str], None] = lambda detail: None,
        clock: Callable[[], int] | None = None,
        ahead: Callable[[int], list[Screen]] = lambda now: [],
    ) -> None:
        self.panel = panel
        self._fault = fault
        self._clock = clock  # to see how long a failed attempt took
        self._ahead = ahead  # the screens the mode shown may lead to next (see `show`)
        self.up = False  # started, and answering
        self._screen: tuple[Screen, str] | None = None
        self._wanted: Image.Image | None = None
        self._shown: bytes | None = None
        self.retry_at: int | None = 0  # start it on the first poll
        self.lost = False  # a fault was reported and the display has not come back
        self.frames_sent = 0
        # Whether a virtual clock's advance draws each frame at its time, as a real loop
        # does (a bus's faults then come when they would on a Pi), not only where it ends
        # (~10x the time): a simulator sets it while it breaks the bus on purpose.
        self.each_frame = False
        self.closed = False
        self._plan = panel.readying if isinstance(panel, Planning) else None
        self._rendered: dict[tuple[Screen, str], Image.Image] = {}
        self._expected: list[tuple[Screen, str]] = []  # to ready, next first
        self._slices: Iterator[None] | None = None  # the rest of the panel's plan for one

    @property
    def preparing(self) -> bool:
        """Screens wait to be readied (see `show`)."""
        return bool(self._expected) or self._slices is not None

    def prepare_next(self) -> None:
        """One slice of readying the expected screens: the next one rendered, or one step
        of the panel working its writes out. Each is short (a press waits behind one at
        most): a render is one, packing another, each way of planning one more."""
        if self._slices is None:
            screen, language = self._expected.pop()
            image = self._render(screen, language)
            if self._plan is not None and self.up:
                self._slices = self._plan(image)
            return
        try:
            next(self._slices)
        except StopIteration:
            self._slices = None
        except (OSError, LumaError):  # (it sends nothing; a panel may still refuse)
            self._stop_readying()

    def _stop_readying(self) -> None:
        self._expected.clear()
        self._slices = None

    def _render(self, screen: Screen, language: str) -> Image.Image:
        """`render`, remembered for the last RENDERED screens."""
        key = (screen, language)
        image = self._rendered.pop(key, None)
        if image is None:
            image = render(screen, language)
            if len(self._rendered) >= RENDERED:
                del self._rendered[next(iter(self._rendered))]  # the least recently used
        self._rendered[key] = image
        return image

    def follow(self, snapshot: Snapshot, now: int) -> None:
        """As an output the loop walks (snapshot.picture)."""
        screen, language = snapshot.picture
        self.show(screen, language, now, partial(self._ahead, now))

    def show(
        self, screen: Screen, language: str, now: int, ahead: Callable[[], list[Screen]] = list
    ) -> None:
        """Put `screen` up (rendered only if it changed since the last call). `ahead`: the
        screens that may come after it (the mode's guess), readied while the loop idles,
        one `prepare_next` at a time, where the panel can plan ahead."""
        if (screen, language) == self._screen:
            return
        self._screen = (screen, language)
        self._wanted = self._render(screen, language)
        if self.up:
            self._send(now)
        self._stop_readying()
        if self._plan is not None and self.up:
            self._expected = [(s, language) for s in reversed(ahead())]

    def due(self, now: int) -> bool:
        """Its next try is due by `now`."""
        return self.retry_at is not None and self.retry_at <= now

    def restart(self, now: int) -> None:
        """As at power-on: started again at once, and a loss before it said no more."""
        self.up, self.lost, self.retry_at = False, False, now
        self.poll(now)

    def poll(self, now: int) -> None:
        """Start the panel (again) once its retry time has come."""
        if self.up or self.retry_at is None or now < self.retry_at:
            return
        try:
            self.panel.start()
        except (OSError, LumaError) as e:
            self._failed(now, e)
            return
        self.up, self.retry_at = True, None
        if self.lost:
            self.lost = False
            log.info("display answers again")
            self._fault("back")
        self._shown = None
        self._send(now)

    def _send(self, now: int) -> None:
        image = self._wanted
        if image is None:
            return
        frame = image.tobytes()
        if frame == self._shown:
            return
        try:
            self.panel.display(image)
        except (OSError, LumaError) as e:
            self._failed(now, e)
            return
        self._shown = frame
        self.frames_sent += 1

    def _failed(self, now: int, error: Exception) -> None:
        self._stop_readying()  # nothing to ready for a panel that is not there
        if not self.lost:
            self.lost = True
            log.warning("display lost (%s); the unit goes on, retrying every second or more"
                        " (a slow failure waits 10x as long as it took)", error)  # fmt: skip
            self._fault(f"lost: {error}")
        self.up = False
        self._shown = None
        ended = now if self._clock is None else max(now, self._clock())
        self.retry_at = ended + max(RETRY_MS, SLOW_SHARE * (ended - now))

    def close(self) -> None:
        """Screen off, even if the last write failed (one attempt). Idempotent."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError, LumaError):
            if not self.up:
                self.panel.start()
            self.panel.blank()
        self.up = False
        self.panel.close()
