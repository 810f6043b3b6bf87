"""Reading a file that a person, or a stranger, put there: the config, the saved game.

One reader, so each refuses the same things the same way, in a few words the caller puts
after the file's name: anything but a regular file before it is opened (a FIFO would
wait for a writer, /dev/zero never ends, opening a watchdog starts it), more than a
limit, bytes that are not UTF-8 text, and for a file the unit itself writes, a symbolic
link planted in its place. Only the standard library: the installer loads this module
with the system's Python, before cityunit is installed.
"""

from __future__ import annotations

import codecs
import errno
import os
import stat
from pathlib import Path

KINDS = {stat.S_IFDIR: "a directory", stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket",
         stat.S_IFLNK: "a symbolic link"}  # fmt: skip


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
