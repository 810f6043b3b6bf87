"""The loop: one thread owns the core, the outputs and the display.

GPIO callbacks, the console and signal handlers only put work in the inbox. The loop
sleeps until the next deadline or the next piece of work, never polling: an idle unit
costs nothing.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import os
import queue
import random
import select
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cityunit import store
from cityunit.clock import Clock
from cityunit.config import Config
from cityunit.display import Display
from cityunit.parts import Parts
from cityunit.render import render
from cityunit.rules import HOUR_MS
from cityunit.screens import Screen
from cityunit.unit import Event, Mode, Unit

log = logging.getLogger(__name__)


class Inbox:
    """Work for the loop thread, and the one thing the loop sleeps on.

    A SimpleQueue (whose put is safe even from a signal handler) plus a pipe that wakes
    the loop's select. Signals write to the same pipe (signal.set_wakeup_fd): a SIGTERM
    landing just before the loop goes to sleep still wakes it, which a plain blocking
    queue.get cannot promise.
    """

    def __init__(self) -> None:
        self._items: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._read, self.wake_fd = os.pipe()
        for fd in (self._read, self.wake_fd):
            os.set_blocking(fd, False)

    def put(self, item: Any) -> None:
        self._items.put(item)
        with contextlib.suppress(BlockingIOError):  # a full pipe is awake already
            os.write(self.wake_fd, b"\0")

    def get_nowait(self) -> Any:
        return self._items.get_nowait()

    def get(self, timeout: float | None) -> Any:
        """The next item, waiting up to `timeout` s (None: for ever); queue.Empty if none."""
        with contextlib.suppress(queue.Empty):
            return self._items.get_nowait()
        select.select([self._read], [], [], timeout)
        with contextlib.suppress(BlockingIOError):
            while os.read(self._read, 512):
                pass
        return self._items.get_nowait()

    def close(self) -> None:
        for fd in (self._read, self.wake_fd):
            with contextlib.suppress(OSError):  # closed already
                os.close(fd)


Listener = Callable[[Event], None]
SAVE_EVERY_MS = 5_000
_STOP = object()


class Runtime:
    def __init__(
        self,
        config: Config,
        clock: Clock,
        parts: Callable[[Callable[[str, bool], None]], Parts],
        display: Callable[[Callable[[str], None]], Display] | None = None,
        rng: random.Random | None = None,
        state_dir: Path | None = None,
        heartbeat: tuple[int, Callable[[], None]] | None = None,
        status: Callable[[str], None] | None = None,
    ) -> None:
        self.config = config
        self.clock = clock
        self.inbox = Inbox()
        self.signals_wake = False  # signals write to the inbox's pipe (stop_on_signals)
        self.unit = Unit(config.rules, rng, now=clock.now_ms())
        self.listeners: list[Listener] = [_log_event]
        self.after_step: list[Callable[[], None]] = []  # e.g. a console sending its batch
        self.display = None if display is None else display(lambda d: self._fault("display", d))
        self._led: float | None = None
        self._tone: int | bool | None = False  # False: never set
        self._volume = ""
        self._screen: tuple[Screen, str] | None = None
        self.shutdown_process: subprocess.Popen[bytes] | None = None
        self._later: list[tuple[int, int, Callable[[], None]]] = []
        self._later_seq = itertools.count()
        self.parts = parts(self._edge)
        self.saver: store.Saver | None = None
        saved = None
        if state_dir is not None:
            saved = store.load(state_dir / store.FILENAME)
            self.saver = store.Saver(state_dir)
        self._heartbeat = heartbeat  # (every ms, what): e.g. feeding systemd's watchdog
        self._heartbeat_due: int | None = None if heartbeat is None else clock.now_ms()
        self._status = status  # told a line such as "hour 2, auction" on each change
        self._status_text = ""
        self._saved_key: tuple | None = None
        self._save_due: int | None = None
        # The switch may already be ON at start, and a game may be waiting to go on.
        self.unit.boot(self.parts.is_pressed("power"), saved, clock.now_ms())

    # ----- work from other threads -------------------------------------------------

    def _edge(self, name: str, level: bool) -> None:
        t = self.clock.now_ms()
        self.inbox.put(lambda: self.unit.edge(name, level, t))

    def call(self, work: Callable[[], None]) -> None:
        """Run `work` on the loop thread, in order with everything else."""
        self.inbox.put(work)

    def later(self, t: int, work: Callable[[], None]) -> None:
        """Run `work` on the loop thread once the clock reaches `t` (loop thread only)."""
        heapq.heappush(self._later, (t, next(self._later_seq), work))

    def stop(self) -> None:
        self.inbox.put(_STOP)

    def _fault(self, part: str, detail: str) -> None:
        self.unit.events.append(Event(self.unit.now, "fault", {"part": part, "detail": detail}))

    # ----- the loop ----------------------------------------------------------------

    def run(self, ready: Callable[[], None] = lambda: None) -> None:
        """Serve until `stop()`; outputs are left quiet and the screen blank."""
        try:
            self.step()
            ready()
            while True:
                timeout = self.clock.wait_ms(self.next_deadline())
                try:
                    work = self.inbox.get(timeout=timeout)
                except queue.Empty:
                    work = None
                if work is _STOP:
                    break
                self._do(work)
        finally:
            self.close()

    def pump(self) -> bool:
        """Do all the work waiting in the inbox without blocking; False once stopped."""
        while True:
            try:
                work = self.inbox.get_nowait()
            except queue.Empty:
                self._do(None)
                return True
            if work is _STOP:
                return False
            self._do(work)

    def _do(self, work: Callable[[], None] | None) -> None:
        now = self.clock.now_ms()
        self.unit.advance(now)
        if work is not None:
            work()
        while self._later and self._later[0][0] <= now:
            heapq.heappop(self._later)[2]()
        self.step()
        due = self._heartbeat_due
        if self._heartbeat is not None and due is not None and now >= due:
            every, beat = self._heartbeat
            beat()  # from the loop itself: a loop that hangs stops beating
            self._heartbeat_due = now + every

    def next_deadline(self) -> int | None:
        deadlines = [
            self.unit.next_deadline(),
            self._later[0][0] if self._later else None,
            self._save_due,
            self._heartbeat_due,
        ]
        if self.display is not None:
            deadlines.append(self.display.retry_at)
        return min((d for d in deadlines if d is not None), default=None)

    def step(self) -> None:
        """Bring time up to now and make the outputs follow the core: light and sound first."""
        now = self.clock.now_ms()
        unit = self.unit
        unit.advance(now)
        if unit.led_level != self._led:
            self._led = unit.led_level
            self.parts.set_led(unit.led_level)
        if unit.rules.volume != self._volume:
            self._volume = unit.rules.volume
            self.parts.set_volume(self._volume)
            self._tone = False  # play the tone again at its new loudness
        if unit.tone_hz != self._tone:
            self._tone = unit.tone_hz
            self.parts.set_tone(unit.tone_hz)
        if self.display is not None:
            self.display.poll(now)
            screen = (unit.screen, unit.rules.language)
            if screen != self._screen:
                self._screen = screen
                self.display.show(render(*screen), now)
        for event in unit.drain():
            for listener in self.listeners:
                listener(event)
        if unit.shutdown_requested and unit.mode is Mode.OFF:
            unit.shutdown_requested = False
            self._power_off()
        for hook in self.after_step:
            hook()
        self._keep(now)
        if self._status is not None:
            text = "switch OFF" if not unit.power else f"hour {unit.hour}, {unit.mode}"
            text += ", paused" if unit.paused else ""
            if text != self._status_text:
                self._status_text = text
                self._status(text)

    def _keep(self, now: int) -> None:
        """Save on every change of mode, and every few seconds while the clock runs."""
        if self.saver is None:
            return
        unit = self.unit
        key = (unit.power, unit.mode, unit.paused, unit.hour, unit.session_hours,
               len(unit.history), unit.rules)  # fmt: skip
        if key != self._saved_key or (self._save_due is not None and now >= self._save_due):
            self._saved_key = key
            self.saver.save(unit.snapshot())
            running = unit.power and not unit.paused and unit.hour_elapsed() < HOUR_MS
            self._save_due = now + SAVE_EVERY_MS if running else None

    def _power_off(self) -> None:
        command = self.config.system.shutdown_command
        if not command:
            log.warning("safe shutdown asked, but power.shutdown_command is empty: not halting")
            return
        log.info("safe shutdown: running %s", " ".join(command))
        try:
            self.shutdown_process = subprocess.Popen(command)
        except OSError as e:
            log.error("safe shutdown failed: %s: %s", command[0], e.strerror or e)

    def close(self) -> None:
        if self.display is not None:
            self.display.blank()
        self.parts.close()
        if not self.signals_wake:  # else the signal module still writes there: keep it
            self.inbox.close()
        if self.saver is not None:
            self.saver.save(self.unit.snapshot())
            self.saver.close()
        log.info("stopped: LED off, buzzer silent, screen blank")


def _log_event(event: Event) -> None:
    level = logging.DEBUG if event.event in ("led", "tone") else logging.INFO
    if log.isEnabledFor(level):
        log.log(level, "%s %s", event.event, event.data or "")


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def stop_on_signals(runtime: Runtime) -> None:
    """SIGTERM and SIGINT stop the loop cleanly: screen blank, LED off, buzzer silent.

    (Python skips atexit on SIGTERM unless a handler is installed.) The signal also
    writes to the inbox's pipe, so the loop wakes whichever thread the kernel chose.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda signum, frame: runtime.stop())
    signal.set_wakeup_fd(runtime.inbox.wake_fd, warn_on_full_buffer=False)
    runtime.signals_wake = True
