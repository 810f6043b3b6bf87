"""The console's server: one client at a time on a link (`link.py`), its lines to the
loop, the replies and events back.

A reader thread turns bytes into lines and hands each to the loop thread; a writer
thread owns the output. Nothing is dropped and nothing grows without bound:

- At most IN_FLIGHT lines are in the unit unanswered; past that the reader stops
  reading, so a client that sends faster than it reads is held back by the kernel's
  buffers, not by the unit's memory. Every reply is sent.
- Event lines a client has not yet taken are bounded too, in its outbox (outbox.py):
  on the real clock events past the bound are dropped and an
  `EVT {"event":"dropped","count":N}` line says how many; on the virtual clock the loop
  waits for the client instead (a stop signal ends the wait).
- A client that hangs up leaves nothing for the next one: its partial line is dropped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import select
import threading
from collections.abc import Callable
from functools import partial

from cityunit.console.lines import LineReader, TooLong, blank
from cityunit.console.links import HungUp, Link
from cityunit.console.outbox import Outbox
from cityunit.console.protocol import Controls, Session
from cityunit.loop.inbox import Input
from cityunit.loop.runtime import Runtime

log = logging.getLogger(__name__)

IN_FLIGHT = 32  # lines received and not yet answered, before the link stops reading
GRACE_S = 1.0  # after a stop signal, how long the last lines may take to leave


class Served:
    """The protocol served on one link: a reader thread, a writer thread, one Session per
    client. `close()` (or leaving `with`) sends what is queued, stops the writer and
    closes the link; after a stop signal it gives the last lines GRACE_S to leave.

    Lines leave in batches: the events of one step, or a reply with the events before it,
    in one write. `on_end` is told once the input has ended and every line is answered.
    """

    def __init__(
        self,
        runtime: Runtime,
        link: Link,
        controls: Controls | None = None,
        on_end: Callable[[], None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.link = link
        self.on_end = on_end
        self._controls = controls
        inbox = runtime.inbox
        self.outbox = Outbox(
            runtime.clock.virtual, lambda: inbox.signalled, partial(_dropped, runtime),
            "console client",
        )  # fmt: skip
        self._cond = threading.Condition()  # guards the counts the threads share
        self._in_flight = 0  # lines handed to the loop whose reply is not yet out
        self._client = 0  # which client is there: one more after each hang-up
        self._stopping = False
        # The reader, held off, waits for a change of the counts or the client's leaving:
        # while it does (`_held`), `_notify` also pokes this pipe, which the reader polls
        # beside the link's hang-up descriptor; no system call otherwise. The reader
        # closes the pipe when it ends.
        self._poke_r, self._poke_w = os.pipe()
        for fd in (self._poke_r, self._poke_w):
            os.set_blocking(fd, False)
        self._held = False
        self._ended = False
        self.closed = False
        self.session = self._new_session(0)
        self._holds = contextlib.ExitStack()
        self._holds.enter_context(runtime.inbox.when_signalled(self._wake))  # a stop ends any wait
        self._forget_steps = runtime.on_step(self._step_done)
        self._out = threading.Thread(target=self._writer, name="console-out", daemon=True)
        self._out.start()
        self._in = threading.Thread(target=self._reader, name="console-in", daemon=True)
        self._in.start()

    def __enter__(self) -> Served:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _new_session(self, client: int) -> Session:
        return Session(
            self.runtime, partial(self._reply, client), partial(self._event, client),
            controls=self._controls,
        )  # fmt: skip

    # ----- the loop thread -------------------------------------------------------------

    def _reply(self, client: int, text: str) -> None:
        """A reply for `client`, unless that client left: nobody to tell."""
        if client != self._client:
            self._answered(1)
        else:
            self.outbox.reply(text, client)

    def _event(self, client: int, text: str) -> None:
        if client == self._client:
            self.outbox.event(text, client)

    def _step_done(self) -> None:
        self.outbox.flush()
        self._end_if_answered()

    def _end_if_answered(self) -> None:
        if self._ended and self.session.idle and self.on_end is not None:
            on_end, self.on_end = self.on_end, None
            on_end()

    def _input_ended(self) -> None:
        self._ended = True
        self._end_if_answered()

    def _hung_up(self, client: int) -> None:
        """The client before `client` left (its lines before this were all handled): the
        next one starts afresh, with events off and nothing of the last one's waiting."""
        self.outbox.flush()
        self._answered(self.session.close())
        self.outbox.forget_dropped()
        self.session = self._new_session(client)
        log.info("console client left")

    def _receive(self, line: bytes | TooLong, t: int, present: int) -> None:
        self.session.receive(line, t, present)

    # ----- the other threads -----------------------------------------------------------

    def _notify(self) -> None:
        """The shared counts changed (holding _cond): every waiter looks again."""
        self._cond.notify_all()
        if self._held:
            with contextlib.suppress(BlockingIOError):  # full: a poke is waiting already
                os.write(self._poke_w, b"\0")

    def _wake(self) -> None:
        """A stop signal came (from the inbox's `when_signalled`): whoever waits looks again."""
        with self._cond:
            self._notify()
        self.outbox.wake()

    def _answered(self, n: int) -> None:
        if n:
            with self._cond:
                self._in_flight -= n
                self._notify()

    def _reader(self) -> None:
        try:
            self._read_lines()
        finally:
            with self._cond:
                self._held = False
                os.close(self._poke_r)
                os.close(self._poke_w)

    def _read_lines(self) -> None:
        lines = LineReader()
        while True:
            try:
                data = self.link.read()
            except HungUp:
                lines = self._left()
                continue
            except Exception as e:
                if not self.closed:  # a read cut short by closing is no failure
                    log.error("console read failed: %s", e)
                data = b""
            if not data:
                break
            for line in lines.feed(data):
                if blank(line):
                    continue
                taken = self._take()
                if taken is None:
                    return
                if not taken:  # the client left while the reader held off
                    lines = self._left(hang_up=True)
                    break
                now = self.runtime.clock.now_ms()
                self.runtime.inbox.put(Input(now, partial(self._receive, line)))
        self.runtime.call(self._input_ended)

    def _take(self) -> bool | None:
        """Room for one more line (True), after a wait while too many are unanswered;
        False if the client left meanwhile; None once closing. The client's leaving is
        seen even when no reply is on its way to fail (a HOLD on the real clock answers
        only at its release): where the link can tell, the reader waits on its hang-up
        descriptor too."""
        while True:
            with self._cond:
                self._held = False
                if self._stopping:
                    return None
                if self._in_flight < IN_FLIGHT:
                    self._in_flight += 1
                    return True
                self._held = True  # from here, a change pokes the pipe
            if self._client_left():
                return False

    def _client_left(self) -> bool:
        """Wait for the counts to change or the client to leave: whether it left."""
        poller = select.poll()
        poller.register(self._poke_r, select.POLLIN)
        hangup = self.link.hangup_fd()
        if hangup is not None:
            poller.register(hangup, 0)  # POLLHUP is reported whatever is asked
        events = dict(poller.poll())  # a signal does not cut it short (PEP 475)
        with contextlib.suppress(BlockingIOError):
            while os.read(self._poke_r, 512):
                pass
        return hangup is not None and bool(events.get(hangup, 0) & select.POLLHUP)

    def _left(self, hang_up: bool = False) -> LineReader:
        """A client left: the next starts afresh (a new line reader: the partial line the
        last one left is gone)."""
        if hang_up:
            self.link.hang_up()
        with self._cond:
            self._client += 1
            client = self._client
            self._notify()
        self.runtime.call(partial(self._hung_up, client))
        return LineReader()

    def _writer(self) -> None:
        while (chunk := self.outbox.take()) is not None:
            with self._cond:
                current = chunk.tag == self._client
            if current:
                try:
                    self.link.write(chunk.data, chunk.tag)
                except HungUp:
                    pass  # the reader sees it too, and starts the next client afresh
                except Exception as e:  # a client gone away must not stop the unit
                    log.debug("console write failed: %s", e)
            self.outbox.sent(chunk)
            self._answered(chunk.replies)

    def close(self) -> None:
        """Loop thread (or after it ended). Without a stop signal it waits until every
        line is out, however long the client takes to read them (a tester's last events
        must all arrive); after one, GRACE_S at most. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self._forget_steps()
        self.session.close()
        with self._cond:  # the reader takes no more lines
            self._stopping = True
            self._notify()
        self.outbox.close()
        self.outbox.wait_drained()  # every line out, unless a signal says stop now
        self._out.join(GRACE_S)  # after a signal: the last lines' grace
        if self._out.is_alive():
            log.warning("console: %d lines not sent (stopping)", self.outbox.unsent())
        self._holds.close()
        self.link.close()  # a read still waiting returns: the reader ends
        self._in.join(GRACE_S)
        if self._in.is_alive():
            log.warning("console: its reader did not end (a link that cannot stop a read)")


def _dropped(runtime: Runtime, count: int) -> str:
    return f'EVT {{"t_ms":{runtime.unit.now},"event":"dropped","count":{count}}}'
