"""The console protocol, end to end, against the simulator or a real unit (--cityunit-target)."""

from __future__ import annotations

import itertools
import json

import pytest

from cityunit import __version__
from cityunit.console.client import Client

COMMANDS = {
    "PING",
    "VERSION",
    "HELP",
    "PRESS",
    "HOLD",
    "SWITCH",
    "STATE",
    "EVENTS",
    "ADVANCE",
    "SEED",
}


# ----- every command -------------------------------------------------------------------


def test_ping_version_help(unit: Client) -> None:
    assert unit.send("PING") == "OK PONG"
    assert unit.send("version") == f"OK {__version__}", "commands are case-insensitive"
    assert set(unit.ok("HELP").split()) >= COMMANDS


def test_state_has_every_key(unit: Client) -> None:
    state = unit.state()
    assert set(state) >= {
        "power", "mode", "hour", "hour_elapsed_ms", "led", "tone_hz", "permit", "clock", "screen",
    }  # fmt: skip
    assert state["power"] == "off" and state["mode"] == "off" and state["hour"] == 0
    assert state["led"] == 0.0 and state["tone_hz"] is None and state["permit"] is None
    # A unit never yet ON says so; one that was: blank, or (just switched OFF for the
    # test) the still-on notice.
    if unit.is_simulator:  # RESET before each test: a new unit, never yet ON
        assert state["screen"][:1] == ["SWITCH OFF"], state["screen"]
    else:
        assert state["screen"][:1] in ([], ["SWITCH OFF"], ["UNIT OFF"]), state["screen"]


def test_switch_on_and_off(unit: Client) -> None:
    unit.ok("EVENTS ON")
    unit.ok("SWITCH ON")
    state = unit.state()
    assert state["power"] == "on" and state["mode"] == "idle" and state["hour"] >= 1
    assert state["screen"][0].startswith("HOUR")
    assert unit.named("power") == [
        {"t_ms": unit.named("power")[0]["t_ms"], "event": "power", "on": True}
    ]
    assert unit.named("hour.start")[0]["hour"] == state["hour"]
    unit.ok("SWITCH OFF")
    assert unit.state()["power"] == "off"
    assert unit.named("power")[-1]["on"] is False


def test_events_only_after_events_on_and_none_after_off(unit: Client) -> None:
    unit.ok("SWITCH ON")
    unit.ok("PRESS BUILD")
    assert unit.event_lines == []
    unit.ok("EVENTS ON")
    unit.ok("PRESS AUCTION")
    assert "auction.start" in [e["event"] for e in unit.events]
    unit.ok("EVENTS OFF")
    count = len(unit.events)
    unit.ok("PRESS AUCTION")
    unit.ok("PING")
    assert len(unit.events) == count


def test_every_event_line_is_one_json_object_with_time_and_name(unit: Client) -> None:
    unit.ok("EVENTS ON")
    unit.ok("SWITCH ON")
    unit.ok("PRESS AUCTION")
    assert unit.event_lines
    for line in unit.event_lines:
        event = json.loads(line.removeprefix("EVT "))
        assert isinstance(event["t_ms"], int) and isinstance(event["event"], str)
    times = [e["t_ms"] for e in unit.events]
    assert times == sorted(times)


def test_press_gives_feedback_at_once(unit: Client) -> None:
    unit.ok("EVENTS ON")
    unit.ok("SWITCH ON")
    # The power-on tune over first: on a real clock a note of it could otherwise land
    # between the two commands and be taken for the press's (issue 20: a flaky gate).
    unit.wait_for("tone", 2_000, hz=None)
    before = len(unit.events)
    unit.ok("PRESS BUILD")  # a command's events come before its reply
    came = unit.events[before:]
    tones = [e["hz"] for e in came if e["event"] == "tone" and e["hz"]]
    assert tones, "a sound at once"
    # The click; on a real clock a PRESS (down and up at one instant) handled a moment
    # after it came has the draw's first note take over before the click starts.
    assert tones[0] == 4000 or (not unit.virtual and tones[0] == 2000), tones
    # The blip: with the reply, or on a real clock a few ms after it.
    later = itertools.islice(unit.iter_events(timeout_s=1.0), before, None)
    assert any(e["event"] == "led" for e in later), "the blip"
    assert unit.state()["mode"] == "permit"


def test_hold_is_a_long_press_and_never_a_tap(playing: Client) -> None:
    unit = playing
    before = unit.state()["t_ms"]
    unit.ok("HOLD BUILD 2000")
    assert unit.state()["t_ms"] == before + 2000, "HOLD advances the virtual clock"
    unit.advance(2000)
    assert unit.named("permit") == [] and unit.state()["mode"] == "settings", "the menu"
    unit.ok("HOLD BUILD 2000")
    assert unit.state()["mode"] == "idle", "and out of it"
    unit.ok("HOLD AUCTION 2000")
    assert unit.named("auction.start") == []


def test_hold_replies_once_released_and_later_commands_wait_their_turn(unit: Client) -> None:
    unit.ok("SWITCH ON")
    unit.send_bytes(b"HOLD BUILD 1600\nPING\nSTATE\n")
    assert unit.reply() == "OK"
    assert unit.reply() == "OK PONG"
    assert json.loads(unit.reply()[3:])["mode"] == "settings", "a long press draws no permit"
    unit.ok("HOLD BUILD 1600")
    unit.ok("HOLD BUILD 100")
    assert unit.state()["mode"] == "permit", "a short hold is a tap"


def test_advance_runs_every_deadline_in_order_before_its_reply(playing: Client) -> None:
    unit = playing
    unit.ok("PRESS AUCTION")
    unit.advance(60_000)
    names = [e["event"] for e in unit.events if e["event"].startswith("auction")]
    assert names == ["auction.start", "auction.final", "auction.end"]
    assert unit.state()["t_ms"] == unit.t0 + 60_000


def test_seed_makes_a_run_repeatable(virtual: Client) -> None:
    def auction_length(client: Client) -> int:
        client.ok("SEED 42")
        client.ok("EVENTS ON")
        client.ok("SWITCH ON")
        client.ok("PRESS AUCTION")
        start = client.named("auction.start")[-1]["t_ms"]
        end = client.wait_for("auction.end", 60_000)
        return end["t_ms"] - start

    with Client.simulator(seed=7) as other:
        assert auction_length(virtual) == auction_length(other)


# ----- the unit through the protocol -----------------------------------------------------


def test_auction_bounds_and_final_phase_from_event_timestamps(playing: Client) -> None:
    unit = playing
    lengths = []
    for _ in range(40):
        unit.ok("PRESS AUCTION")
        start = unit.named("auction.start")[-1]["t_ms"]
        end = unit.wait_for("auction.end", 60_000, step_ms=5_000)
        final = unit.named("auction.final")[-1]["t_ms"]
        assert end["stopped"] is False
        assert 4_500 <= end["t_ms"] - final <= 5_500
        lengths.append(end["t_ms"] - start)
        unit.advance(4_000)
    assert all(13_000 <= n <= 50_000 for n in lengths)
    assert max(lengths) - min(lengths) > 15_000, "random lengths"
    flashes = [e for e in unit.named("led") if e["level"] == 1.0]
    assert len(flashes) > 40 * 13


def test_a_second_press_stops_an_auction_early(playing: Client) -> None:
    unit = playing
    unit.ok("PRESS AUCTION")
    unit.advance(3_000)
    unit.ok("PRESS AUCTION")
    assert unit.named("auction.end") == [
        {"t_ms": unit.t0 + 3_000, "event": "auction.end", "stopped": True}
    ]
    assert unit.state()["mode"] == "idle"
    assert "STOPPED" in unit.state()["screen"]


def test_the_auction_screen_never_tells_the_time_left(virtual: Client) -> None:
    unit = virtual
    unit.ok("SWITCH ON")
    unit.ok("PRESS AUCTION")
    for _ in range(12):
        unit.advance(1_000)
        state = unit.state()
        assert state["mode"] == "auction"
        assert not any(ch.isdigit() for line in state["screen"] for ch in line)
        assert not any("remain" in key or "left" in key for key in state)


def test_permit_values(playing: Client) -> None:
    unit = playing
    for _ in range(60):
        unit.ok("PRESS BUILD")
        unit.advance(1_000)
        assert unit.state()["permit"] == unit.named("permit")[-1]["value"]
    values = {e["value"] for e in unit.named("permit")}
    assert values == {1, 2, 3, "station"}


def test_hour_warnings_and_the_hour_end(playing: Client) -> None:
    unit = playing
    unit.advance(3_600_000)
    warnings = unit.named("hour.warning")
    gaps = [b["t_ms"] - a["t_ms"] for a, b in itertools.pairwise(warnings)]
    assert gaps and gaps[-1] < gaps[0]
    assert unit.named("hour.end") == [{"t_ms": unit.t0 + 3_600_000, "event": "hour.end", "hour": 1}]
    state = unit.state()
    assert state["mode"] == "hour_end" and state["hour_elapsed_ms"] == 3_600_000
    assert state["led"] == 1.0


def test_off_then_on_starts_the_next_hour(playing: Client) -> None:
    unit = playing
    unit.advance(600_000)
    unit.ok("SWITCH OFF")
    assert unit.state()["hour"] == 0
    unit.ok("SWITCH ON")
    assert [e["hour"] for e in unit.named("hour.start")] == [1, 2]
    assert unit.state()["hour_elapsed_ms"] == 0


def test_a_stuck_button_is_a_fault_event(playing: Client) -> None:
    unit = playing
    unit.ok("HOLD AUCTION 12000")
    faults = unit.named("fault")
    assert [f["part"] for f in faults] == ["button.auction", "button.auction"]
    assert [f["detail"] for f in faults] == ["stuck down: ignored", "released"]


def test_led_and_tone_events_follow_state(playing: Client) -> None:
    unit = playing
    unit.ok("PRESS AUCTION")
    unit.advance(1_234)
    state = unit.state()
    assert unit.named("led")[-1]["level"] == state["led"]
    assert unit.named("tone")[-1]["hz"] == state["tone_hz"]


def test_an_hour_of_play_through_the_protocol(playing: Client) -> None:
    """Two permits and an auction run to its end every minute: the speed benchmark's workload."""
    unit = playing
    for _ in range(60):
        unit.ok("PRESS BUILD")
        unit.advance(1_000)
        unit.ok("PRESS AUCTION")
        unit.advance(50_000)
        unit.ok("PRESS BUILD")
        unit.advance(9_000)
    assert len(unit.named("auction.start")) == len(unit.named("auction.end")) == 60
    assert all(e["stopped"] is False for e in unit.named("auction.end"))
    assert len(unit.named("permit")) == 120
    assert unit.named("hour.end")[0]["t_ms"] == unit.t0 + 3_600_000


# ----- bad input ------------------------------------------------------------------------

BAD = [
    ("FROB", "ERR unknown-command"),
    ("PRESS", "ERR bad-argument"),
    ("PRESS START", "ERR bad-argument"),
    ("PRESS AUCTION NOW", "ERR bad-argument"),
    ("HOLD BUILD", "ERR bad-argument"),
    ("HOLD BUILD -5", "ERR bad-argument"),
    ("HOLD BUILD 1.5", "ERR bad-argument"),
    ("HOLD BUILD 99999999", "ERR bad-argument"),
    ("SWITCH MAYBE", "ERR bad-argument"),
    ("EVENTS", "ERR bad-argument"),
    ("STATE NOW", "ERR bad-argument"),
    ("ADVANCE", "ERR bad-argument"),
    ("SEED", "ERR bad-argument"),
]


@pytest.mark.parametrize(("line", "reply"), BAD)
def test_a_bad_line_gets_err_and_the_unit_goes_on(unit: Client, line: str, reply: str) -> None:
    unit.ok("SWITCH ON")
    got = unit.send(line)
    assert got.startswith(reply + " "), got
    assert unit.send("PING") == "OK PONG"
    assert unit.state()["power"] == "on"


def test_virtual_only_arguments_are_checked(virtual: Client) -> None:
    assert virtual.send("ADVANCE -1").startswith("ERR bad-argument ")
    assert virtual.send("ADVANCE soon").startswith("ERR bad-argument ")
    assert virtual.send("SEED x").startswith("ERR bad-argument ")


def test_a_line_over_256_bytes_gets_err_line_too_long(unit: Client) -> None:
    unit.send_bytes(b"PING " + b"x" * 300 + b"\n")
    assert unit.reply().startswith("ERR line-too-long ")
    unit.send_bytes(b"P" * 5000)  # no newline yet: never buffered whole
    unit.send_bytes(b"\nPING\n")
    assert unit.reply().startswith("ERR line-too-long ")
    assert unit.reply() == "OK PONG"
    unit.send_bytes(b"PING" + b" " * 252 + b"\n")  # exactly 256 bytes is fine
    assert unit.reply() == "OK PONG"


def test_binary_garbage_gets_err_and_crlf_is_accepted(unit: Client) -> None:
    unit.send_bytes(b"\xff\xfe\x00\x81\n")
    assert unit.reply().startswith("ERR bad-argument ")
    unit.send_bytes(b"PING\r\n")
    assert unit.reply() == "OK PONG"
    unit.send_bytes(b"\x00\x01\x02\n")
    assert unit.reply().startswith("ERR unknown-command ")
    assert unit.send("PING") == "OK PONG"


def test_advance_and_seed_are_not_allowed_on_a_real_clock() -> None:
    with Client.simulator(clock="real") as client:
        assert client.send("ADVANCE 10").startswith("ERR not-allowed ")
        assert client.state()["clock"] == "real"


def test_seed_is_not_allowed_on_hardware(unit: Client) -> None:
    if unit.is_simulator:
        assert unit.send("SEED 3") == "OK"
    else:
        assert unit.send("SEED 3").startswith("ERR not-allowed ")
        assert unit.send("ADVANCE 10").startswith("ERR not-allowed ")


def test_screen_and_edge_are_a_simulators_and_a_board_refuses_them(unit: Client) -> None:
    """Protocol 1.2: the picture the unit draws, and raw contact levels through the
    debouncer; what a board refuses (it has its own glass and contacts)."""
    if not unit.is_simulator:
        assert unit.send("SCREEN").startswith("ERR not-allowed ")
        assert unit.send("EDGE BUILD LOW").startswith("ERR not-allowed ")
        return
    assert unit.screen().getbbox() is not None, "OFF, never yet ON: it says so"
    unit.ok("EDGE POWER LOW")
    assert unit.state()["power"] == "on"
    assert unit.screen().getbbox() is not None, "the hour on the glass"
    unit.ok("EVENTS ON")
    unit.ok("EDGE BUILD LOW")
    unit.ok("EDGE BUILD HIGH")  # at once: chatter, until the debounce window closes
    assert unit.wait_for("permit", within_ms=5_000)["value"] in (1, 2, 3, "station")
