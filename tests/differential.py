"""The differential driver: the same console scripts through two cores, byte for byte.

A refactoring of the core must not change what a player or a tester sees. This makes
seeded random scripts of console lines (presses, holds, the switch, hours of virtual
time, settings, bad lines) and runs each through `cityunit sim --headless --clock virtual
--console stdio`, whose every reply and event line (LED levels, tones, screens' text,
times) is the unit's behaviour as the protocol shows it.

    python tests/differential.py diff [--ref REF] [--scripts N]   this tree against REF
    python tests/differential.py record [--ref REF]               REF's digests, for the suite

`diff` exports REF's firmware/ and sim/ with `git archive` and prints the first line
where a script's transcripts part. `record` writes REF's digest of each transcript to
tests/golden/differential.json, which tests/system/test_differential.py holds this tree to, so
the suite needs no git history.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "golden" / "differential.json"
BEFORE = "d5e5fcb"  # the core since issue 24 (a unit never yet ON says so); 051c428 before issue 21
SCRIPTS = 24
LINES = 160

SETTINGS = {
    "game_length": ["1h", "2h", "3h", "untimed", "4h"],
    "volume": ["off", "low", "medium", "high", "loud"],
    "auction": ["random", "fixed30", "fixed50", "fixed"],
    "odds": ["classic", "uniform", "builder", ""],
    "language": ["en", "fr", "de"],
    "show_clock": ["on", "off", "yes"],
}
BAD = [
    b"FOO", b"press auction", b"PRESS", b"PRESS BOTH", b"HOLD AUCTION", b"HOLD BUILD 0",
    b"HOLD BUILD 600001", b"ADVANCE -1", b"ADVANCE 1.5", b"SWITCH", b"SET volume",
    b"SET nothing 1", b"SEED x", b"EVENTS MAYBE", b"\xff\xfe PING", b"X" * 300,
]  # fmt: skip


def script(seed: int, lines: int = LINES) -> bytes:
    """Console lines drawn from `seed`: the same bytes on every machine and Python."""
    rng = random.Random(seed)
    out: list[bytes] = [b"EVENTS ON"] if rng.random() < 0.9 else []
    if rng.random() < 0.7:
        out.append(b"SWITCH ON")

    def advance() -> bytes:
        ms = rng.choice([0, 1, 40, 400, 1_500, 9_000, 30_000, 61_000, 600_000, 3_600_000])
        return b"ADVANCE %d" % (ms + rng.randrange(1_000) if ms else 0)

    def hold() -> bytes:
        ms = rng.choice([20, 300, 1_499, 1_500, 2_500, 6_000, 12_000])
        return b"HOLD %s %d" % (rng.choice([b"AUCTION", b"BUILD"]), ms)

    def setting() -> bytes:
        name = rng.choice(sorted(SETTINGS))
        return b"SET %s %s" % (name.encode(), rng.choice(SETTINGS[name]).encode())

    makers = [
        (lambda: b"PRESS AUCTION", 12), (lambda: b"PRESS BUILD", 12), (hold, 7),
        (lambda: rng.choice([b"SWITCH ON", b"SWITCH OFF"]), 3), (advance, 16),
        (lambda: b"STATE", 8), (lambda: b"SETTINGS", 1), (setting, 3),
        (lambda: b"SEED %d" % rng.randrange(100), 1), (lambda: b"RESET", 0.4),
        (lambda: rng.choice(BAD), 1.5), (lambda: b"PING", 0.5),
    ]  # fmt: skip
    makes, weights = zip(*makers, strict=True)
    while len(out) < lines:
        out.append(rng.choices(makes, weights)[0]())
    out.append(b"STATE")
    return b"".join(line + b"\n" for line in out)


def transcript(lines: bytes, tree: Path | None = None) -> bytes:
    """What the simulator answers to `lines`: this checkout's, or the one at `tree` (its
    firmware/ and sim/ put first on the path)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree / "firmware"), str(tree / "sim")])
    done = subprocess.run(
        [sys.executable, "-m", "cityunit", "sim", "--headless", "--clock", "virtual",
         "--console", "stdio", "--seed", "1"],
        input=lines, capture_output=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the simulator failed ({done.returncode}): {done.stderr.decode()}")
    return done.stdout


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def transcripts(seeds: range, tree: Path | None = None) -> dict[int, bytes]:
    """Every seed's transcript, two at a time (each is a process of its own)."""
    with ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda seed: transcript(script(seed), tree), seeds)
        return dict(zip(seeds, done, strict=True))


def exported(ref: str, into: Path) -> Path:
    """firmware/ and sim/ as they were at `ref`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "firmware", "sim"],
        capture_output=True, check=True,
    )  # fmt: skip
    with tempfile.TemporaryFile() as tar:
        tar.write(archive.stdout)
        tar.seek(0)
        with tarfile.open(fileobj=tar) as t:
            t.extractall(into, filter="data")
    return into


def first_difference(a: bytes, b: bytes) -> str:
    old, new = a.decode(errors="replace").splitlines(), b.decode(errors="replace").splitlines()
    for n, (x, y) in enumerate(zip(old, new, strict=False), 1):
        if x != y:
            return f"line {n}:\n  before: {x}\n  now:    {y}"
    return f"one ends first: {len(old)} lines before, {len(new)} now"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("diff", "record"))
    parser.add_argument("--ref", default=BEFORE, help=f"the core to compare with ({BEFORE})")
    parser.add_argument("--scripts", type=int, default=SCRIPTS)
    args = parser.parse_args(argv)
    seeds = range(args.scripts)
    with tempfile.TemporaryDirectory() as tmp:
        before = transcripts(seeds, exported(args.ref, Path(tmp)))
    if args.what == "record":
        RECORD.write_text(json.dumps({
            "ref": args.ref, "lines": LINES,
            "digests": {str(s): digest(t) for s, t in before.items()},
        }, indent=1) + "\n")  # fmt: skip
        print(f"{RECORD.relative_to(ROOT)}: {len(before)} transcripts of {args.ref}")
        return 0
    now = transcripts(seeds)
    parted = [s for s in seeds if before[s] != now[s]]
    for s in parted:
        print(f"script {s}: {first_difference(before[s], now[s])}")
    lines = sum(t.count(b"\n") for t in now.values())
    print(f"{len(seeds) - len(parted)} of {len(seeds)} scripts alike ({lines} lines) vs {args.ref}")
    return 1 if parted else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
