"""Leading-edge debouncing on event timestamps.

The first edge counts at once (no added latency); edges in the following window are
chatter and are ignored. When the window closes, the contact's real level is checked
again, so a release that happened inside the chatter is never lost.
gpiozero's MockFactory ignores `bounce_time`, and so does this unit: it debounces here.
"""

from __future__ import annotations

from collections.abc import Callable

from cityunit.core.timers import Timers


class Debouncer:
    """One contact's debouncing, as plain data: the times are the edges' own, never the
    clock's, so an edge handled late is judged as of when it happened."""

    __slots__ = ("level", "quiet_at", "raw", "window_ms")

    def __init__(self, window_ms: int) -> None:
        self.window_ms = window_ms
        self.level = False  # the debounced level: True when pressed / switched on
        self.raw = False
        self.quiet_at: int | None = None  # end of the current chatter window

    def edge(self, level: bool, t: int) -> bool | None:
        """A raw edge at `t`; returns the new debounced level, or None if it is chatter."""
        self.raw = level
        if self.quiet_at is not None:
            if t < self.quiet_at:
                return None
            self.quiet_at = None
        if level == self.level:
            return None
        self.level = level
        self.quiet_at = t + self.window_ms
        return level

    def settle(self, t: int) -> bool | None:
        """The window closed at `t`: report the raw level if chatter left it different."""
        self.quiet_at = None
        if self.raw == self.level:
            return None
        self.level = self.raw
        self.quiet_at = t + self.window_ms
        return self.level


class Contact:
    """A button or switch contact: raw edges in, debounced levels out, on their own time.

    When a chatter window closes, its own timer checks the contact's real level again.
    """

    def __init__(
        self,
        window_ms: int,
        timers: Timers,
        now: Callable[[], int],
        changed: Callable[[bool], None],
    ) -> None:
        self._bouncer = Debouncer(window_ms)
        self._quiet = timers.timer(lambda: self._then(self._bouncer.settle(now())))
        self._changed = changed

    def edge(self, level: bool, t: int) -> None:
        """A raw edge at `t`: `changed` hears a new level at once, and nothing of chatter."""
        self._then(self._bouncer.edge(level, t))

    def assume(self, level: bool) -> None:
        """The level read at start: no edge, nothing to act on."""
        self._bouncer.level = self._bouncer.raw = level

    def _then(self, level: bool | None) -> None:
        if self._bouncer.quiet_at is not None:
            self._quiet.set(self._bouncer.quiet_at)
        if level is not None:
            self._changed(level)
