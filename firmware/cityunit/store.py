"""The game's state on disk: written whole or not at all, and never from the loop.

A save is temp file, fsync, rename, fsync of the directory (as PiKVM does), so a crash,
a `kill -9` or a pulled plug leaves the old state or the new one, never half of each.
Saves run on their own thread, the latest snapshot winning, because an fsync on an SD
card can take tens of milliseconds and the LED must not wait for it.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from pathlib import Path
from typing import Any

from cityunit.permit import Permit

log = logging.getLogger(__name__)
PERMIT_VALUES = [p.value for p in Permit]

VERSION = 1
FILENAME = "state.json"


def save_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


def encode(state: dict[str, Any]) -> bytes:
    return json.dumps({"version": VERSION, **state}, separators=(",", ":")).encode()


def load(path: Path) -> dict[str, Any] | None:
    """The saved state, or None (with one clear log line) if it is missing or unusable."""
    try:
        data = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        log.warning("%s: unreadable saved state (%s); starting afresh", path, e)
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION or not _valid(data):
        log.warning("%s: saved state of an unknown form; starting afresh", path)
        return None
    return data


def _valid(data: dict[str, Any]) -> bool:
    def whole(key: str, lo: int, hi: int) -> bool:
        value = data.get(key)
        return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi

    def names(key: str) -> bool:  # optional: {setting name: choice}, all strings
        table = data.get(key, {})
        return isinstance(table, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items()
        )

    history = data.get("history")
    return (
        names("settings")
        and names("config")
        and isinstance(data.get("power"), bool)
        and isinstance(data.get("paused"), bool)
        and whole("hour", 0, 1_000_000)
        and whole("session_hours", 0, 1_000_000)
        and whole("hour_elapsed_ms", 0, 3_600_000)
        and isinstance(history, list)
        and all(p in PERMIT_VALUES for p in history)
    )


class Saver:
    """Writes snapshots to `dir/state.json` on a thread of its own; the latest one wins."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / FILENAME
        self._cond = threading.Condition()
        self._pending: bytes | None = None
        self._busy = False
        self.closed = False
        self._thread = threading.Thread(target=self._run, name="state-saver", daemon=True)
        self._thread.start()

    def save(self, state: dict[str, Any]) -> None:
        """Hand a snapshot over and return at once."""
        data = encode(state)
        with self._cond:
            self._pending = data
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self.closed:
                    self._cond.wait()
                if self._pending is None:
                    return
                data, self._pending = self._pending, None
                self._busy = True
            try:
                save_atomic(self.path, data)
            except OSError as e:
                log.error("%s: cannot save the game's state: %s", self.path, e.strerror or e)
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every snapshot handed over is on disk."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy, timeout)

    def __enter__(self) -> Saver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, timeout: float = 5.0) -> None:
        """Every snapshot handed over is written, then the thread ends. Idempotent."""
        self.flush(timeout)
        with self._cond:
            self.closed = True
            self._cond.notify_all()
        self._thread.join(timeout)
