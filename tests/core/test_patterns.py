"""The outputs' steps taken in batches (issue 41: an hour's thousands of LED and buzzer
steps) are the very steps, values and times that following them one by one gives."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cityunit.core.cues import Cues
from cityunit.core.events import Event, EventKind
from cityunit.core.patterns import Pattern, Track

levels = st.sampled_from([0.0, 0.3, 1.0])
patterns = st.builds(
    Pattern,
    st.lists(st.tuples(levels, st.integers(1, 400)), min_size=1, max_size=5).map(tuple),
    st.booleans(),
)
# What is set on a track, and when: a base, or a one-shot overlay over it.
settings = st.lists(st.tuples(st.booleans(), patterns, st.integers(0, 3_000)), max_size=4)


def one_by_one(track: Track[float], last: int) -> list[tuple[int, float]]:
    out = []
    while (t := track.changes_at) is not None and t <= last:
        track.follow(t)
        out.append((t, track.value))
    return out


def set_up(track: Track[float], base: Pattern[float], made: list[Any], start: int) -> None:
    track.set_base(base, start)
    track.follow(start)
    for overlay, pattern, at in made:
        if overlay:
            track.play(pattern, start + at)
        else:
            track.set_base(pattern, start + at)
        track.follow(start + at // 2)  # followed before the overlay starts, at times


@given(patterns, settings, st.integers(0, 20_000), st.integers(0, 5_000))
def test_a_tracks_steps_in_a_batch_are_its_steps_one_by_one(base, made, last, start) -> None:
    batch, single = Track(0.0), Track(0.0)
    set_up(batch, base, made, start)
    set_up(single, base, made, start)
    assert batch.until(start + last) == one_by_one(single, start + last)
    assert (batch.value, batch.changes_at) == (single.value, single.changes_at)


def cues(told: list[Event], muted: list[bool]) -> Cues:
    return Cues(lambda t, kind, data: told.append(Event(t, kind, data)), lambda: muted[0])


tones = st.sampled_from([None, 440, 880])
tunes = st.builds(
    Pattern,
    st.lists(st.tuples(tones, st.integers(1, 400)), min_size=1, max_size=4).map(tuple),
    st.booleans(),
)


@given(patterns, tunes, st.integers(0, 2_000), st.integers(0, 20_000), st.booleans(), st.booleans())
def test_the_outputs_run_in_a_batch_tell_what_stepping_them_tells(
    light, tune, offset, last, muted_before, muted_since
) -> None:
    """The LED's changes and the buzzer's, merged in time (the LED's first at the same
    instant), muted or not, or muted since the last sync: the same events as a sync at
    each step."""
    told: list[Event] = []
    heard: list[Event] = []
    muted = [muted_before]
    batch, single = cues(told, muted), cues(heard, muted)
    for each in (batch, single):
        each.light(light, 0)
        each.beep(tune, offset)
        each.sync(0)
    muted[0] = muted_since
    end = batch.run(0, last, told)
    now = 0
    while (at := single.next_at) is not None and at <= last:
        single.sync(now := max(now, at))
    assert told == heard and end == now
    assert (batch.level, batch.hz, batch.next_at) == (single.level, single.hz, single.next_at)
    assert all(e.event in (EventKind.LED, EventKind.TONE) for e in told)


presses = st.lists(
    st.tuples(
        st.sampled_from(["auction", "build"]), st.integers(0, 120_000), st.integers(30, 2_500)
    ),
    max_size=6,
)


@given(presses, st.lists(st.integers(1, 700), min_size=1, max_size=20))
def test_a_unit_advanced_in_one_leap_tells_what_small_steps_tell(taps, steps) -> None:
    """The unit's whole path: buttons pressed and let go, the switch ON, an auction's
    flashes and beeps, a permit's; the clock moved on in one leap to each input, or in
    small steps (each step's outputs then taken a few at a time). The same events, at
    the same times, in the same order."""
    import random

    from cityunit.core.gestures import Button
    from cityunit.core.rules import Rules
    from cityunit.core.unit import Unit

    def play(leap: bool) -> list[Event]:
        unit = Unit(Rules(), random.Random(7))
        unit.switch(True, 0)
        now, told, sizes = 0, [], iter(steps * 400)
        inputs = sorted((at, kind, button) for button, down, held in taps
                        for at, kind in ((down, "press"), (down + held, "release")))  # fmt: skip
        for at, kind, button in [*inputs, (150_000, "end", "")]:
            while not leap and now < at:
                unit.advance(now := min(at, now + next(sizes, 700)))
            unit.advance(at)
            if kind != "end":
                getattr(unit, kind)(Button(button), at)
            now = at
            told += unit.drain().events
        return told

    assert play(leap=True) == play(leap=False)
