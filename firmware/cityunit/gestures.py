"""From debounced button edges to what the players meant.

A press gets its feedback when it goes down; its meaning is decided when it comes up
(a tap) or when the hold threshold passes (a long press), so a long press never starts
an auction by accident. Both buttons held together make a chord. A button held far
longer than any gesture is stuck: it is reported once and ignored, and the other
button goes on working alone.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from cityunit.deadlines import Deadlines


class Button(StrEnum):
    AUCTION = "auction"
    BUILD = "build"

    @property
    def other(self) -> Button:
        return Button.BUILD if self is Button.AUCTION else Button.AUCTION


class Gesture(StrEnum):
    DOWN = "down"  # feedback only
    TAP = "tap"
    LONG = "long"
    CHORD = "chord"  # both held for the long-press time
    CHORD_HOLD = "chord_hold"  # both held for CHORD_HOLD_MS
    STUCK = "stuck"
    UNSTUCK = "unstuck"


CHORD_HOLD_MS = 5_000
STUCK_MS = 10_000


@dataclass
class _Held:
    since: int
    spent: bool = False  # its meaning was already taken (long press or chord)
    stuck: bool = False


class Gestures:
    def __init__(
        self,
        deadlines: Deadlines,
        long_ms: int,
        emit: Callable[[Gesture, Button | None], None],
    ) -> None:
        self._deadlines = deadlines
        self._long_ms = long_ms
        self._emit = emit
        self._held: dict[Button, _Held] = {}
        self._chord = False

    def down(self, button: Button, t: int) -> None:
        if button in self._held:
            return
        held = self._held[button] = _Held(t)
        self._emit(Gesture.DOWN, button)
        other = self._held.get(button.other)
        if other is not None and not other.stuck:
            held.spent = other.spent = True
            self._deadlines.cancel(f"long.{button.other}")
            self._chord = True
            self._deadlines.set("chord", t + self._long_ms, self._chord_fired)
            self._deadlines.set("chord.hold", t + CHORD_HOLD_MS, self._chord_held)
        else:
            self._deadlines.set(f"long.{button}", t + self._long_ms, lambda: self._long(button))
        self._deadlines.set(f"stuck.{button}", t + STUCK_MS, lambda: self._stuck(button))

    def up(self, button: Button, t: int) -> None:
        held = self._held.pop(button, None)
        if held is None:
            return
        self._deadlines.cancel(f"long.{button}", f"stuck.{button}")
        self._end_chord()
        if held.stuck:
            self._emit(Gesture.UNSTUCK, button)
        elif not held.spent:
            self._emit(Gesture.TAP, button)

    def _end_chord(self) -> None:
        if self._chord:
            self._chord = False
            self._deadlines.cancel("chord", "chord.hold")

    def _long(self, button: Button) -> None:
        self._held[button].spent = True
        self._emit(Gesture.LONG, button)

    def _chord_fired(self) -> None:
        self._emit(Gesture.CHORD, None)

    def _chord_held(self) -> None:
        self._emit(Gesture.CHORD_HOLD, None)

    def _stuck(self, button: Button) -> None:
        held = self._held[button]
        held.stuck = held.spent = True
        self._deadlines.cancel(f"long.{button}")
        self._end_chord()
        self._emit(Gesture.STUCK, button)
