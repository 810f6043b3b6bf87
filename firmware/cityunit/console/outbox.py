"""A front end's outbox: the lines the loop makes for one subscriber (a console's client,
a page), taken by that subscriber's own thread. Nothing in it grows without bound, and
the loop never waits for a subscriber on the real clock:

- Replies are always kept: a client waits for each, and holds itself back by the number
  it has not yet read (the console's reader counts them).
- Event lines not yet taken are bounded (`limit`). On the real clock those past the
  bound are dropped and counted, and the count goes out as a line of its own before the
  next line that is kept (once behind, until half caught up). On the virtual clock time
  stands still, so the loop waits for the subscriber instead, unless `stopping()` says
  a stop signal came (`wake()` makes a waiter look again).

Lines leave in chunks: the loop's lines of one step (or a reply with the events before
it), in one write.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Final

from cityunit.core.values import Value

log = logging.getLogger(__name__)

EVENTS_BEHIND = 4096  # event lines queued for a subscriber that has not taken them
CHUNK = 256  # lines in one chunk, at most


class Chunk(Value):
    """Lines for the subscriber's thread: how many replies and events, and for whom (a
    console counts its clients: lines for one that left are not written)."""

    __slots__ = ("data", "events", "replies", "tag")
    data: Final[bytes]
    replies: Final[int]
    events: Final[int]
    tag: Final[int]

    def __init__(self, data: bytes, replies: int, events: int, tag: int) -> None:
        self.data, self.replies, self.events, self.tag = data, replies, events, tag


class Outbox:
    """One subscriber's lines (see the module). The loop thread calls `reply`, `event`,
    `flush` and `close`; the subscriber's thread `take` and `sent`."""

    def __init__(
        self,
        virtual: bool,
        stopping: Callable[[], bool],
        dropped: Callable[[int], str],
        name: str,
        limit: int | None = None,
    ) -> None:
        self._virtual = virtual
        self._stopping = stopping
        self._dropped_line = dropped  # the line that says N events were dropped
        self.name = name
        self.limit = EVENTS_BEHIND if limit is None else limit
        self._cond = threading.Condition()  # guards the chunks and the counts below
        self._chunks: deque[Chunk] = deque()
        self._events_queued = 0  # event lines in _chunks
        self._closed = False
        self._drained = False  # closed, and every chunk taken and sent
        # The loop thread's own: the chunk being made, and the events dropped since.
        self._batch: list[str] = []
        self._replies = self._events = 0
        self._tag = 0
        self._dropped = 0

    # ----- the loop thread -------------------------------------------------------------

    def reply(self, text: str, tag: int = 0) -> None:
        self._say_dropped(tag)
        self._add(text, True, tag)

    def event(self, text: str, tag: int = 0) -> None:
        """An event line, kept if there is room (see the module)."""
        if not self._room_for_event():
            self._dropped += 1
            return
        self._say_dropped(tag)
        self._add(text, False, tag)

    def forget_dropped(self) -> None:
        """A new subscriber: the last one's drops are not its news."""
        self._dropped = 0

    def flush(self) -> None:
        """The lines made so far, to the subscriber's thread."""
        if not self._batch:
            return
        chunk = Chunk(
            ("\n".join(self._batch) + "\n").encode(), self._replies, self._events, self._tag
        )
        self._batch, self._replies, self._events = [], 0, 0
        with self._cond:
            self._chunks.append(chunk)
            self._events_queued += chunk.events
            self._cond.notify_all()

    def close(self) -> None:
        """No more lines: `take` returns None once the last is taken."""
        self.flush()
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _say_dropped(self, tag: int) -> None:
        if self._dropped:
            count, self._dropped = self._dropped, 0
            log.warning("%s fell behind: %d events dropped", self.name, count)
            self._add(self._dropped_line(count), False, tag)

    def _add(self, text: str, reply: bool, tag: int) -> None:
        if self._batch and tag != self._tag:
            self.flush()
        self._batch.append(text)
        self._tag = tag
        self._replies += reply
        self._events += not reply
        if len(self._batch) >= CHUNK:
            self.flush()

    def _room_for_event(self) -> bool:
        behind = self._dropped and not self._virtual  # once behind: until half caught up
        limit = self.limit // 2 if behind else self.limit
        with self._cond:
            if self._events_queued + self._events < limit:
                return True
        if not self._virtual:
            return False
        self.flush()
        with self._cond:
            self._cond.wait_for(lambda: self._events_queued < self.limit // 2 or self._stopping())
            return not self._stopping()

    # ----- the subscriber's thread -----------------------------------------------------

    def take(self) -> Chunk | None:
        """The next chunk, waiting for one; None once closed and all sent."""
        with self._cond:
            self._cond.wait_for(lambda: self._chunks or self._closed)
            if self._chunks:
                return self._chunks[0]
            self._drained = True
            self._cond.notify_all()
            return None

    def sent(self, chunk: Chunk) -> None:
        """`chunk` (the one `take` gave) is out, or given up on."""
        with self._cond:
            self._chunks.popleft()
            self._events_queued -= chunk.events
            self._cond.notify_all()

    # ----- any thread ------------------------------------------------------------------

    def wait_drained(self) -> None:
        """After `close`: until every line is out, or a stop signal came."""
        with self._cond:
            self._cond.wait_for(lambda: self._drained or self._stopping())

    def wake(self) -> None:
        """A stop signal came: whoever waits looks again."""
        with self._cond:
            self._cond.notify_all()

    def unsent(self) -> int:
        with self._cond:
            return sum(chunk.data.count(b"\n") for chunk in self._chunks)
