"""The whole unit on gpiozero mock pins: pin edges in, LED and buzzer pins out."""

from __future__ import annotations

import itertools
import json
import signal
import threading
from functools import partial
from pathlib import Path

import pytest

from cityunit.config import Config, Hardware, System
from cityunit.console.protocol import Session
from cityunit.display import oled
from cityunit.display.memory import pages
from cityunit.loop.clock import VirtualClock
from cityunit.loop.inbox import Input
from conftest import AUCTION, BUILD, BUZZER, LED, POWER, Rig
from fakes import run_unit


def test_the_switch_read_at_start_begins_hour_1(make_rig) -> None:
    rig = make_rig(switch_on=True)
    assert rig.on_at_start, "read at start, before any edge is handled"
    assert rig.names()[:2] == ["power", "hour.start"]


def test_a_button_pin_starts_an_auction_and_drives_the_led_and_buzzer_pins(rig: Rig) -> None:
    rig.pin(POWER).drive_low()
    rig.at(1_000)
    rig.pin(AUCTION).drive_low()
    rig.runtime.pump()
    assert rig.pin(BUZZER).frequency == pytest.approx(4000), "the click, on the edge"
    assert rig.pin(LED).state == 1.0, "the blip, on the edge"
    rig.at(1_100)
    rig.pin(AUCTION).drive_high()
    rig.runtime.pump()
    assert "auction.start" in rig.names()
    rig.at(1_200)
    assert rig.pin(LED).state == 1.0
    rig.at(1_700)
    assert rig.pin(LED).state == 0.0, "flashing"
    rig.at(60_000)
    assert rig.names()[-1] == "auction.end"
    assert rig.pin(LED).state == 0.0 and rig.pin(BUZZER).frequency is None


def test_the_display_gets_each_new_screen(rig: Rig) -> None:
    rig.pin(POWER).drive_low()
    rig.at(10)
    frames = rig.board.display.frames_sent
    rig.press(BUILD)
    rig.at(1_000)
    assert rig.board.display.frames_sent > frames
    assert rig.unit.state()["mode"] == "permit"


def test_a_chattering_pin_is_one_press(rig: Rig) -> None:
    rig.pin(POWER).drive_low()
    rig.at(1_000)
    for i in range(6):
        rig.at(1_000 + i * 2)
        (rig.pin(BUILD).drive_low if i % 2 == 0 else rig.pin(BUILD).drive_high)()
    rig.at(1_100)
    rig.pin(BUILD).drive_high()
    rig.at(2_500)
    assert rig.names().count("permit") == 1


def test_the_unit_keeps_time_and_light_while_the_display_is_unplugged(rig: Rig) -> None:
    rig.pin(POWER).drive_low()
    rig.at(100)
    rig.bus.unplugged = True
    rig.press(AUCTION)
    rig.at(10_000)
    faults = [e.data for e in rig.events if e.event == "fault"]
    assert faults and faults[0]["part"] == "display" and faults[0]["detail"].startswith("lost")
    assert rig.pin(LED).state in (0.0, 1.0) and "auction.start" in rig.names()
    rig.bus.unplugged = False
    rig.at(11_000)
    assert [e.data["detail"] for e in rig.events if e.event == "fault"][-1] == "back"
    assert rig.board.display.up


def test_stop_leaves_the_led_off_the_buzzer_silent_and_the_screen_blank(make_rig) -> None:
    rig = make_rig(switch_on=True)
    rig.at(100)
    rig.pin(AUCTION).drive_low()
    rig.runtime.pump()
    assert rig.pin(BUZZER).frequency is not None and rig.pin(LED).state > 0
    thread = threading.Thread(target=rig.runtime.run)
    thread.start()
    rig.runtime.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    rig.board.close()
    assert rig.pin(LED).state == 0 and rig.pin(BUZZER).frequency is None
    assert rig.bus.commands[-1] == [0xAE], "display off"


def test_an_active_buzzer_and_a_plain_led_work_too(make_rig) -> None:
    config = Config(hardware=Hardware(buzzer_kind="active", led_pwm=False))
    rig = make_rig(config, switch_on=True)
    assert rig.pin(BUZZER).state == 1, "the power-on tune"
    rig.at(5_000)
    assert rig.pin(BUZZER).state == 0


def test_a_plain_led_shows_the_pause_heartbeat(make_rig) -> None:
    """The pause's heartbeat is a dim 0.3 on a dimmable LED; a plain LED lit only from
    0.5 never showed it (found by the docstring review: lights.py says every pattern
    reads on a plain LED too)."""
    rig = make_rig(Config(hardware=Hardware(led_pwm=False)), switch_on=True)
    rig.at(5_000)
    rig.pin(AUCTION).drive_low()
    rig.pin(BUILD).drive_low()
    rig.at(5_000 + 1_600)  # both held for the long-press time: the pause chord
    rig.pin(AUCTION).drive_high()
    rig.pin(BUILD).drive_high()
    assert rig.runtime.snapshot.paused
    lit = []
    for t in range(9_000, 13_000, 50):  # two heartbeats, long after the press's blip
        rig.at(t)
        lit.append(rig.pin(LED).state)
    assert 1 in lit and 0 in lit, "the heartbeat blinks"


def test_the_shutdown_gesture_runs_the_configured_command(make_rig, tmp_path: Path) -> None:
    marker = tmp_path / "halted"
    config = Config(system=System(shutdown_command=["touch", str(marker)]))
    rig = make_rig(config)
    rig.pin(AUCTION).drive_low()
    rig.pin(BUILD).drive_low()
    rig.at(100)
    rig.at(5_200)
    rig.pin(AUCTION).drive_high()
    rig.pin(BUILD).drive_high()
    rig.at(8_000)
    assert "shutdown" in rig.names()
    assert rig.runtime.shutdown_process is not None
    assert rig.runtime.shutdown_process.wait(timeout=10) == 0
    assert marker.exists()


def test_cityunit_run_on_mock_pins_answers_sigterm_and_exits_0(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[display]\ndriver = "none"\n')
    proc = run_unit(config)
    proc.send_signal(signal.SIGTERM)
    assert proc.finish() == 0
    log = "".join(proc.log)
    assert "Traceback" not in log and "stopped: LED off, buzzer silent, screen blank" in log
    said = (
        f"running with {config}; pins through MockFactory;"
        " PWM hardware for: none (software PWM for the buzzer and LED)"
    )
    assert said in log, "in words (it said 'running ((built-in defaults))', 'for none')"


def test_sigterm_right_after_start_always_stops_the_unit(tmp_path: Path) -> None:
    """A SIGTERM landing just as the loop goes to sleep must still wake it. It once did
    not, about one start in twenty: a blocking queue.get can miss a signal that arrives
    just before it sleeps; the loop now sleeps in select on a pipe the signal writes to."""
    config = tmp_path / "config.toml"
    config.write_text(f'[display]\ndriver = "none"\n[state]\ndir = "{tmp_path}"\n')
    for _ in range(12):
        proc = run_unit(config)
        proc.send_signal(signal.SIGTERM)
        assert proc.finish(timeout=5) == 0


# ----- a late loop ------------------------------------------------------------------------


def test_a_hold_handled_late_means_what_it_meant_when_it_happened(rig: Rig) -> None:
    """BUILD held 1,400 ms (a tap: a permit) but handled 1,200 ms after its release, when
    the 1,500 ms long-press time has long passed: still a tap, never the settings menu."""
    rig.pin(POWER).drive_low()
    rig.at(1_000)
    rig.pin(BUILD).drive_low()  # stamped at 1,000, handled at once
    rig.runtime.pump()
    rig.clock.set_ms(2_400)
    rig.pin(BUILD).drive_high()  # stamped at 2,400 ...
    rig.at(3_600)  # ... and handled only now, as on a busy Pi
    assert rig.unit.state()["mode"] == "permit"
    assert "setting" not in rig.names()
    clicks = [e.t_ms for e in rig.events if e.event == "tone" and e.data["hz"] == 4000]
    assert clicks == [1_000]


def test_edges_queued_together_run_in_order_each_at_its_own_time(rig: Rig) -> None:
    rig.pin(POWER).drive_low()
    rig.at(1_000)
    for t, level in ((1_000, False), (1_100, True), (5_000, False), (5_090, True)):
        rig.clock.set_ms(t)
        (rig.pin(AUCTION).drive_low if not level else rig.pin(AUCTION).drive_high)()
    rig.at(9_000)  # all four handled in one go
    auctions = [(e.event, e.t_ms) for e in rig.events if e.event.startswith("auction")]
    assert auctions == [("auction.start", 1_100), ("auction.end", 5_090)]


def test_a_console_line_among_late_edges_changes_nothing(rig: Rig) -> None:
    """A STATE that arrived between a press and its release must not move the unit on
    to the present before the release is handled."""
    replies: list[str] = []
    session = Session(rig.runtime, replies.append)
    rig.pin(POWER).drive_low()
    rig.at(1_000)
    rig.pin(BUILD).drive_low()
    rig.runtime.pump()
    rig.board.inbox.put(Input(1_100, partial(session.receive, b"STATE")))
    rig.clock.set_ms(2_400)
    rig.pin(BUILD).drive_high()
    rig.at(3_600)
    assert rig.unit.state()["mode"] == "permit"
    state = json.loads(replies[-1][3:])
    assert state["t_ms"] == 1_100 and state["mode"] == "idle", "STATE as of its arrival"


def test_a_press_handled_late_is_still_heard_and_seen(rig: Rig) -> None:
    """The click (12 ms) and blip start when the loop gets to the press, not in the past
    where they would already be over."""
    rig.pin(POWER).drive_low()
    rig.at(3_000)
    rig.pin(AUCTION).drive_low()  # stamped at 3,000 ...
    rig.at(3_090)  # ... handled 90 ms later, as behind a frame on a 100 kHz bus
    assert rig.pin(BUZZER).frequency == pytest.approx(4_000) and rig.pin(LED).state == 1.0
    heard = [e for e in rig.events if e.event == "tone" and e.data["hz"] == 4000]
    assert [e.t_ms for e in heard] == [3_090], "the events say when it was really heard"
    rig.clock.set_ms(3_140)
    rig.pin(AUCTION).drive_high()
    rig.at(3_200)
    assert "auction.start" in rig.names(), "and the tap still means what it meant"


# ----- stops lose nothing -------------------------------------------------------------------


def test_a_clean_stop_saves_the_time_played_up_to_the_signal(make_rig, tmp_path: Path) -> None:
    from cityunit.loop import store

    rig = make_rig(switch_on=True, state_dir=tmp_path)
    ready = threading.Event()
    loop = threading.Thread(target=rig.runtime.run, kwargs={"ready": ready.set})
    loop.start()
    assert ready.wait(10)
    rig.clock.set_ms(4_700)  # the loop sleeps: nothing is due on a virtual clock
    rig.runtime.stop()  # a signal at 4,700 ms
    loop.join(10)
    rig.board.close()
    saved = store.load(tmp_path / store.FILENAME)
    assert saved is not None and saved.hour_elapsed_ms == 4_700


def test_the_shutdown_gesture_with_no_command_says_so_on_the_screen(make_rig) -> None:
    """Issue 38: the screen went dark, the reason only on stderr (cut at 80 columns in
    the terminal simulator)."""
    rig = make_rig(Config())  # power.shutdown_command = [], the simulator's default
    rig.pin(AUCTION).drive_low()
    rig.pin(BUILD).drive_low()
    rig.at(5_100)
    assert "shutdown" in rig.names()
    rig.at(8_000)  # past the confirmation
    assert rig.runtime.shutdown_process is None
    assert rig.unit.state()["screen"][:2] == ["NOT SHUT DOWN", "no shutdown"]


def test_switching_on_during_the_shutdown_confirmation_cancels_the_shutdown(
    make_rig, tmp_path: Path
) -> None:
    marker = tmp_path / "halted"
    rig = make_rig(Config(system=System(shutdown_command=["touch", str(marker)])))
    rig.pin(AUCTION).drive_low()
    rig.pin(BUILD).drive_low()
    rig.at(5_100)
    assert "shutdown" in rig.names()
    rig.pin(POWER).drive_low()  # the switch goes ON before the Pi halts
    rig.at(5_200)
    rig.pin(AUCTION).drive_high()
    rig.pin(BUILD).drive_high()
    rig.at(9_000)
    rig.pin(POWER).drive_high()  # and OFF again, long after
    rig.at(12_000)
    assert rig.runtime.shutdown_process is None and not marker.exists()


EARLY = [
    ("the config is read", "cityunit.config", "load"),
    ("the pins are opened", "cityunit.parts.gpio", "Parts.__init__"),
    ("the saved game is read", "cityunit.loop.store", "Saver.restore"),
    ("the unit boots", "cityunit.core.unit", "Unit.boot"),
]


def start_with_a_sigterm(tmp_path: Path, landing: str, command: str = "run") -> None:
    """Run `cityunit run` (or `sim`) in a fresh process, through the command's own entry
    point, after `landing` (code that arranges for a SIGTERM at some point of start-up):
    it must end in a clean stop, the game saved."""
    import os
    import subprocess
    import sys

    from cityunit.loop import store

    config = tmp_path / "config.toml"
    config.write_text(f'[display]\ndriver = "none"\n[state]\ndir = "{tmp_path}"\n')
    args = [command, "--config", str(config)] + (
        ["--headless", "--console", "pty"] * (command == "sim")
    )
    code = f"import os, signal, sys\n{landing}\nsys.argv = ['cityunit', *{args!r}]\n"
    code += "from cityunit.__main__ import main\nsys.exit(main())\n"
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        env={**os.environ, "GPIOZERO_PIN_FACTORY": "mock"}, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 0, (result.returncode, result.stderr[-2000:])
    if command == "run":
        assert "stopped: LED off, buzzer silent, screen blank" in result.stderr
    assert store.load(tmp_path / store.FILENAME) is not None, "the game was saved"


@pytest.mark.parametrize(("when", "module", "name"), EARLY, ids=[e[0] for e in EARLY])
def test_a_sigterm_during_start_up_is_a_clean_stop(
    tmp_path: Path, when: str, module: str, name: str
) -> None:
    """The signal lands inside `module.name` as `cityunit run` starts, never a kill."""
    owner, _, attr = name.rpartition(".")
    start_with_a_sigterm(
        tmp_path,
        f"""
import importlib
module = importlib.import_module({module!r})
owner = getattr(module, {owner!r}) if {owner!r} else module
real = getattr(owner, {attr!r})
def landing(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGTERM)  # delivered at once, in the middle of start-up
    return real(*args, **kwargs)
setattr(owner, {attr!r}, landing)
""",
    )


def test_a_sigterm_while_the_heavy_libraries_import_is_a_clean_stop(tmp_path: Path) -> None:
    """gpiozero, luma and Pillow take ~0.1 s to import here (far longer on a Pi Zero):
    the handler must already be in place while they load."""
    start_with_a_sigterm(
        tmp_path,
        """
sent = []
def hook(event, args):
    if event == "import" and args[0] == "gpiozero" and not sent:
        sent.append(1)
        os.kill(os.getpid(), signal.SIGTERM)
sys.addaudithook(hook)
""",
    )


def _signals_on_import(*plan: tuple[str, str]) -> str:
    """Landing code: each signal of `plan` sent as its module starts to import."""
    return f"""
plan = dict({list(plan)!r})
def hook(event, args):
    if event == "import" and args[0] in plan:
        os.kill(os.getpid(), getattr(signal, plan.pop(args[0])))
sys.addaudithook(hook)
"""


def test_a_sigterm_before_the_command_line_is_read_is_a_clean_stop(tmp_path: Path) -> None:
    """Issue 20: 64 of 106 SIGTERMs in the first 60-120 ms killed the process (about 1-2 s
    on a Pi Zero): the handler came after the command line's imports and parsing. It is now
    the entry point's first statement, and what it catches is handed to the loop."""
    start_with_a_sigterm(tmp_path, _signals_on_import(("cityunit.cli", "SIGTERM")))


def test_a_ctrl_c_before_the_command_line_is_read_is_a_clean_stop(tmp_path: Path) -> None:
    """Issue 38: a SIGINT between the entry point and the loop's handlers printed a
    KeyboardInterrupt traceback; it is one of the early signals now."""
    start_with_a_sigterm(tmp_path, _signals_on_import(("cityunit.cli", "SIGINT")))
    start_with_a_sigterm(tmp_path, _signals_on_import(("cityunit.cli", "SIGINT")), "sim")


def test_a_ctrl_c_early_in_a_command_that_serves_nothing_ends_it_quietly() -> None:
    import subprocess
    import sys

    code = _signals_on_import(("cityunit.cli", "SIGINT"))
    code += "sys.argv = ['cityunit', 'bench', '--quick']\nfrom cityunit.__main__ import main\n"
    done = subprocess.run(
        [sys.executable, "-c", f"import os, signal, sys\n{code}sys.exit(main())\n"],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (130, ""), done


def test_a_sighup_during_start_up_is_not_a_kill_and_the_service_goes_on(tmp_path: Path) -> None:
    """`systemctl reload` right after a start: the default action ended the service (and
    systemd counts a SIGHUP death as clean, so it stayed down). The file is about to be read."""
    start_with_a_sigterm(
        tmp_path, _signals_on_import(("cityunit.cli", "SIGHUP"), ("gpiozero", "SIGTERM"))
    )


def test_a_sighup_stops_the_simulator_cleanly_even_during_start_up(tmp_path: Path) -> None:
    """A terminal closing (an SSH session ending) sends SIGHUP: the simulator's game is
    kept, where the default action lost the seconds since its last save."""
    start_with_a_sigterm(tmp_path, _signals_on_import(("cityunit.cli", "SIGHUP")), "sim")
    start_with_a_sigterm(tmp_path, _signals_on_import(("cityunit_sim.board", "SIGHUP")), "sim")


def test_the_loop_readies_what_a_tap_may_show_once_nothing_else_waits(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 23: after a frame, the screens the mode expects next are rendered and planned
    one at a time, and only while no work waits; a tap then shows its screen unplanned."""
    display, panel = rig.board.display, rig.board.display.panel
    rig.pin(POWER).drive_low()
    rig.runtime.pump()  # ON: the hour screen; the next second's, an auction's, a permit's
    assert display is not None and display.preparing
    order: list[str] = []
    prepare = display.prepare_next

    def ready() -> None:
        order.append("ready")
        prepare()
        if not display.preparing:
            rig.runtime.stop()

    display.prepare_next = ready  # type: ignore[method-assign]
    rig.runtime.call(lambda: order.append("work"))
    rig.runtime.call(lambda: order.append("work"))
    rig.runtime.run()
    assert order[:2] == ["work", "work"] and set(order[2:]) == {"ready"}, order
    assert len(order) - 2 >= 3 * 2, "three screens, each rendered then planned"
    planned = []
    real = panel._cheapest
    panel._cheapest = lambda *args: (planned.append(args), real(*args))[1]
    rig.runtime.stopped = False
    packed = []
    monkeypatch.setattr(oled, "pages", lambda image: (packed.append(image), pages(image))[1])
    rig.press(AUCTION)
    assert rig.unit.state()["mode"] == "auction" and planned == [], "readied before the tap"
    assert packed == [], "nor packed again"


class SlowCpu(VirtualClock):
    """Time as a loop on a slow CPU meets it: a wait goes all the way to its deadline, and
    work takes time (`busy`)."""

    virtual = False  # the loop sees deadlines as a real clock's

    def wait_ms(self, deadline: int | None) -> float:
        self.set_ms(self.now_ms() + 1_000 if deadline is None else max(self.now_ms(), deadline))
        return 0.0

    def busy(self, ms: int) -> None:
        self.set_ms(self.now_ms() + ms)


def test_readying_on_a_slow_cpu_never_holds_up_a_step_that_is_due(make_rig) -> None:
    """Issue 23: a screen is readied only where twice what one takes fits before the next
    deadline; an auction's tunes and flashes leave such gaps, and no flash or tone step
    waits behind a readying."""
    clock = SlowCpu()
    rig = make_rig(clock=clock)
    display, runtime = rig.board.display, rig.runtime
    readied: list[tuple[int, int, int]] = []  # (start, the next deadline then, end)
    prepare = display.prepare_next
    costs = itertools.cycle([6, 6, 6, 15])  # ms, as on a Pi Zero 2 W; now and then a render

    def slow_prepare() -> None:
        start, deadline = clock.now_ms(), runtime.next_deadline()
        prepare()
        clock.busy(next(costs))
        readied.append((start, deadline, clock.now_ms()))

    display.prepare_next = slow_prepare  # type: ignore[method-assign]
    rig.pin(POWER).drive_low()
    rig.at(1_000).press(AUCTION)  # an auction: its tunes, flashes and dots
    for t in range(1_500, 60_000, 1_237):  # BUILD taps at odd times: clicks, blips, draws
        runtime.later(t, lambda t: rig.pin(BUILD).drive_low())
        runtime.later(t + 90, lambda t: rig.pin(BUILD).drive_high())
    runtime.later(60_000, lambda t: runtime.stop())
    runtime.run()
    assert len(readied) > 20, readied
    late = [(start, deadline, end) for start, deadline, end in readied if end > deadline]
    assert late == [], f"steps held up by a readying: {late}"
