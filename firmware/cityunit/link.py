"""The console's byte links (stdio, a pty, a serial port) and the threads that serve them.

A reader thread turns bytes into lines and hands each to the loop thread; a writer
thread owns the output, so a slow or absent client can never stall the unit's light
and sound. On the real clock a full outbox drops lines (and says so); on the virtual
clock nothing is time-critical, so it waits instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import tty
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from cityunit.console import LineReader, Session
from cityunit.inbox import Input
from cityunit.runtime import Runtime

if TYPE_CHECKING:
    import serial

log = logging.getLogger(__name__)

OUTBOX = 4096


class Link(Protocol):
    def read(self) -> bytes:
        """Some bytes, blocking; b"" at the end."""
        ...

    def write(self, data: bytes) -> None: ...

    def close(self) -> None:
        """Release what it holds (idempotent)."""


class FdLink:
    """Two file descriptors: stdin/stdout (not ours to close), or a pty master."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd

    def close(self) -> None:
        """stdin and stdout stay open for whoever runs us."""

    def read(self) -> bytes:
        try:
            return os.read(self.read_fd, 4096)
        except OSError:
            return b""

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.write_fd, view) :]


class PtyLink(FdLink):
    """A pseudo-terminal: clients open `path` as they would a serial port."""

    def __init__(self) -> None:
        master, self._slave = os.openpty()
        tty.setraw(self._slave)  # no echo, no line editing: bytes as sent
        self.path = os.ttyname(self._slave)
        super().__init__(master, master)
        self._fds = [master, self._slave]

    def close(self) -> None:
        while self._fds:
            with contextlib.suppress(OSError):
                os.close(self._fds.pop())


class SerialLink:
    """A pyserial port (a Pi's UART or USB gadget, or loop:// in tests)."""

    def __init__(self, port: serial.Serial) -> None:
        self.port = port

    def read(self) -> bytes:
        return bytes(self.port.read(max(1, self.port.in_waiting)))

    def write(self, data: bytes) -> None:
        self.port.write(data)

    def close(self) -> None:
        self.port.close()


def open_serial(url: str, baudrate: int) -> SerialLink:
    import serial

    # A short write timeout: a host that stopped reading must not block the writer forever.
    return SerialLink(serial.serial_for_url(url, baudrate=baudrate, timeout=None, write_timeout=1))


class Served:
    """The protocol served on one link: a reader thread, a writer thread, one Session.

    Lines are sent in batches: all the events of one step, or a reply with the events
    before it, leave in one write. `close()` (or leaving `with`) sends what is queued
    (waiting a little), stops the writer and closes the link.
    """

    def __init__(
        self,
        runtime: Runtime,
        link: Link,
        simulator: bool,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.link = link
        self.on_end = on_end
        self._virtual = runtime.clock.virtual
        self._batch: list[str] = []
        self._outbox: queue.SimpleQueue[bytes | threading.Event | None] = queue.SimpleQueue()
        self._sent = 0  # lines handed to the writer (loop thread only)
        self._written = 0  # lines it wrote (writer thread only)
        self._dropped = 0
        self.closed = False
        self.session = Session(runtime, self._write, simulator)
        runtime.after_step.append(self._flush)
        self._out = threading.Thread(target=self._writer, name="console-out", daemon=True)
        self._out.start()
        threading.Thread(target=self._reader, name="console-in", daemon=True).start()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, timeout: float = 2.0) -> None:
        """Loop thread (or after it ended). Idempotent."""
        if self.closed:
            return
        self.closed = True
        self.flush(timeout)
        self.runtime.after_step.remove(self._flush)
        self.session.close()
        self._outbox.put(None)
        self._out.join(timeout)
        self.link.close()

    def _write(self, text: str) -> None:
        """Loop thread: queue one line; the batch leaves at the end of the loop's step."""
        self._batch.append(text)

    def _flush(self) -> None:
        if not self._batch:
            return
        lines, self._batch = self._batch, []
        if not self._virtual and self._sent - self._written > OUTBOX:
            self._dropped += len(lines)
            if self._dropped == len(lines):
                log.warning("console client is not reading: dropping lines")
            return
        if self._dropped:
            log.info("console client reading again after %d dropped lines", self._dropped)
            self._dropped = 0
        self._sent += len(lines)
        self._outbox.put(("\n".join(lines) + "\n").encode())

    def _writer(self) -> None:
        while True:
            data = self._outbox.get()
            if data is None:
                return
            if isinstance(data, threading.Event):
                data.set()
                continue
            try:
                self.link.write(data)
            except Exception as e:  # a client gone away must not stop the unit
                log.debug("console write failed: %s", e)
            self._written += data.count(b"\n")

    def _reader(self) -> None:
        lines = LineReader()
        while True:
            try:
                data = self.link.read()
            except Exception as e:
                log.error("console read failed: %s", e)
                data = b""
            if not data:
                break
            for line in lines.feed(data):
                self.runtime.inbox.put(
                    Input(self.runtime.clock.now_ms(), partial(self.session.receive, line))
                )
        if self.on_end is not None:
            self.runtime.call(self.on_end)

    def flush(self, timeout: float = 2.0) -> None:
        """Wait (a little) for the lines already written to leave, e.g. before exiting."""
        self._flush()
        written = threading.Event()
        self._outbox.put(written)
        written.wait(timeout)
