"""The players' page, as phones at the table use it: served by the whole unit on the
virtual clock, read and pressed over real sockets."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import zxingcpp
from web import WAIT_S, Served, served

from cityunit.config import Config
from cityunit.core.modes.settings import items
from cityunit.core.rules import Rules
from cityunit.core.screens import MenuScreen
from cityunit.display.render import render
from cityunit.web import http
from cityunit.web.feed import RING
from cityunit.web.server import FILES, MAX_CONNECTIONS, PER_ADDRESS


def switch_on(unit: Served) -> None:
    unit.on_loop(lambda: unit.board.unit.switch(True, unit.clock.now_ms()))
    unit.advance(0)


# ----- the page and its state ------------------------------------------------------------


def test_the_page_is_small_self_contained_and_locked_to_itself() -> None:
    with served() as unit:
        sizes = 0
        for path, (name, kind) in FILES.items():
            status, headers, body = unit.request("GET", path)
            assert status == 200 and headers["Content-Type"] == kind
            assert "default-src 'self'" in headers["Content-Security-Policy"]
            assert headers["X-Content-Type-Options"] == "nosniff"
            assert not re.search(rb"(?:src|href)=\"(?:https?:)?//", body), (
                f"{name} loads from elsewhere"
            )
            sizes += len(body)
        assert sizes < 60_000, f"the page is {sizes} bytes"
        status, _, body = unit.request("GET", "/K/ABCDEFGHIJKLM")  # the QR code's way in
        assert status == 200 and body == unit.request("GET", "/")[2]


def test_the_state_says_what_the_table_sees_and_never_a_secret_auctions_length() -> None:
    with served() as unit:
        state = unit.state()
        assert (state["v"], state["power"], state["mode"]) == (1, False, "off")
        switch_on(unit)
        unit.advance(61_000)
        state = unit.state()
        assert (state["hour"], state["mode"], state["running"]) == (1, "idle", True)
        assert state["hour_elapsed_ms"] == 61_000 and state["hour_ms"] == 3_600_000
        assert unit.press("auction") == 204
        state = unit.state()
        assert state["auction"] == {"phase": "running", "countdown_s": None}
        assert "led" not in state and "tone_hz" not in state, "a unit's page has no LED"
        length = unit.on_loop(lambda: unit.board.unit.mode._length)
        assert str(length) not in json.dumps(state) and str(length // 1000) not in json.dumps(
            state["auction"]
        )


def test_a_fixed_auction_counts_down_and_its_final_phase_shows() -> None:
    config = Config(rules=Rules(auction_mode="fixed", auction_fixed_s=30))
    with served(config=config) as unit:
        switch_on(unit)
        unit.press("auction")
        assert unit.state()["auction"]["countdown_s"] == 30
        unit.advance(20_500)
        assert unit.state()["auction"] == {"phase": "running", "countdown_s": 10}
        unit.advance(5_000)
        assert unit.state()["auction"] == {"phase": "final", "countdown_s": 5, "final_s": 5}
        unit.advance(5_000)
        assert unit.state()["sold"] == "sold" and unit.state()["auction"] is None


def test_permits_and_the_game_over_reach_the_page() -> None:
    with served() as unit:
        switch_on(unit)
        for _ in range(3):
            unit.press("build")
            unit.advance(10_000)
        permits = unit.state()["permits"]
        assert len(permits) == 3 and all(p in (1, 2, 3, "station") for p in permits)
        assert permits == [
            p.value for p in unit.on_loop(lambda: tuple(unit.board.unit.game.history))
        ]
        unit.advance(3_600_000)
        over = unit.state()
        assert over["mode"] == "hour_end" and over["game_over"] == {"hours_played": 1}


def test_the_hour_is_hidden_where_the_table_hides_it() -> None:
    with served(config=Config(rules=Rules(show_clock=False))) as unit:
        switch_on(unit)
        unit.advance(5_000)
        assert unit.state()["hour_elapsed_ms"] is None


# ----- live: server-sent events ------------------------------------------------------------


def test_a_phone_follows_an_auction_live_and_resumes_after_the_last_event_it_saw() -> None:
    with served() as unit:
        stream = unit.stream()
        _, first = stream.until("state")
        assert first["power"] is False
        switch_on(unit)
        stream.until("state", lambda s: s["power"])
        unit.press("auction")
        seen, _ = stream.until("unit", lambda e: e["event"] == "auction.start")
        stream.close()
        unit.press("auction")  # stopped while the phone was away
        unit.press("build")
        unit.advance(10_000)
        again = unit.stream(last_id=seen)
        missed = []
        while "permit" not in missed:
            kind, data = again.next()[1:]
            if kind == "unit":
                missed.append(json.loads(data)["event"])
        assert missed[0] == "auction.end", f"the events it missed, in order: {missed}"
        _, state = again.until("state")
        assert state["permits"], "then the state as it is"
        again.close()


def test_a_phone_that_comes_is_given_the_state_as_of_its_coming_not_an_old_one() -> None:
    """A stale state first would make the page announce news that is not new (an auction
    started long ago, a game over already told)."""
    with served() as unit:
        stream = unit.stream()
        stream.until("state")
        stream.close()
        switch_on(unit)
        unit.press("auction")
        fresh = unit.stream(last_id="0123.4")  # an id from another run: afresh
        _, state = fresh.until("state")
        assert state["mode"] == "auction", "the first state is the unit's now"
        fresh.close()


def test_a_phone_that_stops_reading_costs_a_bounded_buffer_and_is_told_what_it_missed() -> None:
    """Its stream waits on its full socket while the ring moves on: the loop never waits,
    and when it reads again it is told how many it missed, then given the state."""
    with served() as unit:
        stream = unit.stream(receive_buffer=4096)
        stream.until("state")
        pad = "x" * 2000
        for _ in range(RING * 2):  # 1 MB: far past the socket's buffers and the ring
            unit.on_loop(
                lambda: (
                    unit.page.broadcast.feed.publish("unit", json.dumps(pad)),
                    unit.page.broadcast.step_done(force=True),  # (which wakes the phones)
                )
            )
        kinds = []
        while (kind := stream.next()[1]) != "dropped":
            kinds.append(kind)
        assert len(kinds) < RING, "the stream was sent all it missed"
        assert stream.next()[1] == "state"
        stream.close()


def test_the_page_costs_the_loop_nothing_while_nobody_watches() -> None:
    """No state is made for nobody (a step's cost): only the unit's few events are kept,
    for a phone that comes back."""
    with served() as unit:
        switch_on(unit)
        feed = unit.page.broadcast.feed
        before = feed.since(-1).seq
        for _ in range(5):
            unit.press("auction")
            unit.advance(3_000)
        kept = feed.since(before).messages
        assert kept and all(b"event: unit\n" in message.data for message in kept)


# ----- pressing from a phone: the token ------------------------------------------------------


def test_a_press_needs_the_token_the_units_screen_shows() -> None:
    with served() as unit:
        switch_on(unit)
        assert unit.press("auction", token="") == 403
        assert unit.press("auction", token="A" * 13) == 403
        assert unit.state()["mode"] == "idle"
        assert unit.press("auction") == 204
        assert unit.state()["mode"] == "auction"
        status, _, _ = unit.request("POST", "/switch", {"on": False}, unit.page.link.token)
        assert status == 404, "a unit's switch is on its box"


def test_a_new_game_voids_the_token_and_the_menu_shows_the_new_one() -> None:
    with served() as unit:
        switch_on(unit)
        old = unit.page.link.token
        unit.press("build", hold_ms=2_000)  # the menu
        while unit.on_loop(lambda: unit.board.unit.mode.screen(0)).item != "new_game":
            unit.press("build")
        unit.press("auction")  # NEW GAME
        assert unit.page.link.token != old
        assert unit.press("auction", token=old) == 403, "a token replayed after a new game"
        assert unit.press("auction") == 204


def test_the_menu_shows_the_page_as_a_qr_code_a_phone_reads() -> None:
    with served() as unit:
        switch_on(unit)
        unit.press("build", hold_ms=2_000)
        while (screen := unit.on_loop(lambda: unit.board.unit.mode.screen(0))).item != "page":
            unit.press("build")
        assert isinstance(screen, MenuScreen) and screen.count == len(items(unit.page.link))
        assert unit.page.link.token not in json.dumps(unit.state()), "the token in the page's state"
        text = unit.on_loop(lambda: unit.board.unit.state())["screen"]
        assert unit.page.link.token not in " ".join(text), "the token in the console's STATE"
        image = render(screen, "en").convert("L").resize((256, 128))
        assert [code.text for code in zxingcpp.read_barcodes(image)] == [unit.page.link.link]
        assert unit.request("GET", unit.page.link.link.split(str(unit.port), 1)[1])[0] == 200


def test_a_phone_that_is_the_simulators_unit_flips_its_switch_and_sees_its_frames() -> None:
    with served(sim=True) as unit:
        token = unit.page.link.token
        stream = unit.stream(query=f"?k={token}")
        stream.until("state")
        assert unit.request("POST", "/switch", {"on": True}, token)[0] == 204
        unit.advance(100)  # the switch's debounce
        _, state = stream.until("state", lambda s: s["power"])
        assert {"led", "tone_hz", "volume"} <= state.keys()
        _, frame = stream.until("frame")
        assert frame.startswith("data:image/png;base64,")
        stream.close()


# ----- hostile phones ---------------------------------------------------------------------


def raw(unit: Served, data: bytes, host: bytes | None = b"127.0.0.1", source: str = "") -> bytes:
    """What the page answers to `data` (a Host line added after the request line, unless
    None), until it closes the connection; `source`: the phone's own address."""
    if host is not None and b"\r\n" in data:
        line, rest = data.split(b"\r\n", 1)
        data = line + b"\r\nHost: " + host + b"\r\n" + rest
    where = (source, 0) if source else None
    with socket.create_connection(("127.0.0.1", unit.port), WAIT_S, where) as sock:
        sock.sendall(data)
        out = b""
        while chunk := sock.recv(65536):
            out += chunk
        return out


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GARBAGE\r\n\r\n", 400),
        (b"GET / HTTP/9.9\r\n\r\n", 400),
        (b"GET /../../etc/passwd HTTP/1.1\r\n\r\n", 404),
        (b"GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\n\r\n", 404),
        (b"GET http://evil/ HTTP/1.1\r\n\r\n", 400),
        (b"GET / HTTP/1.1\r\nX-A: " + b"a" * 20_000 + b"\r\n\r\n", 431),
        (b"GET / HTTP/1.1\r\n" + b"X: y\r\n" * 100 + b"\r\n", 431),
        (b"GET / HTTP/1.1\r\nBad Header\r\n\r\n", 400),
        (b"POST /press HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413),
        (b"POST /press HTTP/1.1\r\nContent-Length: -1\r\n\r\n", 400),
        (b"POST /press HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 501),
        (b"POST /press HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}", 403),
        (b"DELETE / HTTP/1.1\r\n\r\n", 405),
        (b"GET /press HTTP/1.1\r\n\r\n", 405),
        (b"GET /state.json HTTP/1.1\r\n\r\n", 404),
        (b"GET /\xff HTTP/1.1\r\n\r\n", 400),
        (b"POST /press HTTP/1.1\r\nContent-Length: " + b"9" * 5000 + b"\r\n\r\n", 413),
        (b"POST /press HTTP/1.1\r\nContent-Length: " + b"0" * 5000 + b"1\r\n\r\nx", 403),
        (b"HEAD /events HTTP/1.1\r\n\r\n", 405),
    ],
)
def test_a_malformed_or_hostile_request_gets_a_4xx_and_the_unit_plays_on(
    request_bytes: bytes, status: int
) -> None:
    with served() as unit:
        answer = raw(unit, request_bytes)
        assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer[:80]
        switch_on(unit)
        assert unit.state()["power"] is True


def test_a_bad_body_with_the_token_is_a_400() -> None:
    with served() as unit:
        token = unit.page.link.token
        for body in (b"nope", b"[]", b'{"button":"auction"}', b'{"button":"power","down":true}'):
            head = f"POST /press HTTP/1.1\r\nX-Unit-Token: {token}\r\nContent-Length: {len(body)}\r\n\r\n"
            assert raw(unit, head.encode() + body).startswith(b"HTTP/1.1 400 ")


def test_a_client_that_never_finishes_its_request_is_cut_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(http, "HEAD_S", 0.3)
    with served() as unit:
        answer = raw(unit, b"GET / HTTP/1.1\r\nHost: x")  # and nothing more
        assert answer.startswith(b"HTTP/1.1 408 ")


def connect(unit: Served, source: str) -> socket.socket:
    return socket.create_connection(("127.0.0.1", unit.port), WAIT_S, (source, 0))


def test_connections_are_bounded_and_the_unit_answers_past_the_bound() -> None:
    with served() as unit:
        per = PER_ADDRESS  # from phones of their own: the bound of all, not of one
        held = [connect(unit, f"127.0.1.{i // per + 1}") for i in range(MAX_CONNECTIONS)]
        try:
            answer = raw(unit, b"GET / HTTP/1.1\r\n\r\n")
            assert answer.startswith(b"HTTP/1.1 503 "), answer[:60]
            assert unit.page.refused >= 1
            switch_on(unit)
            assert unit.on_loop(lambda: unit.board.unit.power) is True
        finally:
            for sock in held:
                sock.close()


def test_the_page_closes_with_the_unit_and_gives_its_port_back() -> None:
    with served() as unit:
        port = unit.port
        stream = unit.stream()
        stream.until("state")
    with pytest.raises(ConnectionError):
        stream.next()
    with socket.create_server(("127.0.0.1", port)):
        pass


# ----- the service's page: from the config ---------------------------------------------------


def free_port() -> int:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port: int = probe.getsockname()[1]
    return port


def test_the_config_turns_the_page_on_and_the_menu_offers_it() -> None:
    from cityunit.board import Board
    from cityunit.config import System
    from cityunit.loop.clock import VirtualClock
    from cityunit.parts.gpio import mock_pins

    port = free_port()
    config = Config(system=System(web_enabled=True, web_port=port))
    with Board(config, VirtualClock(), pin_factory=mock_pins(), panel=None, seed=1) as board:
        page = board.serve_web()
        assert page is not None and page.link.address.endswith(f":{port}/")
        board.runtime.stop()
        board.runtime.run()  # what waits (the page told to the unit), then the stop
        assert board.unit.page == page.link
    off = Config()
    with Board(off, VirtualClock(), pin_factory=mock_pins(), panel=None, seed=1) as board:
        assert board.serve_web() is None, "web.enabled is false by default"


def test_a_port_the_page_cannot_have_is_said_and_the_unit_plays_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from cityunit.board import Board
    from cityunit.config import System
    from cityunit.loop.clock import VirtualClock
    from cityunit.parts.gpio import mock_pins

    with socket.create_server(("", 0)) as taken:
        port = taken.getsockname()[1]
        config = Config(system=System(web_enabled=True, web_port=port))
        with Board(config, VirtualClock(), pin_factory=mock_pins(), panel=None, seed=1) as board:
            assert board.serve_web() is None
            board.unit.switch(True, 0)
            assert board.unit.power
    assert f"cannot serve on port {port}: Address already in use" in caplog.text


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="needs root and unshare: a network namespace of its own")  # fmt: skip
def test_the_kernel_tells_the_page_when_an_address_comes() -> None:
    """Wi-Fi up after the unit: netlink wakes the page, which looks up its address again
    (no timer). In a network namespace of its own, so the machine's are not touched."""
    script = (
        "import select, subprocess\n"
        "from cityunit.web.address import address_changes, drain\n"
        "changes = address_changes()\n"
        "assert changes is not None\n"
        "assert select.select([changes], [], [], 0)[0] == [], 'woken with nothing new'\n"
        "subprocess.run(['ip', 'addr', 'add', '192.0.2.7/24', 'dev', 'lo'], check=True)\n"
        "assert select.select([changes], [], [], 10)[0] == [changes], 'not told'\n"
        "drain(changes)\n"
        "print('told')\n"
    )
    result = subprocess.run(["unshare", "--net", sys.executable, "-c", script],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.stdout.strip() == "told", result.stderr


def answered(unit: Served) -> int:
    """The page's status for GET /, or 0 for a connection it closed unanswered."""
    try:
        return unit.request("GET", "/")[0]
    except ConnectionError:
        return 0


def test_a_thousand_connections_are_bounded_and_the_page_recovers() -> None:
    with served() as unit:
        flood = []
        try:
            for _ in range(1_000):
                sock = socket.socket()
                sock.setblocking(False)
                sock.connect_ex(("127.0.0.1", unit.port))
                flood.append(sock)
            switch_on(unit)  # the loop is not stalled by the flood
            assert unit.on_loop(lambda: unit.board.unit.power) is True
            assert unit.page.connections <= MAX_CONNECTIONS
        finally:
            for sock in flood:
                sock.close()
        # (the page sees each close in its turn: a 503, or a connection closed at once past
        # twice the bound, may come while it has not yet)
        statuses = [answered(unit)]
        while statuses[-1] != 200 and len(statuses) < 200:
            statuses.append(answered(unit))
        assert statuses[-1] == 200, f"the page serves again once the flood is gone: {statuses}"
        assert unit.state()["power"] is True


def test_a_loop_slower_than_a_phones_patience_is_a_503_and_the_unit_plays_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The phone gives up on /state; the loop's answer, when it comes, must land nowhere
    harmful (it raised InvalidStateError into the loop, and the unit stopped)."""
    from cityunit.web import server

    monkeypatch.setattr(server, "STATE_WAIT_S", 0.2)
    with served() as unit:
        busy = threading.Event()
        unit.board.runtime.call(lambda: busy.wait(WAIT_S))  # the loop held up
        statuses = [unit.request("GET", "/state")[0] for _ in range(3)]
        assert statuses == [503, 503, 503]
        busy.set()
        switch_on(unit)
        assert unit.state()["power"] is True, "the loop answered, and plays on"


def test_the_page_plays_every_volume_the_unit_has() -> None:
    """The phone that is the unit sets its gain by the table's volume: a volume missing
    from the page's table played as no volume the unit has (medium did)."""
    from cityunit.core import settings

    page_js = (Path(http.__file__).parent / "page" / "page.js").read_text()
    table = re.search(r"const VOLUME = \{([^}]*)\}", page_js)
    assert table is not None
    keys = re.findall(r"(\w+):", table[1])
    assert sorted(keys) == sorted(settings.BY_NAME["volume"].choices)


def test_one_neighbour_cannot_take_every_connection() -> None:
    with served() as unit:
        held = [connect(unit, "127.0.2.1") for _ in range(PER_ADDRESS)]
        try:
            for sock in held:
                sock.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert sock.recv(100).startswith(b"HTTP/1.1 200 OK")
            page = b"GET / HTTP/1.1\r\n\r\n"
            assert raw(unit, page, source="127.0.2.1").startswith(b"HTTP/1.1 503 ")
            assert raw(unit, page, source="127.0.2.2").startswith(b"HTTP/1.1 200 ")
        finally:
            for sock in held:
                sock.close()


def test_phones_that_close_their_streams_let_their_places_go() -> None:
    """A phone whose stream ended (Wi-Fi dropped, the page reloaded) must not keep its
    place: 64 of them locked every phone out, for good."""
    with served() as unit:
        for number in range(MAX_CONNECTIONS + 8):
            with connect(unit, f"127.0.3.{number % 50 + 1}") as sock:
                sock.sendall(b"GET /events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                assert sock.recv(100).startswith(b"HTTP/1.1 200 OK"), number
        statuses = [unit.request("GET", "/state")[0]]
        while statuses[-1] != 200 and len(statuses) < 200:  # each close is seen in its turn
            statuses.append(unit.request("GET", "/state")[0])
        assert statuses[-1] == 200, statuses


def test_a_name_that_only_points_at_the_unit_is_refused() -> None:
    """DNS rebinding: a web page a player opens elsewhere, its name moved to the unit's
    address, would read the unit (and the simulator's screen, with its QR code)."""
    with served() as unit:
        state = b"GET /state HTTP/1.1\r\n\r\n"
        assert raw(unit, state, host=b"evil.example").startswith(b"HTTP/1.1 421 ")
        assert raw(unit, state, host=None).startswith(b"HTTP/1.1 421 ")
        hosts = (
            b"localhost:8080",
            b"[::1]:8080",
            b"192.168.1.20:8080",
            socket.gethostname().encode(),
        )
        for host in hosts:
            assert raw(unit, state, host=host).startswith(b"HTTP/1.1 200 "), host


def test_the_simulators_screen_goes_only_to_a_phone_with_the_token() -> None:
    """Its frames show the menu's QR code, token and all."""
    with served(sim=True) as unit:
        switch_on(unit)
        token = unit.page.link.token
        for query, sees in (("", False), ("?k=WRONG", False), (f"?k={token}", True)):
            stream = unit.stream(query=query)
            stream.until("state")
            unit.advance(1_000)  # the clock's next second: a new frame (the state is the same)
            unit.press("build", hold_ms=100)  # then a new state, after it (the pins debounced)
            unit.advance(100)
            kinds = []
            while not kinds or kinds[-1] != ("state", "permit"):
                _, kind, data = stream.next()
                kinds.append((kind, json.loads(data).get("mode") if kind == "state" else ""))
            assert any(kind == "frame" for kind, _ in kinds) is sees, (query, kinds)
            stream.close()
            unit.advance(10_000)  # the permit put away


def test_an_id_in_other_digits_starts_the_stream_afresh() -> None:
    with served() as unit:
        boot = unit.page.broadcast.feed.boot
        for last in (f"{boot}.\u00b2", f"{boot}.-1", f"{boot}.{'9' * 5000}", "garbage"):
            stream = unit.stream(last_id=last)
            assert stream.until("state")[1]["v"] == 1, last
            stream.close()
