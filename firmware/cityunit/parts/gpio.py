"""The unit's GPIO parts: two buttons, the ON/OFF switch, the red LED and the buzzer.

Every device goes through one gpiozero pin factory: lgpio on a Pi by default,
`GPIOZERO_PIN_FACTORY=rpigpio` for RPi.GPIO, and MockFactory with PWM-capable pins
off the Pi. Callbacks only hand the raw edge on; debouncing and meaning live in the core.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Protocol, TypeVar

from gpiozero import LED, PWMLED, Buzzer, DigitalInputDevice, TonalBuzzer
from gpiozero.pins import Factory
from gpiozero.pins.mock import MockFactory, MockPWMPin
from gpiozero.tones import Tone

from cityunit.config import Config
from cityunit.core.snapshot import Snapshot
from cityunit.parts import pwm

# A piezo is loudest at a 50 % duty cycle and quieter as the pulses narrow.
DUTY = {"off": 0.0, "low": 0.03, "medium": 0.12, "high": 0.5}
# 440 Hz to 7 kHz: every tone the unit plays, with room to spare.
BUZZER_MID = Tone("A6")
BUZZER_OCTAVES = 2
log = logging.getLogger(__name__)
LED_HZ = 1_000  # the hardware-PWM LED's rate: far above any flicker


class Closeable(Protocol):
    """What Parts owns and releases: a gpiozero device or a PWM channel."""

    def close(self) -> None: ...


C = TypeVar("C", bound=Closeable)
Light = Callable[[float], None]
Sound = Callable[[int | None, float], None]


def _mock_asked() -> bool:
    return os.environ.get("GPIOZERO_PIN_FACTORY", "").lower() == "mock"


def mock_pins(pin_class: type[MockPWMPin] = MockPWMPin) -> MockFactory:
    """gpiozero's mock pins as the unit needs them off a Pi (the simulator, the bench, the
    tests): PWM-capable, since its default mock pins cannot drive a PWMLED or a
    TonalBuzzer; `pin_class` a PWM pin with more to it (the simulator's switch)."""
    return MockFactory(pin_class=pin_class)


def pin_factory() -> Factory | None:
    """gpiozero's own choice, except that GPIOZERO_PIN_FACTORY=mock gets `mock_pins()`."""
    if _mock_asked() and not os.environ.get("GPIOZERO_MOCK_PIN_CLASS"):
        return mock_pins()
    return None


def pwm_root() -> Path | None:
    """Where the kernel's PWM channels are, unless the pins are gpiozero's mocks."""
    return None if _mock_asked() else pwm.ROOT


def pwm_plan(
    config: Config, root: Path | None, device_tree: Path = pwm.DEVICE_TREE
) -> pwm.Assignment:
    """Which outputs get the Pi's PWM hardware (the buzzer's tones first), and why not."""
    wanting = {}
    if config.hardware.buzzer_kind == "passive":
        wanting["buzzer"] = config.pins.buzzer
    if config.hardware.led_pwm:
        wanting["led"] = config.pins.led
    if root is None or not config.hardware.pwm_hardware:
        return dict.fromkeys(wanting, "software PWM chosen (pwm.hardware = false)")
    return pwm.assign(wanting, root, device_tree)


class Parts:
    """Owns every GPIO device of the unit; `close()` releases them all (also on `with`).

    The LED and buzzer drivers are picked once: the Pi's PWM hardware where it is on
    (`pwm_root`, the kernel's sysfs), else gpiozero: a dimmable or a plain LED, a passive
    buzzer's tones or an active one switched on and off.
    """

    def __init__(
        self,
        config: Config,
        on_edge: Callable[[str, bool], None],
        factory: Factory | None = None,
        pwm_root: Path | None = None,
        device_tree: Path = pwm.DEVICE_TREE,
        on_fault: Callable[[str, str], None] = lambda part, detail: None,
        inputs: bool = True,
    ) -> None:
        """`inputs` false: the outputs alone (`run --off` touches no other pin)."""
        pins = config.pins
        self._devices: list[Closeable] = []
        self._on_fault = on_fault  # a hardware channel failed mid-run: (part, detail)
        self._channels: dict[str, pwm.Channel] = {}
        self._software: dict[str, Callable[[], Callable[..., None]]] = {
            "led": partial(self._dimmed, pins.led, factory),
            "buzzer": partial(self._tonal, pins.buzzer, factory),
        }
        self._level: float | None = None  # what the LED and the buzzer were last told
        self._sound: tuple[int | None, float] | None = None
        self.pwm_hardware: list[str] = []  # the parts on the PWM hardware
        # Silent until the outputs are built: a board failing half-built still closes.
        self._set_led: Light = lambda level: None
        self._set_sound: Sound = lambda hz, duty: None
        try:
            # Plain inputs rather than gpiozero Buttons: holds are timed by the core, and
            # Button's hold thread would cost a thread per button (and ~0.4 s to close).
            contacts = {"auction": pins.auction, "build": pins.build, "power": pins.power}
            contacts = contacts if inputs else {}
            self.inputs = {
                name: self._own(
                    DigitalInputDevice(pin, pull_up=True, bounce_time=None, pin_factory=factory)
                )
                for name, pin in contacts.items()
            }
            for name, contact in self.inputs.items():
                contact.when_activated = lambda name=name: on_edge(name, True)
                contact.when_deactivated = lambda name=name: on_edge(name, False)
            self.pwm = pwm_plan(config, pwm_root, device_tree)
            self._set_sound = self._buzzer(config, factory)
            self._set_led = self._led(config, factory)
        except Exception:
            self.close()
            raise

    @property
    def factory(self) -> Factory | None:
        """The gpiozero pin factory the parts are on (None: no gpiozero part)."""
        for device in self._devices:
            if (factory := getattr(device, "pin_factory", None)) is not None:
                return factory
        return None

    @property
    def factory_name(self) -> str:
        """What gpiozero drives the pins through (LGPIOFactory, RPiGPIOFactory...)."""
        factory = self.factory
        return "no gpiozero pins" if factory is None else type(factory).__name__

    def channel(self, part: str) -> pwm.Channel | None:
        """The PWM hardware channel `part` plays on, if it does."""
        return self._channels.get(part)

    def _hardware(self, part: str) -> pwm.Channel | None:
        found = self.pwm.get(part)
        if not isinstance(found, tuple):
            return None
        try:  # the LED as found: the unit lights it at once, the first stage before it
            channel = pwm.Channel(*found, stop=part != "led")
        except OSError as e:
            log.warning("%s: hardware PWM unavailable (%s): software PWM", part, e)
            self.pwm[part] = f"cannot open its channel: {e}"
            return None
        self.pwm_hardware.append(part)
        self._channels[part] = channel
        return self._own(channel)

    def _led(self, config: Config, factory: Factory | None) -> Light:
        if not config.hardware.led_pwm:
            plain = self._own(LED(config.pins.led, pin_factory=factory))
            return lambda level: setattr(plain, "value", level > 0)  # any light shows
        channel = self._hardware("led")
        if channel is not None:
            return lambda level: channel.set(LED_HZ, level)
        return self._dimmed(config.pins.led, factory)

    def _dimmed(self, gpio: int, factory: Factory | None) -> Light:
        dimmed = self._own(PWMLED(gpio, pin_factory=factory))
        return lambda level: setattr(dimmed, "value", level)

    def _buzzer(self, config: Config, factory: Factory | None) -> Sound:
        if config.hardware.buzzer_kind == "active":
            active = self._own(Buzzer(config.pins.buzzer, pin_factory=factory))
            return lambda hz, duty: setattr(active, "value", hz is not None and duty > 0)
        channel = self._hardware("buzzer")
        if channel is not None:
            return channel.set
        return self._tonal(config.pins.buzzer, factory)

    def _tonal(self, gpio: int, factory: Factory | None) -> Sound:
        tonal = self._own(
            TonalBuzzer(gpio, mid_tone=BUZZER_MID, octaves=BUZZER_OCTAVES, pin_factory=factory)
        )
        return partial(_tone, tonal)

    def _software_now(self, part: str, error: OSError) -> Callable[..., None]:
        """A hardware channel failed mid-run (the kernel refused a value, another process
        took the channel): the part goes on in software, and the fault is told."""
        channel = self._channels.pop(part, None)
        if channel is None:
            raise error
        log.warning("%s: hardware PWM failed (%s): software PWM from now on", part, error)
        channel.close()
        self._devices.remove(channel)
        self.pwm_hardware.remove(part)
        self.pwm[part] = f"its channel failed: {error}"
        self._on_fault(part, f"hardware PWM failed ({error}): software PWM")
        return self._software[part]()

    def _own(self, device: C) -> C:
        self._devices.append(device)
        return device

    def __enter__(self) -> Parts:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def is_pressed(self, name: str) -> bool:
        """Whether the contact ('auction', 'build', 'power') is closed now, read from its
        pin: no debouncing."""
        return bool(self.inputs[name].is_active)

    def light(self, level: float) -> None:
        """The LED at `level`, 0 to 1 (a plain LED is lit by any level above 0), written
        only when it changes. A hardware channel that fails goes on in software, and the
        fault is told."""
        if level != self._level:
            self._level = level
            try:
                self._set_led(level)
            except OSError as e:
                self._set_led = self._software_now("led", e)
                self._set_led(level)

    def sound(self, hz: int | None, volume: str = "high") -> None:
        """A tone (None: silence) at a loudness: a passive buzzer's duty cycle."""
        sound = (hz, DUTY[volume])
        if sound != self._sound:
            self._sound = sound
            try:
                self._set_sound(*sound)
            except OSError as e:
                self._set_sound = self._software_now("buzzer", e)
                self._set_sound(*sound)

    def quiet(self) -> None:
        """LED off and buzzer silent: what SIGTERM and every exit leave behind."""
        self._level, self._sound = 0.0, (None, 0.0)
        for leave_quiet in (partial(self._set_led, 0.0), partial(self._set_sound, None, 0.0)):
            try:  # one failed device must not stop the other
                leave_quiet()
            except Exception:
                log.exception("leaving the outputs quiet")

    @property
    def closed(self) -> bool:
        """Every device is released."""
        return not self._devices

    def close(self) -> None:
        """Idempotent: the outputs are left quiet, then every device is released."""
        if self._devices:
            self.quiet()
        for device in reversed(self._devices):
            try:
                device.close()
            except Exception:  # the others are still released
                log.exception("closing %r", device)
        self._devices.clear()


def _tone(buzzer: TonalBuzzer, hz: int | None, duty: float) -> None:
    if hz is None or duty == 0:
        buzzer.stop()
    else:
        buzzer.play(Tone.from_frequency(hz))
        buzzer.pwm_device.value = duty


class LedOutput:
    """The LED as an output the loop walks (snapshot.light)."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def follow(self, snapshot: Snapshot, now: int) -> None:
        self._parts.light(snapshot.light.level)


class BuzzerOutput:
    """The buzzer as an output the loop walks (snapshot.sound)."""

    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def follow(self, snapshot: Snapshot, now: int) -> None:
        self._parts.sound(snapshot.sound.hz, snapshot.sound.volume)
