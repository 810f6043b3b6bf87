"""cityunit.console.client against a simulator it starts: errors, waiting for events, iterating."""

from __future__ import annotations

from pathlib import Path

import pytest

from cityunit.console.client import Client, ProtocolError
from goldens import GOLDEN


def test_an_err_reply_is_a_protocol_error_with_its_code() -> None:
    with Client.simulator(seed=1) as unit:
        with pytest.raises(ProtocolError) as error:
            unit.press("start")
        assert error.value.code == "bad-argument"
        assert unit.send("FROB").startswith("ERR unknown-command")
        assert unit.ok("PING") == "PONG"


def test_wait_for_returns_each_event_once_and_times_out_on_the_unit_clock() -> None:
    with Client.simulator(seed=1) as unit:
        unit.switch(True)
        unit.press("auction")
        end = unit.wait_for("auction.end", within_ms=60_000)
        assert unit.wait_for("hour.start", within_ms=0, hour=1)["t_ms"] == 0, "already here"
        with pytest.raises(TimeoutError, match=r"no hour\.start within 0 ms"):
            unit.wait_for("hour.start", within_ms=0)
        before = unit.state()["t_ms"]
        with pytest.raises(TimeoutError):
            unit.wait_for("permit", within_ms=5_000)
        assert unit.state()["t_ms"] == before + 5_000, "exactly within_ms of unit time"
        assert 13_000 <= end["t_ms"] <= 50_000


def test_on_a_real_clock_wait_for_waits_in_real_time() -> None:
    with Client.simulator(seed=1, clock="real") as unit:
        assert not unit.virtual
        unit.switch(True)
        unit.press("build")
        assert unit.wait_for("permit", within_ms=10_000)["value"] in (1, 2, 3, "station")


def test_fresh_forgets_the_events_and_goes_back_to_power_on() -> None:
    with Client.simulator(seed=1) as unit:
        unit.switch(True)
        unit.set("volume", "off")
        unit.fresh()
        assert unit.is_simulator and unit.events == []
        assert unit.state()["power"] == "off" and unit.settings()["volume"] == "high"
        events = unit.iter_events(timeout_s=0.2)
        unit.switch(True)
        assert [e["event"] for e in events][:2] == ["power", "hour.start"]


def test_a_socket_client_closes_without_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    """socket:// (the virtual Pi's console) drops its socket on close, under the reader."""
    import socket
    import threading

    replies = {
        b"HELP": b"OK PING HELP",
        b"EVENTS ON": b"OK",
        b"STATE": b'OK {"clock":"real","t_ms":0}',
    }

    def unit(server: socket.socket) -> None:
        peer, _ = server.accept()
        with peer, peer.makefile("rb") as lines:
            for line in lines:
                if line.strip() in replies:
                    peer.sendall(replies[line.strip()] + b"\n")
                elif line.strip():  # as a unit answers what it does not know
                    peer.sendall(b"ERR unknown-command\n")

    failures: list[object] = []
    monkeypatch.setattr(threading, "excepthook", failures.append)
    with socket.create_server(("127.0.0.1", 0)) as server:
        threading.Thread(target=unit, args=(server,), daemon=True).start()
        client = Client.port(f"socket://127.0.0.1:{server.getsockname()[1]}")
        client.close()
        client._reading.join(5)
    assert not client._reading.is_alive() and failures == []


# ----- issue 22: no footguns -----------------------------------------------------------------


def test_switch_takes_on_or_off_and_refuses_anything_else() -> None:
    """`switch("off")` switched the unit ON: any truthy value did."""
    with Client.simulator(seed=1) as unit:
        unit.switch("off")
        assert unit.state()["power"] == "off"
        unit.switch("ON")
        assert unit.state()["power"] == "on"
        unit.switch(False)
        assert unit.state()["power"] == "off"
        for wrong in ("yes", 1, None):
            with pytest.raises(ValueError, match="switch takes True, False, 'on' or 'off'"):
                unit.switch(wrong)  # type: ignore[arg-type]


def test_a_simulator_that_refuses_its_config_says_why_in_the_error(tmp_path: Path) -> None:
    """Its clear message went to /dev/null: all a tester saw was "the unit closed the
    connection"."""
    bad = tmp_path / "bad.toml"
    bad.write_text('[game]\nlanguage = "de"\n')
    with pytest.raises(ConnectionError) as error:
        Client.simulator(config=bad)
    assert "the unit closed the connection; it said:" in str(error.value)
    assert f"{bad}: game.language" in str(error.value)


def test_waiting_for_an_event_no_unit_sends_is_refused_at_once() -> None:
    with Client.simulator(seed=1) as unit:
        with pytest.raises(ValueError, match=r"no event is called 'auction\.ends'.*auction\.end"):
            unit.wait_for("auction.ends", within_ms=60_000)
        assert unit.state()["t_ms"] == unit.t0, "no time went by"


def test_wait_for_looks_only_past_the_events_it_returned() -> None:
    """It scanned the whole history each call: a draw went from 3.9 ms to 18.3 ms over
    2,000 draws. Counted, not timed: how often it asks whether an event was returned."""

    class Counted(set[int]):
        asked = 0

        def __contains__(self, item: object) -> bool:
            Counted.asked += 1
            return super().__contains__(item)

    with Client.simulator(seed=1) as unit:
        unit._waited = Counted()
        unit.switch(True)
        draws, returned = 300, []
        for _ in range(draws):
            unit.press("build")
            returned.append(unit.wait_for("permit", within_ms=5_000)["t_ms"])
        assert Counted.asked < 5 * draws, Counted.asked
        assert len(set(returned)) == draws, "each event once, in order"
        assert returned == sorted(returned)


def test_closing_a_simulator_that_does_not_exit_in_time_kills_it_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`subprocess.TimeoutExpired` used to leave close() and the `with` block."""
    from cityunit.console import spawn

    unit = Client.simulator(seed=1)
    monkeypatch.setattr(spawn, "WAIT_S", 0.0)
    unit.close()
    assert unit.closed


def test_the_screen_as_an_image_and_against_a_golden(tmp_path: Path) -> None:
    import shutil

    golden = GOLDEN / "switch-off.en.png"
    with Client.simulator(seed=1) as unit:
        assert unit.is_simulator is True, "known from the start, before fresh()"
        picture = unit.screen()
        assert picture.mode == "1" and picture.size == (128, 64)
        unit.assert_screen(golden)  # switched OFF, and never yet ON: it says so
        unit.switch(True)
        mine = tmp_path / "off.png"
        shutil.copy(golden, mine)
        with pytest.raises(AssertionError, match="the difference in"):
            unit.assert_screen(mine)
        assert (tmp_path / "off.actual.png").exists() and (tmp_path / "off.diff.png").exists()
        with pytest.raises(AssertionError, match=r"no .*new\.png: the screen is in"):
            unit.assert_screen(tmp_path / "new.png")


def test_a_full_card_and_a_power_cut_as_a_tester_scripts_them() -> None:
    """fault("save", ...) and fault("power", "cut") through the client: the unit says its
    saves fail, and after a cut goes on in the same hour from its last good save."""
    with Client.simulator(seed=1) as unit:
        unit.switch(True)
        unit.advance(20_000)
        unit.fault("save", "fail")
        failed = unit.wait_for("fault", within_ms=10_000, part="state")
        assert failed["detail"] == "cannot save: No space left on device"
        assert failed["t_ms"] == 25_000, "the next 5-s save"
        unit.advance(3_000)
        unit.fault("power", "cut")
        resumed = unit.wait_for("resume", within_ms=0)
        assert (resumed["hour"], resumed["hour_elapsed_ms"]) == (1, 20_000)
        assert unit.state()["hour_elapsed_ms"] == 20_000
        again = unit.wait_for("fault", within_ms=0, part="state")
        assert again["detail"].startswith("cannot save"), "as a new process, it says so again"
        unit.fault("save", "ok")
        assert unit.wait_for("fault", within_ms=5_000, part="state")["detail"] == "back"
