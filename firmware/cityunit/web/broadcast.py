"""What the loop tells every phone: after each step, the page's state, the unit's events
and (for a phone that is the simulator's unit) the OLED's frames, published to the feed;
the token, renewed at each new game. Loop thread only, except where said."""

from __future__ import annotations

import base64
import io
import json
import logging
import secrets
from collections.abc import Callable
from typing import Any

from PIL import Image

from cityunit.core.events import OUTPUT_CHANGES, Event, EventKind
from cityunit.core.screens import page_link
from cityunit.loop.runtime import Runtime
from cityunit.web.feed import Feed
from cityunit.web.table import Table

log = logging.getLogger(__name__)

TOKEN_BYTES = 8  # 64 bits: 13 base32 characters, and the QR code stays 25x25
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class Broadcast:
    """The loop's side of the page. `wake` (any thread's call) tells the phones' thread
    that the feed has news; `frames`: the OLED's picture, for a phone that is the unit."""

    def __init__(
        self,
        runtime: Runtime,
        address: str,
        wake: Callable[[], None],
        frames: Callable[[], Image.Image | None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.address = address
        self.feed = Feed()
        self.table = Table()
        self.token = _new_token()  # read by the phones' thread: one reference, swapped
        self.watchers = 0  # streams open (the phones' thread counts; the loop only reads)
        self._wake = wake
        self._frames = frames
        self._state = ""  # the news in the last state the phones were sent, and its frame
        self._frame = b""
        self._forget = [runtime.on_event(self._event), runtime.on_step(self.step_done)]
        runtime.call(self._tell_unit)

    @property
    def link(self) -> str:
        """The page with the token (the QR code's): pressing from it is allowed."""
        return page_link(self.address, self.token)

    def move(self, address: str) -> None:
        """The page is reached at `address` now (a new lease, Wi-Fi up after the unit)."""
        self.address = address
        self._tell_unit()
        log.info("the players' page is at %s", address)

    def _tell_unit(self) -> None:
        self.runtime.unit.show_page(self.address, self.token)

    def _event(self, event: Event) -> None:
        if event.event is EventKind.NEW_GAME:  # a new game, a new token: the old one is void
            self.token = _new_token()
            self._tell_unit()
        self.table.saw(event)
        if self.watchers and event.event not in OUTPUT_CHANGES:
            self.feed.publish("unit", _JSON(event.as_dict()))

    def step_done(self, force: bool = False) -> None:
        """After a step: what changed, to the feed, while a phone watches (`force`: all of
        it, for a phone that has just come)."""
        if not self.watchers and not force:
            return
        table, changed = self._table(), force
        news = _JSON({**table, "hour_elapsed_ms": None} if table["running"] else table)
        if force or news != self._state:  # a running clock's time is no news: phones count it
            self._state = news
            self.feed.publish("state", _JSON(table), state=True)
            changed = True
        image = None if self._frames is None else self._frames()
        if image is not None and (force or image.tobytes() != self._frame):
            self._frame = image.tobytes()
            self.feed.publish("frame", _JSON(_png(image)))
            changed = True
        if changed:
            self._wake()

    def state(self) -> str:
        """The page's JSON as of the unit's now."""
        return _JSON(self._table())

    def _table(self) -> dict[str, Any]:
        unit = self.runtime.unit
        history = tuple(unit.game.history)
        sim = self._frames is not None
        return self.table.state(unit.snapshot(), unit.game.rules, history, sim)

    def close(self) -> None:
        for forget in self._forget:
            forget()


def _new_token() -> str:
    return base64.b32encode(secrets.token_bytes(TOKEN_BYTES)).decode("ascii").rstrip("=")


def _png(image: Image.Image) -> str:
    """The OLED's frame as a data URL (a 1-bit PNG: a few hundred bytes)."""
    out = io.BytesIO()
    image.convert("1").save(out, "PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")
