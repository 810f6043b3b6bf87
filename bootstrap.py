#!/usr/bin/env python3
"""Set up this checkout's virtual environment, then launch the simulator or the tests.

    python3 bootstrap.py sim [ARGS...]        the simulator (cityunit sim ARGS)
    python3 bootstrap.py test                 the whole test suite, what CI runs: the mock suite
                                              on every core, then the virtual Pi and the card
                                              side by side
    python3 bootstrap.py test ARGS...         pytest ARGS, e.g. -m "not vm" -n auto (the mock
                                              suite alone, on every core) or -k auction
    python3 bootstrap.py hardware [ARGS...]   hardware/generate.py (the tables, schematic and
                                              wiring picture from pinout.toml; --check)
    python3 bootstrap.py image                the SD-card image, dist/cityunit-*-arm64.img.xz
                                              (hardware/image/build.py; root, Debian's apt)

Needs only Python 3.11+ and the package index. The environment lives in .venv and is
re-installed only when pyproject.toml changes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import venv
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
EXTRAS = {"sim", "test"}  # and "hw" (matplotlib, for the schematic's PNG) when asked


def ensure_venv(extras: set[str] = EXTRAS) -> Path:
    """The editable install with these extras (and any installed before): pip into the
    project's own venv, so nothing touches the system's Python."""
    python = BIN / ("python.exe" if os.name == "nt" else "python")
    if not python.exists():
        print("bootstrap: creating .venv", file=sys.stderr)
        venv.create(VENV, with_pip=True)
    stamp = VENV / ".cityunit-installed"
    project = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    had, _, extras_had = (stamp.read_text() if stamp.exists() else "").partition(" ")
    if had != project or not extras <= set(extras_had.split(",")):
        extras = extras | set(extras_had.split(",")) - {""} if had == project else extras
        names = ",".join(sorted(extras))
        print(f"bootstrap: installing cityunit[{names}] into .venv", file=sys.stderr)
        pip = [str(python), "-m", "pip", "--disable-pip-version-check", "-q"]
        if subprocess.call([*pip, "install", "-e", f"{ROOT}[{names}]"]) != 0:
            sys.exit("bootstrap: installing failed (pip's message above); nothing was changed")
        stamp.write_text(f"{project} {names}")
    return python


# What the suite's tiers need from the distribution: a program each, and its packages.
TOOLS = {
    "openscad": ("the case tests", ["openscad"]),
    # KiCad 6's pcbnew module (for /usr/bin/python3) and its footprints: the pHAT
    "pcbnew": ("the pHAT's design-rule check", ["kicad", "kicad-footprints"]),
    "qemu-system-x86_64": (
        "the virtual Pi (tests/vm)",
        ["qemu-system-x86", "qemu-system-data", "seabios", "ipxe-qemu"],
    ),
    "qemu-img": ("the virtual Pi (its disk: a layer on the cached image)", ["qemu-utils"]),
    "mmdebstrap": ("the virtual Pi's image", ["mmdebstrap", "e2fsprogs"]),
    "ssh": ("the virtual Pi (its ssh client)", ["openssh-client"]),
    # The SD-card image: arm64 programs run by qemu-user, the FAT made without mounting it
    "qemu-aarch64-static": (
        "the SD-card image",
        ["qemu-user-static", "binfmt-support", "arch-test"],
    ),
    "mcopy": ("the SD-card image's boot partition", ["mtools", "dosfstools"]),
    "sfdisk": ("the SD-card image's partitions", ["fdisk"]),
    "dtc": ("the SD-card image's overlay", ["device-tree-compiler"]),
    "xz": ("the SD-card image's .xz", ["xz-utils"]),
    # The players' page in a real browser, headless, driven through its WebDriver
    "chromium": ("the page's browser tests", ["chromium"]),
    "chromedriver": ("the page's browser tests (WebDriver)", ["chromium-driver"]),
    # callgrind: start-up, a tap and an hour counted in instructions (bench --instructions)
    "valgrind": ("the instruction counts' test", ["valgrind"]),
}
IMAGE_TOOLS = ("mmdebstrap", "qemu-aarch64-static", "mcopy", "sfdisk", "dtc", "xz")


def ensure_tool(program: str) -> None:
    """Install a program the tests use from the distribution's packages when it is
    missing and we can (root, apt-get); else the tests that need it skip, saying why."""
    if shutil.which(program):
        return
    what, packages = TOOLS[program]
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("apt-get"):
        print(f"bootstrap: no {program}, nor root and apt-get to install it: {what} will skip",
              file=sys.stderr)  # fmt: skip
        return
    print(f"bootstrap: installing {program} for {what} (apt-get install {' '.join(packages)})",
          file=sys.stderr)  # fmt: skip
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]
    # a fresh machine may have no package lists yet: update once, then try again
    for command in (install, ["apt-get", "update", "-qq"], install):
        try:
            done = subprocess.call(command, env=env, stdout=sys.stderr, timeout=900) == 0
        except subprocess.TimeoutExpired:
            done = False
        if done and shutil.which(program):
            return
    print(f"bootstrap: installing {program} failed (apt-get's message above): {what} will skip",
          file=sys.stderr)  # fmt: skip


# The whole suite in two runs: the mock suite on every core (pytest-xdist; an idle worker
# takes tests from a busy one's queue), so that its failures are told within its minutes;
# then the QEMU tiers side by side, a worker each (each tier is one test module: loadfile
# keeps it on one worker, in order; pytest 9 defeats loadgroup's marks), the virtual Pi's
# guests on one, the card (built, then booted) on the other.
TIERS = (("the mock suite", ["-n", "auto", "--dist", "worksteal", "-m", "not vm"]),
         ("the virtual Pi and the card",
          ["-n", "2", "--dist", "loadfile", "-m", "vm"]))  # fmt: skip


def test(python: Path, args: list[str]) -> int:
    """pytest with `args`; with none, the whole suite tier by tier, and its tally."""
    pytest = [str(python), "-m", "pytest"]
    if args:
        return call([*pytest, *args])
    codes, counts = [], dict.fromkeys(("passed", "failed", "skipped"), 0)
    told = True
    with card_ahead(python):
        for name, selection in TIERS:
            print(f"bootstrap: {name} (pytest {' '.join(selection)})", file=sys.stderr, flush=True)
            with tempfile.TemporaryDirectory() as folder:
                tally = Path(folder) / "tally"
                env = {**os.environ, "CITYUNIT_TALLY": str(tally)}
                codes.append(call([*pytest, *selection], env))
                lines = tally.read_text().splitlines() if tally.exists() else []
            told = told and bool(lines)  # a run that ended before its summary tells nothing
            for line in lines:
                what, _, n = line.partition(" ")
                counts["failed" if what == "error" else what] += int(n)
    if told:  # one closing line for the whole suite, as pytest's says it for one run
        print("suite: " + ", ".join(f"{n} {what}" for what, n in counts.items()))
    # pytest's 5 (no test ran) in one tier is no failure while another ran some
    failed = [code for code in codes if code not in (0, 5)]
    return failed[0] if failed else (5 if set(codes) == {5} else 0)


@contextlib.contextmanager
def card_ahead(python: Path) -> Iterator[None]:
    """The card image built from the start of the whole suite, not from the card's tier:
    it is the longest thing the suite does (Debian's packages downloaded, then installed
    under emulation), and the mock suite leaves a third of the CPU and all the network
    idle. At idle priority, so the mock suite keeps its pace; the card's tier waits for
    it (a lock per stage) and finds it built, or builds again and says why it failed.
    Only as root (the build's chroot); stopped as a Ctrl-C stops it if still running."""
    idle = ["chrt", "--idle", "0", "ionice", "-c", "3", "nice", "-n", "19"]
    if os.name != "posix" or os.geteuid() != 0 or not shutil.which("chrt"):
        yield
        return
    build = [str(python), str(ROOT / "hardware" / "image" / "build.py"), "--raw"]
    with subprocess.Popen([*idle, *build], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL) as process:  # fmt: skip
        try:
            yield
        finally:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)  # its stage cleaned up, nothing kept
                try:
                    process.wait(timeout=120)
                except subprocess.TimeoutExpired:
                    process.kill()


def call(command: list[str], env: dict[str, str] | None = None) -> int:
    """A command run to its end: on a Ctrl-C (which reached it too) it is given the time
    to stop its own way (pytest ends what it started), not killed a quarter second on."""
    with subprocess.Popen(command, env=env) as process:
        try:
            return process.wait()
        except KeyboardInterrupt:
            return process.wait()


def main(argv: list[str]) -> int:
    if sys.version_info < (3, 11):  # noqa: UP036 (this file runs on any python3 found)
        sys.exit("cityunit needs Python 3.11 or newer")
    if not argv or argv[0] not in ("sim", "test", "hardware", "image"):
        sys.exit(__doc__)
    what, rest = argv[0], argv[1:]
    python = ensure_venv(EXTRAS | {"hw"} if what == "hardware" else EXTRAS)
    # The checkout's code byte-compiled, as pip does an installed copy's: every start (the
    # simulator's, and each the tests make) reads it instead of compiling it again, even
    # where PYTHONDONTWRITEBYTECODE is set. Up-to-date files are skipped.
    subprocess.call([str(python), "-m", "compileall", "-q", "-j", "0",
                     str(ROOT / "firmware"), str(ROOT / "sim")])  # fmt: skip
    if what == "test":
        for program in TOOLS:
            ensure_tool(program)
        os.chdir(ROOT)
        return test(python, rest)
    elif what == "hardware":
        command = [str(python), str(ROOT / "hardware" / "generate.py"), *rest]
    elif what == "image":
        for program in IMAGE_TOOLS:
            ensure_tool(program)
        command = [str(python), str(ROOT / "hardware" / "image" / "build.py"), *rest]
    else:
        command = [str(BIN / "cityunit"), "sim", *rest]
    os.chdir(ROOT)
    return call(command)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
