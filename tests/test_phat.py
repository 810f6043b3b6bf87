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

ROOT = Path(__file__).resolve().parents[1]
PHAT = ROOT / "hardware" / "phat"
sys.path.insert(0, str(PHAT))
import board  # noqa: E402
import route  # noqa: E402

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
        assert {f"cityunit-phat-{layer}" for layer in layers} | {"cityunit-phat.drl"} <= names
        for name in names - {"cityunit-phat.drl"}:
            gerber = z.read(name).decode()
            assert "%FSLAX46Y46*%" in gerber and gerber.rstrip().endswith("M02*"), name
        drill = z.read("cityunit-phat.drl").decode()
        assert "METRIC" in drill and drill.rstrip().endswith("M30")
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
    assert parts["R1"].value == "150" and parts["R1"].nets["1"] == header[str(led["physical"])]
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
