"""The players' card: a sheet to print on both sides and keep by the board, from README.md.

    .venv/bin/python docs/card.py    rewrite docs/card.svg and docs/card-back.svg

The front is the README's table `| you do | the unit does |` (section "Playing"), word
for word but for the asides a player has no use for (a parenthesis naming a config key
in `code`), and the README's sentence on how the settings menu works; the back is that
menu: the settings section's opening paragraph and its table `| item | choices |`. Each
is an SVG page of 186 mm by at most 250 mm: it prints on an A4 or Letter sheet at 100 %,
in black only. tests/build/test_docs.py fails when either is not what this makes from the
README as it is, so they cannot drift apart.

Lines are broken by measuring words with the DejaVu Sans Bold that the firmware ships,
wider than the regular weight and than Arial or Helvetica: whichever of these the
browser prints with, every line fits its column. Needs Pillow (a dependency already).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from xml.sax.saxutils import escape

from PIL import ImageFont

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
CARD, BACK = ROOT / "docs" / "card.svg", ROOT / "docs" / "card-back.svg"
FONT = ROOT / "firmware" / "cityunit" / "fonts" / "DejaVuSans-Bold.ttf"
HEADING = "## Playing"
COLUMNS = ("you do", "the unit does")
TITLE = "cityunit: what the buttons do"
SETTINGS = "### Settings, on the unit"
MENU_COLUMNS = ("item", "choices")
MENU_TITLE = "cityunit: the settings menu"
TURN_OVER = "The menu's items and their choices are on the back."
SUBTITLE = "The electronic unit of the MONOPOLY CITY board game, rebuilt on a Raspberry Pi."
NOT_AFFILIATED = (
    "cityunit is not affiliated with or endorsed by Hasbro; "
    "MONOPOLY and MONOPOLY CITY are trademarks of Hasbro."
)
MENU = "In the settings menu: "  # then the README's sentence on how it works

# Millimetres. The page fits A4 (210 x 297) and Letter (215.9 x 279.4) with a printer's
# margins of up to 10 mm each side; tests/build/test_docs.py holds it to that.
WIDTH, MAX_HEIGHT = 186.0, 250.0
MARGIN, PAD = 8.0, 1.2  # around the page's content; inside each table cell
FIRST_COLUMN = 58.0  # "you do": the gesture; the rest is what the unit does
SIZE = {"title": 7.0, "subtitle": 3.6, "head": 4.2, "body": 3.8, "foot": 3.0}  # 3.8 mm: 10.8 pt
LEADING = 1.22  # line height, in font sizes
MONO_EM = 0.61  # a monospace glyph's advance (DejaVu Sans Mono 0.602, Courier 0.6)
SANS = "DejaVu Sans, Arial, Helvetica, sans-serif"
MONO = "DejaVu Sans Mono, Courier New, monospace"

Run = tuple[str, str]  # text, and its style: "", "bold", "code" or "italic"
Word = list[Run]
Line = list[Run]


@dataclass(frozen=True)
class Row:
    gesture: str  # as written in the README, markdown and all
    effect: str


def rows(readme: str, heading: str = HEADING, columns: tuple[str, str] = COLUMNS) -> list[Row]:
    """A section's first table (the Playing one unless told), header and separator left
    out."""
    _, found, section = readme.partition(f"\n{heading}\n")
    if not found:
        raise ValueError(f"README.md has no {heading!r} section")
    table = []
    for line in section.splitlines():
        if line.startswith("|"):
            table.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
        elif table:
            break  # the first table only
    if not table or tuple(table[0]) != columns:
        raise ValueError(f"the {heading!r} table must start with | {' | '.join(columns)} |")
    body = [cells for cells in table[2:] if cells]
    if any(len(cells) != 2 for cells in body):
        raise ValueError(f"every row of the {heading!r} table has two cells")
    return [Row(*cells) for cells in body]


def opening(readme: str) -> str:
    """The settings section's opening paragraph: how to open the menu and move in it."""
    section = readme.partition(f"\n{SETTINGS}\n")[2].strip()
    paragraph = section.split("\n\n")[0]
    if not paragraph or paragraph.startswith("|"):
        raise ValueError(f"README.md's {SETTINGS!r} section opens with no paragraph")
    return " ".join(paragraph.split())


def menu(readme: str) -> str:
    """The README's sentence saying how the settings menu works (the table's "below")."""
    section = readme.partition(f"\n{SETTINGS}\n")[2]
    found = re.search(r"\*\*BUILD\*\* moves\b.*?\.(?=\s|$)", section, re.DOTALL)
    if found is None:
        raise ValueError("README.md's settings section no longer says how the menu works")
    return " ".join(found[0].split())


INLINE = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`")
ASIDE = re.compile(r" ?\([^()]*`[^`()]+`[^()]*\)")  # "(if `power.shutdown_command` is set)"


def for_players(cell: str) -> str:
    """A cell without its asides for the maker (a parenthesis that names a config key)."""
    return ASIDE.sub("", cell)


def runs(cell: str, plain: str = "") -> list[Run]:
    """A cell's markdown as styled runs: **bold** and `code`; the rest in `plain`."""
    out: list[Run] = []
    at = 0
    for m in INLINE.finditer(cell):
        if m.start() > at:
            out.append((cell[at : m.start()], plain))
        out.append((m[1], "bold") if m[1] is not None else (m[2], "code"))
        at = m.end()
    if at < len(cell):
        out.append((cell[at:], plain))
    return out


@cache
def _font() -> ImageFont.FreeTypeFont:
    # Measured at 1000 px with plain advances (no shaping): the same on every FreeType.
    return ImageFont.truetype(str(FONT), 1000, layout_engine=ImageFont.Layout.BASIC)


@cache
def _has(char: str) -> bool:
    """Whether the font draws `char` (not its box for a missing glyph)."""
    small = ImageFont.truetype(str(FONT), 20)
    return char == " " or bytes(small.getmask(char)) != bytes(small.getmask("\uffff"))


def width(text: str, style: str, size: float) -> float:
    """How wide `text` prints at `size` mm: never less than in the fonts the card names."""
    if style == "code":
        return len(text) * MONO_EM * size
    for char in text:
        if not _has(char):
            raise ValueError(f"the card's measuring font has no {char!r}: use another word")
    return _font().getlength(text) / 1000 * size


def words(cell_runs: list[Run]) -> list[Word]:
    """The runs cut at spaces: each word keeps the styles of its parts (`**ON**,`)."""
    out: list[Word] = [[]]
    for text, style in cell_runs:
        for i, part in enumerate(text.split(" ")):
            if i:
                out.append([])
            if part:
                out[-1].append((part, style))
    return [word for word in out if word]


def wrap(cell_runs: list[Run], room: float, size: float) -> list[Line]:
    """Greedy lines no wider than `room` mm; a word too long for a line stands alone."""
    space = width(" ", "", size)
    lines: list[Line] = []
    line: Line = []
    used = 0.0
    for word in words(cell_runs):
        wide = sum(width(text, style, size) for text, style in word)
        if line and used + space + wide > room:
            lines.append(line)
            line, used = [], 0.0
        if line:
            line.append((" ", ""))
            used += space
        line.extend(word)
        used += wide
    return [*lines, line] if line else lines


def _merged(line: Line) -> Line:
    """Neighbouring runs of one style as one (a space joins the run before it)."""
    out: Line = []
    for text, style in line:
        if out and (out[-1][1] == style or text == " "):
            out[-1] = (out[-1][0] + text, out[-1][1])
        else:
            out.append((text, style))
    return out


ATTRS = {
    "": "",
    "bold": ' font-weight="bold"',
    "italic": ' font-style="italic"',
    "code": f' font-family="{MONO}"',
}


def text(x: float, y: float, line: Line, size: float, extra: str = "") -> str:
    spans = "".join(
        f"<tspan{ATTRS[style]}>{escape(part)}</tspan>" if style else escape(part)
        for part, style in _merged(line)
    )
    return f'<text x="{x:.2f}" y="{y:.2f}" font-size="{size}"{extra}>{spans}</text>'


def rule(y: float, weight: float) -> str:
    return f'<path d="M{MARGIN} {y:.2f}H{WIDTH - MARGIN}" stroke-width="{weight}"/>'


def card(readme: str) -> str:
    """The front: this README's Playing table, and how the menu works."""
    table = [
        # A row the player does not make (a moment of the game) is set in italics.
        (runs(row.gesture, "italic" if row.gesture[:1] + row.gesture[-1:] == "()" else ""),
         runs(for_players(row.effect)))
        for row in rows(readme)
    ]  # fmt: skip
    after = [[(MENU, "bold"), *runs(menu(readme))], [(TURN_OVER, "italic")]]
    return page(TITLE, COLUMNS, FIRST_COLUMN, [], table, after)


def back(readme: str) -> str:
    """The back: the settings menu, its items and their choices."""
    table = [(runs(row.gesture, "bold"), runs(for_players(row.effect)))
             for row in rows(readme, SETTINGS, MENU_COLUMNS)]  # fmt: skip
    return page(MENU_TITLE, MENU_COLUMNS, MENU_FIRST_COLUMN, [runs(opening(readme))], table, [])


MENU_FIRST_COLUMN = 42.0  # "item": a short name


def page(
    title: str,
    columns: tuple[str, str],
    first: float,
    before: list[list[Run]],
    table: list[tuple[list[Run], list[Run]]],
    after: list[list[Run]],
) -> str:
    """An SVG page: the title, paragraphs, a two-column table, paragraphs, the notice."""
    inner = WIDTH - 2 * MARGIN
    rooms = (first - 2 * PAD, inner - first - 2 * PAD)
    body, lead = SIZE["body"], SIZE["body"] * LEADING
    out: list[str] = []
    y = MARGIN + SIZE["title"]
    out.append(text(MARGIN, y, [(title, "bold")], SIZE["title"]))
    y += SIZE["subtitle"] * 1.8
    out.append(text(MARGIN, y, [(SUBTITLE, "")], SIZE["subtitle"]))
    for paragraph in before:
        y += PAD
        for line in wrap(paragraph, inner, body):
            y += lead
            out.append(text(MARGIN, y, line, body))
    y += SIZE["head"] * 1.8
    for left, name in zip((MARGIN, MARGIN + first), columns, strict=True):
        out.append(text(left + PAD, y, [(name.upper(), "bold")], SIZE["head"]))
    y += PAD
    out.append(rule(y, 0.6))
    for cells in table:
        wrapped = [wrap(cell, room, body) for cell, room in zip(cells, rooms, strict=True)]
        for left, lines in zip((MARGIN, MARGIN + first), wrapped, strict=True):
            for i, line in enumerate(lines):
                out.append(text(left + PAD, y + PAD + body + i * lead, line, body))
        y += 2 * PAD + max(map(len, wrapped)) * lead
        out.append(rule(y, 0.25))
    for paragraph in after:
        y += PAD
        for line in wrap(paragraph, inner, body):
            y += lead
            out.append(text(MARGIN, y, line, body))
    y += PAD
    y += SIZE["foot"] * 1.8
    out.append(text(MARGIN, y, [(NOT_AFFILIATED, "")], SIZE["foot"]))
    height = round(y + SIZE["foot"] * 0.3 + MARGIN, 2)
    if height > MAX_HEIGHT:
        raise ValueError(f"the card is {height} mm high, more than a page's {MAX_HEIGHT} mm")
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}mm" height="{height}mm"'
        f' viewBox="0 0 {WIDTH} {height}" font-family="{SANS}" fill="#000" stroke="#000"'
        ' xml:space="preserve">'
    )
    frame = (
        f'<rect x="0.3" y="0.3" width="{WIDTH - 0.6}" height="{height - 0.6:.2f}" rx="4"'
        ' fill="#fff" stroke-width="0.6"/>'
    )
    texts = "\n".join(line for line in out if line.startswith("<text"))
    rules = "\n".join(line for line in out if line.startswith("<path"))
    return "\n".join(
        [head, f"<title>{escape(title)}</title>", frame, f'<g fill="none">\n{rules}\n</g>',
         f'<g stroke="none">\n{texts}\n</g>', "</svg>", ""]
    )  # fmt: skip


def main(argv: list[str]) -> int:
    if argv in (["-h"], ["--help"]):
        print(__doc__)
        return 0
    if argv:
        print(f"docs/card.py takes no arguments (--help says what it does), not {argv}",
              file=sys.stderr)  # fmt: skip
        return 2
    readme = README.read_text(encoding="utf-8")
    for path, made in ((CARD, card(readme)), (BACK, back(readme))):
        path.write_text(made, encoding="utf-8")
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
