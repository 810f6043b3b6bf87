"""The pHAT (hardware/phat): made from pinout.toml by a script with KiCad's own Python
API, checked by KiCad's own design-rule check, and what a fab takes written: a pin moved
in pinout.toml moves the board."""

from __future__ import annotations

import csv
import math
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PHAT = ROOT / "hardware" / "phat"
sys.path.insert(0, str(PHAT))
import board  # noqa: E402
import route  # noqa: E402

pytestmark = pytest.mark.slow  # KiCad makes the board and runs its checks

KICAD_PYTHON = "/usr/bin/python3"  # Debian's pcbnew module is built for the system's python


def _kicad() -> str:
    """Why the pHAT cannot be made here, or "" if it can: KiCad 6's Python API (7 changed
    it) and its footprints, as Debian 12 packages them."""
    try:
        done = subprocess.run([KICAD_PYTHON, "-c", "import pcbnew; print(pcbnew.Version())"],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
    except OSError:
        done = None
    if done is None or done.returncode != 0 or not Path("/usr/share/kicad/footprints").is_dir():
        return ("no KiCad here (Debian's kicad and kicad-footprints): `python3 bootstrap.py"
                " test` installs them as root, with apt")  # fmt: skip
    if not done.stdout.startswith("6."):
        return f"KiCad {done.stdout.strip()}: make.py is written for KiCad 6 (Debian 12's)"
    return ""


WHY_NOT = _kicad()
needs_kicad = pytest.mark.skipif(bool(WHY_NOT), reason=WHY_NOT or "KiCad 6 is here")


def make(where: Path = PHAT, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([KICAD_PYTHON, str(where / "make.py"), *args],
                          capture_output=True, text=True, timeout=600)  # fmt: skip


@needs_kicad
def test_the_phat_is_what_the_pinout_makes_and_kicads_drc_finds_nothing() -> None:
    done = make(PHAT, "--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "design-rule check: 0 violations, 0 unconnected pads" in done.stdout, done.stdout


@needs_kicad
def test_a_pin_moved_in_the_pinout_moves_the_board(tmp_path: Path) -> None:
    """AUCTION from GPIO17 (pin 11) to GPIO23 (pin 16): the board is routed again, clean,
    with the button's connector on the new pin."""
    (tmp_path / "hardware").mkdir()
    shutil.copytree(PHAT, tmp_path / "hardware" / "phat", ignore=shutil.ignore_patterns("fab"))
    pinout = (ROOT / "hardware/pinout.toml").read_text()
    auction = pinout.index("[part.auction]")
    moved = (
        pinout[auction:]
        .replace("gpio = 17", "gpio = 23", 1)
        .replace("physical = 11", "physical = 16", 1)
    )
    (tmp_path / "hardware/pinout.toml").write_text(pinout[:auction] + moved)
    fonts = tmp_path / "firmware/cityunit"
    shutil.copytree(ROOT / "firmware/cityunit/fonts", fonts / "fonts")
    shutil.copy(ROOT / "firmware/cityunit/transistors.toml", fonts)
    done = make(tmp_path / "hardware" / "phat")
    assert done.returncode == 0, done.stdout + done.stderr
    pcb = (tmp_path / "hardware/phat/cityunit-phat.kicad_pcb").read_text()
    assert pad_net(pcb, "J1", "16") == "AUCTION" and pad_net(pcb, "J1", "11") is None
    assert pad_net(pcb, "J2", "1") == "AUCTION"


def pad_net(pcb: str, ref: str, pad: str) -> str | None:
    """The net of a footprint's pad in a .kicad_pcb, or None for no net."""
    start = pcb.index(f'(fp_text reference "{ref}"')
    block = pcb[start : pcb.find("(footprint ", start)]
    found = re.search(rf'\(pad "{pad}" .*?(?:\(net \d+ "([^"]+)"\)|\n    \(pad )', block, re.S)
    assert found is not None, f"no pad {pad} on {ref}"
    return found[1]


def test_the_fab_zip_has_every_layer_and_the_drill_file() -> None:
    with zipfile.ZipFile(PHAT / "fab/cityunit-phat-gerbers.zip") as z:
        names = set(z.namelist())
        layers = [
            "F_Cu.gtl",
            "B_Cu.gbl",
            "F_Mask.gts",
            "B_Mask.gbs",
            "F_Silkscreen.gto",
            "Edge_Cuts.gm1",
        ]
        # plated and non-plated holes in a file each, as fabs drill them
        drills = {"cityunit-phat-PTH.drl", "cityunit-phat-NPTH.drl"}
        assert {f"cityunit-phat-{layer}" for layer in layers} | drills <= names
        for name in names - drills:
            gerber = z.read(name).decode()
            assert "%FSLAX46Y46*%" in gerber and gerber.rstrip().endswith("M02*"), name
        for name in drills:
            drill = z.read(name).decode()
            assert "METRIC" in drill and drill.rstrip().endswith("M30")
        plated = z.read("cityunit-phat-PTH.drl").decode()
        assert (
            "TF.FileFunction,Plated" in plated
            and "NonPlated" in z.read("cityunit-phat-NPTH.drl").decode()
        )
        assert "date" not in " ".join(z.read(n).decode() for n in names).lower(), "stamps left out"


def test_the_netlist_is_the_wiring_tables() -> None:
    """Each part's pin on the header goes to its connector, through the parts the wiring
    table names; Q1's pads follow its legs' order."""
    pinout = tomllib.loads((ROOT / "hardware/pinout.toml").read_text())
    parts = {p.ref: p for p in board.parts()}
    header = parts["J1"].nets
    for part, ref in (("auction", "J2"), ("build", "J3"), ("power", "J4")):
        assert header[str(pinout["part"][part]["physical"])] == parts[ref].nets["1"]
        assert parts[ref].nets["2"] == "GND" == header[str(pinout["part"][part]["ground"])]
    led, buzzer = pinout["part"]["led"], pinout["part"]["buzzer"]
    assert parts["R1"].value == str(led["resistor_ohm"])
    assert parts["R1"].nets["1"] == header[str(led["physical"])]
    assert parts["R1"].nets["2"] == parts["J5"].nets["1"]
    assert parts["R2"].nets["1"] == header[str(buzzer["physical"])]
    base = parts["R2"].nets["2"]
    q1 = board.transistor()
    legs = dict(zip(q1["legs"].split("-"), "123", strict=True))
    assert parts["Q1"].nets[legs["B"]] == base == parts["R4"].nets["1"], (
        "the base and its pull-down"
    )
    assert parts["Q1"].nets[legs["E"]] == "GND" == parts["R4"].nets["2"]
    across = {parts["J6"].nets["1"], parts["J6"].nets["3"]}
    assert "2" not in parts["J6"].nets, (
        "J6's middle pin dead: a 2-pin plug meets one live pin at most"
    )
    assert header[str(buzzer["supply"])] == "+5V" and parts["Q1"].nets[legs["C"]] == "BUZ-"
    for ref in ("D2", "R3"):  # across the buzzer: D2's cathode (pad 1, its band) on +5V
        assert set(parts[ref].nets.values()) == across and parts[ref].nets["1"] == "+5V"
    for ref in ("J7", "J8"):  # a display's plug seats powered right, GND and VCC first
        assert (parts[ref].nets["1"], parts[ref].nets["2"]) == ("GND", "+3V3"), ref
    oled, spi = pinout["part"]["oled"], pinout["spi_display"]
    assert [parts["J7"].nets[n] for n in "34"] == [
        header[str(oled[k])] for k in ("scl_physical", "sda_physical")
    ]
    assert [parts["J8"].nets[n] for n in "34567"] == [
        header[str(spi[f"{k}_physical"])] for k in ("sclk", "mosi", "rst", "dc", "ce0")
    ]


def test_the_bom_and_placement_name_every_part() -> None:
    parts = board.parts()
    with (PHAT / "fab/bom.csv").open() as f:
        listed = [ref for row in csv.DictReader(f) for ref in row["refs"].split()]
    assert sorted(listed) == sorted(p.ref for p in parts)
    with (PHAT / "fab/positions.csv").open() as f:
        placed = {row["ref"]: row for row in csv.DictReader(f)}
    assert set(placed) == {p.ref for p in parts}, "every part an assembler places, no hole"
    assert placed["J1"]["side"] == "bottom", "the socket under the board, on the Pi's pins"


def test_the_router_joins_pads_and_keeps_clear_of_the_others() -> None:
    pads = [route.Pad("A", 2, 5, 1.6, 1.6), route.Pad("A", 18, 5, 1.6, 1.6),
            route.Pad("B", 10, 5, 1.6, 1.6)]  # fmt: skip
    routed = route.route(20, 10, pads, [], ["A"])
    assert routed.tracks, "a path round B, or under it on the other layer"
    rules = route.Rules()
    for track in routed.tracks:
        for (x0, y0), (x1, y1) in zip(track.points, track.points[1:], strict=False):
            for k in range(101):  # along the track: its edge at least the clearance from B
                x, y = x0 + (x1 - x0) * k / 100, y0 + (y1 - y0) * k / 100
                gap = math.hypot(max(abs(x - 10) - 0.8, 0), max(abs(y - 5) - 0.8, 0))
                assert gap >= rules.clearance + rules.track / 2 - 0.01, (x, y)
    walled = [*pads, *(route.Pad("B", 10, y / 4, 1.6, 1.6) for y in range(41))]
    with pytest.raises(route.Unroutable):
        route.route(20, 10, walled, [], ["A"])


def test_the_schematic_joins_each_pin_to_its_net_as_the_board_does() -> None:
    """KiCad joins a pin to a net by a wire from the pin's end to a label: each pin of
    each part has one, naming the net the board gives that pad (eeschema 6.0.11's own
    ERC found no error nor warning in it, run by hand under Xvfb)."""
    sheet = (PHAT / "cityunit-phat.kicad_sch").read_text()
    wires = set(
        re.findall(r"\(wire \(pts \(xy ([\d.]+) ([\d.]+)\) \(xy ([\d.]+) ([\d.]+)\)\)", sheet)
    )
    labels = {
        (x, y): net
        for net, x, y in re.findall(r'\(label "([^"]+)" \(at ([\d.]+) ([\d.]+) 0\)', sheet)
    }
    placed = dict(re.findall(r'\(lib_id "cityunit:(\w+?)_[^"]*"\) \(at ([\d.]+ [\d.]+)', sheet))
    library = (PHAT / "cityunit.kicad_sym").read_text()
    for part in board.parts():
        x, y = map(float, placed[part.ref].split())
        symbol = library[library.index(f'(symbol "{part.ref}_') :]
        symbol = symbol[: symbol.index("\n  )")]
        pins = dict((n, i) for i, n in enumerate(re.findall(r'\(number "([^"]+)"', symbol), 1))
        for pad, net in part.nets.items():
            px, py = f"{x - 2.54:.2f}", f"{y + 2.54 * pins[pad]:.2f}"
            far = f"{float(px) - 5.08:.2f}"
            assert (far, py, px, py) in wires, f"{part.ref} pad {pad}: no wire"
            assert labels[(far, py)] == net, f"{part.ref} pad {pad}"


# What a join does where the Pi is concerned: two rails joined; a rail on a pin the Pi
# drives (push-pull), or on one behind a resistor that lets more than a pin's 16 mA
# through; 3V3 or 5V on a pin driven low only (I2C, Q1's collector); 5 V (a rail, or BUZ-,
# which idles at 5 V through the buzzer) on any pin of the Pi's (none takes more than
# 3.3 V); a driven pin against another driven one.
RAILS = {"GND", "+3V3", "+5V"}
FIVE_VOLT = {"+5V", "BUZ-"}
PUSH_PULL = {"SCLK", "MOSI", "RES", "DC", "CS"}
PULLED_LOW = {"SCL", "SDA", "BUZ-"}
PIN_MA = 16


def harm(a: str | None, b: str | None, pi_pins: set[str], behind: dict[str, int]) -> str | None:
    """What joining nets a and b does to the Pi, or None if nothing. `behind`: the nets
    a GPIO drives through a resistor, and its ohms."""
    if a is None or b is None or a == b:
        return None
    pair = {a, b}
    if pair <= RAILS:
        return f"joins {a} and {b}"
    if pair & FIVE_VOLT and pair & pi_pins:
        return f"puts 5 V on {next(iter(pair & pi_pins))}, a pin of the Pi's"
    driven = PUSH_PULL | PULLED_LOW
    if len(pair & driven) == 2 and pair & PUSH_PULL:
        return f"joins {a} and {b}, both driven"
    rails, others = pair & RAILS, pair - RAILS
    if rails and others:
        (rail,), (pin,) = rails, others
        if pin in PUSH_PULL or (pin in PULLED_LOW and rail != "GND"):
            return f"joins {rail} to {pin}, which the Pi drives"
        if pin in behind and 3.3 / behind[pin] * 1000 > PIN_MA:
            return f"joins {rail} to {pin}: {3.3 / behind[pin] * 1000:.0f} mA from its GPIO"
    return None


def placements(parts: list[board.Part]) -> list[tuple[board.Cable, board.Part, int]]:
    """Every way a cable of the kit seats in a connector of the board: its kind, no
    wider than the connector, at any offset (a narrower plug seats in a wider header)."""
    return [
        (cable, part, offset)
        for part in parts
        if part.takes
        for cable in board.KIT
        if cable.kind == part.takes
        for offset in range(len(part.pins.split()) - cable.pins + 1)
    ]


def test_no_cable_of_the_kit_seats_anywhere_it_could_harm_the_pi() -> None:
    """On e7e79bc a button's 2-pin XH plug seated in J7 and J8, the displays' XH headers,
    on GND and 3V3: pressing it shorted the Pi's 3V3 rail; and in J5 it drew 22 mA from
    GPIO13 through the LED's 150 ohm. Each cable, in each connector it seats in, at each
    offset, joins only what is safe to join (its own place apart: the netlist test holds
    those); a display, either one in either header, seats only where it is powered right."""
    parts = board.parts()
    by_ref = {p.ref: p for p in parts}
    pi_pins = set(by_ref["J1"].nets.values()) - RAILS
    behind = {  # a GPIO's net through a resistor: the resistor's other net, and its ohms
        r.nets["2"]: int(float(r.value.removesuffix("k")) * (1000 if "k" in r.value else 1))
        for r in parts
        if r.ref.startswith("R") and r.nets["1"] in pi_pins
    }
    harms = []
    for cable, part, offset in placements(parts):
        at = {n: part.nets.get(str(n + offset)) for n in range(1, cable.pins + 1)}
        if cable.supply:  # a display: only where it is powered right does it only read
            if tuple(at[n] for n in cable.supply) == ("GND", "+3V3"):
                continue
        elif part.ref in cable.connectors and offset == 0:
            continue  # its own place: the netlist test holds those
        for a, b in cable.joins:
            why = harm(at[a], at[b], pi_pins, behind)
            if why:
                harms.append(f"{cable.part}'s plug in {part.ref} at pin {offset + 1}: {why}")
    assert not harms, "\n".join(harms)
    assert {p.ref for p in parts if p.takes} == {r for c in board.KIT for r in c.connectors}


def test_each_connector_has_its_cable_in_the_kit_and_the_guide_lists_them() -> None:
    """The parts list named 2-, 4- and 7-pin cables and no 3-pin one: the buzzer could
    not be plugged in."""
    parts = {p.ref: p for p in board.parts()}
    guide = (ROOT / "hardware/README.md").read_text()
    for cable in board.KIT:
        for ref in cable.connectors:
            connector = parts[ref]
            assert (cable.kind, cable.pins) == (connector.takes, len(connector.pins.split()))
    cables: dict[str, int] = {}
    for cable in board.KIT:
        cables[cable.order] = cables.get(cable.order, 0) + cable.count
    for order, count in cables.items():
        assert f"{count} x {order}" in " ".join(guide.split()), f"the guide lacks {order}"


def test_the_silkscreen_is_printable_and_outside_the_housings() -> None:
    """Pin names at 0.65 mm sat inside the housings (hidden once soldered), under the
    fabs' least (1.0 mm text, 0.15 mm stroke). make.py refuses smaller; the board made
    holds its revision and date."""
    pcb = (PHAT / "cityunit-phat.kicad_pcb").read_text()
    shown = re.findall(
        r'\((?:gr_text|fp_text \w+) "([^"]*)".*?\(layer "[FB]\.SilkS"\)( hide)?.*?'
        r"\(size ([\d.]+) ([\d.]+)\) \(thickness ([\d.]+)\)",
        pcb,
        re.S,
    )
    small = [
        (t, h, w) for t, hide, h, _, w in shown if not hide and (float(h) < 1 or float(w) < 0.15)
    ]
    assert shown and not small
    assert f"cityunit pHAT {board.REVISION}" in pcb and board.DATE in pcb
    housings = [p for p in board.parts() if p.takes]
    names = {name for p in housings for name in p.pins.split()}
    for text, x, y in re.findall(r'\(gr_text "([^"]*)" \(at ([\d.]+) ([\d.]+)', pcb):
        for p in housings if text in names else ():  # a housing: its pins' row, -1.5/+3.5 mm
            pitch = float(re.findall(r"_P([\d.]+)mm", p.footprint)[0])
            across = p.x - 1 <= float(x) <= p.x + (len(p.pins.split()) - 1) * pitch + 1
            assert not (across and p.y - 1.5 <= float(y) <= p.y + 3.5), f"{text} on {p.ref}"


def test_positions_are_the_parts_centres() -> None:
    """An assembler's machine picks a part up by its middle: J2's two pins are 2.5 mm
    apart, so its centre is 1.25 mm right of its pin 1."""
    with (PHAT / "fab/positions.csv").open() as f:
        placed = {row["ref"]: row for row in csv.DictReader(f)}
    j2 = next(p for p in board.parts() if p.ref == "J2")
    assert (float(placed["J2"]["x_mm"]), float(placed["J2"]["y_mm"])) == (j2.x + 1.25, -j2.y)
