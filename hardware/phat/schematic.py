"""The pHAT's schematic as a KiCad 6 file (.kicad_sch), from the same parts and nets as
its board (board.py): each part a box with its pins named, each pin a short wire and a
label naming its net, which is how KiCad joins pins across a sheet. Plain text: the
symbols are drawn in the file itself, so it needs no symbol library to open."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

from board import Part

GRID = 2.54  # mm: KiCad's connection grid (50 mil)
PIN_NAMES = {
    "Q": {"1": "C", "2": "B", "3": "E"},  # pads; make.py maps the legs' order onto them
    "D": {"1": "K", "2": "A"},
    "R": {"1": "~", "2": "~"},
}


def _ids(seed: str) -> Iterator[str]:
    n = 0
    while True:
        n += 1
        yield str(uuid.uuid5(uuid.NAMESPACE_URL, f"cityunit-phat/{seed}/{n}"))


def _font(hide: bool = False) -> str:
    return "(effects (font (size 1.27 1.27))" + (" hide)" if hide else ")")


def _pin_names(part: Part, q1_legs: str) -> dict[str, str]:
    if part.ref == "Q1":
        return {pad: leg for leg, pad in zip(q1_legs.split("-"), "123", strict=True)}
    if part.ref[0] in PIN_NAMES:
        return PIN_NAMES[part.ref[0]]
    if part.ref == "J1":
        return {str(n): str(n) for n in range(1, 41)}
    return {str(n): name for n, name in enumerate(part.pins.split(), 1)}  # a dead pin too


def _symbol(name: str, pins: dict[str, str], library: str = "cityunit:") -> str:
    """A box, its pins on the left, numbered and named."""
    h = GRID * (len(pins) + 1)
    lines = [
        f'  (symbol "{library}{name}" (in_bom yes) (on_board yes)',
        f'    (property "Reference" "{name[0]}" (id 0) (at 0 {GRID:.2f} 0) {_font()})',
        f'    (property "Value" "{name}" (id 1) (at 0 {-h - GRID:.2f} 0) {_font()})',
        f'    (property "Footprint" "" (id 2) (at 0 0 0) {_font(True)})',
        f'    (property "Datasheet" "" (id 3) (at 0 0 0) {_font(True)})',
        f'    (symbol "{name}_0_1" (rectangle (start 0 0) (end {GRID * 4:.2f} {-h:.2f})'
        " (stroke (width 0.254) (type default) (color 0 0 0 0)) (fill (type background))))",
        f'    (symbol "{name}_1_1"',
    ]
    for i, (number, label) in enumerate(pins.items(), 1):
        lines.append(
            f"      (pin passive line (at {-GRID:.2f} {-GRID * i:.2f} 0) (length {GRID:.2f})"
            f' (name "{label}" {_font()}) (number "{number}" {_font()}))'
        )
    return "\n".join([*lines, "    )", "  )"])


LIBRARY_TABLE = (
    '(sym_lib_table\n  (lib (name "cityunit")(type "KiCad")(uri "${KIPRJMOD}/cityunit.kicad_sym")'
    '(options "")(descr "the pHAT\'s parts, made by hardware/phat/make.py"))\n)\n'
)


def library(parts: list[Part], q1_legs: str) -> str:
    """The symbols as a library of their own (cityunit.kicad_sym, which the project's
    sym-lib-table names): KiCad checks a schematic's symbols against their library."""
    symbols = [_symbol(_name(p), _pin_names(p, q1_legs), library="") for p in parts]
    return (
        "\n".join(["(kicad_symbol_lib (version 20211014) (generator cityunit)", *symbols, ")"])
        + "\n"
    )


def _name(part: Part) -> str:
    return f"{part.ref}_{part.footprint.split(':')[1]}"


def schematic(parts: list[Part], q1_legs: str, title: str) -> str:
    """The whole .kicad_sch: the symbols, then each part placed on a grid with its labels."""
    ids = _ids(title)
    kinds = {p.ref: _pin_names(p, q1_legs) for p in parts}
    names = {p.ref: _name(p) for p in parts}
    out = [
        "(kicad_sch (version 20211123) (generator cityunit)",
        f"  (uuid {next(ids)})",
        '  (paper "A4")',
        f'  (title_block (title "{title}") (comment 1 "made from hardware/pinout.toml by'
        ' hardware/phat/make.py: edit that, not this"))',
        "  (lib_symbols",
        *(_symbol(names[p.ref], kinds[p.ref]) for p in parts),
        "  )",
    ]
    instances = []
    x, y, column_end = 30.48, 30.48, 30.48
    for part in parts:
        pins = kinds[part.ref]
        height = GRID * (len(pins) + 3)
        if y + height > 190:
            x, y = column_end + 30.48, 30.48
        sym = next(ids)
        out.append(
            f'  (symbol (lib_id "cityunit:{names[part.ref]}") (at {x:.2f} {y:.2f} 0) (unit 1)'
            f" (in_bom yes) (on_board yes) (uuid {sym})\n"
            f'    (property "Reference" "{part.ref}" (id 0) (at {x:.2f} {y - GRID:.2f} 0)'
            f" {_font()})\n"
            f'    (property "Value" "{part.value}" (id 1) (at {x:.2f} {y + height - GRID:.2f} 0)'
            f" {_font()})\n"
            f'    (property "Footprint" "{part.footprint}" (id 2) (at {x:.2f} {y:.2f} 0)'
            f" {_font(True)})\n"
            + "".join(f'    (pin "{n}" (uuid {next(ids)}))\n' for n in pins)
            + "  )"
        )
        instances.append(
            f'    (path "/{sym}" (reference "{part.ref}") (unit 1) (value "{part.value}")'
            f' (footprint "{part.footprint}"))'
        )
        for i, number in enumerate(pins, 1):
            px, py = x - GRID, y + GRID * i  # the pin's end, left of the box
            net = part.nets.get(number)
            if net is None:
                out.append(f"  (no_connect (at {px:.2f} {py:.2f}) (uuid {next(ids)}))")
                continue
            out.append(
                f"  (wire (pts (xy {px - GRID * 2:.2f} {py:.2f}) (xy {px:.2f} {py:.2f}))"
                f" (stroke (width 0) (type default) (color 0 0 0 0)) (uuid {next(ids)}))"
            )
            out.append(
                f'  (label "{net}" (at {px - GRID * 2:.2f} {py:.2f} 0) (fields_autoplaced)'
                f" (effects (font (size 1.27 1.27)) (justify right bottom)) (uuid {next(ids)}))"
            )
        column_end = max(column_end, x + GRID * 12)
        y += height + GRID * 2
    out += [
        '  (sheet_instances (path "/" (page "1")))',
        "  (symbol_instances",
        *instances,
        "  )",
        ")",
    ]
    return "\n".join(out) + "\n"
