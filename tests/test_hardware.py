"""hardware/: one source of truth, generated documents, and the interactive wiring test."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cityunit.config import Config
from cityunit.doctor import FAIL, OK, WiringTest
from cityunit.parts import Parts
from fakes import mock_factory

ROOT = Path(__file__).resolve().parents[1]
PINOUT = tomllib.loads((ROOT / "hardware/pinout.toml").read_text())


def test_the_schematic_and_the_tables_are_made_from_the_pinout() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "hardware/generate.py"), "--check"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_led_resistor_gives_a_safe_bright_current() -> None:
    led = PINOUT["led"]
    ohm = PINOUT["part"]["led"]["resistor_ohm"]
    milliamps = (led["supply_v"] - led["forward_v"]) / ohm * 1000
    assert 5 <= milliamps <= 16, milliamps  # visible across a table; under a GPIO's limit
    assert f"{ohm} ohm" in (ROOT / "hardware/bom.csv").read_text()


def test_every_physical_pin_is_where_the_header_has_that_gpio() -> None:
    header = {11: 17, 12: 18, 13: 27, 15: 22, 33: 13, 3: 2, 5: 3}
    for part in PINOUT["part"].values():
        if "gpio" in part:
            assert header[part["physical"]] == part["gpio"], part["name"]
    oled = PINOUT["part"]["oled"]
    assert header[oled["sda_physical"]] == oled["sda_gpio"] == 2
    assert header[oled["scl_physical"]] == oled["scl_gpio"] == 3


class Person:
    """Answers the wiring test's prompts: presses what it is asked to, says what it sees."""

    def __init__(self, factory, config: Config, sees: bool = True, dead: str = "") -> None:
        self.factory, self.config, self.sees, self.dead = factory, config, sees, dead
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        pins = self.config.pins
        targets = {"AUCTION": pins.auction, "BUILD": pins.build, "switch": pins.power}
        for word, pin in targets.items():
            if word in prompt and word.lower() != self.dead:
                self.factory.pin(pin).drive_low()
        if prompt.startswith(("Release", "Slide it OFF")):
            for pin in targets.values():
                self.factory.pin(pin).drive_high()
        return "y" if self.sees else "n"


class Screen:
    """A panel that keeps what it was shown (None: blanked)."""

    def __init__(self) -> None:
        self.shown = []

    def display(self, image) -> None:
        self.shown.append(image)

    def blank(self) -> None:
        self.shown.append(None)


@pytest.fixture
def wiring_test() -> Iterator[Callable[..., tuple[WiringTest, Person, Screen]]]:
    """A wiring test on fresh mock pins, with its person and screen; pins closed after."""
    with contextlib.ExitStack() as opened:

        def make(person_kw: dict, wait_s: float = 5) -> tuple[WiringTest, Person, Screen]:
            config = Config()
            factory = mock_factory()
            parts = opened.enter_context(Parts(config, lambda name, level: None, factory))
            person = Person(factory, config, **person_kw)
            screen = Screen()
            test = WiringTest(config, parts, ask=person, display=screen, wait_s=wait_s)
            return test, person, screen

        yield make


def test_a_well_wired_board_passes_every_step(wiring_test) -> None:
    test, _, screen = wiring_test({})
    assert test.run() == 0
    assert [f.what for f in test.findings] == ["auction", "build", "power", "LED", "buzzer", "OLED"]
    assert all(f.level == OK for f in test.findings)
    assert screen.shown[0] is not None and screen.shown[-1] is None


def test_a_button_that_never_closes_is_named_with_its_pin(wiring_test) -> None:
    test, _, _ = wiring_test({"dead": "build"}, wait_s=0.05)
    assert test.run() == 1
    failed = [f for f in test.findings if f.level == FAIL]
    assert [f.what for f in failed] == ["build"] and "GPIO27" in failed[0].detail


def test_an_output_nobody_sees_is_a_failure_with_a_hint(wiring_test) -> None:
    test, _, _ = wiring_test({"sees": False})
    assert test.run() == 1
    failed = {f.what: f.detail for f in test.findings if f.level == FAIL}
    assert set(failed) == {"LED", "buzzer", "OLED"}
    assert "GPIO13" in failed["LED"] and "transistor" in failed["buzzer"]


@pytest.mark.parametrize("part", ["led", "buzzer"])
def test_the_outputs_really_move_their_pins(part: str) -> None:
    config = Config()
    factory = mock_factory()
    seen = []

    def person(prompt: str) -> str:
        pin = factory.pin(getattr(config.pins, part))
        seen.extend(s.state for s in pin.states)
        for name in ("auction", "build", "power"):
            if name.upper() in prompt.upper() or ("switch" in prompt and name == "power"):
                factory.pin(getattr(config.pins, name)).drive_low()
        if prompt.startswith(("Release", "Slide it OFF")):
            for name in ("auction", "build", "power"):
                factory.pin(getattr(config.pins, name)).drive_high()
        return "y"

    with Parts(config, lambda name, level: None, factory) as parts:
        assert WiringTest(config, parts, ask=person).run() == 0
    assert any(seen), f"the {part} pin never went up"


@pytest.mark.skipif(shutil.which("openscad") is None, reason="OpenSCAD is not installed here")
@pytest.mark.parametrize("part", ["base", "lid"])
def test_the_case_model_builds_each_part(part: str, tmp_path: Path) -> None:
    out = tmp_path / f"{part}.stl"
    result = subprocess.run(
        ["openscad", "-D", f'part="{part}"', "-D", "$fn=24", "-o", str(out), str(ROOT / "hardware/enclosure/cityunit.scad")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 10_000 and "WARNING" not in result.stderr
