"""A soak: 24 hours of virtual play with random presses through the pins, invariants
checked at every step. Deterministic (seeded) and well under a minute of wall time."""

from __future__ import annotations

import json
import random

from cityunit.core import modes
from cityunit.core.hour import HOUR_MS
from conftest import AUCTION, BUILD, BUZZER, LED, POWER, Rig

DAY_MS = 24 * 3_600_000
MODES = {mode.name for mode in modes.ALL}


def check(rig: Rig, last: list[int]) -> None:
    snapshot = rig.runtime.snapshot  # what the loop posted after its last step
    state = snapshot.state()
    json.dumps(state)
    assert state["mode"] in MODES
    assert 0 <= state["hour_elapsed_ms"] <= HOUR_MS
    if state["mode"] == "off":
        assert rig.pin(LED).state == 0 and rig.pin(BUZZER).frequency is None
    if state["permit"] is not None:
        assert state["mode"] == "permit"
    # The pins follow the core: what the players see and hear is what the unit says.
    assert abs(float(rig.pin(LED).state) - snapshot.light.level) < 1e-9
    hz = rig.pin(BUZZER).frequency
    assert (hz is None) == (snapshot.sound.hz is None)
    times = [e.t_ms for e in rig.events[last[0] :]]
    assert times == sorted(times) and (not times or times[0] >= last[1])
    if times:
        last[1] = times[-1]
    last[0] = len(rig.events)


def test_a_day_of_random_play(rig: Rig) -> None:
    rng = random.Random(2009)
    rig.pin(POWER).drive_low()
    rig.at(0)
    last = [0, 0]
    t = 0
    while t < DAY_MS:
        t += rng.choice((40, 300, 2_000, 15_000, 60_000, 240_000))
        rig.at(t)
        roll = rng.random()
        if roll < 0.01:  # the switch, now and then
            pin = rig.pin(POWER)
            pin.drive_high() if pin.state == 0 else pin.drive_low()
        elif roll < 0.45:
            rig.press(rng.choice((AUCTION, BUILD)), rng.choice((30, 80, 200, 1_700)))
            t = rig.clock.now_ms()
        elif roll < 0.5:  # a chattering press
            pin = rig.pin(rng.choice((AUCTION, BUILD)))
            for i in range(rng.randint(2, 8)):
                rig.at(t + i * 2)
                pin.drive_low() if i % 2 == 0 else pin.drive_high()
            rig.at(t + 60)
            pin.drive_high()
            t = t + 60
        elif roll < 0.52:  # both held: pause, resume, or (switch OFF) the shutdown gesture
            a, b = rig.pin(AUCTION), rig.pin(BUILD)
            a.drive_low()
            b.drive_low()
            rig.at(t + rng.choice((1_600, 5_500)))
            a.drive_high()
            b.drive_high()
            t = rig.clock.now_ms()
        rig.runtime.pump()
        check(rig, last)
    names = [e.event for e in rig.events]
    assert names.count("auction.start") > 50 and names.count("permit") > 50
    assert names.count("hour.end") >= 5
