"""Unit time: integer milliseconds on a monotonic clock, real or virtual.

The wall clock is never read: a Pi without an RTC jumps it when NTP answers.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """What the loop reads unit time from: MonotonicClock, VirtualClock, or the
    simulator's HandClock. `virtual`: time moves only when told to."""

    virtual: bool

    def now_ms(self) -> int:
        """Unit time in ms; it never goes back."""
        ...

    def wait_ms(self, deadline: int | None) -> float | None:
        """How long, in seconds, a loop may block before `deadline` (None: forever)."""
        ...


class MonotonicClock:
    """Real time, counted from the moment the clock was made; `speed` > 1 runs it faster
    (the simulator's fast-forward)."""

    virtual = False

    def __init__(self, speed: float = 1.0) -> None:
        if speed <= 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._origin = time.monotonic_ns()

    def now_ms(self) -> int:
        """Milliseconds since the clock was made, times `speed`."""
        return int((time.monotonic_ns() - self._origin) * self.speed) // 1_000_000

    def wait_ms(self, deadline: int | None) -> float | None:
        """Real seconds: the unit time left divided by `speed`, 0 once it has passed."""
        if deadline is None:
            return None
        return max(0.0, (deadline - self.now_ms()) / 1000 / self.speed)


class VirtualClock:
    """Time that moves only when told to, so a test replays an hour in milliseconds."""

    virtual = True

    def __init__(self, start_ms: int = 0) -> None:
        self._now = start_ms

    def now_ms(self) -> int:
        """Where it was last set (`start_ms` until then)."""
        return self._now

    def set_ms(self, t: int) -> None:
        """Move time on to `t` (back is a ValueError). Only the clock moves: the caller
        then advances the unit to it."""
        if t < self._now:
            raise ValueError("a monotonic clock cannot go back")
        self._now = t

    def wait_ms(self, deadline: int | None) -> float | None:
        """Deadlines never pass on their own: the loop waits for the next command."""
        return None
