"""The Pi's PWM hardware through the kernel's sysfs files, tested against fake trees."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from gpiozero import LED

from cityunit import pwm
from cityunit.config import Config, Pins
from cityunit.config import Parts as PartsConfig
from cityunit.parts import Parts
from fakes import mock_factory


def sysfs(root: Path, block: str = "fe20c000.pwm", npwm: int = 2, name: str = "pwmchip0") -> Path:
    """A pwmchip as the kernel shows it once the overlay is on: channels not yet exported."""
    device = root / "devices" / block
    device.mkdir(parents=True)
    chip = root / name
    chip.mkdir()
    (chip / "device").symlink_to(device)
    (chip / "npwm").write_text(f"{npwm}\n")
    for file in ("export", "unexport"):
        (chip / file).write_text("")
    return chip


@pytest.fixture
def kernel() -> Iterator[None]:
    """Does what the kernel and udev do on a write to `export`: the channel's files appear."""
    stop = threading.Event()
    chips: list[Path] = []

    def serve() -> None:
        while not stop.wait(0.002):
            for chip in list(chips):
                for line in (chip / "export").read_text().split():
                    channel = chip / f"pwm{line}"
                    if not channel.exists():
                        channel.mkdir()
                        for file in ("period", "duty_cycle", "enable"):
                            (channel / file).write_text("0")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    kernel.chips = chips  # type: ignore[attr-defined]
    yield
    stop.set()
    thread.join()


def serve(chip: Path) -> Path:
    kernel.chips.append(chip)  # type: ignore[attr-defined]
    return chip


def read(chip: Path, index: int) -> tuple[int, ...]:
    return tuple(
        int((chip / f"pwm{index}" / n).read_text()) for n in ("period", "duty_cycle", "enable")
    )


def parts(root: Path, config: Config | None = None, device_tree: Path | None = None, **kw) -> Parts:
    return Parts(
        config or Config(), lambda name, level: None, kw.get("factory") or mock_factory(),
        pwm_root=root, device_tree=device_tree or root / "no-device-tree",
    )  # fmt: skip


def test_tones_and_levels_go_to_the_hardware_channels(tmp_path: Path, kernel: None) -> None:
    chip = serve(sysfs(tmp_path))
    factory = mock_factory()
    with parts(tmp_path, factory=factory) as unit:
        assert unit.hardware_pwm == ["buzzer", "led"]
        unit.sound(2093, "high")
        assert read(chip, 0) == (round(1e9 / 2093), round(1e9 / 2093 * 0.5), 1)  # GPIO18: PWM0
        unit.sound(3136, "low")
        assert read(chip, 0) == (round(1e9 / 3136), round(1e9 / 3136 * 0.03), 1)
        unit.light(0.5)
        assert read(chip, 1) == (1_000_000, 500_000, 1)  # GPIO13: PWM1, at 1 kHz
        LED(13, pin_factory=factory).close()  # gpiozero holds neither pin: the kernel does
        unit.sound(None)
        assert read(chip, 0)[2] == 0
    assert read(chip, 1)[2] == 0, "closing leaves the LED off"
    assert set((chip / "unexport").read_text()) <= {"0", "1"}


def test_without_the_overlay_the_parts_use_gpiozeros_pwm(tmp_path: Path) -> None:
    factory = mock_factory()
    with parts(tmp_path, factory=factory) as unit:
        assert unit.hardware_pwm == [] and unit.pwm["buzzer"] == "the PWM overlay is off"
        unit.sound(2093)
        assert factory.pin(18).frequency == pytest.approx(2093)


def test_a_channel_that_cannot_be_exported_falls_back_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    chip = sysfs(tmp_path)  # no kernel behind the export file: pwmN never appears
    monkeypatch.setattr(pwm, "EXPORT_WAIT_S", 0.05)
    factory = mock_factory()
    with caplog.at_level(logging.WARNING), parts(tmp_path, factory=factory) as unit:
        unit.light(1.0)
        assert unit.hardware_pwm == [] and factory.pin(13).state == 1.0
    assert "software PWM" in caplog.text
    assert (chip / "unexport").read_text(), "what was asked for is given back"


def refuse(file: Path) -> None:
    """Writes to `file` now fail, as the kernel's refusals and a vanished channel do."""
    file.unlink()
    file.symlink_to("/dev/full")


def test_a_channel_that_fails_mid_run_hands_its_part_to_software(
    tmp_path: Path, kernel: None
) -> None:
    chip = serve(sysfs(tmp_path))
    faults: list[tuple[str, str]] = []
    factory = mock_factory()
    unit = Parts(
        Config(), lambda name, level: None, factory, pwm_root=tmp_path,
        device_tree=tmp_path / "none", on_fault=lambda part, detail: faults.append((part, detail)),
    )  # fmt: skip
    with unit:
        unit.sound(2093)
        refuse(chip / "pwm0" / "period")
        unit.sound(3136)  # a new period: refused
        assert factory.pin(18).frequency == pytest.approx(3136), "the tone is played, in software"
        assert unit.hardware_pwm == ["led"] and "failed" in str(unit.pwm["buzzer"])
        assert faults == [("buzzer", faults[0][1])] and "software PWM" in faults[0][1]
        unit.light(1.0)
        assert read(chip, 1) == (1_000_000, 1_000_000, 1), "the LED stays on its channel"
    assert read(chip, 1)[2] == 0 and unit.closed


def test_a_board_whose_channel_fails_keeps_playing_then_closes_cleanly(
    tmp_path: Path, kernel: None
) -> None:
    from cityunit.board import Board
    from cityunit.clock import VirtualClock

    chip = serve(sysfs(tmp_path / "sys"))
    (tmp_path / "state").mkdir()
    clock = VirtualClock()
    board = Board(
        Config(), clock, pin_factory=mock_factory(), pwm_root=tmp_path / "sys", panel=None,
        state_dir=tmp_path / "state", seed=1,
    )  # fmt: skip
    events: list[tuple[str, dict[str, object]]] = []
    board.runtime.listeners.append(lambda e: events.append((e.event, e.data)))
    board.unit.switch(True, 0)
    board.runtime.step()
    refuse(chip / "pwm0" / "duty_cycle")
    for t in range(10, 5_000, 10):  # warnings, chimes: every tone through the failed channel
        clock.set_ms(t)
        board.runtime.step()
    faults = [data for kind, data in events if kind == "fault"]
    assert [f["part"] for f in faults] == ["buzzer"] and "software PWM" in str(faults[0]["detail"])
    assert any(kind == "tone" for kind, _ in events[events.index(("fault", faults[0])) :])
    board.close()
    assert board.parts.closed and read(chip, 1)[2] == 0, "the LED's channel is off"
    assert (tmp_path / "state" / "state.json").exists()


def test_the_hardware_can_be_turned_off_in_the_config(tmp_path: Path, kernel: None) -> None:
    serve(sysfs(tmp_path))
    with parts(tmp_path, Config(parts=PartsConfig(hardware_pwm=False))) as unit:
        assert unit.hardware_pwm == []


def test_a_pi_5_uses_its_header_block_not_its_fan_controller(tmp_path: Path, kernel: None) -> None:
    serve(sysfs(tmp_path, "1f0009c000.pwm", npwm=4, name="pwmchip0"))  # the fan
    header = serve(sysfs(tmp_path, "1f00098000.pwm", npwm=4, name="pwmchip2"))
    with parts(tmp_path) as unit:
        unit.sound(2000)
        assert read(header, 2)[0] == 500_000  # GPIO18 is channel 2 on the RP1


def test_pins_the_overlay_does_not_route_stay_on_software(tmp_path: Path, kernel: None) -> None:
    serve(sysfs(tmp_path))
    tree = tmp_path / "dt" / "soc" / "gpio@7e200000" / "pwm_pins"
    tree.mkdir(parents=True)
    (tree / "brcm,pins").write_bytes((12).to_bytes(4, "big") + (13).to_bytes(4, "big"))
    with parts(tmp_path, device_tree=tmp_path / "dt") as unit:  # the buzzer is on 18
        assert unit.hardware_pwm == ["led"]
        assert "gives GPIO12, GPIO13 to the PWM block, not GPIO18" in str(unit.pwm["buzzer"])


def test_two_parts_never_share_a_channel(tmp_path: Path, kernel: None) -> None:
    serve(sysfs(tmp_path))
    config = Config(pins=Pins(buzzer=18, led=12))  # both on channel 0
    with parts(tmp_path, config) as unit:
        assert unit.hardware_pwm == ["buzzer"], "the tones first"
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


def test_run_off_stops_what_a_killed_unit_left_playing(
    tmp_path: Path, kernel: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel keeps a channel playing after its process dies: the service's
    ExecStopPost (`cityunit run --off`) stops it."""
    from cityunit import cli
    from cityunit import parts as parts_module

    chip = serve(sysfs(tmp_path / "sys"))
    killed = parts(tmp_path / "sys")
    killed.sound(2093)
    killed.light(1.0)  # and never closed: SIGKILL
    assert read(chip, 0)[2] == read(chip, 1)[2] == 1
    config = tmp_path / "config.toml"
    config.write_text('[display]\ndriver = "none"\n')
    monkeypatch.setattr(parts_module, "pwm_root", lambda: tmp_path / "sys")
    monkeypatch.setattr(parts_module, "pin_factory", mock_factory)
    assert cli.main(["run", "--config", str(config), "--off"]) == 0
    assert read(chip, 0)[2] == read(chip, 1)[2] == 0
    assert set((chip / "unexport").read_text()) <= {"0", "1"}
