"""The unit's GPIO parts: two buttons, the ON/OFF switch, the red LED and the buzzer.

Every device goes through one gpiozero pin factory: lgpio on a Pi by default,
`GPIOZERO_PIN_FACTORY=rpigpio` for RPi.GPIO, and MockFactory with PWM-capable pins
off the Pi. Callbacks only hand the raw edge on; debouncing and meaning live in the core.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from gpiozero import LED, PWMLED, Buzzer, Device, DigitalInputDevice, TonalBuzzer
from gpiozero.pins import Factory
from gpiozero.pins.mock import MockFactory, MockPWMPin
from gpiozero.tones import Tone

from cityunit.config import Config

# A piezo is loudest at a 50 % duty cycle and quieter as the pulses narrow.
DUTY = {"off": 0.0, "low": 0.03, "medium": 0.12, "high": 0.5}
# 440 Hz to 7 kHz: every tone the unit plays, with room to spare.
BUZZER_MID = Tone("A6")
BUZZER_OCTAVES = 2
D = TypeVar("D", bound=Device)


def pin_factory() -> Factory | None:
    """gpiozero's own choice, except that GPIOZERO_PIN_FACTORY=mock gets PWM-capable pins.

    (gpiozero's default mock pins cannot drive a PWMLED or a TonalBuzzer.)
    """
    if os.environ.get("GPIOZERO_PIN_FACTORY", "").lower() == "mock" and not os.environ.get(
        "GPIOZERO_MOCK_PIN_CLASS"
    ):
        return MockFactory(pin_class=MockPWMPin)
    return None


class Parts:
    """Owns every GPIO device of the unit; `close()` releases them all (also on `with`).

    The LED and buzzer drivers are picked once: a dimmable or a plain LED, a passive
    buzzer's tones or an active one switched on and off.
    """

    def __init__(
        self,
        config: Config,
        on_edge: Callable[[str, bool], None],
        factory: Factory | None = None,
    ) -> None:
        pins, kind = config.pins, config.parts
        self._devices: list[Device] = []
        self._level: float | None = None  # what the LED and the buzzer were last told
        self._sound: tuple[int | None, float] | None = None
        try:
            # Plain inputs rather than gpiozero Buttons: holds are timed by the core, and
            # Button's hold thread would cost a thread per button (and ~0.4 s to close).
            contacts = {"auction": pins.auction, "build": pins.build, "power": pins.power}
            self.inputs = {
                name: self._own(
                    DigitalInputDevice(pin, pull_up=True, bounce_time=None, pin_factory=factory)
                )
                for name, pin in contacts.items()
            }
            for name, contact in self.inputs.items():
                contact.when_activated = lambda name=name: on_edge(name, True)
                contact.when_deactivated = lambda name=name: on_edge(name, False)
            if kind.led_pwm:
                led = self._own(PWMLED(pins.led, pin_factory=factory))
                self._set_led: Callable[[float], None] = lambda level: setattr(led, "value", level)
            else:
                plain = self._own(LED(pins.led, pin_factory=factory))
                self._set_led = lambda level: setattr(plain, "value", level >= 0.5)
            if kind.buzzer == "passive":
                tonal = self._own(
                    TonalBuzzer(
                        pins.buzzer, mid_tone=BUZZER_MID, octaves=BUZZER_OCTAVES,
                        pin_factory=factory,
                    )
                )  # fmt: skip
                self._set_sound: Callable[[int | None, float], None] = partial(_tone, tonal)
            else:
                active = self._own(Buzzer(pins.buzzer, pin_factory=factory))
                self._set_sound = lambda hz, duty: setattr(
                    active, "value", hz is not None and duty > 0
                )
        except Exception:
            self.close()
            raise

    def _own(self, device: D) -> D:
        self._devices.append(device)
        return device

    def __enter__(self) -> Parts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def is_pressed(self, name: str) -> bool:
        return bool(self.inputs[name].is_active)

    def light(self, level: float) -> None:
        if level != self._level:
            self._level = level
            self._set_led(level)

    def sound(self, hz: int | None, volume: str = "high") -> None:
        """A tone (None: silence) at a loudness: a passive buzzer's duty cycle."""
        sound = (hz, DUTY[volume])
        if sound != self._sound:
            self._sound = sound
            self._set_sound(*sound)

    def quiet(self) -> None:
        """LED off and buzzer silent: what SIGTERM and every exit leave behind."""
        self._level, self._sound = 0.0, (None, 0.0)
        with contextlib.suppress(Exception):  # one failed device must not stop the other
            self._set_led(0.0)
        with contextlib.suppress(Exception):
            self._set_sound(None, 0.0)

    @property
    def closed(self) -> bool:
        return not self._devices

    def close(self) -> None:
        """Idempotent: the outputs are left quiet, then every device is released."""
        if self._devices:
            self.quiet()
        for device in reversed(self._devices):
            device.close()
        self._devices.clear()


def _tone(buzzer: TonalBuzzer, hz: int | None, duty: float) -> None:
    if hz is None or duty == 0:
        buzzer.stop()
    else:
        buzzer.play(Tone.from_frequency(hz))
        buzzer.pwm_device.value = duty
