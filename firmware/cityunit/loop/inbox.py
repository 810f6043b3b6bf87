"""The loop's inbox, and the signals that stop it.

Only the standard library here: `cityunit run` installs its SIGTERM handler from this
module before it imports anything heavy (gpiozero, luma, Pillow take about 0.1 s to
import on a desktop, and far longer on a Pi Zero), and a signal caught earlier still (by
cityunit/__main__.py) is handed over, so a signal during start-up is a clean stop, never
a kill.
"""

from __future__ import annotations

import contextlib
import os
import queue
import select
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from cityunit.core.values import Value


class Input(Value):
    """Something that happened at `t` (a contact edge, a console line), to be handled as
    of then: `act(t, present)`, where `present` is the loop's time as it handles it."""

    __slots__ = ("act", "t")
    t: Final[int]
    act: Final[Callable[[int, int], None]]

    def __init__(self, t: int, act: Callable[[int, int], None]) -> None:
        self.t, self.act = t, act


class Stop(Value):
    """Stop the loop: asked at `t` (a signal, the window closing, the end of input)."""

    __slots__ = ("t",)
    t: Final[int]

    def __init__(self, t: int) -> None:
        self.t = t


class Reload(Value):
    """Read the config file again (SIGHUP: `systemctl reload cityunit`)."""

    __slots__ = ()


Work = Input | Stop | Reload | Callable[[], object]  # work for the loop: what it returns is dropped


class Inbox:
    """Work for the loop thread, and the one thing the loop sleeps on.

    A SimpleQueue (whose put is safe even from a signal handler) plus a pipe that wakes
    the loop's select. Signals write to the same pipe (signal.set_wakeup_fd): a SIGTERM
    landing just before the loop goes to sleep still wakes it, which a plain blocking
    queue.get cannot promise. Only a loop going to sleep needs waking: while it works,
    items go in without a system call.
    """

    def __init__(self) -> None:
        self._items: queue.SimpleQueue[Work] = queue.SimpleQueue()
        self._read, self.wake_fd = os.pipe()
        for fd in (self._read, self.wake_fd):
            os.set_blocking(fd, False)
        self.closed = False
        self._sleepy = False  # the loop found nothing and is going to sleep
        # A stop signal came: whoever waits on a client (the console's last lines) gives
        # up. A plain flag, set by the handler: an Event's lock, taken again by a second
        # signal landing inside the first handler, would hang the process for good.
        self.signalled = False
        self._watchers: list[queue.SimpleQueue[bool]] = []  # see `when_signalled`

    def put(self, item: Work) -> None:
        """From any thread, or a signal handler; a write to the pipe only if the loop is
        going to sleep."""
        self._items.put(item)
        if self._sleepy:
            with contextlib.suppress(BlockingIOError, OSError):  # full: awake already; closed
                os.write(self.wake_fd, b"\0")

    def get(self, timeout: float | None) -> Work | None:
        """The next item, waiting up to `timeout` s (None: for ever); None if none came."""
        with contextlib.suppress(queue.Empty):
            return self._items.get_nowait()
        self._sleepy = True
        try:
            with contextlib.suppress(queue.Empty):  # put just before it could see `_sleepy`
                return self._items.get_nowait()
            select.select([self._read], [], [], timeout)
            with contextlib.suppress(BlockingIOError):
                while os.read(self._read, 512):
                    pass
        finally:
            self._sleepy = False
        with contextlib.suppress(queue.Empty):
            return self._items.get_nowait()
        return None

    def signal(self) -> None:
        """A stop signal came (from its handler): set the flag, and tell each
        `when_signalled`."""
        self.signalled = True
        for watcher in tuple(self._watchers):
            watcher.put(True)  # a SimpleQueue's put, safe to re-enter

    @contextlib.contextmanager
    def when_signalled(self, wake: Callable[[], None]) -> Iterator[None]:
        """While inside, `wake()` is called once a stop signal comes, so a thread that
        waits on a condition (a slow client) can stop waiting without polling the flag.
        It runs on a thread of its own, where taking a lock is safe: a signal handler
        cannot take one (a second signal inside the first would find it held)."""
        alarms: queue.SimpleQueue[bool] = queue.SimpleQueue()

        def watching() -> None:
            if alarms.get():
                wake()

        self._watchers.append(alarms)
        watcher = threading.Thread(target=watching, name="stop-watch", daemon=True)
        watcher.start()
        try:
            yield
        finally:
            self._watchers.remove(alarms)
            alarms.put(False)
            watcher.join()

    def waiting(self) -> Iterator[Work]:
        """Every item already in, without waiting."""
        while True:
            try:
                yield self._items.get_nowait()
            except queue.Empty:
                return

    def __enter__(self) -> Inbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """The wake pipe closes. Idempotent."""
        if self.closed:
            return
        self.closed = True
        for fd in (self._read, self.wake_fd):
            with contextlib.suppress(OSError):
                os.close(fd)


@contextlib.contextmanager
def stop_on_signals(
    stop: Callable[[], None], inbox: Inbox, signals: Iterable[int] = (), early: Iterable[int] = ()
) -> Iterator[None]:
    """SIGTERM, SIGINT and `signals` call `stop` (Python skips atexit on SIGTERM unless a
    handler is installed); the signal also writes to the inbox's pipe, so the loop wakes
    whichever thread the kernel chose. One of them among `early` (caught before this was in
    place) stops at once. The handlers before are put back on leaving. Main thread only:
    elsewhere this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handle(signum: int, frame: object) -> None:
        inbox.signal()
        stop()  # a SimpleQueue's put, safe to re-enter

    stops = {*STOP_SIGNALS, *signals}
    before = {sig: signal.signal(sig, handle) for sig in stops}
    wake_before = signal.set_wakeup_fd(inbox.wake_fd, warn_on_full_buffer=False)
    if stops.intersection(early):
        handle(signal.SIGTERM, None)
    try:
        yield
    finally:
        signal.set_wakeup_fd(wake_before)
        for sig, handler in before.items():
            signal.signal(sig, handler)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextlib.contextmanager
def reload_on_hangup(inbox: Inbox) -> Iterator[None]:
    """SIGHUP asks the loop to read the config again (instead of ending the process, its
    default), from the moment this is in place, start-up included. Main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGHUP, lambda signum, frame: inbox.put(Reload()))
    try:
        yield
    finally:
        signal.signal(signal.SIGHUP, before)
