#!/usr/bin/env python3
"""Make the hardware documents from pinout.toml and bom.csv: one source, no drift.

    python3 hardware/generate.py           write schematic.svg (+ .png) and README's tables
    python3 hardware/generate.py --check   exit 1 if any of them is out of date (CI)

The schematic needs schemdraw (the `hw` extra; the PNG also matplotlib).
"""

from __future__ import annotations

import argparse
import csv
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
PINOUT = tomllib.loads((HERE / "pinout.toml").read_text())
PARTS = PINOUT["part"]

# The 40-pin header, physical pin -> what the Pi puts there.
HEADER = {
    1: "3V3", 2: "5V", 3: "GPIO2 (SDA)", 4: "5V", 5: "GPIO3 (SCL)", 6: "GND",
    7: "GPIO4", 8: "GPIO14 (TXD)", 9: "GND", 10: "GPIO15 (RXD)", 11: "GPIO17",
    12: "GPIO18 (PWM0)", 13: "GPIO27", 14: "GND", 15: "GPIO22", 16: "GPIO23", 17: "3V3",
    18: "GPIO24", 19: "GPIO10 (MOSI)", 20: "GND", 21: "GPIO9 (MISO)", 22: "GPIO25",
    23: "GPIO11 (SCLK)", 24: "GPIO8 (CE0)", 25: "GND", 26: "GPIO7 (CE1)", 27: "GPIO0 (ID_SD)",
    28: "GPIO1 (ID_SC)", 29: "GPIO5", 30: "GND", 31: "GPIO6", 32: "GPIO12 (PWM0)",
    33: "GPIO13 (PWM1)", 34: "GND", 35: "GPIO19 (PWM1)", 36: "GPIO16", 37: "GPIO26",
    38: "GPIO20", 39: "GND", 40: "GPIO21",
}  # fmt: skip


def uses() -> dict[int, str]:
    """Physical pin -> what of ours is wired there."""
    out: dict[int, str] = {}
    for key, part in PARTS.items():
        name = part["name"]
        if "physical" in part:
            out[part["physical"]] = name
        if key == "oled":
            out[part["sda_physical"]] = "OLED SDA"
            out[part["scl_physical"]] = "OLED SCL"
            out[part["supply"]] = "OLED VCC"
        elif "supply" in part:
            out[part["supply"]] = f"{name} supply"
        out.setdefault(part["ground"], f"{name} GND")
    return out


def pin_table() -> str:
    used = uses()
    rows = ["| ours | Pi | pin | pin | Pi | ours |", "| ---: | ---: | :-: | :-: | :-- | :-- |"]
    for odd in range(1, 41, 2):
        even = odd + 1
        left, right = used.get(odd, ""), used.get(even, "")
        rows.append(
            f"| {f'**{left}**' if left else ''} | {HEADER[odd]} | {odd} "
            f"| {even} | {HEADER[even]} | {f'**{right}**' if right else ''} |"
        )
    return "\n".join(rows)


def bom_table() -> str:
    rows = ["| ref | qty | part | value | example | why |", "| --- | --: | --- | --- | --- | --- |"]
    with (HERE / "bom.csv").open(newline="") as f:
        for r in csv.DictReader(f):
            cells = [
                r[k].replace("|", "/") for k in ("ref", "qty", "part", "value", "example", "why")
            ]
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def wiring_table() -> str:
    rows = ["| part | GPIO (BCM) | pin | wiring |", "| --- | --: | --: | --- |"]
    for part in PARTS.values():
        gpio = part.get("gpio", f"{part.get('sda_gpio')}/{part.get('scl_gpio')}")
        pin = part.get("physical", f"{part.get('sda_physical')}/{part.get('scl_physical')}")
        rows.append(f"| {part['what']} | {gpio} | {pin} | {part['wiring']} |")
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
    for name, body in (("pins", pin_table()), ("wiring", wiring_table()), ("bom", bom_table())):
        text = fill(text, name, body)
    return text


def project_readme() -> str:
    return fill((HERE.parent / "README.md").read_text(), "summary", summary_table())


def schematic(backend: str) -> bytes:
    """The circuit, drawn from pinout.toml: header pins on the left, a GND rail on the right."""
    import schemdraw
    import schemdraw.elements as elm

    schemdraw.use(backend)
    p = PARTS
    rows = [  # top to bottom: (label inside the header, physical pin, anchor name)
        ("3V3", 1, "V33"), ("GPIO2 SDA", 3, "SDA"), ("GPIO3 SCL", 5, "SCL"),
        ("GPIO17", p["auction"]["physical"], "AUCTION"),
        ("GPIO27", p["build"]["physical"], "BUILD"),
        ("GPIO22", p["power"]["physical"], "POWER"), ("GPIO13", p["led"]["physical"], "LED"),
        ("5V", 2, "V5"), ("GPIO18", p["buzzer"]["physical"], "BUZZER"), ("GND", 6, "GND"),
    ]  # fmt: skip
    step = 1.6
    with schemdraw.Drawing(show=False) as d:
        d.config(fontsize=11, unit=2.4)
        header = [elm.IcPin(name=n, pin=str(k), side="right", anchorname=a) for n, k, a in rows]
        pi = elm.Ic(
            pins=header[::-1], pinspacing=step, edgepadW=1.6, label="Raspberry Pi\n40-pin header"
        )
        d.add(pi)
        x0 = pi.V33[0]
        rail = x0 + 14.0

        def y(anchor: str) -> float:
            return getattr(pi, anchor)[1]

        def to_rail(start: str, *parts) -> None:
            d.add(elm.Line().at(getattr(pi, start)).right().length(1.2))
            for part in parts:
                d.add(part)
            d.add(elm.Line().right().tox(rail))
            d.add(elm.Dot())

        # The OLED on 3V3 and the I2C lines.
        oled_x = x0 + 8.0
        for anchor in ("V33", "SDA", "SCL"):
            d.add(elm.Line().at(getattr(pi, anchor)).right().tox(oled_x))
        top, bottom = y("V33") + 0.9, y("SCL") - 0.9
        d.add(elm.Rect(corner1=(0, 0), corner2=(3.6, top - bottom)).at((oled_x, bottom)))
        d.add(
            elm.Label()
            .at((oled_x + 1.8, (top + bottom) / 2))
            .label(f"OLED\n0x{p['oled']['i2c_address']:02X}", fontsize=11)
        )
        for anchor, name in (("V33", "VCC"), ("SDA", "SDA"), ("SCL", "SCL")):
            d.add(elm.Label().at((oled_x + 0.15, y(anchor))).label(name, halign="left", fontsize=9))
        d.add(elm.Line().at((oled_x + 3.6, y("SCL"))).right().tox(rail))
        d.add(elm.Label().at((oled_x + 3.45, y("SCL"))).label("GND", halign="right", fontsize=9))
        d.add(elm.Dot())

        to_rail("AUCTION", elm.Button().right().label("AUCTION"))
        to_rail("BUILD", elm.Button().right().label("BUILD"))
        to_rail("POWER", elm.Switch().right().label("ON/OFF"))
        to_rail(
            "LED", elm.Resistor().right().label(f"{p['led']['resistor_ohm']} Ω"),
            elm.LED().right().label("red LED", loc="top"),
        )  # fmt: skip

        # The buzzer: GPIO18 - 1 kohm - base; 5V - buzzer (1N4148 across) - collector.
        base_ohm = p["buzzer"]["base_resistor_ohm"] // 1000
        d.add(elm.Line().at(pi.BUZZER).right().length(1.2))
        d.add(elm.Resistor().right().label(f"{base_ohm} kΩ"))
        q = elm.BjtNpn(circle=True).anchor("base").label("BC337", loc="right")
        d.add(q)
        d.add(elm.Line().at(q.emitter).down().toy(y("GND")))
        d.add(elm.Dot())
        d.add(elm.Line().at(pi.V5).right().length(1.2))
        buzzer = elm.RBox(w=1.6, h=0.7).right().label("buzzer", loc="bottom")
        d.add(buzzer)
        d.add(elm.Line().at(buzzer.start).up(0.7))
        d.add(elm.Diode().right().reverse().label("1N4148", loc="top"))
        d.add(elm.Line().down(0.7))
        d.add(elm.Line().at(buzzer.end).right().tox(q.collector[0]))
        d.add(elm.Line().down().toy(q.collector[1]))
        # The GND rail.
        d.add(elm.Line().at(pi.GND).right().tox(rail))
        d.add(elm.Line().up().toy(y("SCL")))
        d.add(elm.Ground().at((rail, y("GND"))))
        return d.get_imagedata("svg" if backend == "svg" else "png")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report what is out of date")
    args = parser.parse_args(argv)
    outputs = {
        HERE / "README.md": readme().encode(),
        HERE.parent / "README.md": project_readme().encode(),
    }
    try:
        outputs[HERE / "schematic.svg"] = schematic("svg")
    except ImportError:
        sys.exit("generate: the schematic needs schemdraw: pip install '.[hw]'")
    stale = [p for p, data in outputs.items() if not p.exists() or p.read_bytes() != data]
    if args.check:
        for p in stale:
            print(f"out of date: {p.relative_to(HERE.parent)} (run python3 hardware/generate.py)")
        return 1 if stale else 0
    for p in stale:
        p.write_bytes(outputs[p])
        print(f"wrote {p.relative_to(HERE.parent)}")
    try:
        png = schematic("matplotlib")
    except ImportError:
        print("(no matplotlib: schematic.png not redrawn)")
    else:
        (HERE / "schematic.png").write_bytes(png)
        print("wrote hardware/schematic.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
