"""The game's state on disk: written whole or not at all, and never from the loop.

A save is temp file, fsync, rename, fsync of the directory (as PiKVM does), so a crash,
a `kill -9` or a pulled plug leaves the old state or the new one, never half of each.
Saves run on their own thread, the latest snapshot winning, because an fsync on an SD
card can take tens of milliseconds and the LED must not wait for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import shutil
import stat
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path

from cityunit import files
from cityunit.core.saved import SavedGame

log = logging.getLogger(__name__)

VERSION = 1
FILENAME = "state.json"
ASIDE = f"{FILENAME}.bad"  # an unusable state file, kept for a person to look at
LOCK = ".lock"  # held by the one process that keeps its game in the directory
MAX_BYTES = 64 * 1024  # a saved game is under 2 KiB


class Busy(Exception):
    """Another process keeps its game in this directory: two writers would undo each other."""


class Unusable(Exception):
    """A state file that cannot be the game's, with the reason."""


def save_atomic(path: Path, data: bytes) -> None:
    """The temp file's name is unique and created exclusively, never through a link planted
    in its place (mkstemp: O_EXCL | O_NOFOLLOW), so two writers cannot share it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        try:
            os.fchmod(fd, 0o644)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException:  # a full disk, state.json a directory: no temp file left over
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


_COMPACT = json.JSONEncoder(separators=(",", ":")).encode  # made once: every 5 s of play


def encode(game: SavedGame) -> bytes:
    """A game as the file's bytes: compact JSON, the format's `version` first."""
    return _COMPACT({"version": VERSION, **game.as_json()}).encode()


def read(path: Path) -> SavedGame | None:
    """The saved state, None if there is none; Unusable if it cannot be the game's. The
    file is bounded like the config (a regular file, not a link, at most MAX_BYTES)."""
    try:
        return decode(files.read(path, MAX_BYTES, follow=False))
    except files.Refused as e:
        if e.missing:
            return None
        raise Unusable(e) from None


def decode(data: bytes) -> SavedGame:
    """A saved game's bytes as its state, or Unusable: JSON nested past what a state
    needs is refused, not recursed into."""
    try:
        state = json.loads(files.text(data))
    except files.Refused as e:
        raise Unusable(e) from None
    except RecursionError:
        raise Unusable("nested too deep") from None
    except ValueError as e:  # JSON's errors, and its limit on a number's digits
        raise Unusable(f"not the JSON of a saved game ({str(e)[:80]})") from None
    version = state.get("version") if isinstance(state, dict) else None
    game = SavedGame.from_json(state) if type(version) is int and version == VERSION else None
    if game is None:  # (not true, nor 1.0)
        raise Unusable("saved state of an unknown form")
    return game


def load(path: Path) -> SavedGame | None:
    """The saved state, or None (with one clear log line) if it is missing or unusable."""
    try:
        return read(path)
    except Unusable as e:
        log.warning("%s: %s; starting afresh", path, e)
        return None


def set_aside(path: Path) -> str:
    """`path`, whatever it is (a file, a link, a FIFO, a directory), renamed to its name
    and .bad for a person to look at, an older .bad replaced: the unit's own files never
    stay blocked by something planted in their place. What became of it, in words."""
    aside = path.with_name(f"{path.name}.bad")
    try:
        if aside.is_dir() and not aside.is_symlink():
            shutil.rmtree(aside)
        else:
            aside.unlink(missing_ok=True)
        os.replace(path, aside)
    except OSError as e:
        return f"not set aside: {e.strerror or e}"
    return f"set aside as {aside.name}"


def _lock(directory: Path) -> int | None:
    """The directory's lock, held until its descriptor closes (a kill -9 closes it too);
    Busy if another process holds it. Anything but a regular file planted in its place
    (a link, a FIFO, a device, a directory) is set aside unopened, as an unusable state
    file is. A lock that cannot be taken for another reason (a read-only card) is logged:
    the unit plays on, and each failed save says why."""
    path = directory / LOCK
    try:
        with contextlib.suppress(FileNotFoundError):
            if not stat.S_ISREG(path.lstat().st_mode):
                log.warning("%s: not a regular file; %s", path, set_aside(path))
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path, flags, 0o644)
    except OSError as e:
        log.error("%s: cannot lock the state directory: %s", directory, e.strerror or e)
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped in since the look
        os.close(fd)
        log.error("%s: cannot lock the state directory: %s is not a regular file", directory, LOCK)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.read(fd, 16).decode(errors="replace").strip()
        os.close(fd)
        raise Busy(
            f"{directory}: another cityunit (process {holder or '?'}) keeps its game here;"
            " stop it, or give this one a state.dir of its own"
        ) from None
    try:  # the holder's pid, for the message above: the lock holds without it
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as e:
        log.warning("%s: the lock holds, without this process's id in it: %s", path,
                    e.strerror or e)  # fmt: skip
    return fd


class Latest:
    """A thread of its own that writes what it is handed, the latest winning: `write(data)`
    runs there; a write (two fsyncs on a card) never holds the loop up. `flush` waits for
    what was handed over; `close` lets the last be written, then ends the thread."""

    def __init__(self, write: Callable[[bytes], None], name: str) -> None:
        self._write = write
        self._cond = threading.Condition()
        self._pending: bytes | None = None
        self._busy = self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def hand(self, data: bytes) -> None:
        with self._cond:
            self._pending = data
            self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not None or self._closed)
                data, self._pending = self._pending, None
                self._busy = data is not None
            if data is None:
                return
            self._write(data)
            with self._cond:
                self._busy = False
                self._cond.notify_all()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until what was handed over is written (or has failed)."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is None and not self._busy, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """The last handed over is written, then the thread ends. Idempotent."""
        self.flush(timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)


class Saver:
    """Owns `dir/state.json`: locks the directory, reads the game back, and writes
    snapshots on a thread of its own, the latest one winning. With no directory (a
    simulator's without `state.dir`), the game is kept in memory instead, for as long as
    the process lives: a simulated power cut resumes from it as a Pi does from its card.

    A save that fails is said once (`trouble`, the log, `on_trouble`); whoever hands the
    snapshots over hands one again until a save works. Unthreaded (a virtual clock's), a
    save is written in its turn: time stands still meanwhile, and its outcome is known
    when `save` returns."""

    def __init__(
        self,
        directory: Path | None,
        threaded: bool = True,
        check: Callable[[], None] = lambda: None,
    ) -> None:
        """`check` runs before each write: a simulator's card, broken on purpose, raises
        the OSError a real one does there."""
        self.path = None if directory is None else directory / FILENAME
        self.threaded = threaded
        self._check = check
        self._lock = None if directory is None else _lock(directory)
        locked = directory if self._lock is not None else None
        stale = locked.glob(f".{FILENAME}.*.tmp") if locked is not None else ()
        for temp in stale:  # a killed writer's, and only ours to clear once we hold the lock
            with contextlib.suppress(OSError):
                temp.unlink()
        self.trouble: str | None = None  # why the last save failed; None once one works
        self.on_trouble: Callable[[], None] = lambda: None  # told when `trouble` changes
        self._kept: bytes | None = None  # the game, with no directory to keep it in
        self.closed = False
        self._writer = Latest(self._written, "state-saver") if threaded else None

    def forget_trouble(self) -> None:
        """As a new process: a save that fails from now on is news again."""
        self.trouble = None

    @property
    def where(self) -> str:
        return "(in memory)" if self.path is None else str(self.path)

    def restore(self) -> SavedGame | None:
        """The saved game, or None; an unusable file is set aside (renamed to ASIDE, for a
        person to look at), so the next save starts a good one and the next start is clean."""
        if self.path is None:
            return None if self._kept is None else decode(self._kept)
        try:
            return read(self.path)
        except Unusable as e:
            log.warning("%s: %s; starting afresh (%s)", self.path, e, set_aside(self.path))
            return None

    def save(self, game: SavedGame) -> None:
        """Hand a game over and return at once (unthreaded: once it is written)."""
        data = encode(game)
        if self.closed:
            log.error("%s: a game handed over after the saver closed, not saved", self.where)
        elif self._writer is None:
            self._written(data)
        else:
            self._writer.hand(data)

    def _written(self, data: bytes) -> None:
        """One snapshot written, or the reason it could not be, said when it changes."""
        try:
            self._check()
            if self.path is None:
                self._kept = data
            else:
                save_atomic(self.path, data)
            trouble = None
        except OSError as e:
            trouble = e.strerror or str(e)
        if trouble == self.trouble:
            return
        if trouble is None:
            log.info("%s: the game's state is saved again", self.where)
        else:
            log.error("%s: cannot save the game's state: %s", self.where, trouble)
        self.trouble = trouble
        self.on_trouble()

    def flush(self, timeout: float = 5.0) -> bool:
        """Wait until every snapshot handed over is written (or has failed)."""
        return self._writer is None or self._writer.flush(timeout)

    def __enter__(self) -> Saver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, timeout: float = 5.0) -> None:
        """Every snapshot handed over is written, then the thread ends. Idempotent."""
        if self.closed:
            return
        self.closed = True
        if self._writer is not None:
            self._writer.close(timeout)
        if self.trouble is not None:  # the last word in the journal, for the next start
            log.error("%s: the game as it stood at the stop is not saved", self.where)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None
