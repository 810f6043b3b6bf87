"""The Pi's PWM hardware through the kernel's sysfs files, tested against a fake tree."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from gpiozero import LED

from cityunit import pwm
from cityunit.config import Config
from cityunit.config import Parts as PartsConfig
from cityunit.parts import Parts
from fakes import mock_factory


def sysfs(root: Path, npwm: int = 2, exported: tuple[int, ...] = (0, 1)) -> Path:
    """A pwmchip as the kernel shows it once the overlay is on (channels already exported)."""
    chip = root / "pwmchip0"
    chip.mkdir(parents=True)
    (chip / "npwm").write_text(f"{npwm}\n")
    for name in ("export", "unexport"):
        (chip / name).write_text("")
    for index in exported:
        channel = chip / f"pwm{index}"
        channel.mkdir()
        for name in ("period", "duty_cycle", "enable"):
            (channel / name).write_text("0")
    return chip


def read(chip: Path, index: int) -> tuple[int, int, int]:
    return tuple(
        int((chip / f"pwm{index}" / n).read_text()) for n in ("period", "duty_cycle", "enable")
    )  # type: ignore[return-value]


def test_tones_and_levels_go_to_the_hardware_channels(tmp_path: Path) -> None:
    chip = sysfs(tmp_path)
    factory = mock_factory()
    with Parts(Config(), lambda name, level: None, factory, pwm_root=tmp_path) as parts:
        assert parts.hardware_pwm == ["led", "buzzer"]
        parts.sound(2093, "high")
        assert read(chip, 0) == (round(1e9 / 2093), round(1e9 / 2093 * 0.5), 1)  # GPIO18: PWM0
        parts.sound(3136, "low")
        assert read(chip, 0) == (round(1e9 / 3136), round(1e9 / 3136 * 0.03), 1)
        parts.light(0.5)
        assert read(chip, 1) == (1_000_000, 500_000, 1)  # GPIO13: PWM1, at 1 kHz
        LED(13, pin_factory=factory).close()  # gpiozero holds neither pin: the kernel does
        parts.sound(None)
        assert read(chip, 0)[2] == 0
    assert read(chip, 1)[2] == 0, "closing leaves the LED off"
    assert (chip / "unexport").read_text() in ("0", "1")


def test_without_the_overlay_the_parts_use_gpiozeros_pwm(tmp_path: Path) -> None:
    factory = mock_factory()
    with Parts(Config(), lambda name, level: None, factory, pwm_root=tmp_path) as parts:
        assert parts.hardware_pwm == []
        parts.sound(2093)
        assert factory.pin(18).frequency == pytest.approx(2093)


def test_a_channel_that_cannot_be_exported_falls_back_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    sysfs(tmp_path, exported=())  # no kernel behind the export file: pwmN never appears
    monkeypatch.setattr(pwm, "EXPORT_WAIT_S", 0.05)
    factory = mock_factory()
    with (
        caplog.at_level(logging.WARNING),
        Parts(Config(), lambda name, level: None, factory, pwm_root=tmp_path) as parts,
    ):
        parts.light(1.0)
        assert parts.hardware_pwm == [] and factory.pin(13).state == 1.0
    assert "software PWM" in caplog.text


def test_the_hardware_can_be_turned_off_in_the_config(tmp_path: Path) -> None:
    sysfs(tmp_path)
    config = Config(parts=PartsConfig(hardware_pwm=False))
    with Parts(config, lambda name, level: None, mock_factory(), pwm_root=tmp_path) as parts:
        assert parts.hardware_pwm == []


def test_a_pi_5s_four_channels_map_its_own_way(tmp_path: Path) -> None:
    chip = sysfs(tmp_path, npwm=4, exported=(1, 2))
    with Parts(Config(), lambda name, level: None, mock_factory(), pwm_root=tmp_path) as parts:
        parts.sound(2000)
        assert read(chip, 2)[0] == 500_000  # GPIO18 is channel 2 on the RP1


@pytest.mark.parametrize(
    ("pins", "line"),
    [
        ((18, 13), "dtoverlay=pwm-2chan,pin=18,func=2,pin2=13,func2=4"),
        ((12, 19), "dtoverlay=pwm-2chan,pin=12,func=4,pin2=19,func2=2"),
        ((18, 12), "dtoverlay=pwm,pin=12,func=4"),  # one channel for both: one pin
        ((18, 5), "dtoverlay=pwm,pin=18,func=2"),
        ((5, 6), None),
    ],
)
def test_the_overlay_line_for_the_configured_pins(pins: tuple[int, int], line: str | None) -> None:
    assert pwm.overlay(*pins) == line
