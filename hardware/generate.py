#!/usr/bin/env python3
"""Make the hardware documents from pinout.toml and bom.csv: one source, no drift.

    python3 hardware/generate.py           write schematic.svg (+ .png), wiring.svg, README's tables
    python3 hardware/generate.py --check   exit 1 if any of them is out of date (CI)

Both refuse a pinout.toml that contradicts the header, or a build guide naming a pin or a
GPIO nothing uses. The schematic needs schemdraw (the `hw` extra; the PNG also matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import itertools
import re
import sys
import tomllib
from html import escape
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import perfboard  # noqa: E402  (beside this file)
from perfboard import ohms  # noqa: E402

PINOUT = tomllib.loads((HERE / "pinout.toml").read_text())
PARTS = PINOUT["part"]
SPI = PINOUT["spi_display"]  # the SPI display option, instead of the I2C OLED
# Q1's legs: the firmware's table, which its wiring test names too
Q1 = tomllib.loads((HERE.parent / "firmware/cityunit/transistors.toml").read_text())["q1"]
HEADER = dict(enumerate(PINOUT["header"], 1))  # physical pin -> what the Pi puts there


def wires(part: dict) -> list[tuple[int, str, str]]:
    """(header pin, role, where the wire ends) for each wire of a part, in its `to` order."""
    return [(part[role], role, end) for role, end in part["to"].items()]


def short(part: dict, role: str, pin: int) -> str:
    """A wire's name in the header table: AUCTION, AUCTION GND, OLED SDA, buzzer 5V."""
    name = part["name"]
    if role in ("ground", "supply"):
        return f"{name} {HEADER[pin]}"
    return name if role == "physical" else f"{name} {role.removesuffix('_physical').upper()}"


def problems() -> list[str]:
    """What in pinout.toml or the build guide contradicts the header or the wiring."""
    out, signals = [], {}
    for part in [*PARTS.values(), SPI]:
        pins = [k for k in part if k.endswith("physical") or k in ("ground", "supply")]
        out += [
            f"pinout.toml: {part['name']} {k} is in no `to`" for k in pins if k not in part["to"]
        ]
        for pin, role, _ in wires(part):
            pi = HEADER[pin]
            if role == "ground":
                ok = pi == "GND"
            elif role == "supply":
                ok = pi in ("3V3", "5V")
            else:
                ok = pi.split()[0] == f"GPIO{part[role.replace('physical', 'gpio')]}"
                if pin in signals:
                    out.append(f"pin {pin} carries both {signals[pin]} and {part['name']}")
                signals[pin] = part["name"]
            if not ok:
                out.append(f"pinout.toml: {part['name']} {role} is pin {pin}, which is {pi}")
        out += stray(part["wiring"], wires(part), f"pinout.toml: {part['name']} wiring")
    guide = (HERE / "README.md").read_text().split("## Build guide", 1)[-1].split("\n## ")[0]
    every = [w for part in [*PARTS.values(), SPI] for w in wires(part)]
    return out + stray(guide, every, "README.md: the build guide")


def stray(text: str, used: list[tuple[int, str, str]], where: str) -> list[str]:
    """Each `pin N` and `GPION` in a text that none of these wires uses."""
    pins = {pin for pin, _, _ in used}
    gpios = {HEADER[pin].split()[0] for pin in pins}
    out = [f"{where} names pin {n}" for n in re.findall(r"\bpin (\d+)", text) if int(n) not in pins]
    return out + [f"{where} names {g}" for g in re.findall(r"GPIO\d+", text) if g not in gpios]


def uses() -> dict[int, list[str]]:
    """Physical pin -> what of ours is wired there (the SPI option in italics)."""
    out: dict[int, list[str]] = {}
    for part, style in [*((p, "**") for p in PARTS.values()), (SPI, "*")]:
        for pin, role, _ in wires(part):
            out.setdefault(pin, []).append(f"{style}{short(part, role, pin)}{style}")
    return out


def pin_table() -> str:
    used = uses()
    rows = ["| ours | Pi | pin | pin | Pi | ours |", "| ---: | ---: | :-: | :-: | :-- | :-- |"]
    for odd in range(1, 41, 2):
        even = odd + 1
        left, right = " / ".join(used.get(odd, [])), " / ".join(used.get(even, []))
        rows.append(f"| {left} | {HEADER[odd]} | {odd} | {even} | {HEADER[even]} | {right} |")
    return "\n".join(rows)


def bom_table() -> str:
    """The parts, with the typical price of each line and their total."""
    keys = ("ref", "qty", "part", "value", "example", "why", "eur")
    rows = [
        "| ref | qty | part | value | example | why | EUR |",
        "| --- | --: | --- | --- | --- | --- | --: |",
    ]
    total, unpriced = 0.0, []
    with (HERE / "bom.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            rows.append("| " + " | ".join((r.get(k) or "").replace("|", "/") for k in keys) + " |")
            if r.get("eur"):
                total += float(r["eur"])
            else:
                unpriced.append(r["ref"])
    rows.append(f"| | | **total** | | | | **{total:.0f}** |")
    note = f"; not counted: {', '.join(unpriced)}" if unpriced else ""
    rows.append(
        "\nPrices: typical retail in EUR, 2026, for the quantity given, taxes in, shipping"
        f" out{note}. An estimate to plan with, not a quote: shops and countries differ."
    )
    return "\n".join(rows)


def wiring_table() -> str:
    rows = [
        "| part | GPIO (BCM) | pin | GND pin | 3V3/5V pin | wiring |",
        "| --- | --: | --: | --: | --: | --- |",
    ]
    for part in PARTS.values():
        gpio = "/".join(str(v) for k, v in part.items() if k.endswith("gpio"))
        pin = "/".join(str(v) for k, v in part.items() if k.endswith("physical"))
        cells = [part["what"], gpio, pin, part["ground"], part.get("supply", ""), part["wiring"]]
        rows.append("| " + " | ".join(map(str, cells)) + " |")
    return "\n".join(rows)


def spi_table() -> str:
    rows = ["| module pin | header pin | Pi |", "| --- | --: | --- |"]
    for pin, _, end in wires(SPI):
        rows.append(f"| {end.removeprefix(SPI['name'] + ' ')} | {pin} | {HEADER[pin]} |")
    return "\n".join(rows) + f"\n\n{SPI['wiring'][0].upper()}{SPI['wiring'][1:]}."


def transistor_table() -> str:
    rows = [
        "| transistor | legs, flat side facing you, legs down | from |",
        "| --- | --- | --- |",
        f"| **{Q1['part']}** (Q1, the BOM's) | **{Q1['legs']}** | its datasheet |",
    ]
    rows += [f"| {s['part']} | {s['legs']} | {s['source']} |" for s in Q1["substitutes"]]
    return "\n".join(rows)


SHELL_MM, INFILL, PLA_G_CM3, G_PER_HOUR = 0.8, 0.2, 1.24, 12  # what the estimates assume


def mesh(path: Path) -> tuple[float, float]:
    """A binary STL's volume (mm³) and surface (mm²)."""
    import struct

    data = path.read_bytes()
    (count,) = struct.unpack_from("<I", data, 80)
    volume = area = 0.0
    for i in range(count):
        ax, ay, az, bx, by, bz, cx, cy, cz = struct.unpack_from("<9f", data, 84 + 50 * i + 12)
        volume += (
            ax * (by * cz - bz * cy) - ay * (bx * cz - bz * cx) + az * (bx * cy - by * cx)
        ) / 6
        ux, uy, uz, vx, vy, vz = bx - ax, by - ay, bz - az, cx - ax, cy - ay, cz - az
        area += (
            (uy * vz - uz * vy) ** 2 + (uz * vx - ux * vz) ** 2 + (ux * vy - uy * vx) ** 2
        ) ** 0.5 / 2
    return abs(volume), area


def prints_table() -> str:
    """What each STL takes: its solid volume, and the filament and time a slicer would
    give at the guide's settings, estimated from its volume and surface."""
    rows = ["| file | solid | PLA, about | printing, about |", "| --- | --: | --: | --: |"]
    grams, solid = {}, {}
    for stl in sorted((HERE / "enclosure").glob("*.stl")):
        volume, area = mesh(stl)
        shell = min(volume, area * SHELL_MM)
        grams[stl.stem] = (shell + (volume - shell) * INFILL) / 1000 * PLA_G_CM3
        solid[stl.stem] = volume / 1000 * PLA_G_CM3
        hours = grams[stl.stem] / G_PER_HOUR
        rows.append(
            f"| {stl.name} | {volume / 1000:.0f} cm³ | {grams[stl.stem]:.0f} g | {hours:.1f} h |"
        )
    lid = max(grams[n] for n in grams if n.startswith("lid"))
    most = max(solid[n] for n in solid if n.startswith("base")) + max(
        solid[n] for n in solid if n.startswith("lid")
    )
    rows.append(
        f"\nA base and a lid: about {grams['base-zero'] + lid:.0f} g"
        f" ({grams['base-zero-phat'] + lid:.0f} g with the pHAT's base), at most {most:.0f} g"
        " printed solid."
    )
    return "\n".join(rows)


def fill(text: str, name: str, body: str) -> str:
    """Replace what stands between the markers of one generated section."""
    pattern = re.compile(
        rf"(<!-- generated: {name} -->\n)(?:.*?\n)?(<!-- end: {name} -->)", re.DOTALL
    )
    if not pattern.search(text):
        raise SystemExit(f"README.md has no '<!-- generated: {name} -->' section")
    return pattern.sub(lambda m: m.group(1) + body + "\n" + m.group(2), text)


def summary_table() -> str:
    """The short wiring table of the project's README."""
    rows = ["| part | GPIO (BCM) | header pin |", "| --- | --- | --- |"]
    for part in PARTS.values():
        if "gpio" in part:
            rows.append(f"| {part['what']} | {part['gpio']} | {part['physical']} |")
        else:
            gpio = f"{part['sda_gpio']} / {part['scl_gpio']}"
            pins = f"{part['sda_physical']} / {part['scl_physical']}"
            name = f"{part['name']} SDA / SCL (I2C, 0x{part['i2c_address']:02X})"
            rows.append(f"| {name} | {gpio} | {pins} |")
    return "\n".join(rows)


def readme() -> str:
    text = (HERE / "README.md").read_text()
    for name, body in (
        ("pins", pin_table()), ("wiring", wiring_table()),
        ("spi", spi_table()), ("bom", bom_table()),
        ("transistor", transistor_table()), ("prints", prints_table()),
    ):  # fmt: skip
        text = fill(text, name, body)
    return text


def project_readme() -> str:
    return fill((HERE.parent / "README.md").read_text(), "summary", summary_table())


def schematic(backend: str) -> bytes:
    """The circuit, drawn from pinout.toml: each part between its header pins, with its GND."""
    import schemdraw
    import schemdraw.elements as elm

    schemdraw.use(backend)
    step, loop_x, box_x = 1.2, 9.0, 8.0
    d = schemdraw.Drawing(show=False)  # no `with`: an element is added once, by d.add
    d.config(fontsize=11, unit=2.4)
    at: dict[int, tuple[float, float]] = {}  # header pin -> where its wire leaves

    def header(rows: list[int | None], top: float, title: str) -> None:
        bottom = top - step * (len(rows) - 1)
        box(-4.2, bottom - 0.8, 4.2, top - bottom + 1.6)
        d.add(elm.Label().at((-2.1, top + 1.3)).label(title, fontsize=11))
        for i, pin in enumerate(rows):
            if pin is not None:
                y = top - i * step
                at[pin] = (0.0, y)
                d.add(elm.Label().at((-0.2, y)).label(HEADER[pin], halign="right"))
                d.add(elm.Label().at((0.3, y + 0.3)).label(str(pin), fontsize=9))

    def box(x: float, y: float, w: float, h: float) -> None:
        d.add(elm.Rect(corner1=(0, 0), corner2=(w, h)).at((x, y)).theta(0))

    def line(*points: tuple[float, float]) -> None:
        for a, b in itertools.pairwise(points):
            d.add(elm.Line().endpoints(a, b))

    def loop(part: dict, *parts: elm.Element) -> None:
        """Signal pin, the parts in a row, back to the part's own GND pin."""
        (x, y), (_, ground) = at[part["physical"]], at[part["ground"]]
        d.add(elm.Line().at((x, y)).right().length(1.2))
        for element in parts:
            d.add(element.right())
        line(d.here, (loop_x, y), (loop_x, ground), (x, ground))

    def module(part: dict, title: str) -> None:
        ys = [at[pin][1] for pin, _, _ in wires(part)]
        box(box_x, min(ys) - 0.6, 4.4, max(ys) - min(ys) + 1.2)
        d.add(elm.Label().at((box_x + 3.2, sum(ys) / len(ys))).label(title))
        for (pin, _, end), y in zip(wires(part), ys, strict=True):
            line(at[pin], (box_x, y))
            name = end.removeprefix(part["name"] + " ")
            d.add(elm.Label().at((box_x + 0.15, y)).label(name, halign="left", fontsize=9))

    p, buzzer = PARTS, PARTS["buzzer"]
    rows: list[int | None] = [pin for pin, _, _ in wires(p["oled"])]
    for key in ("auction", "build", "power", "led"):
        rows += [None, p[key]["physical"], p[key]["ground"]]
    # (a row free between GPIO18 and its GND: R4 stands there, between the wires)
    rows += [None, buzzer["supply"], None, None, buzzer["physical"], None, buzzer["ground"]]
    header(rows, 0.0, "Raspberry Pi\n40-pin header")
    module(p["oled"], f"{p['oled']['name']}\nI2C 0x{p['oled']['i2c_address']:02X}")
    loop(p["auction"], elm.Button().label(p["auction"]["name"]))
    loop(p["build"], elm.Button().label(p["build"]["name"]))
    loop(p["power"], elm.Switch().label(p["power"]["name"]))
    loop(
        p["led"], elm.Resistor().label(ohms(p["led"]["resistor_ohm"])),
        elm.LED().label(p["led"]["what"], loc="top"),
    )  # fmt: skip

    # The buzzer: GPIO - base resistor - Q1's B; 5V - buzzer (+ on top, diode across) - C.
    d.add(elm.Line().at(at[buzzer["physical"]]).right().length(1.2))
    d.add(elm.Resistor().right().label(ohms(buzzer["base_resistor_ohm"])))
    q = d.add(elm.BjtNpn(circle=True).anchor("base"))
    c, b, e = q.collector, q.base, q.emitter
    for (x, y), leg, dx in ((c, "C", -0.3), (b, "B", -0.25), (e, "E", 0.3)):
        d.add(elm.Label().at((x + dx, y + (0.3 if leg == "B" else 0))).label(leg, fontsize=10))
    legs = " ".join(Q1["legs"].split("-"))
    d.add(
        elm.Label().at((c[0] + 0.9, b[1])).label(
            f"Q1 {Q1['part']}\nflat side facing you,\nlegs down: {legs}", halign="left", fontsize=10
        )
    )  # fmt: skip
    top, low = at[buzzer["supply"]][1], at[buzzer["supply"]][1] - 2.0
    line(at[buzzer["supply"]], (c[0], top))
    d.add(elm.RBox(w=0.8, h=1.4).endpoints((c[0], top), (c[0], low)).label("BZ1", loc="bottom"))
    d.add(elm.Label().at((c[0] + 0.35, top - 0.25)).label("+", fontsize=12))
    d.add(elm.Label().at((c[0] + 0.35, low + 0.25)).label("\u2212", fontsize=12))
    line((c[0], low), c)
    line((c[0], top), (c[0] + 1.8, top))
    d.add(elm.Diode().endpoints((c[0] + 1.8, low), (c[0] + 1.8, top)).label("1N4148", loc="bottom"))
    line((c[0] + 1.8, low), (c[0], low))
    # R3 across it too: a piezo's discharge (a magnetic buzzer does not mind it).
    line((c[0] + 1.8, top), (c[0] + 4.2, top))
    d.add(
        elm.Resistor().endpoints((c[0] + 4.2, low), (c[0] + 4.2, top))
        .label(f"R3 {ohms(buzzer['bleed_resistor_ohm'])}", loc="bottom")
    )  # fmt: skip
    line((c[0] + 4.2, low), (c[0] + 1.8, low))
    d.add(elm.Dot().at((c[0] + 1.8, top)))
    d.add(elm.Dot().at((c[0] + 1.8, low)))
    d.add(elm.Dot().at((c[0], top)))
    d.add(elm.Dot().at((c[0], low)))
    line(e, (e[0], at[buzzer["ground"]][1]), at[buzzer["ground"]])
    # R4 from the base down to the emitter's GND wire: Q1 off while GPIO18 floats.
    rx, ry = b[0] - 0.6, at[buzzer["ground"]][1]
    line((rx, b[1]), (rx, b[1] - 0.6))  # clear of R2's end
    d.add(
        elm.Resistor().endpoints((rx, b[1] - 0.6), (rx, ry))
        .label(f"R4 {ohms(buzzer['pull_down_ohm'])}", loc="top")
    )  # fmt: skip
    d.add(elm.Dot().at((rx, b[1])))
    d.add(elm.Dot().at((rx, ry)))

    # The SPI display option, on a second drawing of the header.
    spi_top = at[buzzer["ground"]][1] - 4.0
    header(
        [pin for pin, _, _ in wires(SPI)], spi_top, "SPI display option\n(instead of the I2C OLED)"
    )
    module(SPI, f"{SPI['name']}\n{SPI['driver'].upper()}")
    return d.get_imagedata("svg" if backend == "svg" else "png")


def svg_line(
    x1: int, y1: int, x2: int, y2: int, stroke: str, width: int = 3, dash: str = ""
) -> str:
    ends = f'x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}"'
    return f'<line {ends} stroke="{stroke}" stroke-width="{width}"{dash}/>'


def wiring_svg() -> str:
    """The wires as they go on the header, seen from above: plain SVG, nothing to install."""
    pitch, top, cx, reach = 26, 92, 450, 200  # the header starts below the titles (y 62)
    ends: dict[int, list[tuple[dict, str]]] = {}
    for part in [*PARTS.values(), SPI]:
        for pin, _, end in wires(part):
            ends.setdefault(pin, []).append((part, end))
    palette = ["#1f77b4", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#e377c2", "#bcbd22"]
    colour = {id(part): palette[i % 7] for i, part in enumerate([*PARTS.values(), SPI])}
    power = {"GND": "#111", "3V3": "#f0a000", "5V": "#d62728"}
    bottom = top + 19 * pitch
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="900" height="{bottom + 215}"'
        ' font-family="DejaVu Sans, Arial, sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        '<text x="450" y="24" text-anchor="middle" font-size="15">The wires on the Pi\'s'
        " 40-pin header, seen from above</text>",
        '<text x="450" y="44" text-anchor="middle" fill="#444">the board turned so that the'
        " header runs down its right edge: pin 1 (square pad) at the top left</text>",
        f'<text x="450" y="62" text-anchor="middle" fill="#444">dashed: the {SPI["name"]},'
        " wired instead of the I2C OLED (never both)</text>",
        f'<rect x="{cx - 28}" y="{top - 17}" width="56" height="{bottom - top + 34}" rx="4"'
        ' fill="#333"/>',
    ]
    for pin, pi in HEADER.items():
        side = -1 if pin % 2 else 1
        x, y = cx + side * 14, top + (pin - 1) // 2 * pitch
        anchor = "end" if side < 0 else "start"
        if pin in ends:
            parts = ends[pin]
            stroke = power.get(pi, colour[id(parts[0][0])])
            dash = ' stroke-dasharray="9 5"' if all(p is SPI for p, _ in parts) else ""
            label = escape(" or ".join(end for _, end in parts))
            x2 = cx + side * reach
            out += [
                svg_line(x, y, x2, y, stroke, 4, dash),
                f'<rect x="{min(x2, x2 + side * 236)}" y="{y - 11}" width="236" height="22" rx="5"'
                f' fill="white" stroke="{stroke}" stroke-width="2"{dash}/>',
                f'<text x="{x2 + side * 8}" y="{y + 4}" text-anchor="{anchor}">{label}</text>',
            ]
        shape = (
            f'<rect x="{x - 8}" y="{y - 8}" width="16" height="16"'
            if pin == 1
            else f'<circle cx="{x}" cy="{y}" r="8"'
        )
        out += [
            f'{shape} fill="#d4af37"/>',
            f'<text x="{x}" y="{y + 3}" text-anchor="middle" font-size="8">{pin}</text>',
            f'<text x="{cx + side * 30}" y="{y - 5}" text-anchor="{anchor}" font-size="10"'
            f' fill="{"#000" if pin in ends else "#888"}">{escape(pi)}</text>',
        ]
    # Q1 and the buzzer as they sit on the perfboard, legs named from pinout.toml.
    buzzer, y0 = PARTS["buzzer"], bottom + 45
    signal, ground = buzzer["physical"], buzzer["ground"]
    gpio = HEADER[signal].split()[0]
    to = {
        "C": "the buzzer's \u2212",
        "B": f"{ohms(buzzer['base_resistor_ohm'])}, then pin {signal} ({gpio});"
        f" {ohms(buzzer['pull_down_ohm'])} to E",
        "E": f"pin {ground} (GND)",
    }
    out += [
        f'<rect x="150" y="{y0}" width="64" height="46" rx="6" fill="#222"/>',
        f'<text x="182" y="{y0 + 27}" text-anchor="middle" fill="white" font-size="10">'
        f"{Q1['part']}</text>",
    ]
    for i, leg in enumerate(Q1["legs"].split("-")):
        x = 162 + 20 * i
        out += [
            svg_line(x, y0 + 46, x, y0 + 86, "#999"),
            f'<text x="{x}" y="{y0 + 102}" text-anchor="middle" font-weight="bold">{leg}</text>',
            f'<text x="250" y="{y0 + 14 + 20 * i}">{leg}: {escape(to[leg])}</text>',
        ]
    supply = buzzer["supply"]
    out += [
        f'<text x="150" y="{y0 + 130}">Q1 flat side facing you, legs down: {Q1["legs"]}, from'
        " its datasheet. A substitute has its own order (see the guide):</text>",
        f'<text x="150" y="{y0 + 148}" font-weight="bold">check the datasheet of the part in'
        " your hand.</text>",
        f'<circle cx="640" cy="{y0 + 23}" r="23" fill="#222"/>',
        f'<text x="632" y="{y0 + 18}" fill="white" font-size="16">+</text>',
        svg_line(630, y0 + 46, 630, y0 + 86, "#d62728"),
        svg_line(650, y0 + 46, 650, y0 + 86, "#999"),
        f'<text x="690" y="{y0 + 14}">+: pin {supply} ({HEADER[supply]})</text>',
        f'<text x="690" y="{y0 + 34}">\u2212: Q1\'s C</text>',
        f'<text x="690" y="{y0 + 54}">1N4148 across, band on +</text>',
        f'<text x="690" y="{y0 + 74}">R3 ({ohms(buzzer["bleed_resistor_ohm"])}) across too</text>',
        f'<text x="600" y="{y0 + 102}">BZ1, the buzzer</text>',
        "</svg>",
    ]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report what is out of date")
    args = parser.parse_args(argv)
    if errors := problems():
        print("\n".join(f"generate: {e}" for e in errors))
        return 1
    outputs = {
        HERE / "README.md": readme().encode(),
        HERE.parent / "README.md": project_readme().encode(),
        HERE / "wiring.svg": wiring_svg().encode(),
        HERE / "perfboard.svg": perfboard.svg(perfboard.layout(PINOUT, Q1)).encode(),
    }
    try:
        outputs[HERE / "schematic.svg"] = schematic("svg")
    except ImportError:
        sys.exit("generate: the schematic needs schemdraw: python3 bootstrap.py hardware")
    stale = [p for p, data in outputs.items() if not p.exists() or p.read_bytes() != data]
    if args.check:
        for p in stale:
            print(f"out of date: {p.relative_to(HERE.parent)} (run python3 bootstrap.py hardware)")
        return 1 if stale else 0
    for p in stale:
        p.write_bytes(outputs[p])
        print(f"wrote {p.relative_to(HERE.parent)}")
    try:
        png = schematic("matplotlib")
    except (ImportError, ValueError):  # schemdraw says "Could not import Matplotlib" so
        print("(no matplotlib: schematic.png not redrawn; python3 bootstrap.py hardware)")
    else:
        (HERE / "schematic.png").write_bytes(png)
        print("wrote hardware/schematic.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
