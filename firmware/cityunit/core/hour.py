"""The hour of play's clock: a value that runs, pauses, and is taken back after a restart.

Immutable, so a snapshot handed to another thread can tell the time played at any
instant without reaching back into the core.
"""

from __future__ import annotations

from typing import Final

from cityunit.core.values import Value

HOUR_MS = 3_600_000


class HourClock(Value):
    """The time played of the hour; each start and stop gives a new value."""

    __slots__ = ("banked", "since")
    banked: Final[int]  # ms of the hour played before `since`
    since: Final[int | None]  # unit time it last started running; None while stopped

    def __init__(self, banked: int = 0, since: int | None = None) -> None:
        self.banked, self.since = banked, since

    @property
    def running(self) -> bool:
        """Started and not stopped since: the hour's time is passing."""
        return self.since is not None

    def elapsed(self, now: int) -> int:
        """Ms of the hour played as of `now`, never more than HOUR_MS."""
        running = 0 if self.since is None else now - self.since
        return min(HOUR_MS, self.banked + running)

    def started(self, now: int) -> HourClock:
        """Running from `now`, with what was played so far."""
        return HourClock(self.banked, now)

    def stopped(self, now: int) -> HourClock:
        """Stopped at `now`, keeping what was played (at most the hour)."""
        return HourClock(self.elapsed(now))

    def when(self, elapsed: int) -> int | None:
        """The unit time at which `elapsed` ms of the hour will have been played."""
        return None if self.since is None else self.since + elapsed - self.banked
