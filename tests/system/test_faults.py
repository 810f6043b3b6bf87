"""Fault injection on the virtual clock: what a real table throws at the unit changes nothing
the players can notice."""

from __future__ import annotations

import ast
import datetime
import os
import signal
import threading
import time
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cityunit.config import Config, ConfigError, load, parse
from cityunit.core import modes
from cityunit.core.rules import Rules
from cityunit.loop.inbox import stop_on_signals
from conftest import AUCTION, BUILD, BUZZER, LED, POWER, Rig

ROOT = Path(__file__).resolve().parents[2]
SEEN = ("led", "tone", "auction.start", "auction.final", "auction.end", "permit", "hour.end")


def play_an_hour(rig: Rig, step_ms: int = 2_000) -> list[tuple[int, str, tuple]]:
    """An auction every minute and two permits, pumping the loop every `step_ms`."""
    rig.pin(POWER).drive_low()
    rig.at(0)
    for minute in range(60):
        base = minute * 60_000
        for at, pin in ((1_000, AUCTION), (52_000, BUILD), (56_000, BUILD)):
            rig.at(base + at)
            rig.press(pin, 80)
        for t in range(base + 2_000, base + 60_000, step_ms):
            rig.at(max(t, rig.clock.now_ms()))
    rig.at(3_600_000 + 1_000)
    return [(e.t_ms, e.event, tuple(e.data.items())) for e in rig.events if e.event in SEEN]


def test_i2c_errors_on_5_percent_of_writes_for_an_hour_change_no_light_or_sound(
    make_rig,
) -> None:
    calm = make_rig()
    baseline = play_an_hour(calm)
    stormy = make_rig()
    stormy.bus.error_rate = 0.05
    stormy.bus.rng.seed(11)
    faulty = play_an_hour(stormy)
    assert stormy.bus.failures > 100, "the bus really failed, often"
    assert faulty == baseline, "every LED, tone and game event at the same time"
    assert any(e.event == "fault" for e in stormy.events)


def test_an_unplugged_display_is_back_within_2_s_of_reconnecting(make_rig) -> None:
    rig = make_rig(switch_on=True)
    rig.at(1_000)
    rig.bus.unplugged = True
    rig.press(AUCTION)
    for t in range(1_200, 11_000, 100):
        rig.at(t)
    assert not rig.board.display.up
    sent = rig.board.display.frames_sent
    rig.bus.unplugged = False
    back = None
    for t in range(11_000, 14_000, 50):
        rig.at(t)
        if rig.board.display.frames_sent > sent and back is None:
            back = t
    assert back is not None and back - 11_000 <= 2_000, back
    faults = [e.data["detail"] for e in rig.events if e.event == "fault"]
    assert faults[0].startswith("lost") and faults[-1] == "back" and len(faults) == 2


def test_a_button_stuck_down_for_a_minute_is_reported_and_the_other_still_works(
    make_rig,
) -> None:
    rig = make_rig(switch_on=True)
    rig.at(1_000)
    rig.pin(AUCTION).drive_low()
    for t in range(1_100, 61_000, 500):
        rig.at(t)
    faults = [e.data for e in rig.events if e.event == "fault"]
    assert faults == [{"part": "button.auction", "detail": "stuck down: ignored"}]
    rig.press(BUILD)
    rig.at(63_000)
    assert "permit" in rig.names() and "auction.start" not in rig.names()
    rig.pin(AUCTION).drive_high()
    rig.at(63_100)
    assert rig.events[-1].data == {"part": "button.auction", "detail": "released"}


def test_a_chatter_storm_is_one_press_per_burst(make_rig) -> None:
    rig = make_rig(switch_on=True)
    t = 1_000
    for _ in range(10):  # ten presses, each a burst of 9 edges in 16 ms
        for i in range(9):
            rig.at(t + i * 2)
            pin = rig.pin(BUILD)
            pin.drive_low() if i % 2 == 0 else pin.drive_high()
        rig.at(t + 100)
        rig.pin(BUILD).drive_high()
        t += 1_500
        rig.at(t)
    assert rig.names().count("permit") == 10


# Every mode, and the moments within them that behave differently.
MODES = ["off", "shutdown", "idle", "auction", "final", "drawing", "permit", "settings",
         "hour_end", "paused"]  # fmt: skip


def into(rig: Rig, mode: str) -> None:
    if mode == "off":
        return
    if mode == "shutdown":
        rig.pin(AUCTION).drive_low()
        rig.pin(BUILD).drive_low()
        rig.at(5_100)
        rig.pin(AUCTION).drive_high()
        rig.pin(BUILD).drive_high()
        rig.at(5_200)
        return
    rig.pin(POWER).drive_low()
    rig.at(100)
    if mode == "auction":
        rig.press(AUCTION)
    elif mode == "final":
        rig.press(AUCTION)
        rig.at(rig.clock.now_ms() + 47_000)
    elif mode == "drawing":
        rig.press(BUILD, 30)
    elif mode == "permit":
        rig.press(BUILD)
        rig.at(rig.clock.now_ms() + 1_000)
    elif mode == "settings":
        rig.press(BUILD, 1_600)
    elif mode == "hour_end":
        rig.at(3_600_500)
    elif mode == "paused":
        rig.pin(AUCTION).drive_low()
        rig.pin(BUILD).drive_low()
        rig.at(rig.clock.now_ms() + 1_600)
        rig.pin(AUCTION).drive_high()
        rig.pin(BUILD).drive_high()
        rig.at(rig.clock.now_ms() + 100)


def test_the_scenarios_reach_every_mode(make_rig) -> None:
    reached = set()
    for mode in MODES:
        rig = make_rig(Config(rules=Rules(auction_mode="fixed", auction_fixed_s=50)))
        into(rig, mode)
        reached.add(rig.unit.state()["mode"])
    assert reached == {cls.name for cls in modes.ALL}


@pytest.mark.parametrize("mode", MODES)
def test_every_press_in_every_mode_clicks_unless_the_switch_is_off(make_rig, mode: str) -> None:
    rig = make_rig(Config(rules=Rules(auction_mode="fixed", auction_fixed_s=50)))
    into(rig, mode)
    for pin, hold in ((AUCTION, 80), (BUILD, 80), (AUCTION, 1_700), (BUILD, 1_700)):
        rig.at(rig.clock.now_ms() + 200)  # a real finger: not within the last one's chatter
        powered = rig.unit.state()["power"] == "on"
        pressed = rig.clock.now_ms()
        rig.press(pin, hold)
        clicks = [e for e in rig.events if e.event == "tone" and e.data["hz"] == 4000]
        assert (clicks[-1].t_ms == pressed if clicks else False) == powered, (pin, hold)
        state = rig.unit.state()
        if state["mode"] == "off":
            assert state["led"] == 0.0 and state["tone_hz"] is None


@pytest.mark.parametrize("mode", MODES)
def test_sigterm_in_every_mode_leaves_the_outputs_off(make_rig, mode: str) -> None:
    rig = make_rig(Config(rules=Rules(auction_mode="fixed", auction_fixed_s=50)))
    into(rig, mode)
    rig.pin(AUCTION).drive_low()  # something is sounding and lit when the signal comes
    rig.runtime.pump()
    loop = threading.Thread(target=rig.runtime.run)
    loop.start()
    with stop_on_signals(rig.runtime.stop, rig.board.inbox):
        os.kill(os.getpid(), signal.SIGTERM)
        loop.join(10)
    assert not loop.is_alive()
    rig.board.close()
    assert rig.pin(LED).state == 0 and rig.pin(BUZZER).frequency is None
    assert rig.bus.commands[-1] == [0xAE], "the screen is off"


# ----- the wall clock ----------------------------------------------------------------------

WALL_READS = {("time", "time"), ("time", "time_ns"), ("time", "localtime"), ("time", "ctime"),
              ("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today"), ("date", "today")}  # fmt: skip


def test_the_firmware_never_reads_the_wall_clock() -> None:
    for folder in ("firmware", "sim"):
        for path in (ROOT / folder).rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                    assert (node.value.id, node.attr) not in WALL_READS, f"{path}:{node.lineno}"


@pytest.mark.parametrize("jump_s", [3_600, -3_600, 365 * 86_400])
def test_wall_clock_jumps_change_nothing(monkeypatch: pytest.MonkeyPatch, jump_s: int) -> None:
    """A real-clock auction while the wall clock jumps (as when NTP answers a Pi with no RTC)."""
    from cityunit.tools.bench import Rig as RealRig

    real_time, real_ns = time.time, time.time_ns
    offset = [0.0]
    monkeypatch.setattr(time, "time", lambda: real_time() + offset[0])
    monkeypatch.setattr(time, "time_ns", lambda: real_ns() + int(offset[0] * 1e9))

    class Jumping(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.datetime.fromtimestamp(time.time(), tz)

    monkeypatch.setattr(datetime, "datetime", Jumping)
    with RealRig(
        Config(rules=Rules(auction_mode="fixed", auction_fixed_s=1, auction_final_s=1))
    ) as rig:
        rig.pin("power").drive_low()
        done = threading.Event()
        rig.runtime.on_event(lambda e: e.event == "auction.end" and done.set())
        button = rig.pin("auction")
        button.drive_low()
        button.drive_high()
        offset[0] = jump_s  # the jump lands mid-auction
        assert done.wait(10)
        start = next(t for t, name in rig.events if name == "auction.start")
        end = next(t for t, name in rig.events if name == "auction.end")
    assert abs((end - start) / 1e6 - 1_000) < 100, (end - start) / 1e6


# ----- fuzzed config files ----------------------------------------------------------------

SECTIONS = ["game", "auction", "permit", "buttons", "pins", "buzzer", "led", "display",
            "console", "power", "state", "bogus"]  # fmt: skip
KEYS = ["language", "length_hours", "mode", "min_s", "max_s", "odds", "auction", "build",
        "driver", "i2c_address", "port", "shutdown_command", "dir", "pwm", "kind", "x"]  # fmt: skip
values = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False)
    | st.text(max_size=12) | st.sampled_from(["en", "fr", "fixed", "random", "sh1106", "none"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)  # fmt: skip
tables = st.dictionaries(
    st.sampled_from(SECTIONS),
    st.dictionaries(st.sampled_from(KEYS), values, max_size=4) | values,
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(data=tables)
def test_any_config_table_is_either_valid_or_clean_errors(data: dict) -> None:
    try:
        config = parse(data, "fuzz.toml")
    except ConfigError as e:
        assert e.lines and all(line.startswith("fuzz.toml: ") for line in e.lines)
    else:
        assert isinstance(config, Config)


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=200) | st.binary(max_size=200))
def test_any_file_content_is_either_valid_or_a_clean_error(tmp_path_factory, text) -> None:
    path = tmp_path_factory.mktemp("cfg") / "config.toml"
    path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    try:
        load(path)
    except ConfigError as e:
        assert all(line.startswith(str(path)) for line in e.lines)
    except UnicodeEncodeError:  # pragma: no cover - the test's own encoding of lone surrogates
        pass
    else:
        tomllib.loads(path.read_text())  # it was valid TOML


def test_a_board_whose_last_step_fails_still_saves_and_lets_go(tmp_path: Path) -> None:
    """Closing does not depend on the world following the last step: a step that raises
    (a driver's bug, an unplugged part) still leaves the game saved and every pin free."""
    from cityunit.board import Board
    from cityunit.loop.clock import VirtualClock
    from fakes import mock_factory

    clock = VirtualClock()
    board = Board(Config(), clock, pin_factory=mock_factory(), panel=None, state_dir=tmp_path)
    board.unit.switch(True, 0)
    board.runtime.step()
    clock.set_ms(4_000)

    def broken(level: float) -> None:
        raise RuntimeError("the LED's driver broke")

    board.parts._set_led, board.parts._level = broken, 0.5  # the LED is told on the last step
    board.unit.switch(False, 3_000)
    with pytest.raises(RuntimeError):
        board.close()
    assert board.parts.closed
    assert (tmp_path / "state.json").exists()
