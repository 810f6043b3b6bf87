"""`cityunit bench --instructions`: start-up, a tap and an hour of play counted in
instructions by callgrind, which gives the same count from run to run whatever the
machine's load (where a timer on this shared, two-core machine varies by half). Given
`--against REV`, another revision of the checkout is counted by the same probe in the
same run, side by side.

Each figure is millions of instructions (user space: the kernel's side of a write to the
bus is not in it), from a process started as the service starts it, with gpiozero's mock
pins and an I2C bus that drops its bytes (probe.py):

- first light: from exec to the first frame on the glass, lit by the service's first
  stage (service/first_light.py) from what the unit kept at its last stop, the display
  on I2C, and on SPI (first_light_spi); for a tree without a first stage, READY's (I2C);
- ready: from exec to READY=1, the first frame sent by the full stack (after the first
  stage, where there is one: the service's whole path);
- tap frame: from the release of AUCTION to its frame sent, the screen readied (median);
- readying wait: from a press landing as a screen is readied to its click (the worst of
  24: at the start of each of the first twelve readyings after a tick, a screen a
  readying or a slice of one, in the hour and in an auction);
- first press: the same for the first press after the switch goes ON, on the first
  readying of the game (a figure apart: it may pay for what is done once);
- hour: the tree's own in-process hour of play (`cityunit bench`'s virtual hour), played
  a second time in the process; first hour: the first time, with its imports and its
  first drawings.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

from cityunit.tools.bench.probe import FIRST_STAGE

PROBE = Path(__file__).with_name("probe.py")
KEYS = ("first_light_minstr", "first_light_spi_minstr", "ready_minstr",
        "tap_frame_minstr", "readying_wait_minstr", "first_press_minstr", "hour_minstr",
        "first_hour_minstr")  # fmt: skip
CONFIG = """\
[state]
dir = "{state}"
"""
SPI = """
[display]
interface = "spi"
"""


def unavailable() -> str | None:
    """Why this machine cannot count, or None."""
    if shutil.which("valgrind") is None:
        return "no valgrind (callgrind counts the instructions): sudo apt install valgrind"
    return None


def checkout() -> Path | None:
    """The git checkout this copy runs from, or None (an installed copy)."""
    root = Path(__file__).resolve().parents[4]
    return root if (root / ".git").exists() and (root / "firmware").is_dir() else None


def count(tree: Path) -> dict[str, float]:
    """Every figure for the tree (a checkout's root: firmware/ and sim/ in it)."""
    sources = [str(tree / "firmware"), str(tree / "sim")]  # byte-compiled, as installed
    compiled = subprocess.run([sys.executable, "-m", "compileall", "-q", *sources],
                              capture_output=True, text=True, check=False)  # fmt: skip
    if compiled.returncode != 0:
        raise RuntimeError(f"{tree}: compileall failed: {compiled.stdout[-500:]}")
    ready = _run("ready", tree)
    figures = {"ready_minstr": _total(ready)}
    lit = ready.labels[:1] == ["first-light"]  # the count from exec to its first mark
    figures["first_light_minstr"] = ready.dumps[0] / 1e6 if lit else figures["ready_minstr"]
    spi = _run("lit-alone", tree, SPI) if lit else None  # (the unit on SPI's bus: not counted)
    figures["first_light_spi_minstr"] = spi.dumps[0] / 1e6 if spi else figures["ready_minstr"]
    session = _run("session", tree)
    figures["tap_frame_minstr"] = statistics.median(_windows(session, "tap"))
    figures["readying_wait_minstr"] = max(_windows(session, "readying"))
    figures["first_press_minstr"] = _windows(session, "first-press")[0]
    hour = _run("hour", tree)
    figures["hour_minstr"] = _windows(hour, "hour")[0]
    figures["first_hour_minstr"] = _windows(hour, "first-hour")[0]
    return {key: round(figures[key], 2) for key in KEYS}


class Counted:
    """One probe's run: callgrind's dumps (the counts between marks) and the labels."""

    def __init__(self, dumps: list[int], labels: list[str]) -> None:
        self.dumps, self.labels = dumps, labels


def _run(scenario: str, tree: Path, display: str = "") -> Counted:
    with tempfile.TemporaryDirectory(prefix="cityunit-count-") as tmp:
        folder = Path(tmp)
        config = folder / "config.toml"
        config.write_text(CONFIG.format(state=folder / "state") + display)
        labels = folder / "labels"
        labels.touch()
        (folder / "state").mkdir()
        (folder / "dev").mkdir()  # the first stage's GPIO chip and I2C bus (probe.Ioctl)
        for name in ("gpiochip0", "i2c-1", "spidev0.0"):
            (folder / "dev" / name).touch()
        paths = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
        env = {key: value for key, value in os.environ.items()
               if not key.startswith(("NOTIFY_", "WATCHDOG_", "PYTHON", "CITYUNIT_"))}  # fmt: skip
        env.update(
            GPIOZERO_PIN_FACTORY="mock",
            CITYUNIT_PROBE_PATH=os.pathsep.join(paths),
            PYTHONHASHSEED="0",
            PYTHONPATH=str(PROBE.parent),  # the probe imported, so byte-compiled: not counted
            STATE_DIRECTORY=str(folder / "state"),  # where the first stage looks, as systemd's
        )  # fmt: skip  (a set's order, the same each run)
        probe = [sys.executable, "-S", "-c", "import probe; probe.main()"]
        arguments = [str(tree), str(config), str(labels)]
        if scenario in ("ready", "lit-alone") and (tree / FIRST_STAGE).exists():
            _keep([*probe, "keep", *arguments], env, folder)
        out = folder / "callgrind.out"
        command = [
            "valgrind", "--tool=callgrind", "--dump-before=getppid", "-q",
            f"--callgrind-out-file={out}", *probe, scenario, *arguments,
        ]  # fmt: skip
        try:
            done = subprocess.run(command, env=env, cwd=tmp, capture_output=True, timeout=900)
        except subprocess.TimeoutExpired:
            raise RuntimeError(f"the {scenario} probe ran 15 minutes: stopped") from None
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace")[-2000:]
            raise RuntimeError(f"the {scenario} probe failed ({done.returncode}): {said}")
        parts = sorted(folder.glob("callgrind.out.*"), key=lambda p: int(p.suffix[1:]))
        counted = Counted([_instructions(p) for p in [*parts, out]], labels.read_text().split())
        if len(counted.dumps) != 2 * len(counted.labels) + 1:  # each window marked twice
            raise RuntimeError(f"the {scenario} probe: {len(counted.dumps)} counts for"
                               f" {len(counted.labels)} windows")  # fmt: skip
        return counted


def _keep(command: list[str], env: dict[str, str], folder: Path) -> None:
    """The tree's unit run once, uncounted, to its clean stop: it keeps what its first
    stage reads at the next start."""
    done = subprocess.run(command, env=env, cwd=folder, capture_output=True, timeout=300)
    if done.returncode != 0 or not (folder / "state" / "first-light").exists():
        said = done.stderr.decode(errors="replace")[-2000:]
        raise RuntimeError(f"the unit kept no first light ({done.returncode}): {said}")


def _instructions(dump: Path) -> int:
    for line in dump.read_text().splitlines():
        if line.startswith("totals:"):
            return int(line.split()[1])
    return 0


def _total(counted: Counted) -> float:
    return sum(counted.dumps) / 1e6


def _windows(counted: Counted, label: str) -> list[float]:
    """Window k (1-based) is the 2k-th dump: each is marked when it opens and closes."""
    return [counted.dumps[2 * k + 1] / 1e6 for k, name in enumerate(counted.labels)
            if name == label]  # fmt: skip


@contextlib.contextmanager
def revision(rev: str) -> Iterator[Path]:
    """The checkout's firmware and simulator at `rev`, in a temporary folder."""
    root = checkout()
    if root is None:
        raise RuntimeError("--against needs the git checkout (this copy is installed)")
    commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet",
                             "--end-of-options", f"{rev}^{{commit}}"], capture_output=True,
                            text=True, check=False)  # fmt: skip
    if commit.returncode != 0:
        raise RuntimeError(f"--against {rev}: no such revision in {root}")
    with tempfile.TemporaryDirectory(prefix="cityunit-rev-") as tmp:
        archive = subprocess.run(["git", "-C", str(root), "archive", commit.stdout.strip(),
                                  "firmware", "sim"], capture_output=True, check=False)  # fmt: skip
        if archive.returncode != 0:
            raise RuntimeError(f"--against {rev}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        yield Path(tmp)


def main(as_json: bool, against: str | None) -> int:
    """The figures for this tree, and `against`'s beside them; 2 where it cannot count."""
    import json

    root = checkout()
    why = unavailable() or (None if root else "needs the git checkout (firmware/, sim/)")
    if why or root is None:
        print(f"cityunit bench --instructions: {why}", file=sys.stderr)
        return 2
    try:
        with contextlib.ExitStack() as stack:  # the revision checked before anything counts
            other = None if against is None else stack.enter_context(revision(against))
            figures: dict[str, object] = dict(count(root))
            if other is not None:
                figures["against"] = {"rev": against, **count(other)}
    except RuntimeError as e:
        print(f"cityunit bench --instructions: {e}", file=sys.stderr)
        return 2
    if as_json:
        print(json.dumps(figures))
        return 0
    beside = figures.get("against")
    print(f"{'millions of instructions':34} {'this tree':>10}" + f" {against:>10}" * bool(beside))
    for key in KEYS:
        line = f"{key:34} {figures[key]:10.2f}"
        if isinstance(beside, dict):
            line += f" {beside[key]:10.2f}"
        print(line)
    return 0
