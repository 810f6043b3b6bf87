"""The console protocol's wire, as a client meets it: one connection's lines, its
replies matched to commands in order (the protocol gives exactly one each), its event
lines collected as they come, and the protocol's words as a type checker sees them.
`cityunit.console.client.Client` is the commands and the waiting on top of it."""

from __future__ import annotations

import json
import queue
import threading
from collections.abc import Callable
from typing import Any, Literal, TypedDict

REPLY_TIMEOUT_S = 30.0
SYNC_REPLIES = 200  # lines a port may answer before HELP's reply: more, and it is no unit

# What the commands take, as a type checker sees them: `press("auctoin")` is its error.
Button = Literal["auction", "build"]
Contact = Literal["auction", "build", "power"]
Level = Literal["low", "high"]
Part = Literal["display", "bus", "save", "power"]


class State(TypedDict):
    """STATE's reply (docs/protocol.md): the unit now."""

    power: Literal["on", "off"]
    mode: Literal["off", "idle", "auction", "permit", "hour_end", "settings", "shutdown"]
    hour: int
    hour_elapsed_ms: int
    paused: bool
    led: float
    tone_hz: float | None
    permit: int | Literal["station"] | None
    volume: Literal["off", "low", "medium", "high"]
    screen: list[str]
    clock: Literal["real", "virtual"]
    t_ms: int


class ProtocolError(Exception):
    """The unit answered ERR: `code` is one of the protocol's error codes."""

    def __init__(self, command: str, reply: str) -> None:
        parts = reply.split(" ", 2)
        self.code = parts[1] if len(parts) > 1 else ""
        super().__init__(f"{command!r} -> {reply!r}")


class Wire:
    """One connection's lines: a reader thread sorts them into replies and events."""

    def __init__(
        self,
        write: Callable[[bytes], object],
        read: Callable[[], bytes],
        close: Callable[[], None],
        said: Callable[[], str] = lambda: "",
    ) -> None:
        """`said`: what the other end says on its own (a simulator's stderr), which every
        error the connection ends in carries."""
        self._write, self._close, self._said = write, close, said
        self._replies: queue.Queue[str | None] = queue.Queue()
        self._arrived = threading.Condition()
        self.events: list[dict[str, Any]] = []  # every event received, in order
        self.event_lines: list[str] = []  # the same, as the lines that carried them
        self._waited: set[int] = set()  # the events `wait_for` returned already
        self._by_name: dict[str, list[int]] = {}  # each event's place in `events`, by name
        self._cursor: dict[str, int] = {}  # by name: where in _by_name the unreturned begin
        self.dropped_lines = 0  # event lines that were no event (not JSON, no name): dropped
        self._ended: BaseException | None = None  # why the reader stopped, if it failed
        self._late = False  # a reply timed out: it may still come, before the next one's
        self._stopped = False  # the reader has stopped: no line will come any more
        self.closed = False
        self._reading = threading.Thread(target=self._reader, args=(read,), daemon=True)
        self._reading.start()
        try:
            self._sync()
            self.ok("EVENTS ON")
            self._connected()
        except Exception:
            self.close()  # a simulator that did not start is not left running
            raise

    def _connected(self) -> None:
        """In step with the unit, its events on: what a subclass learns of it first."""

    def close(self) -> None:
        """The connection ends; a simulator sees the end of its input and exits (killed
        after spawn.WAIT_S s). Idempotent."""
        if not self.closed:
            self.closed = True
            self._close()

    def _reader(self, read: Callable[[], bytes]) -> None:
        """Lines to replies and events until the other end closes; however it stops,
        every call waiting on it is told at once (a reply's None, the events' notify)."""
        buffer = b""
        try:
            while data := read():
                buffer += data
                *lines, buffer = buffer.split(b"\n")
                for raw in lines:
                    self._line(raw.decode("utf-8", "replace").rstrip("\r"))
        except BaseException as e:  # a bug of ours: said by every call, not lost
            self._ended = e
        finally:
            self._replies.put(None)
            with self._arrived:
                self._stopped = True
                self._arrived.notify_all()

    def _line(self, line: str) -> None:
        if not line.startswith("EVT "):
            self._replies.put(line)
            return
        event = _event(line)
        with self._arrived:
            if event is None:
                self.dropped_lines += 1
                return
            self.event_lines.append(line)
            self._by_name.setdefault(event["event"], []).append(len(self.events))
            self.events.append(event)
            self._arrived.notify_all()

    def _gone(self) -> ConnectionError:
        """The error for a connection whose reader has stopped, with why."""
        if self._ended is not None:
            return ConnectionError(f"the connection's reader failed: {self._ended!r}")
        said = self._said().strip()
        return ConnectionError(
            "the unit closed the connection" + (f"; it said:\n{said}" if said else "")
        )

    def send(self, line: str, timeout_s: float = REPLY_TIMEOUT_S) -> str:
        """One command; its reply line as it came (OK ... or ERR ...). After a reply that
        timed out, the line is first synchronised again (`_sync`): a late reply is never
        taken for the next command's."""
        if self._late:
            self._sync()
        self.send_bytes(line.encode() + b"\n")
        return self.reply(timeout_s)

    def send_bytes(self, data: bytes) -> None:
        """Raw bytes, for tests of the protocol itself; read each reply with `reply`."""
        self._write(data)

    def reply(self, timeout_s: float = REPLY_TIMEOUT_S) -> str:
        """The next reply line."""
        try:
            reply = self._replies.get(timeout=timeout_s)
        except queue.Empty:
            self._late = True
            raise TimeoutError(f"no reply within {timeout_s} s") from None
        if reply is None:
            self._replies.put(None)  # for every call after this one too
            raise self._gone()
        return reply

    def ok(self, line: str, timeout_s: float = REPLY_TIMEOUT_S) -> str:
        """One command that must succeed: what follows OK ('' for a bare OK)."""
        reply = self.send(line, timeout_s)
        if reply != "OK" and not reply.startswith("OK "):
            raise ProtocolError(line, reply)
        return reply[3:]

    def _sync(self) -> None:
        """Skip what is not an answer to us: a serial line may hold what an earlier client
        left (a partial line, ended by the newline; replies nobody read), and replies that
        came after their commands timed out. One HELP, its reply awaited past the others
        (a unit answers in order); a port that answers otherwise (an echo, a modem, a
        shell) is said to be no cityunit's, within SYNC_REPLIES lines or a reply's time."""
        self._late = False
        self.send_bytes(b"\nHELP\n")
        heard: list[str] = []
        while len(heard) < SYNC_REPLIES:
            try:
                reply = self.reply()
            except TimeoutError:
                if not heard:
                    raise
                self._late = True
                break
            if reply.startswith("OK PING"):
                return
            heard.append(reply)
        raise ConnectionError(
            f"this port answers, but not as a cityunit does: it said {heard[:3]!r}"
            + (f" and {len(heard) - 3} lines more" if len(heard) > 3 else "")
        )


def _event(line: str) -> dict[str, Any] | None:
    """An event line's object; None for a line that is no event: not JSON (too deep for
    the parser too), not an object, or with no name."""
    try:
        event = json.loads(line[4:])
    except (ValueError, RecursionError):
        return None
    return event if isinstance(event, dict) and isinstance(event.get("event"), str) else None
