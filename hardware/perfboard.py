"""The buzzer's stage on a perfboard, hole by hole: where Q1, R2, R4, D2 and R3 go, the
bare-wire links under the board, and where the five wires land. generate.py draws it
(perfboard.svg); a test walks its links and finds the schematic's nets.

Holes are (column, row) on the 2.54 mm grid, seen from above, the first at the top left.
A link is bare wire under the board, soldered to every hole it passes over.
"""

from __future__ import annotations

from html import escape

PITCH = 24  # px a hole in the picture (2.54 mm)
COLUMNS, ROWS = 12, 11  # 30.5 x 27.9 mm: cut the board one hole wider all round


def layout(pinout: dict, q1: dict) -> dict:
    """Parts (each lead's hole), links and wire landings, from pinout.toml's values and
    Q1's legs' order (flat side facing you, legs down: left to right on the board)."""
    buzzer = pinout["part"]["buzzer"]
    legs = q1["legs"].split("-")
    q1_holes = {leg: (4 + i, 7) for i, leg in enumerate(legs)}  # its back 5 mm from R2
    ohm = {k: ohms(buzzer[k]) for k in ("base_resistor_ohm", "pull_down_ohm", "bleed_resistor_ohm")}
    c, b, e = q1_holes["C"], q1_holes["B"], q1_holes["E"]
    links = [
        ((0, 1), (11, 1)),  # 5V
        (c, (c[0], 4)), ((c[0], 4), (11, 4)),  # the buzzer's -: C, D2's A, R3
        ((0, 5), (2, 5)), ((5, 5), b), (b, (5, 9)),  # GPIO18 to R2, R2 to B, B to R4
        ((2, 9), (2, 10)), (e, (e[0], 10)), ((0, 10), (e[0], 10)),  # GND: R4, E
    ]  # fmt: skip
    return {
        "parts": {
            f"Q1 {q1['part']}": {leg: hole for leg, hole in q1_holes.items()},
            f"R2 {ohm['base_resistor_ohm']}": {"1": (2, 5), "2": (5, 5)},
            f"R4 {ohm['pull_down_ohm']}": {"1": (5, 9), "2": (2, 9)},  # 1 on the base
            "D2 1N4148": {"K": (8, 1), "A": (8, 4)},  # the band (K) on the 5V row
            f"R3 {ohm['bleed_resistor_ohm']}": {"1": (10, 1), "2": (10, 4)},
        },
        "links": links,
        "wires": {
            (0, 1): f"5V, pin {buzzer['supply']}",
            (0, 5): f"GPIO{buzzer['gpio']}, pin {buzzer['physical']}",
            (0, 10): f"GND, pin {buzzer['ground']}",
            (11, 1): "buzzer +",
            (11, 4): "buzzer \u2212",
        },
    }


def ohms(value: int) -> str:
    """A resistor's value as the drawings write it: 220 Ω, 1 kΩ."""
    return f"{value / 1000:g} k\u03a9" if value >= 1000 else f"{value} \u03a9"


def holes_of(link: tuple[tuple[int, int], tuple[int, int]]) -> list[tuple[int, int]]:
    """Every hole a straight link passes over, its ends included."""
    (x0, y0), (x1, y1) = link
    n = max(abs(x1 - x0), abs(y1 - y0))
    return [(x0 + (x1 - x0) * i // n, y0 + (y1 - y0) * i // n) for i in range(n + 1)]


def svg(board: dict) -> str:
    """The board from above: parts on top, links dashed (they are underneath)."""
    w, h = COLUMNS * PITCH + 260, ROWS * PITCH + 110
    x0, y0 = 130, 30

    def at(hole: tuple[int, int]) -> tuple[float, float]:
        return x0 + hole[0] * PITCH + PITCH / 2, y0 + hole[1] * PITCH + PITCH / 2

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}"'
        ' font-family="sans-serif" font-size="11">',
        f'<rect width="{w}" height="{h}" fill="white"/>',
        f'<rect x="{x0}" y="{y0}" width="{COLUMNS * PITCH}" height="{ROWS * PITCH}" rx="4"'
        ' fill="#c8a165"/>',
    ]
    for cx in range(COLUMNS):
        for cy in range(ROWS):
            x, y = at((cx, cy))
            out.append(f'<circle cx="{x}" cy="{y}" r="4" fill="#b87333"/>')
    for link in board["links"]:
        (ax, ay), (bx, by) = at(link[0]), at(link[1])
        out.append(f'<line x1="{ax}" y1="{ay}" x2="{bx}" y2="{by}" stroke="#555" stroke-width="3"'
                   ' stroke-dasharray="5,3"/>')  # fmt: skip
    for name, leads in board["parts"].items():
        points = [at(hole) for hole in leads.values()]
        xs, ys = [p[0] for p in points], [p[1] for p in points]
        box = min(xs) - 7, min(ys) - 7, max(xs) - min(xs) + 14, max(ys) - min(ys) + 14
        out.append('<rect x="{}" y="{}" width="{}" height="{}" rx="6" fill="#2a6ebb"'
                   ' opacity="0.85"/>'.format(*box))  # fmt: skip
        for lead, (x, y) in zip(leads, points, strict=True):
            out.append(f'<circle cx="{x}" cy="{y}" r="5" fill="#ddd"/>')
            if lead.isalpha():
                out.append(f'<text x="{x}" y="{y + 4}" text-anchor="middle" font-size="9"'
                           f' font-weight="bold">{lead}</text>')  # fmt: skip
        ref = name.split()[0]  # on the part; its value in the legend below
        cx, cy = (min(xs) + max(xs)) / 2, (min(ys) + max(ys)) / 2
        if len(leads) == 3:  # Q1: its legs' letters on it, its name beside
            out.append(f'<text x="{max(xs) + 12}" y="{cy + 4}" font-weight="bold">{ref}</text>')
        else:
            out.append(f'<text x="{cx}" y="{cy + 4}" text-anchor="middle" font-size="10"'
                       f' font-weight="bold" fill="white">{ref}</text>')  # fmt: skip
    for hole, label in board["wires"].items():
        x, y = at(hole)
        right = hole[0] == COLUMNS - 1
        ex = x + 40 if right else x - 40
        out += [
            f'<line x1="{x}" y1="{y}" x2="{ex}" y2="{y}" stroke="#d62728" stroke-width="3"/>',
            f'<text x="{ex + (6 if right else -6)}" y="{y + 4}"'
            f' text-anchor="{"start" if right else "end"}">{escape(label)}</text>',
        ]
    legend = ", ".join(board["parts"])
    notes = [
        f"{legend}.",
        "Seen from above. Dashed: bare wire under the board, soldered to each hole it crosses.",
        "Red: the wires off the board. Q1's flat side towards the bottom edge; D2's band (K)",
        "on the 5V row. Cut the board one hole wider all round.",
    ]
    out += [
        f'<text x="20" y="{h - 66 + 16 * i}">{escape(line)}</text>' for i, line in enumerate(notes)
    ]
    out.append("</svg>")
    return "\n".join(out) + "\n"
