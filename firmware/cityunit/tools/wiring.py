"""`cityunit doctor --step N` and `--interactive`: the wiring test. A person presses each
button, flips the switch, and says what the LED, the buzzer and the screen do: each wire
is proven end to end, which reading the pins alone cannot do. Step by step, it tests
only what the build guide's step N has just wired, so a maker knows at once which
joint to look at."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from cityunit.config import Config
from cityunit.tools.doctor import FAIL, OK, Finding

WAIT_S = 30
TEST_TONES = (1047, 2093, 3136)
EVERY_PART = ("auction", "build", "power", "LED", "buzzer", "OLED")
# The build guide's steps (hardware/README.md, which a test holds to these titles), and
# the parts each one wires; the last tests them all.
STEPS = {
    1: ("Pi and SD card", ()),
    2: ("The OLED", ("OLED",)),
    3: ("The buttons and the switch", ("auction", "build", "power")),
    4: ("The LED", ("LED",)),
    5: ("The buzzer", ("buzzer",)),
    6: ("The wiring test", EVERY_PART),
}
SERVICE = "cityunit.service"


class NotPaused(Exception):
    """The service holds the pins and could not be stopped (no sudo, or refused)."""


@contextlib.contextmanager
def service_paused(
    running: bool, run: Callable[[list[str]], int], say: Callable[[str], None] = print
) -> Iterator[None]:
    """The running service stopped for the test (it holds the pins and the screen), and
    started again after it whatever happens: a Ctrl-C, and the SSH session dropping
    (SIGHUP) or a kill (SIGTERM), which would otherwise end doctor before it could. The
    unit must not be left dead by its own check."""
    if not running:
        yield
        return
    say("stopping the service for the test (it holds the pins): sudo systemctl stop cityunit")
    if run(["sudo", "systemctl", "stop", SERVICE]) != 0:
        raise NotPaused
    kept = {sig: signal.signal(sig, _interrupted) for sig in (signal.SIGHUP, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in kept.items():
            signal.signal(sig, handler)
        started = run(["sudo", "systemctl", "start", SERVICE]) == 0
        with contextlib.suppress(OSError):  # the terminal may be gone
            say("started the service again" if started else "the service is still stopped:"
                " `sudo systemctl start cityunit`, or reboot")  # fmt: skip


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")  # unwinds through service_paused's finally


def run_command(argv: list[str]) -> int:
    """A command in the person's terminal (sudo may ask for a password): its exit code."""
    try:
        return subprocess.run(argv, check=False).returncode
    except OSError:
        return 127


def buzzer_hint(gpio: int) -> str:
    """What to check when the buzzer is silent: Q1's legs as the BOM's part has them (a
    substitute's differ: the build guide's table, from the same file)."""
    q1 = tomllib.loads(resources.files("cityunit").joinpath("transistors.toml").read_text())
    legs = f"{q1['q1']['part']}: {q1['q1']['legs']}, flat side facing you, legs down"
    return f"check GPIO{gpio}, the transistor's legs ({legs}) and 5V to the buzzer"


def pattern() -> Any:
    """A frame, a checkerboard corner and a word: every part of the panel shows."""
    from PIL import ImageDraw

    from cityunit.display.render import HEIGHT, WIDTH, _canvas, font

    image, draw = _canvas()
    draw.rectangle((0, 0, WIDTH - 1, HEIGHT - 1), outline=1)
    for x in range(4, 28, 4):
        for y in range(4, 28, 4):
            if (x + y) % 8 == 0:
                draw.rectangle((x, y, x + 3, y + 3), fill=1)
    ImageDraw.Draw(image).text((76, 32), "doctor", font=font(14), fill=1, anchor="mm")
    return image


@dataclass
class WiringTest:
    """Press each button, flip the switch, see and hear each output: each wire proven."""

    config: Config
    parts: Any  # cityunit.parts.gpio.Parts
    ask: Callable[[str], str]  # shows a line, returns the person's answer
    display: Any = None  # a cityunit.display.oled.LumaPanel, or None
    wait_s: float = WAIT_S
    pause: Callable[[float], None] = lambda s: None
    findings: list[Finding] = field(default_factory=list)

    def run(self, parts: tuple[str, ...] = EVERY_PART) -> int:
        """`parts` (of EVERY_PART), in the order they are wired: 0 if all passed."""
        checks = {"power": self.switch, "LED": self.led, "buzzer": self.buzzer, "OLED": self.oled}
        for part in parts:
            if part in checks:
                checks[part]()
            else:
                self.button(part)
        return 1 if any(f.level == FAIL for f in self.findings) else 0

    def button(self, name: str) -> None:
        self.contact(name, f"Press and hold the {name.upper()} button", "Release it",
                     getattr(self.config.pins, name))  # fmt: skip

    def switch(self) -> None:
        """As a button, but first OFF: a switch that reads ON with its lever OFF has its
        GND on the wrong outer lug, which the guide's step 3 says how to mend."""
        pin, device = self.config.pins.power, self.parts.inputs["power"]
        if device.is_active:
            self.ask(f"The switch reads ON: set its lever OFF (within {self.wait_s:.0f} s) ...")
            if not device.wait_for_inactive(timeout=self.wait_s):
                hint = f"GPIO{pin} reads ON with the lever OFF: move GND to the other outer lug"
                self.findings.append(Finding(FAIL, "power", hint))
                return
        self.contact("power", "Flip the switch ON", "Flip it OFF", pin)

    def led(self) -> None:
        self.parts.light(1.0)
        hint = f"check GPIO{self.config.pins.led}, the resistor, and the LED's long leg"
        self.confirm("LED", "Is the red LED lit?", hint)
        self.parts.light(0.0)

    def buzzer(self) -> None:
        for hz in TEST_TONES:
            self.parts.sound(hz)
            self.pause(0.3)
        self.parts.sound(None)
        self.confirm(
            "buzzer", "Did you hear three rising beeps?", buzzer_hint(self.config.pins.buzzer)
        )

    def oled(self) -> None:
        if self.display is None:  # none in the config, or it would not start (said above)
            if self.config.hardware.driver != "none":
                self.findings.append(Finding(FAIL, "OLED", "it did not start: see above"))
            return
        self.display.display(pattern())
        self.confirm("OLED", "Does the screen show a frame, squares and 'doctor'?",
                     _display_hint(self.config))  # fmt: skip
        self.display.blank()

    def contact(self, name: str, press: str, release: str, pin: int) -> None:
        """A button or the switch: seen closing, then opening, each within `wait_s`."""
        device = self.parts.inputs[name]
        self.ask(f"{press} (within {self.wait_s:.0f} s) ...")
        if not device.wait_for_active(timeout=self.wait_s):
            self.findings.append(
                Finding(FAIL, name, f"nothing on GPIO{pin}: check its wire and GND")
            )
            return
        self.ask(f"{release} ...")
        if not device.wait_for_inactive(timeout=self.wait_s):
            self.findings.append(Finding(FAIL, name, f"GPIO{pin} stays low: a short to GND?"))
            return
        self.findings.append(Finding(OK, name, f"GPIO{pin} works"))

    def confirm(self, what: str, question: str, hint: str) -> None:
        """What only the person can see or hear: yes, or a FAIL with where to look."""
        answer = self.ask(f"{question} [y/n] ").strip().lower()
        ok = answer.startswith("y")
        self.findings.append(Finding(OK if ok else FAIL, what, "seen" if ok else hint))


def _display_hint(config: Config) -> str:
    p = config.hardware
    if p.interface == "i2c":
        return "check the display's pin order and its address"
    cs = f"CE{p.spi_device} (GPIO{(8, 7)[p.spi_device]})"
    return (
        f"check DIN/MOSI (GPIO10), CLK (GPIO11), CS on {cs}, DC (GPIO{p.dc_pin}),"
        f" RST (GPIO{p.reset_pin}), and the module set for 4-wire SPI"
    )
