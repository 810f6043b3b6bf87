"""The case (hardware/enclosure): every part fits where the model puts it, the lid closes,
the window shows the whole display, and the STL files are made from the current model.

OpenSCAD renders each check as a solid that must come out empty: an overlap (touching
counts), or a gap where the lid must be solid. `python3 bootstrap.py test` installs
OpenSCAD where it can."""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "hardware" / "image"))
import recipe  # noqa: E402  (the one place that names the builds' cache root)

pytestmark = pytest.mark.slow  # OpenSCAD's renders: minutes on a machine that never ran them

SCAD = ROOT / "hardware/enclosure/cityunit.scad"
MAKE = ROOT / "hardware/enclosure/make.py"
needs_openscad = pytest.mark.skipif(
    shutil.which("openscad") is None,
    reason="no OpenSCAD, and `python3 bootstrap.py test` could not install it (root and apt-get)",
)

BASE_PARTS = ["pi", "switch"]  # standing in the base
LID_PARTS = ["oled", "auction", "build", "buzzer", "led"]  # hanging from the lid
EVERYTHING = ["base", "lid", *BASE_PARTS, *LID_PARTS]
VARIANTS = [{"pi": pi, "oled": oled} for pi in ("zero", "3a+") for oled in ("0.96", "1.3")]
VARIANTS += [{"pi": "zero", "oled": oled, "board": "phat"} for oled in ("0.96", "1.3")]
IDS = ["-".join(v.values()) for v in VARIANTS]
# the panels' datasheets: SSD1306 0.96" and SH1106 1.3", 128 x 64
ACTIVE_AREA = {"0.96": [21.74, 10.86], "1.3": [29.42, 14.70]}
FAR = 1000  # the model's: how far below its first check a render puts its second


def render(tmp_path: Path, part: str, **defs: object) -> list[tuple[float, ...]]:
    """The vertices of what `part` of the model makes with these settings ([]: nothing).
    OpenSCAD's CGAL takes 5-20 s a render: each answer is kept under a key of everything
    it depends on (the model's bytes, the settings, OpenSCAD's version), in the builds'
    cache root (recipe.cache), so that only a changed model is rendered again."""
    defines = ["-D", "$fn=24"]
    for key, value in {"part": part, **defs}.items():
        defines += ["-D", f"{key}={json.dumps(value)}"]
    kept = _kept(defines)
    if kept is not None and kept.exists():
        return [tuple(v) for v in json.loads(kept.read_text())]
    out = tmp_path / "out.stl"
    out.unlink(missing_ok=True)
    args = ["openscad", "--export-format", "asciistl", "-o", str(out), *defines, str(SCAD)]
    result = subprocess.run(args, capture_output=True, text=True, timeout=110)
    assert "ERROR" not in result.stderr, result.stderr
    vertices: list[tuple[float, ...]] = []
    if "Current top level object is empty." not in result.stderr:
        assert result.returncode == 0, result.stderr
        lines = out.read_text().splitlines()
        vertices = [
            tuple(map(float, s.split()[1:])) for s in lines if s.strip().startswith("vertex")
        ]
    if kept is not None:
        partial = kept.with_suffix(f".{os.getpid()}")
        partial.write_text(json.dumps(vertices))
        partial.replace(kept)  # whole, or not at all: another worker may read it
    return vertices


@functools.cache
def _openscad_version() -> str:
    done = subprocess.run(["openscad", "--version"], capture_output=True, text=True, timeout=60)
    return done.stdout + done.stderr


def _kept(defines: list[str]) -> Path | None:
    """Where the answer for these settings is kept, or None where nothing can be kept."""
    try:
        root = recipe.cache("openscad")
    except OSError:  # (a cache root this user may not write)
        return None
    key = hashlib.sha256(repr((SCAD.read_bytes(), defines, _openscad_version())).encode())
    return root / f"{key.hexdigest()[:24]}.json"


def apart(vertices: list[tuple[float, ...]]) -> list[list[tuple[float, ...]]]:
    """A render of two checks at once (the model's "fit" and "window"): the first's
    vertices, and the second's moved back from FAR below (the lid is made once)."""
    first = [v for v in vertices if v[2] > -FAR / 2]
    second: list[tuple[float, ...]] = [(x, y, z + FAR) for x, y, z in vertices if z <= -FAR / 2]
    return [first, second]


def where(vertices: list[tuple[float, ...]]) -> str:
    x, y, z = (f"{min(c):.1f}..{max(c):.1f}" for c in zip(*vertices, strict=True))
    return f"x {x}, y {y}, z {z} mm"


def pieces(vertices: list[tuple[float, ...]]) -> int:
    """How many separate pieces a mesh is: triangles that share a vertex are one piece."""
    parent: dict[tuple[float, ...], tuple[float, ...]] = {}

    def root(v: tuple[float, ...]) -> tuple[float, ...]:
        while parent.setdefault(v, v) != v:
            v = parent[v]
        return v

    for i in range(0, len(vertices), 3):
        first = root(vertices[i])
        for v in vertices[i + 1 : i + 3]:
            parent[root(v)] = first
    return len({root(v) for v in vertices})


@needs_openscad
@pytest.mark.parametrize("variant", VARIANTS, ids=IDS)
def test_nothing_overlaps_and_the_lid_closes_1_mm_clear(
    variant: dict[str, str], tmp_path: Path
) -> None:
    """The case, the lid seated on it, and every part in place: no two share a point. And
    the lid with what hangs from it, 1 mm lower, still clears the Pi (with its jumper
    wires, or the pHAT and its cables: the tallest part) and the switch."""
    overlap, lowered = apart(render(tmp_path, "fit", **variant))
    if overlap:
        others = {n: [m for m in EVERYTHING if m != n] for n in EVERYTHING}
        named = [n for n in EVERYTHING if render(tmp_path, "clash", a=[n], b=others[n], **variant)]
        pytest.fail(f"{', '.join(named)} overlap at {where(overlap)}")
    assert not lowered, f"less than 1 mm between the lid's parts and the base's at {where(lowered)}"


@needs_openscad
@pytest.mark.parametrize("pi", ["zero", "3a+"])
def test_the_standoffs_stand_apart_from_the_lid_screw_bosses(pi: str, tmp_path: Path) -> None:
    # the base above its floor and inside its wall: 4 standoffs and 3 bosses, each alone
    assert pieces(render(tmp_path, "posts", pi=pi)) == 4 + 3


@needs_openscad
@pytest.mark.parametrize("oled", ["0.96", "1.3"])
def test_the_window_shows_the_whole_active_area_and_little_more(oled: str, tmp_path: Path) -> None:
    # 1 mm each side is a module's tolerance; solid lid from 1.5 mm beyond the active area
    window = {"aa": ACTIVE_AREA[oled], "frame_margin": 1.5}
    hidden, shown = apart(render(tmp_path, "window", oled=oled, **window))
    assert not hidden, f"the lid hides part of the display at {where(hidden)}"
    assert not shown, f"the window shows more than the display at {where(shown)}"


@needs_openscad
@pytest.mark.parametrize("oled", ["0.96", "1.3"])
@pytest.mark.parametrize("shift", [[0, 0.55], [0, -0.55]], ids=str)  # the posts are above
# and below the glass: only a shift in y brings it nearer (0.37 mm for a 0.96" once)
def test_a_glass_a_little_off_centre_clears_the_posts(
    oled: str, shift: list, tmp_path: Path
) -> None:
    """A module's glass is glued on by hand: 0.55 mm off its place, the lid's posts (0.37 mm
    from a 0.96" glass once) must still not press it."""
    pressed = render(tmp_path, "clash", a=["oled", "lid"], b=[], oled=oled, glass_shift=shift)
    assert not pressed, f"a post presses the glass at {where(pressed)}"


@needs_openscad
@pytest.mark.parametrize(
    ("part", "defs", "half"),
    [
        # issue 15's board, 8 mm to the right: into a lid-screw boss
        ("fit", {"pi_at": [-24.5, -38, 7.8]}, 0),
        # a case 10 mm lower: the lowered lid's buttons reach the Pi
        ("fit", {"height": 30}, 1),
        # the pHAT in the case for wires: the buttons reach its connectors
        ("clash", {"a": ["lid", *LID_PARTS], "b": BASE_PARTS, "board": "phat", "height": 40}, None),
        ("window", {"margin": -0.2}, 0),  # a small window hides some of the display
        ("window", {"margin": 1.6}, 1),  # a large one shows more than it
    ],
    ids=["board-into-boss", "lower-case", "phat-in-the-low-case", "small-window", "large-window"],
)
def test_each_check_finds_what_it_looks_for(
    part: str, defs: dict, half: int | None, tmp_path: Path
) -> None:
    """Each check, and each half of a render of two, finds what it is there to find."""
    found = render(tmp_path, part, **defs)
    assert apart(found)[half] if half is not None else found


@needs_openscad
@pytest.mark.parametrize(
    "options",
    [
        {"pi": "zero"},
        {"pi": "3a+"},
        {"pi": "zero", "board": "phat"},
        {"oled": "0.96"},
        {"oled": "1.3"},
    ],
    ids=["base-zero", "base-3a+", "base-zero-phat", "lid-0.96", "lid-1.3"],
)
def test_each_printed_part_is_one_piece(options: dict[str, str], tmp_path: Path) -> None:
    part = "base" if "pi" in options else "lid"
    assert pieces(render(tmp_path, part, **options)) == 1


def test_the_stl_files_are_made_from_the_current_model() -> None:
    result = subprocess.run(
        [sys.executable, str(MAKE), "--check"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_making_refuses_to_write_an_empty_file(tmp_path: Path) -> None:
    # an OpenSCAD that writes an empty file (as it does for a picture without a display)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    fake = bin_ / "openscad"
    fake.write_text('#!/bin/sh\nwhile [ "$1" != "-o" ]; do shift; done\n: > "$2"\n')
    fake.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    for path, args, says in [
        (bin_, [], "OpenSCAD made no base-zero.stl (0 bytes"),
        (tmp_path, [], "OpenSCAD is not installed"),
        (bin_, ["--png"], "a picture needs a display"),  # no xvfb-run on this PATH
    ]:
        result = subprocess.run(
            [sys.executable, str(MAKE), "--out", str(out), *args],
            env={**env, "PATH": str(path)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 1 and says in result.stderr, result.stderr
        assert not list(out.iterdir())
