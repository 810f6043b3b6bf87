"""The page's front end: attached to the Board like the console, serving the page, its
state and its live feed to every phone on the LAN, and a press from a phone that holds
the token the unit's screen shows.

Two threads meet here, and neither waits for the other: the loop publishes to the feed
after each step (only while a phone watches: nobody watching costs the loop one call that
returns), and wakes the web thread; the web thread's asyncio loop serves every phone and
sleeps, with no timer, while none is connected. Each phone's stream is bounded by the
feed's ring and the socket's buffer; the connections by MAX_CONNECTIONS.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hmac
import io
import json
import logging
import secrets
import socket
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from http import HTTPStatus
from importlib import resources

from PIL import Image

from cityunit.core.events import OUTPUT_CHANGES, Event, EventKind
from cityunit.core.gestures import Button
from cityunit.core.screens import PAGE_KEY, page_link
from cityunit.loop.runtime import Runtime
from cityunit.web import http
from cityunit.web.feed import Feed
from cityunit.web.hands import Hands, UnitHands
from cityunit.web.table import Table

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 64  # phones, and requests in flight: a table of six, many times over
STATE_WAIT_S = 2.0  # for the loop to answer /state (it is busy for milliseconds at most)
SEND_WAIT_S = 30.0  # a phone that takes no bytes for this long is let go
KEEPALIVE_S = 25.0  # a comment on each stream (only while one is open): dead links show
HOLD_LIMIT_S = 10.0  # a button held from a phone that went away is let go
TOKEN_BYTES = 8  # 64 bits: 13 base32 characters, and the QR code stays 25x25
FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/page.css": ("page.css", "text/css; charset=utf-8"),
    "/page.js": ("page.js", "text/javascript; charset=utf-8"),
}
EVENT_STREAM = (
    b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
    b"X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\nretry: 2000\n\n"
)
_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


@dataclass
class _Published:
    """The loop thread's own: what the phones were last sent."""

    state: str = ""
    frame: bytes = b""


class Page:
    """The players' page on `sock` (bound and listening: the caller chose where), for the
    runtime's unit. `address`: the page's URL as phones reach it (the QR code's, the
    log's, without the token); `frames`: the OLED's picture for a phone that is the unit
    (the simulator's), with `hands` that press its buttons and flip its switch."""

    def __init__(
        self,
        runtime: Runtime,
        sock: socket.socket,
        address: str,
        hands: Hands | None = None,
        frames: Callable[[], Image.Image | None] | None = None,
    ) -> None:
        self.runtime = runtime
        self.address = address
        self.hands: Hands = hands if hands is not None else UnitHands(runtime)
        self._frames = frames
        self.feed = Feed()
        self.table = Table()
        self.token = _new_token()
        self._published = _Published()
        self._files = {path: _read(name) for path, (name, _) in FILES.items()}
        self.watchers = 0  # streams open (the web thread's count; the loop only reads it)
        self.connections = 0
        self.refused = 0  # connections turned away at MAX_CONNECTIONS
        self._sock = sock
        self._aloop: asyncio.AbstractEventLoop | None = None
        self._bell: asyncio.Event | None = None  # set at a change; then a new one
        self._stopping: asyncio.Event | None = None
        self._ready = threading.Event()
        self._held: dict[Button, asyncio.TimerHandle] = {}
        self.closed = False
        self._forget = [runtime.on_event(self._event), runtime.on_step(self._step_done)]
        runtime.call(self._tell_unit)
        self._thread = threading.Thread(target=self._serve, name="web", daemon=True)
        self._thread.start()
        self._ready.wait()

    @property
    def link(self) -> str:
        """The page with the token (the QR code's): pressing from it is allowed."""
        return page_link(self.address, self.token)

    # ----- the loop thread -------------------------------------------------------------

    def _tell_unit(self) -> None:
        self.runtime.unit.show_page(self.address, self.token)

    def _event(self, event: Event) -> None:
        if event.event is EventKind.NEW_GAME:  # a new game, a new token: the old one is void
            self.token = _new_token()
            self._tell_unit()
        self.table.saw(event)
        if self.watchers and event.event not in OUTPUT_CHANGES:
            self.feed.publish("unit", _JSON(event.as_dict()))

    def _step_done(self, force: bool = False) -> None:
        if not self.watchers and not force:
            return
        published = self._published
        unit = self.runtime.unit
        snapshot = unit.snapshot()
        history = tuple(unit.game.history)
        state = _JSON(
            self.table.state(snapshot, unit.game.rules, history, self._frames is not None)
        )
        changed = False
        if force or state != published.state:
            published.state = state
            self.feed.publish("state", state, state=True)
            changed = True
        image = None if self._frames is None else self._frames()
        if image is not None and (force or image.tobytes() != published.frame):
            published.frame = image.tobytes()
            self.feed.publish("frame", _JSON(_png(image)))
            changed = True
        if changed or force:
            self._wake()

    def _state(self) -> str:
        """The page's JSON as of the unit's now."""
        unit = self.runtime.unit
        history = tuple(unit.game.history)
        sim = self._frames is not None
        return _JSON(self.table.state(unit.snapshot(), unit.game.rules, history, sim))

    def _wake(self) -> None:
        if self._aloop is not None:
            with contextlib.suppress(RuntimeError):  # closed: nobody to tell
                self._aloop.call_soon_threadsafe(self._ring_bell)

    # ----- the web thread --------------------------------------------------------------

    def _serve(self) -> None:
        try:
            asyncio.run(self._main())
        except Exception:
            log.exception("the page stopped")  # the unit plays on without it
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self._bell = asyncio.Event()
        self._stopping = asyncio.Event()
        server = await asyncio.start_server(
            self._connection, sock=self._sock, limit=http.HEAD_BYTES
        )
        self._aloop = asyncio.get_running_loop()
        self._ready.set()
        async with server:
            await self._stopping.wait()
            server.close()
            others = asyncio.all_tasks() - {asyncio.current_task()}
            for task in others:
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)

    def _ring_bell(self) -> None:
        """A change: every stream waiting on the bell wakes once, and the next change
        rings a new one."""
        assert self._bell is not None
        self._bell.set()
        self._bell = asyncio.Event()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.connections >= MAX_CONNECTIONS:
            self.refused += 1
            writer.write(http.response(HTTPStatus.SERVICE_UNAVAILABLE, b"too many connections\n",
                                       headers=(("Retry-After", "5"),)))  # fmt: skip
            writer.close()
            return
        self.connections += 1
        try:
            await self._answer(reader, writer)
        except (ConnectionError, TimeoutError, asyncio.IncompleteReadError):
            pass  # the phone went away, or took too long: nothing to say to it
        except asyncio.CancelledError:
            raise
        except Exception:  # a request must never stop the page, let alone the unit
            log.exception("the page: a request failed")
        finally:
            self.connections -= 1
            writer.close()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = await http.read(reader)
            if request.path == "/events" and request.method == "GET":
                await self._stream(writer, request)
                return
            reply = await self._route(request)
        except http.Refused as e:
            reply = http.response(e.status, f"{e}\n".encode())
        writer.write(reply)
        await asyncio.wait_for(writer.drain(), SEND_WAIT_S)

    async def _route(self, request: http.Request) -> bytes:
        head = request.method == "HEAD"
        path = "/" if request.path.upper().startswith("/" + PAGE_KEY) else request.path
        if path in FILES:  # the page; from the QR code, with the token in its path
            if request.method not in ("GET", "HEAD"):
                raise http.Refused(HTTPStatus.METHOD_NOT_ALLOWED)
            return http.response(HTTPStatus.OK, self._files[path], FILES[path][1], head=head)
        if request.path == "/state":
            if request.method not in ("GET", "HEAD"):
                raise http.Refused(HTTPStatus.METHOD_NOT_ALLOWED)
            state = await self._state_now()
            return http.response(HTTPStatus.OK, state.encode(), "application/json", head=head)
        if request.path in ("/press", "/switch"):
            if request.method != "POST":
                raise http.Refused(HTTPStatus.METHOD_NOT_ALLOWED)
            if request.path == "/switch" and not self.hands.switch_on_page:
                raise http.Refused(HTTPStatus.NOT_FOUND, "the switch is on the box")
            self._check_token(request)
            self._act(request)
            return http.response(HTTPStatus.NO_CONTENT)
        raise http.Refused(HTTPStatus.NOT_FOUND)

    def _check_token(self, request: http.Request) -> None:
        given = request.headers.get("x-unit-token", "")
        if not hmac.compare_digest(given.encode("latin-1"), self.token.encode()):
            raise http.Refused(HTTPStatus.FORBIDDEN, "the unit's screen shows the code to play")

    def _act(self, request: http.Request) -> None:
        try:
            body = json.loads(request.body)
        except (ValueError, UnicodeDecodeError):
            raise http.Refused(HTTPStatus.BAD_REQUEST, "the body must be JSON") from None
        if not isinstance(body, dict):
            raise http.Refused(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
        if request.path == "/switch":
            on = body.get("on")
            if not isinstance(on, bool):
                raise http.Refused(HTTPStatus.BAD_REQUEST, 'expected {"on": true|false}')
            self.hands.switch(on)
            return
        down, name = body.get("down"), body.get("button")
        if not isinstance(down, bool) or name not in ("auction", "build"):
            raise http.Refused(
                HTTPStatus.BAD_REQUEST, 'expected {"button": "auction"|"build", "down": true|false}'
            )
        button = Button(name)
        held = self._held.pop(button, None)
        if held is not None:
            held.cancel()
        if down:  # let go by itself if the phone never says so
            assert self._aloop is not None
            self._held[button] = self._aloop.call_later(HOLD_LIMIT_S, self._let_go, button)
        self.hands.press(button, down)

    def _let_go(self, button: Button) -> None:
        del self._held[button]
        self.hands.press(button, False)

    async def _state_now(self) -> str:
        """The unit's state as of now, from the loop (which alone may read the unit)."""
        answer: Future[str] = Future()

        def ask() -> None:
            unit = self.runtime.unit
            history = tuple(unit.game.history)
            state = self.table.state(
                unit.snapshot(), unit.game.rules, history, self._frames is not None
            )
            answer.set_result(_JSON(state))

        self.runtime.call(ask)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(answer), STATE_WAIT_S)
        except TimeoutError:
            raise http.Refused(HTTPStatus.SERVICE_UNAVAILABLE, "the unit is busy") from None

    async def _stream(self, writer: asyncio.StreamWriter, request: http.Request) -> None:
        """Server-sent events until the phone goes: the state, then every change."""
        feed = self.feed
        seq = feed.resume(request.headers.get("last-event-id"))
        writer.write(EVENT_STREAM)
        self.watchers += 1
        try:
            bell = self._bell
            assert bell is not None
            self.runtime.call(lambda: self._step_done(force=seq < 0))
            while True:
                behind = feed.since(seq)
                if behind.missed:
                    writer.write(f"event: dropped\ndata: {behind.missed}\n\n".encode())
                if behind.state is not None and (behind.missed or seq < 0) and behind.seq > 0:
                    writer.write(behind.state)
                for message in behind.messages:
                    writer.write(message.data)
                seq = behind.seq
                await asyncio.wait_for(writer.drain(), SEND_WAIT_S)
                try:
                    await asyncio.wait_for(bell.wait(), KEEPALIVE_S)
                except TimeoutError:
                    writer.write(b": still here\n\n")
                bell = self._bell
                assert bell is not None
        finally:
            self.watchers -= 1

    # ----- any thread ------------------------------------------------------------------

    def close(self) -> None:
        """Every phone let go, the port closed, the thread joined. Idempotent."""
        if self.closed:
            return
        self.closed = True
        for forget in self._forget:
            forget()
        aloop, stopping = self._aloop, self._stopping
        if aloop is not None and stopping is not None:
            with contextlib.suppress(RuntimeError):  # ended already
                aloop.call_soon_threadsafe(stopping.set)
        self._thread.join(5.0)
        if self._thread.is_alive():
            log.warning("the page's thread did not end")
        self._sock.close()


def _new_token() -> str:
    return base64.b32encode(secrets.token_bytes(TOKEN_BYTES)).decode("ascii").rstrip("=")


def _read(name: str) -> bytes:
    return resources.files("cityunit.web").joinpath("page", name).read_bytes()


def _png(image: Image.Image) -> str:
    """The OLED's frame as a data URL (a 1-bit PNG: a few hundred bytes)."""
    out = io.BytesIO()
    image.convert("1").save(out, "PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(out.getvalue()).decode("ascii")
