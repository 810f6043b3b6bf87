"""The pHAT as data, from pinout.toml: its parts, where each sits, and the net of each of
their pads. No KiCad here (make.py turns it into a board), so a test can hold the netlist
to the wiring table with the project's own Python.

Coordinates are mm from the board's top-left corner, seen from above, the Pi's 40-pin
header along the top edge as on a Pi Zero (65 x 30 mm, M2.5 holes 3.5 mm in from each
corner, the header centred at x = 32.5, its rows 3.5 mm -/+ 1.27 from the top edge:
the Raspberry Pi Zero 2 W's mechanical drawing).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HARDWARE = Path(__file__).resolve().parents[1]
FIRMWARE = HARDWARE.parent / "firmware" / "cityunit"
WIDTH, HEIGHT, CORNER = 65.0, 30.0, 3.0
HOLES = [(3.5, 3.5), (61.5, 3.5), (3.5, 26.5), (61.5, 26.5)]
HOLE_KEEPOUT = 3.0  # mm around each hole's centre: an M2.5 screw head and its washer
PIN_1 = (32.5 - 19 * 2.54 / 2, 3.5 + 1.27)  # odd pins on the inner row, even on the edge's
# On the silkscreen: a new revision, and its month, whenever the copper changes.
REVISION, DATE = "rev B", "2026-12"


def header_xy(pin: int) -> tuple[float, float]:
    """Where the Pi's header pin `pin` (1-40) is."""
    column = (pin - 1) // 2
    return PIN_1[0] + column * 2.54, PIN_1[1] - (2.54 if pin % 2 == 0 else 0.0)


@dataclass
class Part:
    """One part: its reference, KiCad footprint (library:name), value, where its pad 1
    sits (each upright, as its footprint is drawn), and each pad's net."""

    ref: str
    footprint: str
    value: str
    x: float
    y: float
    nets: dict[str, str] = field(default_factory=dict)
    label: str = ""  # silkscreen beside it: what plugs in there
    pins: str = ""  # silkscreen under a connector: each pin's name, pin 1 first
    back: bool = False  # on the underside (the header socket, which meets the Pi's pins)
    order: str = ""  # what to buy: a part number, or what a shop calls it
    takes: str = ""  # a connector: the plugs that seat in it (a Cable's kind)


@dataclass(frozen=True)
class Cable:
    """A cable of the kit: the plug that seats in its connectors, its pins, and which of
    them the part at its far end joins (a button, the switch: its contact; the LED, the
    buzzer: their current's path; a display: any two, unless its supply's pins (GND,
    VCC) meet GND and 3V3, when it only reads its inputs)."""

    part: str
    kind: str  # "XH" or "PH": JST's, 2.5 and 2.0 mm
    pins: int
    joins: tuple[tuple[int, int], ...]
    count: int
    order: str
    connectors: tuple[str, ...]  # the references of those it is for
    supply: tuple[int, int] | None = None


def every_pair(pins: int) -> tuple[tuple[int, int], ...]:
    return tuple((a, b) for a in range(1, pins + 1) for b in range(a + 1, pins + 1))


# The kit's cables, 15-20 cm, their far ends soldered to the parts (or on the display's
# pins). The connectors are chosen so that no plug seats where its part would join two
# rails, or a rail and a driven pin (tests/build/test_phat.py tries each everywhere it fits):
# a 2- or 3-pin JST-XH plug seats in a wider XH header too, so the displays have JST-PH
# headers, where no XH plug seats, both 7 pins wide with GND and 3V3 first, so that
# either display's plug seats in either at one place only, powered right.
KIT = (
    Cable("AUCTION button", "XH", 2, ((1, 2),), 1, "JST-XH 2-pin cable, one plug", ("J2",)),
    Cable("BUILD button", "XH", 2, ((1, 2),), 1, "JST-XH 2-pin cable, one plug", ("J3",)),
    Cable("ON/OFF switch", "XH", 2, ((1, 2),), 1, "JST-XH 2-pin cable, one plug", ("J4",)),
    Cable("LED", "XH", 2, ((1, 2),), 1, "JST-XH 2-pin cable, one plug", ("J5",)),
    Cable("buzzer", "XH", 3, ((1, 3),), 1, "JST-XH 3-pin cable, one plug", ("J6",)),
    Cable("display", "PH", 7, every_pair(7), 1,
          "JST-PH 7-pin to Dupont female cable (2.0 mm)", ("J7", "J8"), supply=(1, 2)),
)  # fmt: skip


def ohms(value: int) -> str:
    """A resistor's value as its bag says it: 150, 1k, 10k."""
    return f"{value // 1000}k" if value >= 1000 and value % 1000 == 0 else str(value)


def xh(pins: int) -> str:
    return f"Connector_JST:JST_XH_B{pins}B-XH-A_1x{pins:02d}_P2.50mm_Vertical"


PH_7 = "Connector_JST:JST_PH_B7B-PH-K_1x07_P2.00mm_Vertical"


RESISTOR = "Resistor_THT:R_Axial_DIN0207_L6.3mm_D2.5mm_P7.62mm_Horizontal"
DIODE = "Diode_THT:D_DO-35_SOD27_P7.62mm_Horizontal"  # pad 1: the cathode (band)
TRANSISTOR = "Package_TO_SOT_THT:TO-92_Inline_Wide"  # 2.54 mm between legs: easy to solder
SOCKET = "Connector_PinSocket_2.54mm:PinSocket_2x20_P2.54mm_Vertical"
SPI_PINS = "GND VCC SCL SDA RES DC CS"  # as the 7-pin modules print them
SPI_LABEL = "OLED SPI (instead of I2C)"
I2C_PINS = "GND VCC SCL SDA NC NC NC"  # the I2C display on the display cable's first four


def transistor() -> dict:
    """Q1 as transistors.toml has it: its part and its legs' order."""
    q1: dict = tomllib.loads((FIRMWARE / "transistors.toml").read_text())["q1"]
    return q1


def parts(pinout: dict | None = None, q1: dict | None = None) -> list[Part]:
    """Every part of the pHAT, from pinout.toml (the pins, the resistors) and
    transistors.toml (Q1 and its legs' order)."""
    pinout = pinout or tomllib.loads((HARDWARE / "pinout.toml").read_text())
    q1 = q1 or transistor()
    p, spi = pinout["part"], pinout["spi_display"]
    header: dict[int, str] = {}

    def on_header(pin: int, net: str) -> str:
        header[pin] = net
        return net

    gnd = "GND"
    for part in [*p.values(), spi]:
        on_header(part["ground"], gnd)
    five = on_header(p["buzzer"]["supply"], "+5V")
    three = on_header(p["oled"]["supply"], "+3V3")
    on_header(spi["supply"], three)
    legs = dict(zip(q1["legs"].split("-"), ("1", "2", "3"), strict=True))  # C-B-E: C is pad 1
    q1_nets = (("C", "BUZ-"), ("B", "BASE"), ("E", gnd))
    gpio = {
        name: on_header(p[name]["physical"], net)
        for name, net in (("auction", "AUCTION"), ("build", "BUILD"), ("power", "SWITCH"),
                          ("led", "GPIO_LED"), ("buzzer", "GPIO_BUZ"))
    }  # fmt: skip
    i2c = [on_header(p["oled"][f"{k}_physical"], k.upper()) for k in ("scl", "sda")]
    spi_nets = [
        on_header(spi[f"{k}_physical"], net)
        for k, net in (
            ("sclk", "SCLK"),
            ("mosi", "MOSI"),
            ("rst", "RES"),
            ("dc", "DC"),
            ("ce0", "CS"),
        )
    ]

    def jack(ref: str, label: str, x: float, y: float, nets: list[str | None], pins: str,
             kind: str = "XH") -> Part:  # fmt: skip
        """A JST header (XH, or PH for a display): pad 1 at (x, y), one pin a net (None:
        no pin wired)."""
        numbered = {str(n): net for n, net in enumerate(nets, 1) if net}
        footprint, order = {
            "XH": (xh(len(nets)), f"JST B{len(nets)}B-XH-A (2.5 mm, vertical)"),
            "PH": (PH_7, "JST B7B-PH-K (2.0 mm, vertical)"),
        }[kind]
        return Part(ref, footprint, label.split(" (")[0], x, y, numbered, label, pins,
                    order=order, takes=kind)  # fmt: skip

    def resistor(ref: str, ohm: int, x: float, y: float, one: str, two: str) -> Part:
        order = f"resistor {ohms(ohm)} ohm, 1/4 W, metal film"
        return Part(ref, RESISTOR, ohms(ohm), x, y, {"1": one, "2": two}, order=order)

    row, mid = 25.5, 14.0  # the connectors' pin 1: along the bottom edge, and mid-board
    out = [
        jack("J2", "AUCTION", 10.0, row, [gpio["auction"], gnd], "SW GND"),
        jack("J3", "BUILD", 19.0, row, [gpio["build"], gnd], "SW GND"),
        jack("J4", "ON/OFF", 28.0, row, [gpio["power"], gnd], "MID GND"),
        jack("J5", "LED", 37.0, row, ["LED_A", gnd], "+ -"),
        # three pins, the middle one dead: a 2-pin plug put here by mistake (a button's
        # would short 5V through Q1) meets at most one live pin
        jack("J6", "BUZZER", 46.0, row, [five, None, "BUZ-"], "+ NC -"),
        jack("J7", "OLED I2C", 8.0, mid, [gnd, three, *i2c, None, None, None], I2C_PINS, "PH"),
        jack("J8", SPI_LABEL, 25.0, mid, [gnd, three, *spi_nets], SPI_PINS, "PH"),
        resistor("R1", p["led"]["resistor_ohm"], 43.0, 9.0, gpio["led"], "LED_A"),
        resistor("R2", p["buzzer"]["base_resistor_ohm"], 43.0, 13.0, gpio["buzzer"], "BASE"),
        resistor("R4", p["buzzer"]["pull_down_ohm"], 43.0, 17.0, "BASE", gnd),
        resistor("R3", p["buzzer"]["bleed_resistor_ohm"], 53.0, 9.0, five, "BUZ-"),
        Part("D2", DIODE, "1N4148", 53.0, 13.0, {"1": five, "2": "BUZ-"}, order="1N4148 (DO-35)"),
        Part(
            "Q1",
            TRANSISTOR,
            q1["part"],
            54.5,
            18.5,
            {legs[leg]: net for leg, net in q1_nets},
            order=f"{q1['part']} (TO-92)",
        ),
    ]
    x1, y1 = header_xy(1)
    socket = Part("J1", SOCKET, "Pi header", x1, y1, {str(n): net for n, net in header.items()},
                  back=True, order="2x20 female header, 2.54 mm, 8.5 mm tall")  # fmt: skip
    return [socket, *out]


def nets(all_parts: list[Part]) -> list[str]:
    """Every net with two pads or more, signals first (short runs), GND last (the most
    pads: it goes round what is already there)."""
    count: dict[str, int] = {}
    for part in all_parts:
        for net in part.nets.values():
            count[net] = count.get(net, 0) + 1
    named = [n for n, c in count.items() if c >= 2]
    return sorted(named, key=lambda n: (n in ("GND", "+5V", "+3V3"), count[n], n))
