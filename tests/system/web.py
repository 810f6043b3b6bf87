"""The players' page served by a whole unit on the virtual clock, and a phone's side of it:
plain sockets and http.client, so that every byte the page sends is seen."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from cityunit.board import Board
from cityunit.config import Config
from cityunit.loop.clock import VirtualClock
from cityunit.parts.gpio import mock_pins
from cityunit.web.http import listening
from cityunit.web.server import Page
from cityunit_sim.board import SimBoard, SimHands

WAIT_S = 10.0  # a socket's reads: a bound on a failure, not a pace


@dataclass
class Served:
    board: Board
    page: Page
    port: int
    clock: VirtualClock

    def on_loop(self, work: Any) -> Any:
        """`work()` on the loop thread (which alone touches the unit), its result back."""
        done = threading.Event()
        out: list[Any] = []

        def run() -> None:
            try:
                out.append(work())
            finally:
                done.set()

        self.board.runtime.call(run)
        assert done.wait(WAIT_S), "the loop did not answer"
        return out[0]

    def advance(self, ms: int) -> None:
        """Virtual time on, as the console's ADVANCE moves it (the loop's own step too)."""
        runtime = self.board.runtime
        self.on_loop(
            lambda: (runtime.advance_to(self.clock.now_ms() + ms, self.clock), runtime.step())
        )

    def request(
        self, method: str, path: str, body: Any = None, token: str | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT_S)
        headers = {} if token is None else {"X-Unit-Token": token}
        data = None if body is None else json.dumps(body).encode()
        try:
            connection.request(method, path, data, headers)
            answer = connection.getresponse()
            return answer.status, dict(answer.getheaders()), answer.read()
        finally:
            connection.close()

    def state(self) -> dict[str, Any]:
        status, _, body = self.request("GET", "/state")
        assert status == 200
        loaded: dict[str, Any] = json.loads(body)
        return loaded

    def press(self, button: str, token: str | None = None, hold_ms: int = 0) -> int:
        """A tap (or a hold of `hold_ms` of virtual time) from a phone: its status."""
        token = self.page.link.token if token is None else token
        status = self.request("POST", "/press", {"button": button, "down": True}, token)[0]
        if status == 204:
            self.advance(hold_ms)
            status = self.request("POST", "/press", {"button": button, "down": False}, token)[0]
        self.advance(0)
        return status

    def stream(
        self, last_id: str | None = None, receive_buffer: int = 0, query: str = ""
    ) -> Stream:
        return Stream(self.port, last_id, receive_buffer, query)


class Stream:
    """A phone's /events: its messages as (id, event, data), read as they come."""

    def __init__(
        self, port: int, last_id: str | None = None, receive_buffer: int = 0, query: str = ""
    ) -> None:
        self.sock = socket.socket()
        if receive_buffer:  # a phone that reads slowly: set before connecting, it holds
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.sock.settimeout(WAIT_S)
        self.sock.connect(("127.0.0.1", port))
        resume = "" if last_id is None else f"Last-Event-ID: {last_id}\r\n"
        self.sock.sendall(
            f"GET /events{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n{resume}\r\n".encode()
        )
        self.buffer = b""
        head = self._until(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 OK") and b"text/event-stream" in head, head

    def _until(self, end: bytes) -> bytes:
        while end not in self.buffer:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("the page closed the stream")
            self.buffer += data
        out, _, self.buffer = self.buffer.partition(end)
        return out

    def next(self) -> tuple[str, str, str]:
        """The next message (comments and the retry line skipped)."""
        while True:
            fields: dict[str, str] = {}
            for line in self._until(b"\n\n").decode().split("\n"):
                name, _, value = line.partition(": ")
                fields[name] = value
            if "event" in fields:
                return fields.get("id", ""), fields["event"], fields.get("data", "")

    def until(self, event: str, test: Any = lambda data: True) -> tuple[str, Any]:
        """Messages up to the first `event` whose JSON passes `test`: its id and data."""
        while True:
            id_, kind, data = self.next()
            if kind == event and test(loaded := json.loads(data)):
                return id_, loaded

    def close(self) -> None:
        self.sock.close()


@contextmanager
def served(sim: bool = False, config: Config | None = None, port: int = 0) -> Iterator[Served]:
    """A unit with its page on `port` of 127.0.0.1 (0: a free one), its loop running;
    `sim`: the simulator's, whose page is the unit (its buttons, switch, frames)."""
    clock = VirtualClock()
    config = config or Config()
    board: Board
    if sim:
        board = SimBoard(config, clock, seed=1)
    else:
        board = Board(config, clock, pin_factory=mock_pins(), panel=None, seed=1)
    with board:
        sock = listening(port, "127.0.0.1")
        port = sock.getsockname()[1]
        address = f"http://127.0.0.1:{port}/"
        if isinstance(board, SimBoard):
            page = board.serve_page(sock, address, SimHands(board), lambda: board.oled_image)
        else:
            page = board.serve_page(sock, address)
        loop = threading.Thread(target=board.runtime.run, name="loop")
        loop.start()
        try:
            yield Served(board, page, port, clock)
        finally:
            board.runtime.stop()
            loop.join(WAIT_S)
