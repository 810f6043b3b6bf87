"""What the loop tells every phone: after each step, the page's state and (for a phone
that is the simulator's unit) the OLED's frames, while a phone watches; the unit's
events, always; and where the page is, with its token, renewed at each new game. The
loop thread's, but for `link` and `watchers`, which the phones' thread reads."""

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
from cityunit.core.screens import PageLink
from cityunit.loop.runtime import Runtime
from cityunit.web.feed import Feed
from cityunit.web.table import Table

log = logging.getLogger(__name__)

TOKEN_BYTES = 8  # 64 bits: 13 base32 characters, and the QR code stays 25x25
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class Broadcast:
    """The loop's side of the page, heard from `start` to `close`. `wake` (the loop's
    call) tells the phones' thread that the feed has news; `frames`: the OLED's picture,
    for a phone that is the unit."""

    def __init__(
        self,
        runtime: Runtime,
        address: str,
        wake: Callable[[], None],
        frames: Callable[[], Image.Image | None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.feed = Feed()
        self.table = Table()
        self.link = PageLink(address, new_token())  # replaced whole, never changed
        self.watchers = 0  # streams open (the phones' thread counts; the loop only reads)
        self._wake = wake
        self._frames = frames
        self._seen: tuple[int, bool] | None = None  # the revision and phase last published
        self._news = ""  # the last state published, less a running clock's time
        self._frame = b""
        self._forget: list[Callable[[], None]] = []

    def start(self) -> None:
        """Heard from now: the loop's events and steps, and the menu told of the page."""
        self._forget = [self.runtime.on_event(self._event), self.runtime.on_step(self.step_done)]
        self.runtime.call(self._tell_unit)

    def move(self, address: str) -> None:
        """The page is reached at `address` now (a new lease, Wi-Fi up after the unit)."""
        self.link = self.link._replace(address=address)
        self._tell_unit()
        log.info("the players' page is at %s", address)

    def _tell_unit(self) -> None:
        self.runtime.unit.show_page(self.link)

    def _event(self, event: Event) -> None:
        if event.event is EventKind.NEW_GAME:  # a new game, a new token: the old one is void
            self.link = self.link._replace(token=new_token())
            self._tell_unit()
        self.table.saw(event)
        if event.event not in OUTPUT_CHANGES:  # few: kept for a phone back from a drop
            self.feed.publish("unit", _JSON(event.as_dict()))
            if self.watchers:
                self._wake()

    def step_done(self, force: bool = False) -> None:
        """After a step: what changed since the last, to the feed, while a phone watches
        (`force`: the state and frame as they are, for a phone that has just come)."""
        seen = (self.runtime.unit.revision, self.table.final)
        if not force and (not self.watchers or seen == self._seen):
            return
        self._seen = seen
        table, changed = self.state_table(), force
        news = _JSON({**table, "hour_elapsed_ms": None} if table["running"] else table)
        if force or news != self._news:  # a running clock's time is no news: phones count it
            self._news = news
            self.feed.publish("state", _JSON(table), state=True)
            changed = True
        image = None if self._frames is None else self._frames()
        if image is not None and (force or image.tobytes() != self._frame):
            self._frame = image.tobytes()
            self.feed.publish("frame", _JSON(_png(image)))
            changed = True
        if changed:
            self._wake()

    def state_table(self) -> dict[str, Any]:
        """The page's state as of the unit's now (loop thread): /state's JSON object."""
        unit = self.runtime.unit
        history = tuple(unit.game.history)
        sim = self._frames is not None
        return self.table.state(unit.snapshot(), unit.game.rules, history, sim)

    def state(self) -> str:
        return _JSON(self.state_table())

    def close(self) -> None:
        for forget in self._forget:
            forget()
        self._forget = []


def new_token() -> str:
    return base64.b32encode(secrets.token_bytes(TOKEN_BYTES)).decode("ascii").rstrip("=")


def _png(image: Image.Image) -> str:
    """The OLED's frame as a data URL (a 1-bit PNG: a few hundred bytes)."""
    out = io.BytesIO()
    image.convert("1").save(out, "PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")
