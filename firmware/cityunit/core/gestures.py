"""From debounced button edges to what the players meant.

A press gets its feedback when it goes down; its meaning is decided when it comes up
(a tap) or when the hold threshold passes (a long press), so a long press never starts
an auction by accident. Both buttons held together make a chord. A button held far
longer than any gesture is stuck: it is reported once and ignored, and the other
button goes on working alone.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from functools import partial

from cityunit.core.timers import Timers


class Button(StrEnum):
    """The two buttons, by the names the console's PRESS and HOLD take."""

    AUCTION = "auction"
    BUILD = "build"

    @property
    def other(self) -> Button:
        return Button.BUILD if self is Button.AUCTION else Button.AUCTION


class Gesture(StrEnum):
    """What a press meant, heard with its button (None for the two chords)."""

    DOWN = "down"  # feedback only
    TAP = "tap"
    LONG = "long"
    CHORD = "chord"  # both held for the long-press time
    CHORD_HOLD = "chord_hold"  # both held for CHORD_HOLD_MS
    STUCK = "stuck"
    UNSTUCK = "unstuck"


CHORD_HOLD_MS = 5_000
STUCK_MS = 10_000

Heard = Callable[[Gesture, Button | None], None]


class _Held:
    __slots__ = ("since", "spent", "stuck")

    def __init__(self, since: int) -> None:
        self.since = since
        self.spent = False  # its meaning was already taken (long press or chord)
        self.stuck = False


class Gestures:
    """Each button's downs and ups, told as gestures through `heard`; its timers (the long
    press, the chords, a stuck button) are deadlines in the unit's `timers`."""

    def __init__(self, timers: Timers, long_ms: int, heard: Heard) -> None:
        self._long_ms = long_ms
        self._heard = heard
        self._held: dict[Button, _Held] = {}
        self._long = {b: timers.timer(partial(self._long_press, b)) for b in Button}
        self._stuck = {b: timers.timer(partial(self._stuck_down, b)) for b in Button}
        self._chord = timers.timer(partial(heard, Gesture.CHORD, None))
        self._chord_hold = timers.timer(partial(heard, Gesture.CHORD_HOLD, None))

    def down(self, button: Button, t: int) -> None:
        """DOWN at once. With the other button already held (and not stuck) a chord
        begins, and neither press is then a tap or a long press. A second down is ignored."""
        if button in self._held:
            return
        held = self._held[button] = _Held(t)
        self._heard(Gesture.DOWN, button)
        other = self._held.get(button.other)
        if other is not None and not other.stuck:
            held.spent = other.spent = True
            self._long[button.other].cancel()
            self._chord.set(t + self._long_ms)
            self._chord_hold.set(t + CHORD_HOLD_MS)
        else:
            self._long[button].set(t + self._long_ms)
        self._stuck[button].set(t + STUCK_MS)

    def up(self, button: Button, t: int) -> None:
        """A TAP, unless the press was taken already (a long press, a chord); UNSTUCK for
        a stuck button. Any chord ends."""
        held = self._held.pop(button, None)
        if held is None:
            return
        self._long[button].cancel()
        self._stuck[button].cancel()
        self._end_chord()
        if held.stuck:
            self._heard(Gesture.UNSTUCK, button)
        elif not held.spent:
            self._heard(Gesture.TAP, button)

    def hold_again(self, t: int) -> None:
        """The switch moved while both are held: the 5 s hold counts from now, so a
        safe shutdown needs 5 s held with the switch OFF, never a pause held across it."""
        if self._chord_hold.pending:
            self._chord_hold.set(t + CHORD_HOLD_MS)

    def _end_chord(self) -> None:
        self._chord.cancel()
        self._chord_hold.cancel()

    def _long_press(self, button: Button) -> None:
        self._held[button].spent = True
        self._heard(Gesture.LONG, button)

    def _stuck_down(self, button: Button) -> None:
        held = self._held[button]
        held.stuck = held.spent = True
        self._long[button].cancel()
        self._end_chord()
        self._heard(Gesture.STUCK, button)
