"""The docs a player reads hold together: every relative link lands in the repository,
and the printable card of the gestures is the README's table as it is now."""

from __future__ import annotations

import importlib.util
import re
import sys
import xml.etree.ElementTree as ET
from functools import cache
from pathlib import Path
from types import ModuleType
from urllib.parse import unquote

import pytest

from cityunit import __version__

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", ROOT / "hardware" / "README.md",
        *sorted((ROOT / "docs").glob("*.md"))]  # fmt: skip
# Printable area of both A4 (210 x 297 mm) and Letter (215.9 x 279.4 mm) with a
# printer's margins of 10 mm a side.
PAGE_MM = (190.0, 259.0)

FENCE = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
CODE = re.compile(r"(`+).+?\1", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)", re.MULTILINE)
HTML = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)=\"([^\"]+)\"", re.IGNORECASE)
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


@cache
def card_module() -> ModuleType:
    """docs/card.py, which is a script, not a package's module."""
    spec = importlib.util.spec_from_file_location("cityunit_card", ROOT / "docs" / "card.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


def prose(path: Path) -> str:
    """The markdown without its code blocks and code spans, where brackets are not links."""
    return CODE.sub("", FENCE.sub("", path.read_text(encoding="utf-8")))


def targets(path: Path) -> list[str]:
    text = prose(path)
    return [m[1] for pattern in (LINK, REFERENCE, HTML) for m in pattern.finditer(text)]


def anchors(path: Path) -> set[str]:
    """GitHub's anchors for a markdown file's headings: lower case, punctuation dropped,
    spaces as hyphens, a repeated one numbered."""
    seen: dict[str, int] = {}
    out = set()
    for title in HEADING.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        title = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", title)
        slug = re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def broken(doc: Path, root: Path = ROOT) -> list[str]:
    """The relative links of `doc` that do not land on a file (and heading) inside `root`."""
    out = []
    for target in targets(doc):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            continue  # https:, mailto: ...: not a file of ours
        name, _, fragment = target.partition("#")
        dest = (doc.parent / unquote(name)).resolve() if name else doc
        if not dest.is_relative_to(root):
            out.append(f"{target}: outside the repository")
        elif not dest.exists():
            out.append(f"{target}: no such file")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            out.append(f"{target}: no heading #{fragment} in {dest.relative_to(root)}")
    return out


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_lands_on_a_file_in_the_repository(doc: Path) -> None:
    assert broken(doc) == []


def test_the_link_check_finds_what_it_must(tmp_path: Path) -> None:
    """Each kind of link is seen, none inside code, and each way to break one is caught."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "here.md").write_text("# A title\n\n## The `code` part\n")
    doc = tmp_path / "docs" / "page.md"
    doc.write_text(
        "[ok](../here.md) [ok](../here.md#a-title) ![ok](../here.md#the-code-part)\n"
        "[ok](#local) [web](https://example.com/x.md) `[code](nowhere.md)`\n"
        "```\n[fenced](nowhere.md)\n```\n"
        "[gone](missing.md) [out](../../shared/PROTOCOL.md) [anchor](../here.md#nope)\n"
        '[ref]: ../gone.md\n<img src="pic.png">\n\n## Local\n'
    )
    assert broken(doc, tmp_path) == [
        "missing.md: no such file",
        "../../shared/PROTOCOL.md: outside the repository",
        "../here.md#nope: no heading #nope in here.md",
        "../gone.md: no such file",
        "pic.png: no such file",
    ]


def test_the_card_is_what_the_readme_table_makes() -> None:
    card = card_module()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path, made in ((card.CARD, card.card(readme)), (card.BACK, card.back(readme))):
        committed = path.read_text(encoding="utf-8")
        assert committed == made, (
            f"the README changed: run .venv/bin/python docs/card.py ({path.name})"
        )


def test_the_cards_back_is_the_settings_menu_word_for_word() -> None:
    """The card had none of the menu's items nor their choices (issue 38): nine, with the
    players' page's (issue 40)."""
    card = card_module()
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    items = card.rows(readme, card.SETTINGS, card.MENU_COLUMNS)
    assert len(items) == 9 and items[0].gesture == "game length"
    svg = ET.parse(card.BACK).getroot()
    lines = ("".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text"))
    printed = " ".join(" ".join(lines).split())
    for item in items:
        assert " ".join(re.sub(r"\*\*|`", "", f"{item.gesture} {item.effect}").split()) in printed
    assert re.sub(r"\*\*|`", "", card.opening(readme)) in printed
    assert card.NOT_AFFILIATED in printed and "card.py" not in printed
    front = ET.parse(card.CARD).getroot()
    assert card.TURN_OVER in " ".join("".join(t.itertext()) for t in front.iter())


def test_the_card_carries_every_row_word_for_word() -> None:
    card = card_module()
    rows = card.rows((ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(rows) >= 10 and rows[0].gesture == "switch **ON**"
    svg = ET.parse(ROOT / "docs" / "card.svg").getroot()
    lines = ("".join(t.itertext()) for t in svg.iter("{http://www.w3.org/2000/svg}text"))
    printed = " ".join(" ".join(lines).split())
    for row in rows:  # each row's gesture, then what the unit does, line after line
        effect = card.for_players(row.effect)
        plain = " ".join(re.sub(r"\*\*|`", "", f"{row.gesture} {effect}").split())
        assert plain in printed
    menu = card.menu((ROOT / "README.md").read_text(encoding="utf-8"))
    assert menu.startswith("**BUILD** moves to the next item") and menu.endswith(".")
    assert card.MENU + menu.replace("**", "") in printed, "what the table's (below) means"
    assert card.NOT_AFFILIATED in printed
    # issue 38: a player's card, no maker's asides nor where it was made
    assert "shutdown_command" not in printed and "card.py" not in printed


@pytest.mark.parametrize("side", ["card.svg", "card-back.svg"])
def test_the_card_fits_one_page_and_reads_from_across_the_table(side: str) -> None:
    card = card_module()
    root = ET.parse(ROOT / "docs" / side).getroot()
    width, height = (float(root.get(k, "").removesuffix("mm")) for k in ("width", "height"))
    assert width <= PAGE_MM[0] and height <= PAGE_MM[1]
    assert root.get("viewBox") == f"0 0 {root.get('width', '')[:-2]} {root.get('height', '')[:-2]}"
    sizes = [float(t.get("font-size", "0")) for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert min(sizes) >= 3.0, "no text under 3 mm (8.5 pt)"
    assert card.SIZE["body"] >= 3.5, "the table itself at 10 pt or more"
    colours = set(re.findall(r"#[0-9a-fA-F]{3,6}", (ROOT / "docs" / side).read_text()))
    assert colours <= {"#000", "#fff"}, "black on white: any printer"


def test_the_card_wraps_each_line_within_its_column() -> None:
    card = card_module()
    size = card.SIZE["body"]
    inner = card.WIDTH - 2 * card.MARGIN
    rooms = (card.FIRST_COLUMN - 2 * card.PAD, inner - card.FIRST_COLUMN - 2 * card.PAD)
    for row in card.rows((ROOT / "README.md").read_text(encoding="utf-8")):
        for cell, room in zip((row.gesture, row.effect), rooms, strict=True):
            for line in card.wrap(card.runs(cell), room, size):
                wide = sum(card.width(text, style, size) for text, style in line)
                assert wide <= room or (" ", "") not in line, line  # one long word may stand out


def test_the_readme_says_it_is_not_affiliated_near_the_top() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    line = " ".join(card_module().NOT_AFFILIATED.split())
    flat = " ".join(readme.split())
    assert line in flat
    assert flat.index(line) < flat.index("## "), "before the first section"


def test_the_changelog_keeps_a_changelog_shape() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[([^\]]+)\]", text, re.MULTILINE)
    assert versions[0] == "Unreleased"
    assert __version__ in versions, "the package's version has its entry"
    for heading in re.findall(r"^### (.+)$", text, re.MULTILINE):
        assert heading in {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
