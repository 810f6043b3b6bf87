"""The page's front end: attached to the Board like the console, serving the page, its
state and its live feed to every phone on the LAN, and a press from a phone that holds
the token the unit's screen shows.

Two threads meet here, and neither waits for the other: the loop publishes to the feed
(`Broadcast`) and wakes the phones' thread; the phones' thread runs one asyncio loop for
every connection and sleeps, with no timer, while none is open. Each phone holds at most
SEND_BUFFER of the unit's memory (then its stream waits: the feed's ring keeps what it
misses), and MAX_CONNECTIONS bounds the phones.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from http import HTTPStatus
from importlib import resources
from urllib.parse import parse_qs

from PIL import Image

from cityunit.core.screens import PAGE_KEY, PageLink
from cityunit.loop.runtime import Runtime
from cityunit.web import http
from cityunit.web.address import address_changes, drain, page_address
from cityunit.web.broadcast import Broadcast
from cityunit.web.hands import Hands, Presses, UnitHands

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 64  # phones, and requests in flight: a table of six, many times over
PER_ADDRESS = 8  # of them from one address: one neighbour cannot take them all
STATE_WAIT_S = 2.0  # for the loop to answer /state (it is busy for milliseconds at most)
SEND_WAIT_S = 30.0  # a phone that takes no bytes for this long is let go
SEND_BUFFER = 16 * 1024  # bytes a phone that stops reading holds in the page (`_limit`)
KEEPALIVE_S = 25.0  # a comment on each stream (only while one is open): dead links show
FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page.css": ("page.css", "text/css; charset=utf-8"),
    "/page.js": ("page.js", "text/javascript; charset=utf-8"),
}
_STREAM_HEAD = ("HTTP/1.1 200 OK", "Content-Type: text/event-stream", "Connection: close")
EVENT_STREAM = ("\r\n".join((*_STREAM_HEAD, *http.SECURITY_HEADERS)) + "\r\n\r\n").encode()
EVENT_STREAM += b"retry: 2000\n\n"  # a phone that loses the stream asks again in 2 s


class Page:
    """The players' page on `sock` (listening: the caller chose where, and hands it over:
    the page closes it, also when it cannot start), for the runtime's unit. `address`:
    the page's URL as phones reach it (the QR code's, the log's); None: this machine's
    on its LAN, followed as it changes. `frames`: the OLED's picture for a phone that is
    the unit (the simulator's), with `hands` that press its buttons and flip its switch.
    A page that cannot start raises, having closed what it opened."""

    def __init__(
        self,
        runtime: Runtime,
        sock: socket.socket,
        address: str | None = None,
        hands: Hands | None = None,
        frames: Callable[[], Image.Image | None] | None = None,
    ) -> None:
        self._sock = sock
        self._closed = False
        try:
            self._files = {path: _read(name) for path, (name, _) in FILES.items()}
            self.runtime = runtime
            self._port: int = sock.getsockname()[1]
            self._follow = address is None  # the LAN's address, as it changes
            self._address = page_address(self._port) if address is None else address
            self.broadcast = Broadcast(runtime, self._address, self._wake, frames)
            hands = hands if hands is not None else UnitHands(runtime)
            self.presses = Presses(hands, lambda: self.broadcast.link.token)
            self.connections = 0
            self.refused = 0  # connections turned away at MAX_CONNECTIONS
            self._turning_away = 0
            self._open: set[asyncio.StreamWriter] = set()  # requests under way
            self._from: dict[str, int] = {}  # connections under way, by the phone's address
            self._asked: asyncio.Future[str] | None = None  # the /state the loop is making
            self._aloop: asyncio.AbstractEventLoop | None = None
            self._bell: asyncio.Event | None = None  # set at a change; then a new one
            self._stopping: asyncio.Event | None = None
            self._ready = threading.Event()
            self._failed: BaseException | None = None
            self._thread = threading.Thread(target=self._serve, name="web", daemon=True)
            self._thread.start()
            self._ready.wait()
            if self._failed is not None:
                raise self._failed
            self.broadcast.start()
        except BaseException:
            sock.close()
            raise

    @property
    def link(self) -> PageLink:
        """Where the page is, and the token a phone must send to press (the QR code's):
        renewed at each new game."""
        return self.broadcast.link

    @property
    def closed(self) -> bool:
        return self._closed

    def _wake(self) -> None:
        """(The loop thread's.) The feed has news: the phones' thread rings the bell."""
        if self._aloop is not None:
            with contextlib.suppress(RuntimeError):  # closed: nobody to tell
                self._aloop.call_soon_threadsafe(self._ring_bell)

    # ----- the phones' thread -----------------------------------------------------------

    def _serve(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as e:  # before `ready`: Page() raises it; after, it is said
            if self._ready.is_set():
                log.exception("the players' page stopped (the unit plays on)")
            self._failed = e
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self._bell = asyncio.Event()
        self._stopping = asyncio.Event()
        aloop = asyncio.get_running_loop()
        with contextlib.ExitStack() as held:
            server = await asyncio.start_server(
                self._connection, sock=self._sock, limit=http.HEAD_BYTES
            )
            changes = address_changes() if self._follow else None
            if changes is not None:
                held.enter_context(changes)
                aloop.add_reader(changes, self._moved, changes)
                held.callback(aloop.remove_reader, changes)
            self._aloop = aloop
            self._ready.set()
            async with server:
                await self._stopping.wait()
                server.close()
                self._ring_bell()  # every stream looks, sees the stop, and ends
                for writer in self._open:  # a request being read or answered: cut short
                    writer.transport.abort()
                others = asyncio.all_tasks() - {asyncio.current_task()}
                _, pending = await asyncio.wait(others, timeout=1.0) if others else ((), ())
                for task in pending:  # (none but a bug's: each ends on its own above)
                    task.cancel()

    def _moved(self, changes: socket.socket) -> None:
        """The kernel's addresses changed: the page's, looked up again, to the menu."""
        drain(changes)
        address = page_address(self._port)
        if address != self._address:
            self._address = address
            self.runtime.call(partial(self.broadcast.move, address))

    def _ring_bell(self) -> None:
        """A change: every stream waiting on the bell wakes once, and the next change
        rings a new one."""
        assert self._bell is not None
        self._bell.set()
        self._bell = asyncio.Event()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        address = str(peer[0]) if isinstance(peer, tuple) else ""
        if self.connections >= MAX_CONNECTIONS or self._from.get(address, 0) >= PER_ADDRESS:
            await self._turn_away(reader, writer)
            return
        self.connections += 1
        self._from[address] = self._from.get(address, 0) + 1
        self._open.add(writer)
        _limit(writer)
        try:
            await self._answer(reader, writer)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass  # the phone went away, or took too long: nothing to say to it
        except asyncio.CancelledError:
            raise
        except Exception:  # a request must never stop the page, let alone the unit
            log.exception("the players' page: a request failed")
        finally:
            self.connections -= 1
            if (left := self._from.pop(address) - 1) > 0:
                self._from[address] = left
            self._open.discard(writer)
            writer.close()

    async def _turn_away(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Past MAX_CONNECTIONS: a 503, then a moment to take the request (closing on it
        unread would reset the connection before the 503 is read); past twice as many,
        closed at once."""
        self.refused += 1
        self._turning_away += 1
        try:
            if self._turning_away <= MAX_CONNECTIONS:
                busy = http.response(HTTPStatus.SERVICE_UNAVAILABLE, b"busy: try again\n",
                                     headers=(("Retry-After", "5"),))  # fmt: skip
                writer.write(busy)
                writer.write_eof()
                async with asyncio.timeout(1.0):
                    await reader.read(http.HEAD_BYTES)
        except (OSError, TimeoutError):
            pass  # gone already (reset), or silent: closed either way
        finally:
            self._turning_away -= 1
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await http.read(reader)
            if request.path == "/events" and request.method == "GET":
                await self._stream(reader, writer, request)
                return
            reply = await self._route(request)
        except http.Refused as e:
            reply = http.response(e.status, f"{e}\n".encode(), headers=e.headers)
        writer.write(reply)
        async with asyncio.timeout(SEND_WAIT_S):
            await writer.drain()

    async def _route(self, request: http.Request) -> bytes:
        head = request.method == "HEAD"
        path = "/" if request.path.upper().startswith("/" + PAGE_KEY) else request.path
        if path in FILES:  # the page; from the QR code, with the token in its path
            if request.method not in ("GET", "HEAD"):
                raise http.not_allowed("GET", "HEAD")
            return http.response(HTTPStatus.OK, self._files[path], FILES[path][1], head=head)
        if request.path == "/state":
            if request.method not in ("GET", "HEAD"):
                raise http.not_allowed("GET", "HEAD")
            state = await self._state_now()
            return http.response(HTTPStatus.OK, state.encode(), "application/json", head=head)
        if request.path == "/events":
            raise http.not_allowed("GET")
        if request.path in ("/press", "/switch"):
            if request.method != "POST":
                raise http.not_allowed("POST")
            if request.path == "/switch" and not self.presses.hands.switch_on_page:
                raise http.Refused(HTTPStatus.NOT_FOUND, "the switch is on the box")
            self.presses.act(request)
            return http.response(HTTPStatus.NO_CONTENT)
        raise http.Refused(HTTPStatus.NOT_FOUND)

    async def _state_now(self) -> str:
        """The unit's state as of now, from the loop (which alone may read the unit): one
        question in flight, however many phones ask at once."""
        if self._asked is None or self._asked.done():
            answer: Future[str] = Future()
            self.runtime.call(partial(_answer, answer, self.broadcast.state))
            self._asked = asyncio.wrap_future(answer)
        try:
            async with asyncio.timeout(STATE_WAIT_S):
                return await asyncio.shield(self._asked)  # a phone's timeout is not the loop's
        except TimeoutError:
            raise http.Refused(HTTPStatus.SERVICE_UNAVAILABLE, "the unit is busy") from None
        except Exception:  # the loop's failure, said here: the unit plays on
            log.exception("the players' page: the state could not be made")
            raise http.Refused(HTTPStatus.INTERNAL_SERVER_ERROR) from None

    async def _stream(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, request: http.Request
    ) -> None:
        """Server-sent events until the phone goes (it closes: its end of the stream is
        read), the state as of its coming (after the events it missed, for a phone back
        from a drop), then every change. The OLED's frames (the simulator's: they show the
        menu's QR code) go only to a phone that holds the token (`?k=`)."""
        broadcast, stopping = self.broadcast, self._stopping
        feed = broadcast.feed
        seq = feed.place(request.headers.get("last-event-id"))
        given = parse_qs(request.query).get("k", [""])[-1].encode("latin-1", "replace")
        writer.write(EVENT_STREAM)
        broadcast.watchers += 1
        gone = asyncio.ensure_future(reader.read(1))  # a phone sends nothing more: EOF
        try:
            bell = self._bell
            assert bell is not None and stopping is not None
            self.runtime.call(partial(broadcast.step_done, force=True))
            while not stopping.is_set() and not gone.done():
                frames = hmac.compare_digest(given, broadcast.link.token.encode())
                behind = feed.since(seq)
                if behind.missed:
                    writer.write(f"event: dropped\ndata: {behind.missed}\n\n".encode())
                    if behind.state is not None:
                        await _send(writer, behind.state)
                for message in behind.messages:
                    if frames or message.kind != "frame":
                        await _send(writer, message.data)
                seq = behind.seq
                async with asyncio.timeout(SEND_WAIT_S):
                    await writer.drain()
                news = asyncio.ensure_future(bell.wait())
                done, _ = await asyncio.wait({news, gone}, timeout=KEEPALIVE_S,
                                             return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
                news.cancel()
                if not done:
                    writer.write(b": still here\n\n")
                bell = self._bell
                assert bell is not None
        finally:
            gone.cancel()
            broadcast.watchers -= 1

    # ----- any thread ------------------------------------------------------------------

    def close(self) -> None:
        """Every phone let go, the port closed, the thread joined. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self.broadcast.close()
        aloop, stopping = self._aloop, self._stopping
        if aloop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # ended already
                aloop.call_soon_threadsafe(stopping.set)
        self._thread.join(5.0)
        if self._thread.is_alive():
            log.warning("the players' page's thread did not end")
        self._sock.close()


def _answer(answer: Future[str], state: Callable[[], str]) -> None:
    """(The loop thread's.) The state, into `answer`: a failure goes there too, never
    into the loop."""
    if not answer.set_running_or_notify_cancel():
        return
    try:
        answer.set_result(state())
    except Exception as e:
        answer.set_exception(e)


async def _send(writer: asyncio.StreamWriter, data: bytes) -> None:
    """`data` out; past SEND_BUFFER not yet taken, a wait for the phone (SEND_WAIT_S)."""
    writer.write(data)
    if writer.transport.get_write_buffer_size() > SEND_BUFFER:
        async with asyncio.timeout(SEND_WAIT_S):
            await writer.drain()


def _limit(writer: asyncio.StreamWriter) -> None:
    """What a phone that stops reading may hold: SEND_BUFFER in the page's transport
    (`_send` waits past it), and the kernel's socket buffer, SEND_BUFFER asked (which
    Linux doubles)."""
    writer.transport.set_write_buffer_limits(high=SEND_BUFFER)
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)


def _read(name: str) -> bytes:
    return resources.files("cityunit.web").joinpath("page", name).read_bytes()
