"""The Pi's PWM hardware through the kernel's sysfs files, against a model of Linux 6.1's
rules (fakes.KernelPWM): what it refuses, the kernel refuses."""

from __future__ import annotations

import errno
import logging
import tempfile
from pathlib import Path

import pytest
from gpiozero import LED
from hypothesis import given, settings
from hypothesis import strategies as st

from cityunit.config import Config, Hardware, Pins
from cityunit.parts import pwm
from cityunit.parts.gpio import Parts
from fakes import KernelPWM, State, kernel_pwm, mock_factory


@pytest.fixture
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KernelPWM:
    return kernel_pwm(tmp_path, monkeypatch)


def parts(root: Path, config: Config | None = None, device_tree: Path | None = None, **kw) -> Parts:
    return Parts(
        config or Config(), lambda name, level: None, kw.get("factory") or mock_factory(),
        pwm_root=root, device_tree=device_tree or root / "no-device-tree",
    )  # fmt: skip


def tone(hz: float, duty: float) -> tuple[int, int]:
    period = round(1e9 / hz)
    return period, round(period * duty)


def test_a_fresh_channel_takes_its_period_first(kernel: KernelPWM) -> None:
    """At period 0 (a fresh boot) the kernel refuses every write but a period."""
    chip = kernel.chip()
    with pwm.Channel(chip, 0) as buzzer, pwm.Channel(chip, 1) as led:
        buzzer.set(2093, 0.5)
        led.set(1000, 0.25)
        led.set(None, 0.0)
    period, high = tone(2093, 0.5)
    assert kernel.applied[chip / "pwm0"] == [
        State(period, 0, 0), State(period, high, 0), State(period, high, 1), State(period, high, 0)
    ]  # fmt: skip
    assert kernel.applied[chip / "pwm1"][-1] == State(1_000_000, 250_000, 0)
    assert kernel.refused == [] and kernel.exported == set()


def test_tones_and_levels_go_to_the_hardware_channels(tmp_path: Path, kernel: KernelPWM) -> None:
    chip = kernel.chip()
    factory = mock_factory()
    with parts(tmp_path, factory=factory) as unit:
        assert unit.pwm_hardware == ["buzzer", "led"]
        unit.sound(2093, "high")
        assert kernel.state(chip / "pwm0") == (*tone(2093, 0.5), 1)  # GPIO18: PWM0
        unit.sound(3136, "low")
        assert kernel.state(chip / "pwm0") == (*tone(3136, 0.03), 1)
        unit.light(0.5)
        assert kernel.state(chip / "pwm1") == (1_000_000, 500_000, 1)  # GPIO13: PWM1, at 1 kHz
        LED(13, pin_factory=factory).close()  # gpiozero holds neither pin: the kernel does
        unit.sound(None)
        assert kernel.state(chip / "pwm0").enable == 0
    assert kernel.state(chip / "pwm1").enable == 0, "closing leaves the LED off"
    assert kernel.exported == set() and kernel.refused == []


@pytest.mark.parametrize("exported", [True, False], ids=["killed", "unexported-playing"])
def test_a_channel_left_playing_is_stopped_on_open_then_plays(
    kernel: KernelPWM, exported: bool
) -> None:
    """The kernel keeps a channel's state when its process dies, and across unexport."""
    chip = kernel.chip()
    kernel.left(chip / "pwm0", State(1_000_000, 500_000, 1), exported=exported)
    with pwm.Channel(chip, 0) as channel:
        assert kernel.state(chip / "pwm0") == (1_000_000, 500_000, 0), "stopped at once"
        channel.set(2000, 0.5)
        assert kernel.state(chip / "pwm0") == (500_000, 250_000, 1)
    assert kernel.refused == [] and kernel.exported == set()


def test_a_long_period_with_a_big_duty_lowers_the_duty_before_a_short_period(
    kernel: KernelPWM,
) -> None:
    chip = kernel.chip()
    kernel.left(chip / "pwm1", State(1_000_000, 900_000, 0), exported=False)  # the LED, 90 %
    with pwm.Channel(chip, 1) as channel:
        channel.set(3136, 0.5)
    period, high = tone(3136, 0.5)
    assert kernel.applied[chip / "pwm1"] == [
        State(1_000_000, high, 0), State(period, high, 0), State(period, high, 1),
        State(period, high, 0),
    ]  # fmt: skip
    assert kernel.refused == []


def test_silence_on_a_channel_that_never_played_writes_nothing(kernel: KernelPWM) -> None:
    """enable 0 at period 0 is refused: and nothing plays to be stopped."""
    chip = kernel.chip()
    with pwm.Channel(chip, 0) as channel:
        channel.set(None, 0.0)
        channel.set(2093, 0.0)
    assert kernel.applied == {} and kernel.refused == []
    assert kernel.exported == set(), "given back"


STATES = st.one_of(
    st.just(State()),
    st.integers(1, 10**9).flatmap(
        lambda p: st.builds(State, st.just(p), st.integers(0, p), st.integers(0, 1))
    ),
)
CALLS = st.lists(st.one_of(st.none(), st.tuples(st.floats(1, 50_000), st.floats(0, 1))), max_size=8)


@settings(max_examples=300, deadline=None)
@given(left=STATES, exported=st.booleans(), calls=CALLS)
def test_no_write_is_refused_from_any_state(
    left: State, exported: bool, calls: list[tuple[float, float] | None]
) -> None:
    """From a fresh channel or whatever another process left, any tones and silences: the
    kernel takes every write, and the channel plays the last one asked (and then stops)."""
    with tempfile.TemporaryDirectory() as root, pytest.MonkeyPatch.context() as patch:
        kernel = kernel_pwm(Path(root), patch, udev_checks=0)
        channel_path = kernel.chip() / "pwm0"
        kernel.left(channel_path, left, exported=exported)
        with pwm.Channel(channel_path.parent, 0) as channel:
            assert kernel.state(channel_path).enable == 0
            for call in calls:
                channel.set(*(call or (None, 0.0)))
                if call is not None and call[1] > 0:
                    assert kernel.state(channel_path) == (*tone(*call), 1)
                else:
                    assert kernel.state(channel_path).enable == 0
        assert kernel.refused == []
        applied = [state for states in kernel.applied.values() for state in states]
        assert all(s.period > 0 and s.duty_cycle <= s.period for s in applied)
        assert kernel.state(channel_path).enable == 0 and kernel.exported == set()


def test_without_the_overlay_the_parts_use_gpiozeros_pwm(tmp_path: Path) -> None:
    factory = mock_factory()
    with parts(tmp_path, factory=factory) as unit:
        assert unit.pwm_hardware == [] and unit.pwm["buzzer"] == "the PWM overlay is off"
        unit.sound(2093)
        assert factory.pin(18).frequency == pytest.approx(2093)


def test_files_udev_never_hands_over_fall_back_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No udev rule, or a user outside the gpio group: the channel's files stay root's."""
    kernel = kernel_pwm(tmp_path, monkeypatch, udev_checks=None)
    kernel.chip()
    monkeypatch.setattr(pwm, "EXPORT_WAIT_S", 0.05)
    factory = mock_factory()
    with caplog.at_level(logging.WARNING), parts(tmp_path, factory=factory) as unit:
        unit.light(1.0)
        assert unit.pwm_hardware == [] and factory.pin(13).state == 1.0
    assert "Permission denied" in caplog.text and "software PWM" in caplog.text
    assert kernel.exported == set(), "what was asked for is given back"


def test_udev_is_waited_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel = kernel_pwm(tmp_path, monkeypatch, udev_checks=5)
    with pwm.Channel(kernel.chip(), 1) as channel:
        channel.set(1000, 1.0)
    assert kernel.pending[tmp_path / "pwmchip0" / "pwm1"] == 0 and kernel.refused == []


def test_a_channel_that_fails_mid_run_hands_its_part_to_software(
    tmp_path: Path, kernel: KernelPWM
) -> None:
    chip = kernel.chip()
    faults: list[tuple[str, str]] = []
    factory = mock_factory()
    unit = Parts(
        Config(), lambda name, level: None, factory, pwm_root=tmp_path,
        device_tree=tmp_path / "none", on_fault=lambda part, detail: faults.append((part, detail)),
    )  # fmt: skip
    with unit:
        unit.sound(2093)
        kernel.fail(chip / "pwm0" / "period")  # the chip is gone, say
        unit.sound(3136)  # a new period: refused
        assert factory.pin(18).frequency == pytest.approx(3136), "the tone is played, in software"
        assert unit.pwm_hardware == ["led"] and "failed" in str(unit.pwm["buzzer"])
        assert faults == [("buzzer", faults[0][1])] and "software PWM" in faults[0][1]
        assert f"-> '{chip / 'pwm0' / 'period'}'" in faults[0][1], "the file is named"
        unit.light(1.0)
        assert kernel.state(chip / "pwm1") == (1_000_000, 1_000_000, 1), "the LED stays on it"
    assert kernel.state(chip / "pwm1").enable == 0 and unit.closed
    assert [(path.name, code) for path, _, code in kernel.refused] == [("period", errno.ENODEV)]


def test_a_board_whose_channel_fails_keeps_playing_then_closes_cleanly(
    tmp_path: Path, kernel: KernelPWM
) -> None:
    from cityunit.board import Board
    from cityunit.loop.clock import VirtualClock

    chip = kernel.chip()
    (tmp_path / "state").mkdir()
    clock = VirtualClock()
    board = Board(
        Config(), clock, pin_factory=mock_factory(), pwm_root=tmp_path, panel=None,
        state_dir=tmp_path / "state", seed=1,
    )  # fmt: skip
    events: list[tuple[str, dict[str, object]]] = []
    board.runtime.on_event(lambda e: events.append((e.event, e.data)))
    board.unit.switch(True, 0)
    board.runtime.step()
    kernel.fail(chip / "pwm0" / "duty_cycle")
    for t in range(10, 5_000, 10):  # warnings, chimes: every tone through the failed channel
        clock.set_ms(t)
        board.runtime.step()
    faults = [data for kind, data in events if kind == "fault"]
    assert [f["part"] for f in faults] == ["buzzer"] and "software PWM" in str(faults[0]["detail"])
    assert any(kind == "tone" for kind, _ in events[events.index(("fault", faults[0])) :])
    board.close()
    assert board.parts.closed and kernel.state(chip / "pwm1").enable == 0, "the LED's is off"
    assert (tmp_path / "state" / "state.json").exists()


def test_the_hardware_can_be_turned_off_in_the_config(tmp_path: Path, kernel: KernelPWM) -> None:
    kernel.chip()
    with parts(tmp_path, Config(hardware=Hardware(pwm_hardware=False))) as unit:
        assert unit.pwm_hardware == []


def test_a_pi_5_uses_its_header_block_not_its_fan_controller(
    tmp_path: Path, kernel: KernelPWM
) -> None:
    kernel.chip("1f0009c000.pwm", npwm=4, name="pwmchip0")  # the fan
    header = kernel.chip("1f00098000.pwm", npwm=4, name="pwmchip2")
    with parts(tmp_path) as unit:
        unit.sound(2000)
        assert kernel.state(header / "pwm2").period == 500_000  # GPIO18 is channel 2 on the RP1


def test_pins_the_overlay_does_not_route_stay_on_software(
    tmp_path: Path, kernel: KernelPWM
) -> None:
    kernel.chip()
    tree = tmp_path / "dt" / "soc" / "gpio@7e200000" / "pwm_pins"
    tree.mkdir(parents=True)
    (tree / "brcm,pins").write_bytes((12).to_bytes(4, "big") + (13).to_bytes(4, "big"))
    with parts(tmp_path, device_tree=tmp_path / "dt") as unit:  # the buzzer is on 18
        assert unit.pwm_hardware == ["led"]
        assert "gives GPIO12, GPIO13 to the PWM block, not GPIO18" in str(unit.pwm["buzzer"])


def test_two_parts_never_share_a_channel(tmp_path: Path, kernel: KernelPWM) -> None:
    kernel.chip()
    config = Config(pins=Pins(buzzer=18, led=12))  # both on channel 0
    with parts(tmp_path, config) as unit:
        assert unit.pwm_hardware == ["buzzer"], "the tones first"
        assert "another part's" in str(unit.pwm["led"])


@pytest.mark.parametrize(
    ("pins", "line"),
    [
        ((18, 13), "dtoverlay=pwm-2chan,pin=18,func=2,pin2=13,func2=4"),
        ((12, 19), "dtoverlay=pwm-2chan,pin=12,func=4,pin2=19,func2=2"),
        ((18, 12), "dtoverlay=pwm,pin=18,func=2"),  # one channel for both: the buzzer's
        ((5, 13), "dtoverlay=pwm,pin=13,func=4"),
        ((5, 6), None),
    ],
)
def test_the_overlay_line_for_the_configured_pins(pins: tuple[int, int], line: str | None) -> None:
    assert pwm.overlay(*pins) == line


@pytest.mark.parametrize(
    "mistake",
    ["", '[sound]\nvolume = "loud"\n', "[pins]\nbuild = 17\nled = 99\n", "[[[ not TOML"],
    ids=["good file", "a bad rule", "bad pins", "not TOML"],
)
def test_run_off_stops_what_a_killed_unit_left_playing(
    tmp_path: Path,
    kernel: KernelPWM,
    monkeypatch: pytest.MonkeyPatch,
    mistake: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The kernel keeps a channel playing after its process dies: the service's
    ExecStopPost (`cityunit run --off`) stops it, even when the config has mistakes (issue
    20: it did nothing then), from the pins it can read and the defaults."""
    from cityunit import cli
    from cityunit.parts import gpio as parts_module

    chip = kernel.chip()
    killed = parts(tmp_path)
    killed.sound(2093)
    killed.light(1.0)  # and never closed: SIGKILL
    assert kernel.state(chip / "pwm0").enable == kernel.state(chip / "pwm1").enable == 1
    config = tmp_path / "config.toml"
    config.write_text('[display]\ndriver = "none"\n' + mistake)
    monkeypatch.setattr(parts_module, "pwm_root", lambda: tmp_path)
    monkeypatch.setattr(parts_module, "pin_factory", mock_factory)
    assert cli.main(["run", "--config", str(config), "--off"]) == 0
    assert kernel.state(chip / "pwm0").enable == kernel.state(chip / "pwm1").enable == 0
    assert kernel.exported == set() and kernel.refused == []
    said = capsys.readouterr().err
    assert ("the defaults' elsewhere" in said) == bool(mistake) and "Traceback" not in said


def test_parts_failing_half_built_raise_their_own_error_and_free_every_pin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by the docstring review: a failure after the inputs were opened and before
    the outputs were made met an AttributeError in close() (leaving the outputs quiet),
    which hid the real error and left the inputs' pins taken."""
    from cityunit.parts import gpio as parts

    def broken(*args: object) -> object:
        raise RuntimeError("the PWM plan failed")

    monkeypatch.setattr(parts, "pwm_plan", broken)
    factory = mock_factory()
    with pytest.raises(RuntimeError, match="the PWM plan failed"):
        Parts(Config(), lambda name, level: None, factory)
    monkeypatch.undo()
    with Parts(Config(), lambda name, level: None, factory) as again:  # the pins are free
        assert set(again.inputs) == {"auction", "build", "power"}
