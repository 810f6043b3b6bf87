#!/usr/bin/env python3
"""Set up this checkout's virtual environment, then launch the simulator or the tests.

    python3 bootstrap.py sim [ARGS...]    the simulator (cityunit sim ARGS)
    python3 bootstrap.py test [ARGS...]   the whole test suite (pytest ARGS): what CI runs

Needs only Python 3.11+ and the package index. The environment lives in .venv and is
re-installed only when pyproject.toml changes.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
EXTRAS = "sim,test"


def ensure_venv() -> Path:
    python = BIN / ("python.exe" if os.name == "nt" else "python")
    if not python.exists():
        print("bootstrap: creating .venv", file=sys.stderr)
        venv.create(VENV, with_pip=True)
    stamp = VENV / ".cityunit-installed"
    want = hashlib.sha256((ROOT / "pyproject.toml").read_bytes() + EXTRAS.encode()).hexdigest()
    if not stamp.exists() or stamp.read_text() != want:
        print(f"bootstrap: installing cityunit[{EXTRAS}] into .venv", file=sys.stderr)
        pip = [str(python), "-m", "pip", "--disable-pip-version-check", "-q"]
        if subprocess.call([*pip, "install", "-e", f"{ROOT}[{EXTRAS}]"]) != 0:
            sys.exit("bootstrap: installing failed (pip's message above); nothing was changed")
        stamp.write_text(want)
    return python


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 (this file runs on any python3 found)
        sys.exit("cityunit needs Python 3.11 or newer")
    if not argv or argv[0] not in ("sim", "test"):
        sys.exit(__doc__)
    python = ensure_venv()
    what, rest = argv[0], argv[1:]
    if what == "test":
        command = [str(python), "-m", "pytest", *rest]
    else:
        command = [str(BIN / "cityunit"), "sim", *rest]
    os.chdir(ROOT)
    return subprocess.call(command)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
