"""The unit's GPIO parts: two buttons, the ON/OFF switch, the red LED and the buzzer.

Every device goes through one gpiozero pin factory: lgpio on a Pi by default,
`GPIOZERO_PIN_FACTORY=rpigpio` for RPi.GPIO, and MockFactory with PWM-capable pins
off the Pi. Callbacks only hand the raw edge on; debouncing and meaning live in the core.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable

from gpiozero import LED, PWMLED, Buzzer, DigitalInputDevice, TonalBuzzer
from gpiozero.pins import Factory
from gpiozero.pins.mock import MockFactory, MockPWMPin
from gpiozero.tones import Tone

from cityunit.config import Config

# A piezo is loudest at a 50 % duty cycle and quieter as the pulses narrow.
DUTY = {"off": 0.0, "low": 0.03, "medium": 0.12, "high": 0.5}
# 440 Hz to 7 kHz: every tone the unit plays, with room to spare.
BUZZER_MID = Tone("A6")
BUZZER_OCTAVES = 2


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
    """Owns every GPIO device of the unit; `close()` releases them all."""

    def __init__(
        self,
        config: Config,
        on_edge: Callable[[str, bool], None],
        factory: Factory | None = None,
    ) -> None:
        pins, kind = config.pins, config.parts
        self._devices: list = []
        self._duty = DUTY["high"]
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
            led_class = PWMLED if kind.led_pwm else LED
            self.led = self._own(led_class(pins.led, pin_factory=factory))
            self.buzzer: TonalBuzzer | Buzzer
            if kind.buzzer == "passive":
                self.buzzer = self._own(
                    TonalBuzzer(
                        pins.buzzer,
                        mid_tone=BUZZER_MID,
                        octaves=BUZZER_OCTAVES,
                        pin_factory=factory,
                    )
                )
            else:
                self.buzzer = self._own(Buzzer(pins.buzzer, pin_factory=factory))
        except Exception:
            self.close()
            raise

    def _own(self, device):
        self._devices.append(device)
        return device

    def is_pressed(self, name: str) -> bool:
        return bool(self.inputs[name].is_active)

    def set_led(self, level: float) -> None:
        if isinstance(self.led, PWMLED):
            self.led.value = level
        else:
            self.led.value = level >= 0.5

    def set_volume(self, volume: str) -> None:
        """Loudness for the next tones (a passive buzzer's duty cycle; an active one is on/off)."""
        self._duty = DUTY[volume]

    def set_tone(self, hz: int | None) -> None:
        if isinstance(self.buzzer, TonalBuzzer):
            if hz is None or self._duty == 0:
                self.buzzer.stop()
            else:
                self.buzzer.play(Tone.from_frequency(hz))
                self.buzzer.pwm_device.value = self._duty
        else:
            self.buzzer.value = hz is not None and self._duty > 0

    def quiet(self) -> None:
        """LED off and buzzer silent: what SIGTERM and every exit leave behind."""
        for action in (lambda: self.set_led(0.0), lambda: self.set_tone(None)):
            with contextlib.suppress(Exception):  # one failed device must not stop the other
                action()

    def close(self) -> None:
        self.quiet()
        for device in reversed(self._devices):
            device.close()
        self._devices.clear()
