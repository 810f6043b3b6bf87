"""A screen shown over the mode's for a while: what a player must know at once, such as a
config refused at start (fallback.py)."""

from __future__ import annotations

from cityunit.core.screens import Screen
from cityunit.core.timers import Timers

NOTICE_MS = 30_000  # a notice shows this long, unless a button is pressed first


class Notice:
    """At most one screen over the mode's, until NOTICE_MS pass or a button goes down (the
    press acts as ever): its own timer ends it."""

    def __init__(self, timers: Timers) -> None:
        self.screen: Screen | None = None
        self._end = timers.timer(self.end)

    def show(self, screen: Screen, now: int) -> None:
        self.screen = screen
        self._end.set(now + NOTICE_MS)

    def end(self) -> None:
        self.screen = None
        self._end.cancel()
