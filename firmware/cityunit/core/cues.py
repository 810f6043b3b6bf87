"""The red LED and the buzzer as the core drives them: a pattern each, and what plays over it.

A mode sets each output's base pattern (a flash, a steady light); tunes, clicks and
blips play over it once. Their levels are computed from when each pattern started, and
the core wakes exactly when one changes, so nothing drifts and a replay is exact.
"""

from __future__ import annotations

from collections.abc import Callable

from cityunit.core import lights, sounds
from cityunit.core.events import EventKind
from cityunit.core.patterns import Pattern, Track

Emit = Callable[..., None]


class Cues:
    def __init__(self, emit: Emit, muted: Callable[[], bool]) -> None:
        """`muted`: whether the volume is off now (asked at every sync)."""
        self._emit = emit
        self._is_muted = muted
        self.led: Track[float] = Track(0.0)
        self.buzzer: Track[int | None] = Track(None)
        self.level = 0.0  # the LED now
        self.hz: int | None = None  # the buzzer now (None: silent, or the volume is off)
        self._muted = False
        # An output's next step, as of the last sync: the core steps there after every
        # timer due at the same instant, so what a mode does then is in place before the
        # outputs are read. Not a Timer: thousands an hour, each known when the last is.
        self.next_at: int | None = None

    def light(self, pattern: Pattern[float], now: int) -> None:
        self.led.set_base(pattern, now)

    def play(self, tune: Pattern[int | None], now: int) -> None:
        self.buzzer.play(tune, now)

    def beep(self, pattern: Pattern[int | None], now: int) -> None:
        """A tone pattern that goes on until replaced (an auction's final beeps)."""
        self.buzzer.set_base(pattern, now)

    def feedback(self, start: int) -> None:
        """A click and a blip the instant a button goes down, whatever it will mean
        (`start`: that instant, or when the press is handled, if later).

        The blip is inverted against the light's level, so it shows even when lit."""
        self.play(sounds.CLICK, start)
        blip = 0.0 if self.led.base_value(start) >= 0.5 else 1.0
        self.led.play(Pattern(((blip, lights.BLIP_MS),)), start)

    def silence(self, now: int) -> None:
        self.led.silence(now)
        self.buzzer.silence(now)

    def quiet_buzzer(self, now: int) -> None:
        self.buzzer.silence(now)

    def sync(self, now: int) -> None:
        """Take the outputs to `now`, telling each change, and wake at the next one. An
        output is recomputed only if its pattern changed or its next step is due."""
        led, buzzer, muted = self.led, self.buzzer, self._is_muted()
        if led.follow(now) and led.value != self.level:
            self.level = level = led.value
            self._emit(EventKind.LED, level=level)
        if buzzer.follow(now) or muted != self._muted:
            self._muted = muted
            hz = None if muted else buzzer.value  # muted: silent; every light signal stays
            if hz != self.hz:
                self.hz = hz
                self._emit(EventKind.TONE, hz=hz)
        at = led.changes_at  # the earlier of the two (earliest(), written out: the hot path)
        if at is None or (buzzer.changes_at is not None and buzzer.changes_at < at):
            at = buzzer.changes_at
        self.next_at = at
