"""The messages every phone reads: one ring, bounded, whatever the number of phones.

The loop thread publishes (never waits: an append under a lock); each phone's stream
keeps only its place in the ring. The unit's events go in always (a few a minute: an
auction, a permit, an hour), the page's state and the simulator's frames only while a
phone watches, and a phone that comes gets the state as of its coming. A phone that
falls a whole ring behind (frozen, or on a slow link) skips what it missed, is told how
many messages it lost, and gets the latest state, which says all a page shows: so memory
is the ring's, however many phones and however slow, and the loop never waits for one.
A phone that reconnects names the last message it saw (SSE's Last-Event-ID) and is sent
the events that came after it, if the ring still holds them and the unit has not
restarted since.
"""

from __future__ import annotations

import itertools
import secrets
import threading
from collections import deque
from typing import NamedTuple

RING = 256  # messages kept for phones that are behind or reconnecting


class Message(NamedTuple):
    seq: int
    kind: str  # its SSE event: "state", "unit", "frame"
    data: bytes  # the whole SSE message: id, event and data lines, and the blank line


class Behind(NamedTuple):
    """What a stream reads next: the messages after its place, how many it missed (then
    the latest state, instead of them) and its new place."""

    messages: list[Message]
    missed: int
    state: bytes | None
    seq: int


class Feed:
    def __init__(self) -> None:
        self.boot = secrets.token_hex(4)  # ids from an earlier run never resume here
        self._lock = threading.Lock()
        self._ring: deque[Message] = deque(maxlen=RING)
        self._seq = 0
        self._state: bytes | None = None  # the last state message

    def publish(self, kind: str, data: str, state: bool = False) -> None:
        """One message (loop thread); `state`: it says the whole page (kept as the last)."""
        with self._lock:
            self._seq += 1
            message = Message(self._seq, kind, _sse(f"{self.boot}.{self._seq}", kind, data))
            self._ring.append(message)
            if state:
                self._state = message.data

    def place(self, last_id: str | None) -> int:
        """Where a new stream starts: after `last_id` if the ring still holds all that came
        after it (a phone back from a drop misses no event), else at the end."""
        with self._lock:
            boot, _, seq = (last_id or "").partition(".")
            if boot == self.boot and seq.isascii() and seq.isdigit() and len(seq) <= 12:
                after = int(seq)
                first = self._ring[0].seq if self._ring else self._seq + 1
                if first <= after + 1 and after <= self._seq:
                    return after
            return self._seq

    def since(self, seq: int) -> Behind:
        """What a stream at `seq` has not read."""
        with self._lock:
            first = self._ring[0].seq if self._ring else self._seq + 1
            missed = max(0, first - seq - 1)
            if missed:
                return Behind([], missed, self._state, self._seq)
            new = self._seq - seq  # the newest, at the ring's end
            messages = list(itertools.islice(self._ring, len(self._ring) - new, None))
            return Behind(messages, 0, None, self._seq)


def _sse(id_: str, kind: str, data: str) -> bytes:
    """An SSE message (`data` is one line of JSON: it holds no newline)."""
    return f"id: {id_}\nevent: {kind}\ndata: {data}\n\n".encode()
