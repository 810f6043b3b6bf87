"""Light and sound as patterns in time: what the LED and the buzzer do, step by step.

A pattern is pure data; its value at any instant is computed from when it started,
so a flash never drifts however late the loop wakes, and a virtual clock replays it
exactly.
"""

from __future__ import annotations

import bisect
import itertools
from typing import Final, Generic, TypeVar

from cityunit.core.values import Value

V = TypeVar("V")


class Pattern(Value, Generic[V]):
    """Steps of (value, duration in ms), played once or repeated."""

    __slots__ = ("ends", "repeat", "steps")
    steps: tuple[tuple[V, int], ...]  # (not Final: mypy's Final takes no type variable)
    repeat: Final[bool]

    def __init__(self, steps: tuple[tuple[V, int], ...], repeat: bool = False) -> None:
        if not steps or any(ms <= 0 for _, ms in steps):
            raise ValueError("a pattern needs steps of positive length")
        self.steps, self.repeat = steps, repeat
        self.ends: Final = tuple(itertools.accumulate(ms for _, ms in steps))
        """When each step ends, from the start of a pass."""

    def at(self, elapsed: int) -> tuple[V, int] | None:
        """The value at `elapsed` ms and the ms until it changes; None once a one-shot ends."""
        ends = self.ends
        if self.repeat:
            elapsed %= ends[-1]
        elif elapsed >= ends[-1]:
            return None
        i = bisect.bisect_right(ends, elapsed)
        return self.steps[i][0], ends[i] - elapsed

    def __mul__(self, times: int) -> Pattern[V]:
        return Pattern(self.steps * times, self.repeat)


def steady(value: V) -> Pattern[V]:
    """A value that holds until the pattern is replaced."""
    return Pattern(((value, 3_600_000),), repeat=True)


class Track(Generic[V]):
    """One output: a base pattern set by the mode, and a one-shot overlay (a click, a tune)."""

    def __init__(self, rest: V) -> None:
        self.rest = rest
        self._base: tuple[Pattern[V], int] = (steady(rest), 0)
        self._overlay: tuple[Pattern[V], int] | None = None
        self.value = rest  # as of the last `follow`
        self.touched = True  # a pattern was set since
        self.changes_at: int | None = None  # when the value next changes, as of then

    def set_base(self, pattern: Pattern[V], t: int) -> None:
        """The mode's pattern, from `t`; an overlay still playing stays on top of it."""
        self._base = (pattern, t)
        self.touched = True

    def play(self, pattern: Pattern[V], t: int) -> None:
        """A one-shot from `t`, over the base and in place of any overlay before it; when
        it ends, the base shows where it has got to."""
        self._overlay = (pattern, t)
        self.touched = True

    def silence(self, t: int) -> None:
        """Back to rest: no base pattern, no overlay."""
        self._base = (steady(self.rest), t)
        self._overlay = None
        self.touched = True

    def follow(self, t: int) -> bool:
        """`value` taken to `t` if it may have changed (a pattern was set, or its next step
        has come): whether it was."""
        changes_at = self.changes_at
        if not self.touched and (changes_at is None or t < changes_at):
            return False
        self.value, ms = self._state(t)
        self.touched, self.changes_at = False, None if ms is None else t + ms
        return True

    def until(self, last: int) -> list[tuple[int, V]]:
        """Each step due by `last`, in order, as (when, the value from then): what `follow`
        at each would give, nothing being set between. A repeating base with no overlay
        (most of an hour's steps) is walked step by step, not looked up at each."""
        out: list[tuple[int, V]] = []
        while (t := self.changes_at) is not None and t <= last:
            base, t0 = self._base
            if self.touched or self._overlay is not None or len(base.steps) < 2 or not base.repeat:
                self.follow(t)
                out.append((t, self.value))
                continue
            steps, ends = base.steps, base.ends
            elapsed = (t - t0) % ends[-1]
            i = bisect.bisect_right(ends, elapsed)
            value, after = steps[i][0], t + ends[i] - elapsed
            out.append((t, value))
            while after <= last:
                i = i + 1 if i + 1 < len(steps) else 0
                value, t = steps[i][0], after
                out.append((t, value))
                after = t + steps[i][1]
            self.value, self.changes_at = value, after
        return out

    def base_value(self, t: int) -> V:
        """The base's value at `t`, whatever the overlay; `rest` once a one-shot base ends."""
        pattern, t0 = self._base
        now = pattern.at(t - t0)
        return self.rest if now is None else now[0]

    def _state(self, t: int) -> tuple[V, int | None]:
        """The value at `t` and how many ms it holds (None: until the pattern is replaced)."""
        starts = None  # when an overlay yet to come starts (a press handled late)
        if self._overlay is not None:
            overlay, o0 = self._overlay
            if t < o0:
                starts = o0 - t
            else:
                now = overlay.at(t - o0)
                if now is not None:
                    return now
                self._overlay = None
        base, t0 = self._base
        base_now = base.at(t - t0)
        if base_now is None:
            value, ms = self.rest, None
        else:
            value, ms = base_now
            if base.repeat and len(base.steps) == 1:
                ms = None
        if starts is not None:
            ms = starts if ms is None else min(ms, starts)
        return value, ms
