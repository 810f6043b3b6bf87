"""The console's byte links (stdio, a pty, a serial port) and the threads that serve them.

A reader thread turns bytes into lines and hands each to the loop thread; a writer
thread owns the output, so a slow or absent client can never stall the unit's light
and sound. On the real clock a full outbox drops lines (and says so); on the virtual
clock nothing is time-critical, so it waits instead.
"""

from __future__ import annotations

import logging
import os
import queue
import threading
import time
import tty
from collections.abc import Callable
from typing import Protocol

from cityunit.console import LineReader, Session
from cityunit.runtime import Runtime

log = logging.getLogger(__name__)

OUTBOX = 4096


class Link(Protocol):
    def read(self) -> bytes:
        """Some bytes, blocking; b"" at the end."""
        ...

    def write(self, data: bytes) -> None: ...


class FdLink:
    """Two file descriptors: stdin/stdout, or a pty master."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd

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


class SerialLink:
    """A pyserial port (a Pi's UART or USB gadget, or loop:// in tests)."""

    def __init__(self, port) -> None:
        self.port = port

    def read(self) -> bytes:
        return self.port.read(max(1, self.port.in_waiting))

    def write(self, data: bytes) -> None:
        self.port.write(data)


def open_serial(url: str, baudrate: int) -> SerialLink:
    import serial

    # A short write timeout: a host that stopped reading must not block the writer forever.
    return SerialLink(serial.serial_for_url(url, baudrate=baudrate, timeout=None, write_timeout=1))


class Served:
    """The protocol served on one link: a reader thread, a writer thread, one Session."""

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
        self._block = runtime.clock.virtual
        self._outbox: queue.Queue[bytes] = queue.Queue(maxsize=OUTBOX)
        self._dropped = 0
        self.session = Session(runtime, self._write, simulator)
        threading.Thread(target=self._writer, name="console-out", daemon=True).start()
        threading.Thread(target=self._reader, name="console-in", daemon=True).start()

    def _write(self, text: str) -> None:
        try:
            self._outbox.put((text + "\n").encode(), block=self._block)
        except queue.Full:
            self._dropped += 1
            if self._dropped == 1:
                log.warning("console client is not reading: dropping lines")
            return
        if self._dropped:
            log.info("console client reading again after %d dropped lines", self._dropped)
            self._dropped = 0

    def _writer(self) -> None:
        while True:
            data = self._outbox.get()
            try:
                self.link.write(data)
            except Exception as e:  # a client gone away must not stop the unit
                log.debug("console write failed: %s", e)
            finally:
                self._outbox.task_done()

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
                self.runtime.call(lambda line=line: self.session.receive(line))
        if self.on_end is not None:
            self.runtime.call(self.on_end)

    def flush(self, timeout: float = 2.0) -> None:
        """Wait (a little) for the lines already written to leave, e.g. before exiting."""
        end = time.monotonic() + timeout
        with self._outbox.all_tasks_done:
            while self._outbox.unfinished_tasks and (left := end - time.monotonic()) > 0:
                self._outbox.all_tasks_done.wait(left)
