"""Time that fits the player: `--speed N` fast-forwards the game, never a person's hands.

A gesture is a length of time (a tap, a 1.5 s long press, 5 s for the safe shutdown),
and hands keep real time: at x60 a 100 ms tap would last 6 s of unit time, a long press.
So while a button is held, or the menu is open (it closes after 30 s untouched), unit
time runs at real speed; what `--speed` skips is the game's own waiting (the hour, an
auction, a permit on show). Only the simulator's window and terminal use this clock: the
console's PRESS and HOLD are in unit time by protocol, and a Pi's clock is never sped up.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class HandClock:
    """Real time, `speed` times faster except while `handled` for some reason."""

    virtual = False

    def __init__(self, speed: float, source: Callable[[], int] = time.monotonic_ns) -> None:
        """`source`: real time in ns (a test's own, so that it never sleeps)."""
        if not speed > 0:
            raise ValueError("speed must be positive")
        self.speed = speed
        self._source = source
        self._lock = threading.Lock()  # the window's thread and the loop's both change it
        self._handled: set[str] = set()
        self._base = (source(), 0, speed)  # from (real ns, unit ms) on, at this rate

    @property
    def rate(self) -> float:
        """How many times faster than real time unit time runs now."""
        return self._base[2]

    def now_ms(self) -> int:
        """Lock-free: a stop signal's handler reads the clock, and it may land while this
        thread holds the lock in `handled` (the base is swapped whole, never torn)."""
        return self._at(self._source())

    def wait_ms(self, deadline: int | None) -> float | None:
        """Real seconds at the rate now (None: forever); what changes the rate (a pin
        edge, a loop step) makes the loop ask again."""
        if deadline is None:
            return None
        return max(0.0, (deadline - self.now_ms()) / 1000 / self.rate)

    def handled(self, why: str, on: bool) -> None:
        """A hand is on the unit for `why` (a button's name, "menu"), or no longer.

        Call it before moving the pin: a release then wakes the loop already at full
        speed, so its sleep is never reckoned at real speed."""
        with self._lock:
            (self._handled.add if on else self._handled.discard)(why)
            rate = 1.0 if self._handled else self.speed
            if rate != self.rate:
                now = self._source()
                self._base = (now, self._at(now), rate)

    def _at(self, ns: int) -> int:
        start_ns, start_ms, rate = self._base
        return start_ms + max(0, int((ns - start_ns) * rate) // 1_000_000)
