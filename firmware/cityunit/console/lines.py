"""A client's bytes as the protocol's lines: LF or CR LF ended, at most MAX_LINE bytes
(a longer one is dropped as it comes, never buffered whole), blank ones ignored."""

from __future__ import annotations

from collections.abc import Iterator

MAX_LINE = 256


class TooLong:
    """A line over MAX_LINE bytes; its bytes were dropped."""

    __slots__ = ()


class LineReader:
    """Bytes in, whole lines out; a line over 256 bytes is dropped, never buffered whole."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self._overflow = False

    def feed(self, data: bytes) -> Iterator[bytes | TooLong]:
        """The lines `data` completes, without their LF or CR LF; a partial line waits for
        the next bytes."""
        self._buf += data
        while True:
            end = self._buf.find(b"\n")
            if end < 0:
                if len(self._buf) > MAX_LINE + 1:  # room for the \r of a CRLF still to come
                    self._overflow = True
                    del self._buf[:]
                return
            line = bytes(self._buf[:end])
            del self._buf[: end + 1]
            if line.endswith(b"\r"):
                line = line[:-1]
            if self._overflow or len(line) > MAX_LINE:
                self._overflow = False
                yield TooLong()
            else:
                yield line


def blank(line: bytes | TooLong) -> bool:
    """A line of nothing but ASCII spaces and tabs: ignored, with no reply."""
    return isinstance(line, bytes) and not line.strip(b" \t")
