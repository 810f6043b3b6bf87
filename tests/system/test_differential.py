"""The core as it was before issue 21 reshaped it, and this one, say the same things.

tests/differential.py runs seeded console scripts through the simulator; the digests of
what the core before the refactoring answered are recorded (`differential.py record`),
so this holds the tree to them without needing git history. When behaviour changes on
purpose, record the digests again from the commit that changes it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import differential

RECORD = json.loads(differential.RECORD.read_text())


def test_every_script_answers_as_the_core_before_did() -> None:
    seeds = range(len(RECORD["digests"]))
    now = differential.transcripts(seeds)
    parted = [s for s in seeds if differential.digest(now[s]) != RECORD["digests"][str(s)]]
    assert not parted, (
        f"scripts {parted} answer otherwise than {RECORD['ref']} did; see where with "
        f"`python tests/differential.py diff --ref {RECORD['ref']}`"
    )
    assert sum(t.count(b"\n") for t in now.values()) > 10_000, "scripts long enough to say much"


def test_the_driver_sees_a_change_a_player_would_hear(tmp_path: Path) -> None:
    """A tree whose permit draw sounds one frame longer must not pass for this one."""
    for part in ("firmware", "sim"):
        shutil.copytree(differential.ROOT / part, tmp_path / part)
    sounds = tmp_path / "firmware" / "cityunit" / "core" / "sounds.py"
    sounds.write_text(sounds.read_text().replace("DRAW_MS = 800", "DRAW_MS = 900"))
    lines = differential.script(0)
    assert differential.transcript(lines, tmp_path) != differential.transcript(lines)
