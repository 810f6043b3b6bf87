"""Leading-edge debouncing on event timestamps.

The first edge counts at once (no added latency); edges in the following window are
chatter and are ignored. When the window closes, the contact's real level is checked
again, so a release that happened inside the chatter is never lost.
gpiozero's MockFactory ignores `bounce_time`, and so does this unit: it debounces here.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Debouncer:
    window_ms: int
    level: bool = False  # the debounced level: True when pressed / switched on
    raw: bool = False
    quiet_at: int | None = None  # end of the current chatter window

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
