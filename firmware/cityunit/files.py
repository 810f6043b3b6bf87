"""Reading a file that a person, or a stranger, put there: the config, the saved game.

One reader, so each refuses the same things the same way, in a few words the caller puts
after the file's name: anything but a regular file before it is opened (a FIFO would
wait for a writer, /dev/zero never ends, opening a watchdog starts it), more than a
limit, bytes that are not UTF-8 text, and for a file the unit itself writes, a symbolic
link planted in its place; and for TOML (the config, read by the unit and by the
installer alike), what would not parse, or would parse too deep or too slowly. Only the
standard library: the installer loads this module with the system's Python, before
cityunit is installed.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import stat
import tomllib
from pathlib import Path
from typing import Any

KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket",
         stat.S_IFLNK: "a symbolic link"}  # fmt: skip
MAX_DEPTH = 8  # TOML's tables and arrays; a config needs 3 (file, section, permit.odds)
# A key of MAX_DEPTH dots or more: tomllib's time grows with the square of its parts
# (a second for the 32,000 that fit in 64 KiB), and it would be too deep anyway. Found
# wherever a key can start: a line, a [table] or [[array]] header, an inline table.
KEY_PART = r"""(?:[A-Za-z0-9_-]+|"(?:[^"\\\n]|\\.)*"|'[^'\n]*')[ \t]*\.[ \t]*"""
# One run of blanks at each place (two in a row would try every split: a line of 64 KiB
# of spaces took 85 s).
KEY_START = r"(?:^[ \t]*(?:\[\[?[ \t]*)?|[{,][ \t]*)"
DOTTED_KEY = re.compile(rf"{KEY_START}(?:{KEY_PART}){{{MAX_DEPTH}}}", re.MULTILINE)


class Refused(Exception):
    """Why a file was not read, e.g. 'is a FIFO, not a regular file'."""

    def __init__(self, reason: str, missing: bool = False) -> None:
        super().__init__(reason)
        self.missing = missing  # there is no such file


def _regular(mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise Refused(f"is {KINDS.get(stat.S_IFMT(mode), 'a special file')}, not a regular file")


def read(path: Path, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of a regular file of at most `limit` bytes. With `follow` false a symbolic
    link is refused, not followed. O_NONBLOCK and a second look at the open file cover a
    file swapped in between the two."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
    try:
        _regular(path.stat().st_mode if follow else path.lstat().st_mode)
        fd = os.open(path, flags | (0 if follow else os.O_NOFOLLOW))
        with open(fd, "rb") as f:
            _regular(os.fstat(fd).st_mode)
            raw = f.read(limit + 1)
    except ValueError:  # a NUL in the name, which no file has
        raise Refused("cannot read: a NUL in its name") from None
    except OSError as e:
        if e.errno == errno.ELOOP and not follow:
            raise Refused("is a symbolic link, not a regular file") from None
        missing = e.errno == errno.ENOENT
        raise Refused(f"cannot read: {e.strerror or e}", missing) from None
    if len(raw) > limit:
        raise Refused(f"larger than {limit // 1024} KiB")
    return raw


def text(raw: bytes) -> str:
    """UTF-8 text, refused with the first bad byte's place. A byte-order mark is refused,
    not skipped: other readers of the same file (the installer's tomllib) choke on it."""
    if raw.startswith(codecs.BOM_UTF8):
        raise Refused("starts with a UTF-8 byte-order mark: save it without one")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise Refused(f"not UTF-8 text (byte {e.start})") from None


def toml(path: Path, limit: int) -> dict[str, Any]:
    """The TOML tables of a file read as `read` and `text` read it, refused also where
    they would not parse, nest past MAX_DEPTH, or take time in the square of a key."""
    return toml_of(read(path, limit))


def toml_of(raw: bytes) -> dict[str, Any]:
    """The TOML tables of bytes already read, refused as `toml` refuses a file's."""
    source = text(raw)
    data: dict[str, Any] | None = None  # None: deeper than tomllib's recursion goes
    try:
        data = None if DOTTED_KEY.search(source) else tomllib.loads(source)
    except tomllib.TOMLDecodeError as e:
        raise Refused(f"invalid TOML: {e}") from None
    except ValueError:  # Python's limit on decimal digits (4300), which tomllib hits
        raise Refused("invalid TOML: a number too long to read") from None
    except RecursionError:
        pass
    if data is None or _too_deep(data):
        raise Refused(f"nested too deep: at most {MAX_DEPTH} levels of tables and arrays")
    return data


def _too_deep(data: Any) -> bool:
    """Whether tables and arrays nest past MAX_DEPTH (a loop, not recursion)."""
    todo = [(data, 1)]
    while todo:
        item, depth = todo.pop()
        if isinstance(item, dict | list):
            if depth > MAX_DEPTH:
                return True
            todo += [(v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return False
