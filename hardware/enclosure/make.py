#!/usr/bin/env python3
"""Make the case's files from cityunit.scad with OpenSCAD.

    python3 hardware/enclosure/make.py           write the STL files for printing
    python3 hardware/enclosure/make.py --png     write case.png (a display, or xvfb-run)
    python3 hardware/enclosure/make.py --check   exit 1 if an STL is not from the current model

Each STL's header holds a hash of the .scad and the options it was made with, so --check
needs no OpenSCAD. Nothing empty is ever written: a failed export leaves the old file.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCAD = HERE / "cityunit.scad"
STLS = {
    "base-zero.stl": {"part": "base", "pi": "zero"},
    "base-3aplus.stl": {"part": "base", "pi": "3a+"},
    "base-zero-phat.stl": {"part": "base", "pi": "zero", "board": "phat"},
    "lid-0.96in.stl": {"part": "lid", "oled": "0.96"},
    "lid-1.3in.stl": {"part": "lid", "oled": "1.3"},
}
PNG = ["--imgsize=1000,560", "--camera=26,-275,355,58,5,5", "--colorscheme=Tomorrow"]


def defines(options: dict[str, str]) -> list[str]:
    return [arg for key, value in options.items() for arg in ("-D", f'{key}="{value}"')]


def header(name: str) -> bytes:
    """What an STL made now from the current model starts with."""
    digest = hashlib.sha256(SCAD.read_bytes() + repr(STLS[name]).encode()).hexdigest()
    return f"cityunit {name} sha256:{digest[:40]}".encode().ljust(80)


def facets(data: bytes) -> int:
    """The facet count of a binary STL, or 0 if it is not a whole one."""
    if len(data) < 84:
        return 0
    (count,) = struct.unpack_from("<I", data, 80)
    return count if len(data) == 84 + 50 * count else 0


def openscad() -> str:
    found = shutil.which("openscad")
    if not found:
        sys.exit(
            "make.py: OpenSCAD is not installed (apt-get install openscad); nothing was written"
        )
    return found


def make_stl(name: str, out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        made = Path(tmp) / name
        command = [
            openscad(),
            "--export-format",
            "binstl",
            "-o",
            str(made),
            *defines(STLS[name]),
            str(SCAD),
        ]
        result = subprocess.run(command, capture_output=True, text=True)
        data = made.read_bytes() if made.exists() else b""
        if result.returncode != 0 or not facets(data):
            sys.exit(
                f"make.py: OpenSCAD made no {name} ({len(data)} bytes, exit {result.returncode}); "
                f"nothing was written\n{result.stderr.strip()}"
            )
        # CGAL lists the same facets in a different order each run: sorted, a file changes
        # only when the model does
        count = facets(data)
        records = sorted(data[84 + 50 * i : 134 + 50 * i] for i in range(count))
        out.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(header(name) + data[80:84] + b"".join(records))
    print(f"wrote {out / name} ({count} facets)")


def make_png(out: Path) -> None:
    prefix = []
    if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        # OpenSCAD draws with OpenGL: without a display it writes an empty file, and says nothing
        if not shutil.which("xvfb-run"):
            sys.exit(
                "make.py: a picture needs a display; without one, install xvfb "
                "(apt-get install xvfb) for xvfb-run; nothing was written"
            )
        prefix = ["xvfb-run", "-a"]
    with tempfile.TemporaryDirectory() as tmp:
        made = Path(tmp) / "case.png"
        command = [*prefix, openscad(), "-o", str(made), *PNG, str(SCAD)]
        result = subprocess.run(command, capture_output=True, text=True)
        data = made.read_bytes() if made.exists() else b""
        if result.returncode != 0 or not data.startswith(b"\x89PNG"):
            sys.exit(
                f"make.py: OpenSCAD drew no picture ({len(data)} bytes); nothing was written\n"
                f"{result.stderr.strip()}"
            )
        (out / "case.png").write_bytes(data)
    print(f"wrote {out / 'case.png'}")


def stale(out: Path) -> list[str]:
    """The STLs that are missing, broken, or made from another model than the current one."""
    bad = []
    for name in STLS:
        data = (out / name).read_bytes() if (out / name).exists() else b""
        if not facets(data) or data[:80] != header(name):
            bad.append(name)
    return bad


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--png", action="store_true", help="write case.png instead of the STLs")
    parser.add_argument("--check", action="store_true", help="check the STLs are current")
    parser.add_argument(
        "--out", type=Path, default=HERE, help="where to write (default: beside the model)"
    )
    args = parser.parse_args(argv)
    if args.check:
        bad = stale(args.out)
        for name in bad:
            print(f"{name} is not made from the current cityunit.scad: run {Path(__file__).name}")
        return 1 if bad else 0
    if args.png:
        make_png(args.out)
    else:
        for name in STLS:
            make_stl(name, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
