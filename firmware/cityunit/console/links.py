"""The console's byte links: stdio, a pty, a serial port. Each moves bytes and says when
a client left (`HungUp`); what the bytes mean, and the threads that serve a link, are
`server.py`'s. A pty client that hangs up leaves nothing for the next one: the replies it
did not read are discarded.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import termios
import threading
import tty
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import serial

log = logging.getLogger(__name__)


class HungUp(Exception):
    """The client went away (a pty's other end closed); the link waits for the next."""


class Link(Protocol):
    """What server.py serves the console over: FdLink, PtyLink or SerialLink."""

    def read(self) -> bytes:
        """Some bytes, blocking; b"" at the end; HungUp when a client left."""
        ...

    def write(self, data: bytes, client: int) -> None:
        """All of `data`, for the `client`-th client since the start (one more after each
        hang-up), blocking; HungUp if that client left."""

    def hangup_fd(self) -> int | None:
        """A descriptor whose poll reports POLLHUP once the client has left, for a reader
        holding off to wait on; None where a link cannot tell."""
        ...

    def hang_up(self) -> None:
        """After the client left: discard what is left both ways, and wait for the next client."""

    def close(self) -> None:
        """Release what it holds (idempotent)."""


class FdLink:
    """Two file descriptors: stdin/stdout (not ours to close). A read waits on the input
    and on a pipe of the link's own, so that closing the link ends a read still waiting
    (the server joins its reader). A read already inside os.read of a blocking descriptor
    that another process shares cannot be woken: close() then leaves it, and its pipe."""

    def __init__(self, read_fd: int, write_fd: int) -> None:
        self.read_fd, self.write_fd = read_fd, write_fd
        self._wake, self._waker = os.pipe()
        self._reading = threading.Condition()
        self._readers = 0
        self.closed = False

    def close(self) -> None:
        """A read under way is woken and given up to 1 s to leave, then the link's pipe
        closes; stdin and stdout stay open for whoever runs us. Idempotent."""
        if self.closed:
            return
        with self._reading:
            self.closed = True
            os.write(self._waker, b"\0")
            if self._reading.wait_for(lambda: self._readers == 0, timeout=1.0):
                os.close(self._wake)
                os.close(self._waker)

    def read(self) -> bytes:
        """Blocking, even on a descriptor a parent left non-blocking; b"" at the end of
        input, on an error, or once closed."""
        with self._reading:
            if self.closed:
                return b""
            self._readers += 1
        try:
            while True:
                try:
                    ready, _, _ = select.select([self.read_fd, self._wake], [], [])
                    return b"" if self._wake in ready else os.read(self.read_fd, 4096)
                except BlockingIOError:
                    continue  # (another reader of a shared descriptor took it first)
                except OSError:
                    return b""
        finally:
            with self._reading:
                self._readers -= 1
                self._reading.notify_all()

    def write(self, data: bytes, client: int) -> None:
        """All of `data`, waiting for room if stdout is non-blocking; stdio has one client."""
        view = memoryview(data)
        while view:
            try:
                view = view[os.write(self.write_fd, view) :]
            except BlockingIOError:
                select.select([], [self.write_fd], [])

    def hangup_fd(self) -> int | None:
        """None: the end of stdin is the end of input, not a client leaving."""
        return None

    def hang_up(self) -> None:
        """Nothing to discard: this link cannot tell a client left."""


class PtyLink:
    """A pseudo-terminal: clients open `path` as they would a serial port, one after another.

    While no client is there, the link holds the pty's other end itself, so that reading
    waits instead of failing. Once a client writes, the link lets go of it: when the
    client closes the pty, reading fails with EIO, which is how its leaving is seen.
    """

    def __init__(self) -> None:
        self._master, slave = os.openpty()
        tty.setraw(slave)  # no echo, no line editing: bytes as sent
        self.path = os.ttyname(slave)
        self._held: int | None = slave
        os.set_blocking(self._master, False)
        self._wake, self._waker = os.pipe()  # close() wakes a read waiting in select
        self.connected = False  # a client is there (it wrote), so output goes to it
        self.generation = 0  # which client: one more at each hang-up
        self.closed = False
        self._lock = threading.Lock()  # a write never lands between a hang-up and its flush
        self._reading = threading.Condition()  # close() waits for a read to leave the fds
        self._readers = 0

    def read(self) -> bytes:
        """Some bytes, blocking; b"" once closed (or on an error but EIO); HungUp when the
        client closed the pty (EIO). A client's first bytes make it the one replies go to."""
        with self._reading:
            if self.closed:
                return b""
            self._readers += 1
        try:
            return self._read()
        finally:
            with self._reading:
                self._readers -= 1
                self._reading.notify_all()

    def _read(self) -> bytes:
        while True:
            with contextlib.suppress(InterruptedError):
                select.select([self._master, self._wake], [], [])
            if self.closed:
                return b""
            try:
                data = os.read(self._master, 4096)
            except BlockingIOError:
                continue
            except OSError as e:
                if e.errno != errno.EIO:
                    return b""
                self.hang_up(read_all=True)
                raise HungUp from None
            if data and not self.connected:
                self.connected = True
                self._let_go()
            return data

    def hangup_fd(self) -> int | None:
        """The pty's master while a client is there: the link holds no other end then,
        so a POLLHUP is the client's closing."""
        return self._master if self.connected else None

    def hang_up(self, *, read_all: bool = False) -> None:
        """The client left: what it did not read is discarded, and what it sent that was
        not read yet (unless `read_all`); hold the pty for the next client. Reading sees
        EIO only once all the old client sent is read (`read_all`): what waits then is the
        next client's first line, which must stay."""
        # termios.error is no OSError. A link closed meanwhile (a read that outlived
        # close()'s wait, on a loaded machine) has no descriptors left to flush: their
        # numbers may be another file's by now.
        with self._lock, contextlib.suppress(OSError, termios.error):
            if self.closed:
                return
            self.connected = False
            self.generation += 1
            ends = termios.TCOFLUSH if read_all else termios.TCIOFLUSH
            termios.tcflush(self._master, ends)  # at this end
            self._held = os.open(self.path, os.O_RDWR | os.O_NOCTTY)
            termios.tcflush(self._held, termios.TCIFLUSH)  # and what reached it, unread

    def _let_go(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            os.close(held)

    def write(self, data: bytes, client: int) -> None:
        """All of `data`, waiting while the pty is full; HungUp if `client` is not the one
        connected now (none is, or a later one), or if it leaves while the pty is full."""
        view = memoryview(data)
        while view:
            try:
                with self._lock:  # closing takes it too: never a write to a closed fd
                    if self.closed or not self.connected or self.generation != client:
                        raise HungUp  # nobody to read it, or someone else
                    view = view[os.write(self._master, view) :]
            except BlockingIOError:  # the client is not reading: wait for room, or its leaving
                self._wait_for_room()
            except OSError:
                raise HungUp from None

    def _wait_for_room(self) -> None:
        """Until the pty takes more output; HungUp if the client leaves (POLLHUP) or the
        link closes meanwhile."""
        poller = select.poll()
        poller.register(self._master, select.POLLOUT)
        poller.register(self._wake, select.POLLIN)
        events = dict(poller.poll())  # a signal does not cut it short (PEP 475)
        if self.closed or events.get(self._master, 0) & (select.POLLHUP | select.POLLERR):
            raise HungUp

    def close(self) -> None:
        """A read under way is woken, and given up to 1 s to leave before the pty's
        descriptors close. Idempotent."""
        if self.closed:
            return
        with self._reading:  # no read starts now; one under way is woken and left
            self.closed = True
            os.write(self._waker, b"\0")
            self._reading.wait_for(lambda: self._readers == 0, timeout=1.0)
        with self._lock:  # a write under way has left; none starts (it sees `closed`)
            self._let_go()
            for fd in (self._master, self._wake, self._waker):
                os.close(fd)


class SerialLink:
    """A pyserial port (a Pi's UART or USB gadget, or loop:// in tests). A serial line
    does not say when a client leaves: a new client may find a partial line waiting, which
    one newline clears (an empty line gets no reply)."""

    def __init__(self, port: serial.Serial) -> None:
        self.port = port
        self._closed = threading.Event()

    def read(self) -> bytes:
        """Some bytes, blocking; b"" once closed. A port lost (a USB host gone) is opened
        again, tried each second until it is back: then HungUp."""
        import serial

        try:
            return bytes(self.port.read(max(1, self.port.in_waiting)))
        except (serial.SerialException, OSError) as e:  # hung up (a USB host gone)
            if self._closed.is_set():
                return b""
            log.warning("console port lost (%s): opening it again when it is back", e)
        while not self._closed.is_set():
            try:
                self.port.close()
                self.port.open()
            except (serial.SerialException, OSError):
                self._closed.wait(1.0)  # until the device is back, or the link closes
                continue
            log.info("console port back")
            raise HungUp
        return b""

    def write(self, data: bytes, client: int) -> None:
        """All of `data`; `client` is not looked at: a serial line has no hang-ups to count."""
        self.port.write(data)  # blocks while the host does not read: the reader then waits

    def hangup_fd(self) -> int | None:
        """None: a serial line does not say when a client leaves."""
        return None

    def hang_up(self) -> None:
        """Nothing to discard: this link cannot tell a client left."""

    def close(self) -> None:
        """A blocked read or write returns, a lost port is no longer waited for, and the
        port closes."""
        self._closed.set()
        for cancel in ("cancel_write", "cancel_read"):  # a blocked write or read returns
            with contextlib.suppress(Exception):
                getattr(self.port, cancel)()
        self.port.close()


def said_once(error: BaseException) -> str:
    """What went wrong opening a port, said once: pyserial puts the OSError it met in its
    own words ("could not open port X: [Errno 2] No such file or directory: 'X'"), which
    a caller naming the port would repeat; the system's words are enough."""
    cause = error.__context__ if isinstance(error.__context__, OSError) else error
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror
    return str(error)


def open_serial(url: str, baudrate: int) -> SerialLink:
    """A port's name or any pyserial URL, with no timeouts: reads and writes block."""
    import serial

    return SerialLink(
        serial.serial_for_url(url, baudrate=baudrate, timeout=None, write_timeout=None)
    )
