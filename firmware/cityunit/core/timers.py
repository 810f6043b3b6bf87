"""Timers: the core's only notion of the future, each one a handle held by its owner.

An owner makes a Timer once and sets, re-sets or cancels it; nobody else can reach it,
so two owners can never replace each other's deadline, and an owner that goes away
cancels what it holds. Ties run in the order they were set, so a replay on the virtual
clock is exact. (The LED's and the buzzer's steps are the core's other future: see Cues.)
"""

from __future__ import annotations

import heapq
from collections.abc import Callable


def earliest(*times: int | None) -> int | None:
    """The first of the times that are set (None: none is). (A loop: thousands of calls
    an hour, and min() over a generator costs five times as much.)"""
    first = None
    for t in times:
        if t is not None and (first is None or t < first):
            first = t
    return first


class Timer:
    """One pending time at most: setting it again moves it."""

    def __init__(self, timers: Timers, run: Callable[[], None]) -> None:
        self._timers = timers
        self._run = run
        self.at: int | None = None
        self.seq = 0  # its live entry in the heap (0: none)

    def set(self, t: int) -> None:
        self._timers.push(t, self)

    def cancel(self) -> None:
        self.at, self.seq = None, 0

    def set_or_cancel(self, at: int | None) -> None:
        """Pending at `at` (None: not at all), leaving the heap alone if it already is."""
        if at == self.at:
            return
        if at is None:
            self.cancel()
        else:
            self.set(at)

    @property
    def pending(self) -> bool:
        return self.at is not None

    def fire(self) -> None:
        self._run()


class Timers:
    """Every pending Timer of one unit, earliest first.

    A heap of (time, order set, timer); an entry whose timer was since moved or
    cancelled is stale and is dropped when it reaches the top, or, when stale entries
    pile up (a flood of presses, each moving timers far ahead), all at once.
    """

    def __init__(self) -> None:
        self.heap: list[tuple[int, int, Timer]] = []
        self.seq = 0  # how many times a timer was set: ties run in that order
        self.floor = 256  # entries kept before stale ones are swept out, at the least
        self.limit = self.floor

    def push(self, t: int, timer: Timer) -> None:
        """`timer` due at `t`, after those set before it for the same time: its one live
        entry (any older one goes stale)."""
        self.seq += 1
        timer.at, timer.seq = t, self.seq
        heapq.heappush(self.heap, (t, self.seq, timer))
        if len(self.heap) > self.limit:
            self.compact()

    def compact(self) -> None:
        """Only live entries kept: memory follows the timers pending, not those set."""
        self.heap = [entry for entry in self.heap if entry[2].seq == entry[1]]
        heapq.heapify(self.heap)
        self.limit = max(self.floor, 2 * len(self.heap))

    def timer(self, run: Callable[[], None] = lambda: None) -> Timer:
        """`run` (by default nothing: a timer that only wakes the core, whose owner then
        looks again)."""
        return Timer(self, run)

    def _first(self) -> tuple[int, int, Timer] | None:
        heap = self.heap
        while heap and heap[0][2].seq != heap[0][1]:  # stale
            heapq.heappop(heap)
        return heap[0] if heap else None

    def next(self) -> int | None:
        first = self._first()
        return None if first is None else first[0]

    def pop_due(self, now: int) -> tuple[int, Timer] | None:
        """The earliest timer due at or before `now`, disarmed, with its time."""
        first = self._first()
        if first is None or first[0] > now:
            return None
        heapq.heappop(self.heap)
        at, _, timer = first
        timer.cancel()
        return at, timer
