"""The red LED and the buzzer as the core drives them: a pattern each, and what plays over it.

A mode sets each output's base pattern (a flash, a steady light); tunes, clicks and
blips play over it once. Their levels are computed from when each pattern started, and
the core wakes exactly when one changes, so nothing drifts and a replay is exact.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from cityunit.core import lights, sounds
from cityunit.core.events import LED, TONE, Event, EventKind, new_event
from cityunit.core.patterns import Pattern, Track

Tell = Callable[[int, EventKind, dict[str, Any]], None]  # (at, kind, its fields)
_WHEN = itemgetter(0)


class Cues:
    def __init__(self, tell: Tell, muted: Callable[[], bool]) -> None:
        """`tell`: each change of an output, with its time; `muted`: whether the volume is
        off now (asked at every sync)."""
        self._tell = tell
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
        self._step(now, self._is_muted())

    def run(self, now: int, last: int, told: list[Event]) -> int:
        """Every step of the outputs due by `last`, each change added to `told` at its own
        time, in order (the LED's first at the same instant): where the last step left the
        clock (`now` if none was due). An hour's thousands of steps, in batches: nothing
        sets a pattern between them (the core runs them up to its next timer)."""
        muted = self._is_muted()
        if muted != self._muted:  # (the volume changed since the last sync: step by step)
            while (at := self.next_at) is not None and at <= last:
                self._step(now := max(now, at), muted)
            return now
        leds, tones = self.led.until(last), self.buzzer.until(last)
        changes = self._lights(leds) + self._tones(tones, muted)
        if leds and tones:
            changes.sort(key=_WHEN)  # (stable: the LED's first at the same instant)
        told += changes
        self._wake()
        return max(now, leds[-1][0] if leds else now, tones[-1][0] if tones else now)

    def _lights(self, steps: list[tuple[int, float]]) -> list[Event]:
        out, level = [], self.level
        for t, value in steps:
            if value != level:
                out.append(new_event(Event, (t, LED, {"level": value})))
                level = value
        self.level = level
        return out

    def _tones(self, steps: list[tuple[int, int | None]], muted: bool) -> list[Event]:
        out, hz = [], self.hz
        for t, value in steps:
            if (value := None if muted else value) != hz:
                out.append(new_event(Event, (t, TONE, {"hz": value})))
                hz = value
        self.hz = hz
        return out

    def _step(self, now: int, muted: bool) -> None:
        led, buzzer = self.led, self.buzzer
        if led.follow(now) and led.value != self.level:
            self.level = level = led.value
            self._tell(now, LED, {"level": level})
        if buzzer.follow(now) or muted != self._muted:
            self._muted = muted
            hz = None if muted else buzzer.value  # muted: silent; every light signal stays
            if hz != self.hz:
                self.hz = hz
                self._tell(now, TONE, {"hz": hz})
        self._wake()

    def _wake(self) -> None:
        """At the earlier of the outputs' next steps."""
        led, buzzer = self.led.changes_at, self.buzzer.changes_at
        self.next_at = led if buzzer is None or (led is not None and led <= buzzer) else buzzer
