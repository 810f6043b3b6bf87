"""The simulated board: the real firmware on gpiozero mock pins and a luma dummy display.

Everything the simulator shows or presses goes through the same parts as on a Pi:
MockFactory pins (PWM-capable, so the LED level and the buzzer frequency are real pin
states) and a luma `dummy` device holding the exact image an OLED would get.
"""

from __future__ import annotations

import random

from gpiozero.pins.mock import MockFactory, MockPWMPin
from luma.core.device import dummy

from cityunit.clock import Clock
from cityunit.config import Config
from cityunit.display import Display
from cityunit.parts import Parts
from cityunit.render import HEIGHT, WIDTH
from cityunit.runtime import Runtime
from cityunit.unit import Event


def event_line(event: Event) -> str:
    """An event for the simulator's log pane: '   12.3 s  auction.end stopped=False'."""
    extra = " ".join(f"{k}={v}" for k, v in event.data.items())
    return f"{event.t_ms / 1000:9.1f} s  {event.event} {extra}".rstrip()


class SimBoard:
    def __init__(self, config: Config, clock: Clock, seed: int) -> None:
        self.config = config
        self.seed = seed
        self.factory = MockFactory(pin_class=MockPWMPin)
        self.oled = dummy(width=WIDTH, height=HEIGHT, mode="1")
        self.runtime = Runtime(
            config,
            clock,
            parts=lambda on_edge: Parts(config, on_edge, self.factory),
            display=lambda fault: Display(lambda: self.oled, fault),
            rng=random.Random(seed),
        )

    def pin(self, part: str):
        """The mock pin of a part: 'auction', 'build', 'power', 'led' or 'buzzer'."""
        return self.factory.pin(getattr(self.config.pins, part))
