"""`cityunit doctor` on made-up machines: each mistake a maker makes, found and named."""

from __future__ import annotations

import errno
import os
import re
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
from gpiozero import DigitalInputDevice

from cityunit.config import Config
from cityunit.tools.doctor import FAIL, OK, WARN, Doctor, report
from fakes import KernelPWM, kernel_pwm, mock_factory


class Bus:
    """An I2C bus where only `present` addresses answer."""

    def __init__(self, present: set[int]) -> None:
        self.present = present
        self.closed = False

    def read_byte(self, address: int) -> int:
        if address not in self.present:
            raise OSError(121, "Remote I/O error")
        return 0

    def write_i2c_block_data(self, address: int, register: int, data: list[int]) -> None:
        self.read_byte(address)

    def close(self) -> None:
        self.closed = True


def machine(tmp_path: Path, i2c: bool = True, gpio: bool = True) -> Path:
    dev = tmp_path / "dev"
    dev.mkdir()
    if i2c:
        (dev / "i2c-1").touch()
    if gpio:
        (dev / "gpiochip0").touch()
    return dev


def doctor(tmp_path: Path, dev: Path, bus=None, service="active", config: str = "", **kw) -> Doctor:
    path = tmp_path / "config.toml"
    path.write_text(config)

    def systemctl(verb: str, unit: str) -> str:
        return service if verb == "is-active" else "enabled"

    pwm = kw.get("pwm") or tmp_path / "pwm"  # the kernel fixture's: the overlay is on
    board = tmp_path / "device-tree"
    board.mkdir(exist_ok=True)
    (board / "model").write_bytes(kw.get("model", b"Raspberry Pi Zero 2 W Rev 1.0\0"))
    return Doctor(
        path, dev=dev, open_bus=lambda port: bus or Bus({0x3C}), systemctl=systemctl,
        pin_factory=kw.get("factory") or mock_factory(), pwm_root=pwm,
        service_log=lambda: kw.get("service_log", ""),
        device_tree=board, frames_panel=frames_on(bus or Bus({0x3C})),
    )  # fmt: skip


@pytest.fixture(autouse=True)
def kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> KernelPWM:
    """A well-built unit's PWM chip, as Linux 6.1 has it after boot: channels not exported."""
    kernel = kernel_pwm(tmp_path / "pwm", monkeypatch)
    kernel.chip()
    return kernel


def levels(d: Doctor) -> dict[str, str]:
    return {f.what: f.level for f in d.findings}


def test_a_well_built_unit_is_all_ok(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path))
    assert d.run() == 0
    assert set(levels(d).values()) == {OK}
    assert "ssd1306 answers at 0x3C" in report(d)


def test_i2c_switched_off(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path, i2c=False))
    assert d.run() == 1 and levels(d)["I2C"] == FAIL
    assert "raspi-config nonint do_i2c 0" in report(d)


def test_a_display_at_another_address_is_named(tmp_path: Path) -> None:
    bus = Bus({0x3D, 0x68})
    d = doctor(tmp_path, machine(tmp_path), bus=bus)
    assert d.run() == 1
    assert "nothing at 0x3C; answering: 0x3D, 0x68" in report(d)
    assert bus.closed


def test_no_display_at_all_points_at_the_wires(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path), bus=Bus(set()))
    assert d.run() == 1 and "check VCC, GND, SDA (pin 3) and SCL (pin 5)" in report(d)


def test_no_display_configured_skips_i2c(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path, i2c=False), config='[display]\ndriver = "none"\n')
    assert d.run() == 0 and "I2C" not in levels(d)


def test_no_access_to_the_bus(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path))

    def denied(port: int):
        raise PermissionError(13, "Permission denied")

    d.open_bus = denied
    assert d.run() == 1 and "usermod -aG i2c" in report(d)


def test_a_pi_without_its_gpio_chip(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path, gpio=False))
    assert d.run() == 1 and "gpiochip*: is this a Raspberry Pi?" in report(d)


def test_off_a_pi_it_says_so_and_stops_there(tmp_path: Path) -> None:
    """It asked "is this a Raspberry Pi?" and then prescribed raspi-config anyway."""
    d = doctor(tmp_path, machine(tmp_path, gpio=False), model=b"QEMU Virtual Machine\0")
    assert d.run() == 1
    assert [f.what for f in d.findings] == ["config", "board"], report(d)
    assert "this is not a Raspberry Pi" in report(d) and "raspi-config" not in report(d)


def test_a_pi_5_whose_header_is_gpiochip4(tmp_path: Path) -> None:
    dev = machine(tmp_path, gpio=False)
    (dev / "gpiochip4").touch()
    d = doctor(tmp_path, dev)
    assert d.run() == 0 and "gpiochip4 is accessible" in report(d)


def test_pins_held_by_another_program(tmp_path: Path) -> None:
    factory = mock_factory()
    other = DigitalInputDevice(27, pin_factory=factory)  # someone else holds BUILD's pin
    d = doctor(tmp_path, machine(tmp_path), service="inactive", factory=factory)
    assert d.run() == 1
    assert "GPIO27 (build) is in use by another program" in report(d)
    other.close()


def test_free_pins_when_the_service_is_stopped(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path), service="inactive")
    assert d.run() == 1, "an installed service that is not running is a failure"
    assert levels(d)["pins"] == OK and levels(d)["service"] == FAIL


def test_service_not_installed_is_a_warning(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path))
    d.systemctl = lambda verb, unit: "inactive" if verb == "is-active" else "not-found"
    assert d.run() == 0 and levels(d)["service"] == WARN


def test_an_invalid_config_is_each_line(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path), config="[pins]\nauction = 2\nbuild = 99\n")
    assert d.run() == 1
    assert [f.level for f in d.findings if f.what == "config"] == [FAIL, FAIL, WARN]


@pytest.mark.parametrize("flag", [[], ["--config", "/nonexistent.toml"], ["--step", "3"]])
def test_the_command_prints_and_fails_off_a_pi(flag: list[str]) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cityunit", "doctor", *flag],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout.startswith("cityunit ") and " FAIL " in result.stdout
    if flag[:1] == ["--step"]:
        assert "doctor: step 3, The buttons and the switch" in result.stdout


@pytest.mark.parametrize("flag", [["--step", "7"], ["--step", "2", "--interactive"]])
def test_a_step_the_guide_has_not_is_refused(flag: list[str]) -> None:
    result = subprocess.run([sys.executable, "-m", "cityunit", "doctor", *flag],
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 2 and "--step" in result.stderr, result.stderr


def test_a_fresh_channel_is_tried_as_the_service_plays_it_and_reported_ok(
    tmp_path: Path, kernel: KernelPWM
) -> None:
    """Period 0 after boot: the kernel takes nothing but a period first."""
    d = doctor(tmp_path, machine(tmp_path), service="inactive")
    d.run()
    assert levels(d)["PWM"] == OK
    assert "hardware for the buzzer (GPIO18, pwmchip0 channel 0)" in report(d)
    assert "the led (GPIO13, pwmchip0 channel 1)" in report(d)
    for channel in ("pwm0", "pwm1"):
        played = kernel.applied[tmp_path / "pwm" / "pwmchip0" / channel]
        assert played[-2].enable == 1 and played[-1].enable == 0, "played, then silenced"
    assert kernel.refused == [] and kernel.exported == set(), "and given back"


def test_a_running_service_holds_the_channels_and_doctor_claims_nothing(
    tmp_path: Path, kernel: KernelPWM
) -> None:
    d = doctor(tmp_path, machine(tmp_path))
    assert d.run() == 0 and levels(d)["PWM"] == OK
    assert "hardware for" not in report(d), "the plan alone proves nothing"
    assert "the buzzer (GPIO18, pwmchip0 channel 0) and the led" in report(d)
    assert "held by the running service; `journalctl -u cityunit -g PWM`" in report(d)
    assert kernel.applied == {} and kernel.refused == [], "the service's channels untouched"


START = (
    "INFO cityunit: cityunit 0.1.0 running with /etc/cityunit/config.toml;"
    " pins through LGPIOFactory; PWM hardware for: "
)
BEFORE = "INFO cityunit: cityunit 0.1.0 running (/etc/cityunit/config.toml); PWM hardware for "


@pytest.mark.parametrize(
    ("log", "level", "said"),
    [
        (
            START + "buzzer, led",
            OK,
            "hardware for the buzzer (GPIO18, pwmchip0 channel 0) and the led (GPIO13, pwmchip0 channel 1) (the running service)",
        ),
        (
            START + "none (software PWM for the buzzer and LED)",
            WARN,
            "the running service plays the buzzer (GPIO18, pwmchip0 channel 0) and the led (GPIO13, pwmchip0 channel 1) in software",
        ),
        (
            START
            + "buzzer, led\nWARNING cityunit.parts.gpio: buzzer: hardware PWM failed (x): software PWM from now on",
            WARN,
            "plays the buzzer (GPIO18, pwmchip0 channel 0) in software",
        ),
        (
            START + "none (software PWM for the buzzer and LED)\n" + START + "buzzer, led",
            OK,
            "hardware for the buzzer",
        ),  # the latest start counts
        (
            BEFORE + "none: software PWM\n" + BEFORE + "buzzer, led",
            OK,
            "hardware for the buzzer",
        ),  # a journal from before the log's wording changed
    ],
)
def test_with_the_service_running_doctor_says_what_its_log_says(
    tmp_path: Path, kernel: KernelPWM, log: str, level: str, said: str
) -> None:
    """Found on the virtual Pi: doctor said hardware while the service had fallen back."""
    d = doctor(tmp_path, machine(tmp_path), service_log=log)
    d.run()
    assert level in [f.level for f in d.findings if f.what == "PWM"], report(d)
    assert said in report(d), report(d)
    assert kernel.applied == {}, "the service's channels untouched"


def test_without_the_overlay_doctor_says_what_to_add(tmp_path: Path) -> None:
    off = doctor(tmp_path, machine(tmp_path), pwm=tmp_path / "none")
    assert off.run() == 0 and levels(off)["PWM"] == WARN, "software PWM still works"
    assert "the PWM overlay is off" in report(off)
    assert "`dtoverlay=pwm-2chan,pin=18,func=2,pin2=13,func2=4` in config.txt" in report(off)


def probed(tmp_path: Path, **kw) -> str:
    """doctor's PWM line, the service stopped: a WARN."""
    d = doctor(tmp_path, machine(tmp_path), service="inactive", **kw)
    d.run()
    lines = [f for f in d.findings if f.what == "PWM" and f.level != OK]
    assert [f.level for f in lines] == [WARN], report(d)
    return lines[0].detail


def test_files_outside_the_users_group_point_at_the_gpio_group(
    tmp_path: Path, kernel: KernelPWM, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cityunit.parts import pwm

    monkeypatch.setattr(pwm, "EXPORT_WAIT_S", 0.01)
    kernel.udev_checks = None  # udev never hands them over
    line = probed(tmp_path)
    assert "Permission denied" in line and "gpio group (udev): is the user in it?" in line
    assert "dtoverlay" not in line and "report" not in line


def test_a_refused_value_is_quoted_as_a_bug_to_report(tmp_path: Path, kernel: KernelPWM) -> None:
    from cityunit.parts.gpio import BUZZER_MID

    period = tmp_path / "pwm" / "pwmchip0" / "pwm0" / "period"
    kernel.fail(period, errno.EINVAL)  # as the driver refuses a period it cannot make
    line = probed(tmp_path)
    assert f"Invalid argument: '{round(1e9 / BUZZER_MID.frequency)}' -> '{period}'" in line
    assert "the kernel refused that value: a bug in cityunit, please report it" in line
    assert "gpio group" not in line and "dtoverlay" not in line


def test_a_missing_channel_points_at_the_overlay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kernel_pwm(tmp_path / "one", monkeypatch).chip(npwm=1)  # no channel 1 for the LED
    line = probed(tmp_path, pwm=tmp_path / "one")
    assert "the led: its channel fails: [Errno 19] No such device" in line
    assert "the channel is missing: `dtoverlay=pwm-2chan,pin=18,func=2,pin2=13,func2=4`" in line
    assert "gpio group" not in line


def test_a_channel_another_driver_holds_says_so(tmp_path: Path, kernel: KernelPWM) -> None:
    kernel.claim(tmp_path / "pwm" / "pwmchip0" / "pwm0")  # pwm-beeper, say
    line = probed(tmp_path)
    assert "the buzzer: its channel fails: [Errno 16] Device or resource busy" in line
    assert "another program or driver holds the channel" in line and "gpio group" not in line


def test_software_pwm_by_choice_is_fine(tmp_path: Path) -> None:
    chosen = doctor(tmp_path, machine(tmp_path), config="[pwm]\nhardware = false\n")
    chosen.run()
    assert levels(chosen)["PWM"] == OK and "pwm.hardware = false" in report(chosen)


def test_a_bad_config_says_the_running_service_keeps_its_own(tmp_path: Path) -> None:
    d = doctor(tmp_path, machine(tmp_path), config="[game]\nlanguage = 3\n")
    assert d.run() == 1
    assert "game.language" in report(d) and "systemctl reload cityunit" in report(d)


SPI = '[display]\ndriver = "ssd1309"\ninterface = "spi"\n'


def test_spi_checks_its_device_and_says_the_display_cannot_answer(tmp_path: Path) -> None:
    dev = machine(tmp_path, i2c=False)
    (dev / "spidev0.0").touch()
    d = doctor(tmp_path, dev, bus=Bus(set()), config=SPI)
    assert d.run() == 0 and "I2C" not in levels(d)
    assert levels(d)["SPI"] == OK and levels(d)["display"] == WARN
    assert "ssd1309 on SPI cannot be read back; look at the screen" in report(d)
    assert "doctor --interactive" in report(d)


def test_spi_switched_off_or_out_of_reach(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dev = machine(tmp_path)
    d = doctor(tmp_path, dev, config=SPI + "spi_device = 1\n")
    assert d.run() == 1 and levels(d)["SPI"] == FAIL
    assert "spidev0.1 is missing: SPI is off: `sudo raspi-config nonint do_spi 0`" in report(d)
    (dev / "spidev0.1").touch()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: "spidev" not in str(p) and real(p, mode))
    d = doctor(tmp_path, dev, config=SPI + "spi_device = 1\n")
    assert d.run() == 1 and "no access to" in report(d) and "usermod -aG spi" in report(d)


def test_the_wiring_tests_hint_names_the_spi_wires() -> None:
    from cityunit.config import Hardware
    from cityunit.tools.wiring import _display_hint

    spi = Config(hardware=Hardware(interface="spi", spi_device=1, dc_pin=23))
    assert "CS on CE1 (GPIO7), DC (GPIO23), RST (GPIO25)" in _display_hint(spi)
    assert "address" in _display_hint(Config())


def test_a_service_stopped_by_hand_before_a_step_is_a_warning_and_a_crashed_one_fails(
    tmp_path: Path,
) -> None:
    d = doctor(tmp_path, machine(tmp_path), service="inactive")
    d.step = 3
    d.run()
    assert levels(d)["service"] == WARN and "systemctl start cityunit" in report(d)
    crashed = doctor(tmp_path, tmp_path / "dev", service="failed")
    crashed.step = 2
    crashed.run()
    assert levels(crashed)["service"] == FAIL and "journalctl" in report(crashed)
    for step in (None, 1):  # at step 1 the installer has just started it
        plain = doctor(tmp_path, tmp_path / "dev", service="inactive")
        plain.step = step
        plain.run()
        assert levels(plain)["service"] == FAIL, "stopped otherwise is a failure"


def test_step_1_checks_no_display_and_step_2_does(tmp_path: Path) -> None:
    """Step 1 wires nothing: a display that does not answer yet is no failure there."""
    dev = machine(tmp_path)
    for step, code in ((1, 0), (2, 1), (None, 1)):
        d = doctor(tmp_path, dev, bus=Bus(set()))
        d.step = step
        assert d.run() == code, report(d)
        assert ("display" in levels(d)) == (step != 1), report(d)


class FastBus(Bus):
    """A module that does not take 1 MHz: every other write fails. It takes the service's
    whole transfers (i2c_rdwr), as a bus luma opens itself does."""

    def __init__(self) -> None:
        super().__init__({0x3C})
        self.writes = 0

    def write_i2c_block_data(self, address: int, register: int, data: list[int]) -> None:
        self.writes += 1
        if self.writes % 2:
            raise OSError(121, "Remote I/O error")


def frames_on(bus: Bus):
    from cityunit.display.oled import LumaPanel

    return lambda hardware: LumaPanel(hardware, bus=bus)


def test_doctor_sends_whole_frames_at_the_configured_i2c_speed(tmp_path: Path) -> None:
    """Issue 23: which modules take 1 MHz is what doctor sends at it, the service stopped;
    a bus that runs at another speed (no reboot since the installer) is said, and nothing
    is sent, since it would be sent at that other speed."""
    adapters = tmp_path / "i2c-adapter"
    (adapters / "i2c-1" / "of_node").mkdir(parents=True)
    clock = adapters / "i2c-1" / "of_node" / "clock-frequency"
    clock.write_bytes((400_000).to_bytes(4, "big"))
    config = "[display]\ni2c_baudrate = 1000000\n"
    bus = FastBus()
    d = doctor(tmp_path, machine(tmp_path), service="inactive", config=config, bus=bus)
    d.i2c_adapters = adapters
    d.run()
    assert "the bus runs at 400000 Hz, the config says 1000000" in report(d)
    assert bus.writes == 0 and "whole frames" not in report(d), "nothing sent at 400 kHz"
    clock.write_bytes((1_000_000).to_bytes(4, "big"))  # rebooted
    (tmp_path / "a").mkdir()
    d = doctor(tmp_path / "a", machine(tmp_path / "a"), service="inactive", config=config, bus=bus)
    d.i2c_adapters = adapters
    d.run()
    assert "whole frames failed at 1000000 Hz: set display.i2c_baudrate lower" in report(d)
    (tmp_path / "ok").mkdir()
    fine = doctor(tmp_path / "ok", machine(tmp_path / "ok"), service="inactive")
    fine.run()
    assert "20 whole frames at 400000 Hz, none refused by the bus" in report(fine)
    for state in ("active", "activating", "reloading"):
        (tmp_path / state).mkdir()
        busy = doctor(tmp_path / state, machine(tmp_path / state), service=state)
        busy.frames_panel = partial(pytest.fail, f"frames sent while {state}")
        busy.run()


def sound_card(tmp_path: Path, block: str = "soc/i2s@7e203000", status: bytes = b"okay\0") -> None:
    """The device tree as a sound card's overlay leaves it (dtoverlay=max98357a, say)."""
    node = tmp_path / "device-tree" / block
    node.mkdir(parents=True)
    (node / "status").write_bytes(status)


def test_a_sound_cards_overlay_that_holds_the_buzzers_pin(tmp_path: Path) -> None:
    """An I2S amplifier's overlay takes GPIO18-21; the buzzer's default is GPIO18, and a
    claim by the service would take the line from the sound card without a word."""
    sound_card(tmp_path)
    d = doctor(tmp_path, machine(tmp_path), service="inactive")
    assert d.run() == 1 and levels(d)["pins"] == FAIL
    assert "GPIO18 (buzzer) is the sound card's I2S BCLK line" in report(d)
    assert "the buzzer can go on GPIO12" in report(d)


def test_a_pi_5s_sound_card_and_a_button_on_its_lines(tmp_path: Path) -> None:
    sound_card(tmp_path, "axi/pcie@120000/rp1/i2s@a4000")
    config = "[pins]\nbuzzer = 12\nbuild = 20\n"
    d = doctor(tmp_path, machine(tmp_path), service="active", config=config)
    assert d.run() == 1
    assert "GPIO20 (build) is the sound card's I2S DIN line" in report(d)
    assert "can go on GPIO12" not in report(d), "the buzzer is not on I2S lines"


@pytest.mark.parametrize("status", [b"disabled\0", None])
def test_i2s_off_or_moved_away_is_no_finding(tmp_path: Path, status: bytes | None) -> None:
    if status is not None:
        sound_card(tmp_path, status=status)
    dev = machine(tmp_path)
    d = doctor(tmp_path, dev, service="inactive")
    assert d.run() == 1 and levels(d)["pins"] == OK
    sound_card(tmp_path, "soc/i2s@7e203001")  # on, with the parts elsewhere
    moved = doctor(tmp_path, dev, service="inactive", config="[pins]\nbuzzer = 12\n")
    assert moved.run() == 1 and levels(moved)["pins"] == OK


def test_it_says_where_the_players_page_is_and_whether_it_answers(tmp_path: Path) -> None:
    config = "[web]\nenabled = true\nport = 8123\n"
    network = tmp_path / "web.conf"
    d = doctor(tmp_path, machine(tmp_path), config=config)
    d.page_network = network
    d.run()
    assert levels(d)["page"] == FAIL and "run the installer again" in report(d)
    network.write_text("[Service]\n")
    asked: list[str] = []
    (tmp_path / "a").mkdir()
    d = doctor(tmp_path, machine(tmp_path / "a"), config=config)
    d.page_network, d.fetch = network, lambda url: asked.append(url) or b"{}"
    d.run()
    assert levels(d)["page"] == OK and asked == ["http://127.0.0.1:8123/state"]
    assert re.search(r"http://[0-9.]+:8123/ on this network", report(d)), report(d)

    def refused(url: str) -> bytes:
        raise ConnectionRefusedError(111, "Connection refused")

    (tmp_path / "b").mkdir()
    d = doctor(tmp_path, machine(tmp_path / "b"), config=config)
    d.page_network, d.fetch = network, refused
    d.run()
    assert levels(d)["page"] == FAIL and "nothing answers on port 8123" in report(d)
    (tmp_path / "off").mkdir()
    quiet = doctor(tmp_path / "off", machine(tmp_path / "off"))
    quiet.run()
    assert "page" not in levels(quiet)
