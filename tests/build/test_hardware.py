"""hardware/: one source of truth, generated documents, and the interactive wiring test."""

from __future__ import annotations

import contextlib
import csv
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cityunit.config import Config
from cityunit.parts.gpio import Parts
from cityunit.tools.doctor import FAIL, OK
from cityunit.tools.wiring import STEPS, NotPaused, WiringTest, buzzer_hint, service_paused
from fakes import mock_factory

ROOT = Path(__file__).resolve().parents[2]
PINOUT = tomllib.loads((ROOT / "hardware/pinout.toml").read_text())
Q1 = tomllib.loads((ROOT / "firmware/cityunit/transistors.toml").read_text())["q1"]
sys.path.insert(0, str(ROOT / "hardware"))
import perfboard  # noqa: E402  (hardware/, beside generate.py)

Result = subprocess.CompletedProcess[str]


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
    # The Pi's header as its documentation gives it, typed here apart from pinout.toml.
    facts = {
        1: "3V3", 2: "5V", 3: "GPIO2", 5: "GPIO3", 6: "GND", 9: "GND", 11: "GPIO17", 12: "GPIO18",
        13: "GPIO27", 14: "GND", 15: "GPIO22", 17: "3V3", 18: "GPIO24", 19: "GPIO10", 20: "GND",
        22: "GPIO25", 23: "GPIO11", 24: "GPIO8", 25: "GND", 33: "GPIO13", 34: "GND",
    }  # fmt: skip
    header = PINOUT["header"]
    assert len(header) == 40 and all(header[pin - 1].split()[0] == pi for pin, pi in facts.items())
    for part in [*PINOUT["part"].values(), PINOUT["spi_display"]]:
        for key, pin in part.items():
            if key.endswith("physical"):
                gpio = part[key.replace("physical", "gpio")]
                assert facts[pin] == f"GPIO{gpio}", (part["name"], key)
        assert facts[part["ground"]] == "GND" and facts.get(part.get("supply", 1)) in ("3V3", "5V")
    spi = PINOUT["spi_display"]  # the pins the firmware's SPI display uses
    pins = [(spi[f"{s}_gpio"], spi[f"{s}_physical"]) for s in ("mosi", "sclk", "ce0", "dc", "rst")]
    assert pins == [(10, 19), (11, 23), (8, 24), (24, 18), (25, 22)]


def test_the_silent_buzzers_hint_is_the_boms_transistor_as_the_guide_says() -> None:
    """One table: doctor's hint and the troubleshooting page give the BOM's leg order
    (the hint once said E-B-C, which reverses a BC337)."""
    hint = buzzer_hint(18)
    assert "BC337-40: C-B-E, flat side facing you" in hint
    assert f"`{hint}`" in (ROOT / "docs/troubleshooting.md").read_text()


def test_the_named_transistor_has_its_datasheet_pin_order() -> None:
    # onsemi BC337/D, Fairchild BC337: TO-92, 1 collector, 2 base, 3 emitter (flat side facing you, legs down).
    assert Q1["part"].startswith("BC337") and Q1["legs"] == "C-B-E"
    assert {s["part"].split()[0]: s["legs"] for s in Q1["substitutes"]}["PN2222A"] == "E-B-C"
    assert "BC337-40 (legs C-B-E)" in (ROOT / "hardware/bom.csv").read_text()


def test_a_piezo_buzzer_has_a_resistor_across_it_to_discharge() -> None:
    """A piezo is a capacitor: switched low-side with only the diode across it, it
    charges once and stays almost silent. R3 across BZ1, in every drawing and the BOM."""
    ohm = PINOUT["part"]["buzzer"]["bleed_resistor_ohm"]
    rows = {r["ref"]: r for r in csv.DictReader((ROOT / "hardware/bom.csv").open(newline=""))}
    assert (
        rows["R3"]["value"].startswith(f"{ohm // 1000} kohm") and "across BZ1" in rows["R3"]["why"]
    )
    assert "louder" in rows["BZ1"]["value"] and "piezo" in rows["BZ1"]["why"]
    assert "1 kohm across it" in PINOUT["part"]["buzzer"]["wiring"]
    schematic = (ROOT / "hardware/schematic.svg").read_text()
    assert (
        "R3" in schematic and "R3 (1 kΩ) across too" in (ROOT / "hardware/wiring.svg").read_text()
    )
    assert "(R3) across it too" in (ROOT / "hardware/README.md").read_text()


def test_the_bom_has_what_the_case_and_the_power_need() -> None:
    rows = {r["ref"]: r for r in csv.DictReader((ROOT / "hardware/bom.csv").open(newline=""))}
    scad = (ROOT / "hardware/enclosure/cityunit.scad").read_text()
    count = re.search(r"^screws = (\d+);", scad, re.M)  # or, a list of the bosses' angles:
    bosses = re.search(r"^bosses = \[([^\]]*)\];", scad, re.M)
    assert count or bosses, "how many lid screws does cityunit.scad draw?"
    lid = int(count.group(1)) if count else len(bosses.group(1).split(","))
    assert rows["M3"]["qty"] == str(lid)
    assert rows["M2.5"]["qty"] == rows["M2"]["qty"] == "4"
    assert {"PWR", "USB", "W"} <= set(rows)
    assert "| | | **total** |" in (ROOT / "hardware/README.md").read_text()


@pytest.fixture
def copy(tmp_path: Path) -> Callable[..., Result]:
    """hardware/ copied with what generate.py writes; runs generate.py there, edits first."""
    (tmp_path / "hardware").mkdir()
    for name in ("generate.py", "perfboard.py", "pinout.toml", "bom.csv", "README.md",
                 "schematic.svg", "perfboard.svg"):  # fmt: skip
        shutil.copy(ROOT / "hardware" / name, tmp_path / "hardware" / name)
    shutil.copy(ROOT / "hardware/wiring.svg", tmp_path / "hardware/wiring.svg")
    (tmp_path / "hardware/enclosure").mkdir()
    for stl in (ROOT / "hardware/enclosure").glob("*.stl"):  # what the prints table reads
        shutil.copy(stl, tmp_path / "hardware/enclosure")
    shutil.copy(ROOT / "README.md", tmp_path / "README.md")
    (tmp_path / "firmware/cityunit").mkdir(parents=True)
    shutil.copy(ROOT / "firmware/cityunit/transistors.toml", tmp_path / "firmware/cityunit")

    def run(*args: str, edit: tuple[str, str, str] | None = None) -> Result:
        if edit:
            path = tmp_path / "hardware" / edit[0]
            text = path.read_text()
            assert edit[1] in text
            path.write_text(text.replace(edit[1], edit[2], 1))
        script = str(tmp_path / "hardware/generate.py")
        return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)

    return run


def test_check_fails_when_the_pinout_changes_until_all_is_regenerated(copy) -> None:
    moved = copy("--check", edit=("pinout.toml", "ground = 9\n", "ground = 39\n"))  # AUCTION's GND
    assert moved.returncode == 1
    for name in ("README.md", "schematic.svg", "wiring.svg"):
        assert f"out of date: hardware/{name}" in moved.stdout
    assert copy().returncode == 0
    assert copy("--check").returncode == 0


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (("pinout.toml", "gpio = 17", "gpio = 23"), "AUCTION physical is pin 11, which is GPIO17"),
        (("pinout.toml", "ground = 34", "ground = 33"), "LED ground is pin 33, which is GPIO13 (PWM1)"),
        (("pinout.toml", "rst_physical = 22", "rst_physical = 11"), "pin 11 carries both AUCTION and SPI OLED"),
        (("README.md", "GND (pin 34)", "GND (pin 39)"), "README.md: the build guide names pin 39"),
    ],
)  # fmt: skip
def test_generate_refuses_a_pinout_that_contradicts_the_header(copy, edit, says: str) -> None:
    for args in ((), ("--check",)):
        result = copy(*args, edit=edit if not args else None)
        assert result.returncode == 1 and says in result.stdout, result.stdout + result.stderr


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
        if prompt.startswith(("Release", "Flip it OFF")):
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
    assert "GPIO13" in failed["LED"] and "BC337-40: C-B-E" in failed["buzzer"]


@pytest.mark.parametrize("step", range(1, 7))
def test_each_step_of_the_guide_tests_only_the_parts_it_wired(wiring_test, step: int) -> None:
    test, person, screen = wiring_test({})
    assert test.run(STEPS[step][1]) == 0
    assert tuple(f.what for f in test.findings) == STEPS[step][1]
    assert bool(screen.shown) == (step in (2, 6)), "the screen's test pattern: step 2 and 6"
    asked = " ".join(person.prompts)
    assert ("beeps" in asked) == (step in (5, 6)) and ("switch" in asked) == (step in (3, 6))


def test_the_guides_steps_are_the_ones_doctor_checks() -> None:
    """Each step of the build guide is one of doctor's, under the same title, and says
    how to check it: `cityunit doctor --step N`."""
    import re

    guide = (ROOT / "hardware/README.md").read_text().split("## Build guide")[1]
    guide = guide.split("\n### ")[0]
    steps = re.findall(r"^(\d)\. \*\*(.+?)\.\*\*(.*?)(?=^\d\. \*\*|\Z)", guide, re.M | re.S)
    assert [(int(n), title) for n, title, _ in steps] == [(n, t) for n, (t, _) in STEPS.items()]
    for n, _, text in steps:
        assert f"cityunit doctor --step {n}" in text, f"step {n} says how to check it"


def test_the_service_is_paused_for_the_test_and_started_again_whatever_happens() -> None:
    ran: list[list[str]] = []

    def run(argv: list[str]) -> int:
        ran.append(argv)
        return 0

    with pytest.raises(KeyboardInterrupt), service_paused(True, run, say=lambda line: None):
        assert ran == [["sudo", "systemctl", "stop", "cityunit.service"]]
        raise KeyboardInterrupt  # the person gave up half-way
    assert ran[-1] == ["sudo", "systemctl", "start", "cityunit.service"]
    ran.clear()
    with service_paused(False, run, say=lambda line: None):
        pass
    assert ran == [], "a stopped service is left alone"
    with pytest.raises(NotPaused), service_paused(True, lambda argv: 1, say=lambda line: None):
        raise AssertionError("no test while the service holds the pins")


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
        if prompt.startswith(("Release", "Flip it OFF")):
            for name in ("auction", "build", "power"):
                factory.pin(getattr(config.pins, name)).drive_high()
        return "y"

    with Parts(config, lambda name, level: None, factory) as parts:
        assert WiringTest(config, parts, ask=person).run(("auction", "LED", "buzzer")) == 0
    assert any(seen), f"the {part} pin never went up"


def test_the_wiring_pictures_header_clears_its_titles() -> None:
    """The header's dark board started at y 61 and covered the subtitle (baseline 62)."""
    import re

    svg = (ROOT / "hardware/wiring.svg").read_text()
    titles = [float(y) for y in re.findall(r'<text x="450" y="([\d.]+)" text-anchor="middle"', svg)]
    board = re.search(r'<rect x="[\d.]+" y="([\d.]+)" width="56"', svg)
    assert titles and board is not None
    assert float(board[1]) >= max(titles) + 8, (titles, board[1])


def test_the_bom_counts_the_wires_the_wiring_table_has() -> None:
    """One wire a header pin each part uses, and two from the perfboard to the buzzer (the
    BOM once said 15 for 17)."""
    off_board = perfboard.layout(PINOUT, Q1)["wires"].values()
    pins = [key for part in PINOUT["part"].values() for key in part
            if key.endswith("physical") or key in ("ground", "supply")]  # fmt: skip
    count = len(pins) + sum(label.startswith("buzzer") for label in off_board)
    assert f"{count} wires, 15-20 cm" in (ROOT / "hardware/bom.csv").read_text()


def test_the_guide_says_which_hole_is_auction_as_the_model_draws_it() -> None:
    """Seen from above with the LED at the top (+y), AUCTION's hole is the one at -x."""
    import re

    scad = (ROOT / "hardware/enclosure/cityunit.scad").read_text()
    buttons = re.search(
        r"^buttons = \[\[(-?[\d.]+), (-?[\d.]+)\], \[(-?[\d.]+), (-?[\d.]+)\]\];", scad, re.M
    )
    led = re.search(r"^led_at = \[(-?[\d.]+), (-?[\d.]+)\];", scad, re.M)
    assert buttons and led and float(led[2]) > 0, "the LED at the top"
    assert "button(buttons[0]);" in scad.split('name == "auction"')[1].split("\n")[0]
    assert float(buttons[1]) < 0 < float(buttons[3]), "AUCTION (the first) on the left"
    assert (
        "**AUCTION in the left hole,\n  BUILD in the right**"
        in (ROOT / "hardware/README.md").read_text()
    )


def test_the_perfboard_layout_makes_the_schematics_nets() -> None:
    """Walk the perfboard picture's links and leads: the holes joined are the buzzer
    stage's nets, each wire landing on its own, nothing shorted."""
    board = perfboard.layout(PINOUT, Q1)
    parent: dict = {}

    def root(hole):
        while parent.setdefault(hole, hole) != hole:
            hole = parent[hole]
        return hole

    for link in board["links"]:
        holes = perfboard.holes_of(link)
        for hole in holes[1:]:
            parent[root(hole)] = root(holes[0])
    lead = {f"{name.split()[0]}.{pin}": hole for name, leads in board["parts"].items()
            for pin, hole in leads.items()}  # fmt: skip
    wire = {label.split(",")[0]: hole for hole, label in board["wires"].items()}
    nets = {
        "GPIO18": [wire["GPIO18"], lead["R2.1"]],
        "base": [lead["R2.2"], lead["Q1.B"], lead["R4.1"]],
        "GND": [wire["GND"], lead["Q1.E"], lead["R4.2"]],
        "5V": [wire["5V"], wire["buzzer +"], lead["D2.K"], lead["R3.1"]],
        "buzzer -": [wire["buzzer \u2212"], lead["Q1.C"], lead["D2.A"], lead["R3.2"]],
    }
    for name, holes in nets.items():
        assert len({root(h) for h in holes}) == 1, f"{name} is not joined"
    assert len({root(holes[0]) for holes in nets.values()}) == len(nets), "two nets shorted"
    used = [*lead.values(), *wire.values()]
    assert len(used) == len(set(used)), "one hole, one lead or wire"
    assert all(0 <= x < perfboard.COLUMNS and 0 <= y < perfboard.ROWS for x, y in used)


def test_a_dropped_ssh_session_still_starts_the_service_again() -> None:
    """SIGHUP (the maker's SSH session gone) or SIGTERM during the test would end doctor
    without its `finally`: they unwind through it instead, and the old handlers return."""
    import os
    import signal

    for sig in (signal.SIGHUP, signal.SIGTERM):
        before, ran, said = signal.getsignal(sig), [], []

        def run(argv: list[str], ran=ran) -> int:
            ran.append(argv)
            return 1 if argv[2] == "start" else 0  # and the start fails: say so

        with pytest.raises(KeyboardInterrupt), service_paused(True, run, say=said.append):
            os.kill(os.getpid(), sig)
        assert ran[-1] == ["sudo", "systemctl", "start", "cityunit.service"]
        assert "still stopped" in said[-1] and signal.getsignal(sig) == before


def test_a_switch_that_reads_on_with_its_lever_off_is_named_for_its_lug(wiring_test) -> None:
    test, person, _ = wiring_test({}, wait_s=0.05)
    person.factory.pin(test.config.pins.power).drive_low()  # GND on the wrong outer lug
    assert test.run(("power",)) == 1
    assert "move GND to the other outer lug" in test.findings[0].detail
    assert person.prompts[0].startswith("The switch reads ON: set its lever OFF")
