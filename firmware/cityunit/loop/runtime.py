"""The loop: one thread owns the core, the outputs and the display.

GPIO callbacks, the console and signal handlers only put work in the inbox, each input
stamped with the moment it happened. The loop takes the core to each input's own time
before handling it, and only then to the present, so an input handled late (a frame on
a slow bus, a busy Pi) means what it meant when it happened. The loop sleeps until the
next deadline or the next piece of work, never polling: an idle unit costs nothing.

What the core asks of the world comes out of `Unit.snapshot()` and `Unit.drain()`; the
loop keeps none of the core's fields, and other threads see only the snapshots it posts.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import logging
import subprocess
from collections import deque
from collections.abc import Callable
from functools import partial
from typing import TypeVar

from cityunit.core.events import OUTPUT_CHANGES, Event
from cityunit.core.screens import NotHaltedScreen
from cityunit.core.snapshot import Output, Snapshot
from cityunit.core.timers import earliest
from cityunit.core.unit import SAVE_EVERY_MS, Unit
from cityunit.display.panel import Display
from cityunit.loop import store
from cityunit.loop.clock import Clock, VirtualClock
from cityunit.loop.inbox import Inbox, Input, Reload, Stop, Work

log = logging.getLogger(__name__)


Listener = Callable[[Event], None]
# Screens are readied ahead a slice at a time (a render, a pack, a way's plan: under
# 0.5 ms here, a few ms on a Pi Zero 2 W), and only while the next deadline is further off
# than twice what a slice takes, and AHEAD_MS at the least: a step due must not wait
# behind one, and an auction's busy tunes still leave gaps for it. What one takes is the
# longest of the last AHEAD_SLICES (from AHEAD_START_MS): more than a tick's readying, so
# the render's time, three times a pack's, is still the one counted at the next render.
AHEAD_MS = 2
AHEAD_START_MS = 20
AHEAD_SLICES = 16


class Runtime:
    """The loop: it owns the core, the parts and the display, and sleeps on the inbox
    until the core's next deadline or the next piece of work (see the module)."""

    def __init__(
        self,
        unit: Unit,
        clock: Clock,
        inbox: Inbox,
        outputs: list[Output],
        display: Display | None = None,
        saver: store.Saver | None = None,
        shutdown_command: list[str] | None = None,
        heartbeat: tuple[int, Callable[[], None]] | None = None,
        status: Callable[[str], None] | None = None,
    ) -> None:
        self.unit = unit
        self.clock = clock
        self.inbox = inbox
        self.outputs = outputs  # each follows every new snapshot, in order (light first)
        self.display = display
        self.saver = saver
        self._save_trouble: str | None = None  # as last told in a `fault` event
        self._resave_due = False  # a failed save is handed over again, later
        if saver is not None:  # its thread wakes the loop to tell a change of trouble
            saver.on_trouble = partial(self.call, _nothing)
        self._listeners: list[Listener] = []
        self._after_step: list[Callable[[], None]] = []
        self.snapshot: Snapshot = unit.snapshot()  # the latest, posted for other threads
        self.stopped = False
        self.finished = False
        self.shutdown_process: subprocess.Popen[bytes] | None = None
        self._shutdown_command = shutdown_command or []
        self._seen = -1  # the core's revision the outputs last followed
        self._later: list[tuple[int, int, Callable[[int], None]]] = []
        self._later_seq = itertools.count()
        self._slices: deque[int] = deque([AHEAD_START_MS], maxlen=AHEAD_SLICES)  # ms each
        self._heartbeat = heartbeat  # (every ms, what): e.g. feeding systemd's watchdog
        if heartbeat is not None:
            self.later(clock.now_ms(), self._beat)
        self._display_retry: int | None = None  # the display's next try, as registered
        self._status = status  # told a line such as "hour 2, auction" on each change
        self.on_reload: Callable[[], None] | None = None  # what a Reload does
        # Told of each save handed over (now, whether the stop's): the service keeps the
        # first light's keepsake beside the game.
        self.on_save: Callable[[int, bool], None] = lambda now, final: None

    # ----- who is told (loop thread) -----------------------------------------------------

    def on_event(self, listener: Listener) -> Callable[[], None]:
        """`listener` is told every event, in order, until the call this returns."""
        return _hook(self._listeners, listener)

    def on_step(self, hook: Callable[[], None]) -> Callable[[], None]:
        """`hook` is told once each batch of work is done (a console sending the lines it
        made), until the call this returns."""
        return _hook(self._after_step, hook)

    # ----- work from other threads ---------------------------------------------------

    def call(self, work: Callable[[], object]) -> None:
        """Run `work` on the loop thread, in order with everything else."""
        self.inbox.put(work)

    def stop(self) -> None:
        self.inbox.put(Stop(self.clock.now_ms()))

    # ----- the loop thread -------------------------------------------------------------

    def later(self, t: int, work: Callable[[int], None]) -> None:
        """Run `work(t)` on the loop thread once the clock reaches `t` (loop thread only)."""
        heapq.heappush(self._later, (t, next(self._later_seq), work))

    def run(self, ready: Callable[[], None] = lambda: None) -> None:
        """Serve until a Stop; `ready` is told once the first screen is up."""
        self._serve(None)  # what came in while the board was being built, then the present
        ready()
        while not self.stopped:
            deadline = self.next_deadline()
            if self._idle_for_ahead(deadline):
                work = self.inbox.get(0)
                if work is None:
                    assert self.display is not None
                    start = self.clock.now_ms()
                    self.display.prepare_next()  # one slice, then look again
                    self._slices.append(self.clock.now_ms() - start)
                    continue
                self._serve(work)
            else:
                self._serve(self.inbox.get(self.clock.wait_ms(deadline)))

    def _idle_for_ahead(self, deadline: int | None) -> bool:
        """A screen to ready, and time for it before the next deadline (see AHEAD_MS)."""
        if self.display is None or not self.display.preparing:
            return False
        if deadline is None or self.clock.virtual:  # nothing due, or time waits for us
            return True
        return deadline - self.clock.now_ms() > max(AHEAD_MS, 2 * max(self._slices))

    def pump(self) -> bool:
        """Do all the work already in, without waiting; False once stopped."""
        if not self.stopped:
            self._serve(None)
        return not self.stopped

    def _serve(self, first: Work | None) -> None:
        """Handle `first` and all that is waiting, each input as of its own time; then
        the present. Nothing is handled past a Stop."""
        present = self.clock.now_ms()
        items = itertools.chain([] if first is None else [first], self.inbox.waiting())
        for item in items:
            if isinstance(item, Input):
                if self.inbox.signalled:
                    continue  # a stop signal is on its way: what waits behind it is not run
                self._run_later(item.t)
                self.unit.advance(item.t)
                item.act(item.t, max(item.t, present))
            elif isinstance(item, Stop):
                self._run_later(item.t)
                self.unit.advance(item.t)
                self.stopped = True
                self.deliver()
                return
            elif isinstance(item, Reload):
                if self.on_reload is not None:
                    self.on_reload()
            else:
                item()
        self._run_later(self.clock.now_ms())
        self.step()

    def _run_later(self, t: int) -> None:
        while self._later and self._later[0][0] <= t:
            at, _, work = heapq.heappop(self._later)
            work(at)

    def next_deadline(self) -> int | None:
        return earliest(self.unit.next_deadline(), self._loop_deadline())

    def advance_to(self, t: int, clock: VirtualClock) -> None:
        """On the virtual clock: every deadline up to `t`, in order. The core's run inside
        its advance; those the world acts on (a display's next try, a failed save's, the
        core's saves, and its frames for a display that counts each) each get a step at
        their time, as the real clock would give them."""
        display = self.display
        while (due := self._step_due()) is not None and due <= t:
            clock.set_ms(now := max(due, clock.now_ms()))
            self._run_later(now)
            if display is not None and (display.each_frame or display.due(now)):
                self.step()
            else:  # a save: the outputs follow where the advance ends, as they did
                self.unit.advance(now)
                self._act(now)
        clock.set_ms(t)
        self.unit.advance(t)

    def _loop_deadline(self) -> int | None:
        """The loop's own next work, all in one heap (`later`): a HOLD's release, a failed
        save's retry, the heartbeat, a display's next try."""
        self._watch_display()
        return self._later[0][0] if self._later else None

    def _watch_display(self) -> None:
        """The display's next try (set when it failed or restarted, whatever display the
        loop has now) in the heap, before any deadline is looked at: it wakes the loop,
        whose step polls the display."""
        at = None if self.display is None else self.display.retry_at
        if at is not None and at != self._display_retry:
            self._display_retry = at
            self.later(at, self._display_due)

    def _display_due(self, at: int) -> None:
        if self._display_retry == at:
            self._display_retry = None  # polled in this step; a new failure registers anew

    def _step_due(self) -> int | None:
        """Where a virtual clock's advance gives the loop a step: its own work, and the
        core's saves and (for a display that counts each) frames."""
        frames = self.display is not None and self.display.each_frame
        core = self.unit.loop_due(frames) if self.saver or frames else None
        return earliest(self._loop_deadline(), core)

    def step(self) -> None:
        """Bring the core up to now and make the world follow it."""
        now = self.clock.now_ms()
        self.unit.advance(now)
        self._show(now)
        self._act(now)
        for hook in tuple(self._after_step):
            hook()

    def deliver(self) -> None:
        """The core's effects (events, a save, a shutdown) sent on now, without moving it
        on: a console reply then follows the events its command caused. The outputs follow
        at the end of the batch of inputs."""
        self._act(max(self.unit.now, self.clock.now_ms()))

    def _show(self, now: int) -> None:
        """Light and sound first, then the slow display."""
        unit = self.unit
        if unit.revision != self._seen:
            self._seen = unit.revision
            snapshot = self.snapshot = unit.snapshot()
            for output in self.outputs:
                output.follow(snapshot, now)
            if self._status is not None:
                self._status(snapshot.status)
        if self.display is not None:
            self.display.poll(now)

    def _act(self, now: int) -> None:
        """Events to their listeners, a shutdown to run, a game to save."""
        unit = self.unit
        effects = unit.drain()
        if effects.save and self.saver is not None:
            self.saver.save(unit.saved())
            self.on_save(now, False)
        if self._tell_save_trouble(now):  # after what came before it
            effects.events += unit.drain().events
        _log_events(effects.events)
        listeners = tuple(self._listeners)  # once a batch: one leaving skips nobody
        for event in effects.events:
            for listener in listeners:
                listener(event)
        if effects.shutdown:
            self._power_off()

    def _tell_save_trouble(self, now: int) -> bool:
        """A save that failed is told once (a `fault` of the state, then `back`: True when
        told) and the game handed over again every SAVE_EVERY_MS while saves fail, even
        with its clock stopped (OFF, paused), when the core asks for no save of its own."""
        saver = self.saver
        if saver is None:
            return False
        trouble, told = saver.trouble, saver.trouble != self._save_trouble
        if told:
            self._save_trouble = trouble
            self.fault("state", "back" if trouble is None else f"cannot save: {trouble}")
        if trouble is not None and not self._resave_due:
            self._resave_due = True
            self.later(now + SAVE_EVERY_MS, self._resave)
        return told

    def _resave(self, at: int) -> None:
        self._resave_due = False
        if self.saver is not None and self.saver.trouble is not None:
            self.saver.save(self.unit.saved())

    def _beat(self, at: int) -> None:
        """The heartbeat, from the loop itself (a loop that hangs stops beating); again
        `every` ms from now."""
        assert self._heartbeat is not None
        every, beat = self._heartbeat
        beat()
        self.later(max(at, self.clock.now_ms()) + every, self._beat)

    def restarted(self) -> None:
        """The core was put back to power-on (a simulator's RESET or power cut): what the
        loop knew of the parts is forgotten, as a new process knows nothing. The display
        starts again at once, and a save that fails is news again."""
        self._save_trouble = None
        if self.saver is not None:
            self.saver.forget_trouble()
        if self.display is not None:
            self.display.restart(self.clock.now_ms())

    def fault(self, part: str, detail: str) -> None:
        """A part failed or came back (loop thread): the core tells it as an event."""
        self.unit.fault(part, detail, self.unit.now)

    def _power_off(self) -> None:
        command = self._shutdown_command
        if not command:
            log.warning("safe shutdown asked, but power.shutdown_command is empty: not halting")
            self.unit.notice(NotHaltedScreen(), self.unit.now)
            return
        log.info("safe shutdown: running %s", " ".join(command))
        try:
            self.shutdown_process = subprocess.Popen(command)
        except OSError as e:
            log.error("safe shutdown failed: %s: %s", command[0], e.strerror or e)

    def finish(self) -> None:
        """After the loop: the game saved as it stands at the stop (or now, if never stopped)."""
        if self.finished:
            return
        self.finished = True
        try:
            if not self.stopped:
                self.step()
            else:
                self._act(self.unit.now)
        finally:  # the game is kept even if the world could not follow
            if self.saver is not None:
                self.saver.save(self.unit.saved())
                self.on_save(self.unit.now, True)


def _nothing() -> None:
    """Work that only wakes the loop, for it to look again."""


def _log_events(events: list[Event]) -> None:
    """Each event in the journal; the outputs' changes (most of them) at debug level, so
    they are asked about once a batch."""
    debug = log.isEnabledFor(logging.DEBUG)
    for event in events:
        if event.event not in OUTPUT_CHANGES:
            log.info("%s %s", event.event, event.data or "")
        elif debug:
            log.debug("%s %s", event.event, event.data or "")


H = TypeVar("H")


def _hook(hooks: list[H], hook: H) -> Callable[[], None]:
    """`hook` added to `hooks`; what it returns takes it out again (once is enough). The
    lists are walked as copies: a hook leaving during a delivery skips no other, and is
    still told the rest of that delivery."""
    hooks.append(hook)

    def forget() -> None:
        with contextlib.suppress(ValueError):
            hooks.remove(hook)

    return forget
