"""`cityunit doctor`: what a maker gets wrong, found and said in plain words.

Each check says ok or what is wrong and the one thing to do about it. The exit code
is 0 only when every check passes.
"""

from __future__ import annotations

import contextlib
import os
import platform
import random
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cityunit.config import Config, ConfigError, Hardware, load
from cityunit.header import i2s_clashes, i2s_on, raspberry_pi
from cityunit.web.address import page_address

if TYPE_CHECKING:
    from PIL import Image

OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass
class Finding:
    """One line of the report: OK, WARN or FAIL, the part it is about, and what to do."""

    level: str
    what: str
    detail: str = ""


def _systemctl(*args: str) -> str:
    try:
        result = subprocess.run(
            ["systemctl", *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return result.stdout.strip() or "unknown"


def _service_log() -> str:
    """What the running service said of its PWM since this boot (it logs which outputs
    got the hardware when it starts, and any that fell back later); "" if unreadable."""
    try:
        result = subprocess.run(
            ["journalctl", "-b", "-u", "cityunit.service", "-o", "cat", "--no-pager", "-q",
             "-g", "PWM hardware for|hardware PWM failed"],
            capture_output=True, text=True, timeout=10, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return result.stdout


WEB_DROP_IN = Path("/etc/systemd/system/cityunit.service.d/web.conf")


def _fetch(url: str) -> bytes:
    from urllib.request import urlopen

    with urlopen(url, timeout=3) as answer:  # the unit's own page, on the loopback
        return bytes(answer.read())


def _open_bus(port: int) -> Any:
    import smbus2

    return smbus2.SMBus(port)


def _luma_panel(hardware: Hardware) -> Any:
    """The service's own panel, opening its bus as the service does (one transfer a
    window, not 32-byte blocks), for the frames at speed."""
    from cityunit.display.oled import LumaPanel

    return LumaPanel(hardware)


@dataclass
class Doctor:
    """The checks, in the order a maker builds the unit; every place it looks (devices,
    systemctl, the journal, the bus) is injectable, so tests run it against a fake Pi."""

    config_path: Path | None
    dev: Path = Path("/dev")
    open_bus: Callable[[int], Any] = _open_bus
    systemctl: Callable[..., str] = _systemctl
    service_log: Callable[[], str] = _service_log
    pin_factory: Any = None
    pwm_root: Path = Path("/sys/class/pwm")
    device_tree: Path = Path("/proc/device-tree")
    i2c_adapters: Path = Path("/sys/class/i2c-adapter")
    frames_panel: Callable[[Hardware], Any] = _luma_panel
    page_network: Path = WEB_DROP_IN  # the installer's, while web.enabled
    fetch: Callable[[str], bytes] = _fetch
    step: int | None = None  # the build guide's step: check only what is wired so far
    findings: list[Finding] = field(default_factory=list)
    service_active: bool = False  # as found by `run`

    def say(self, level: str, what: str, detail: str = "") -> None:
        """One finding, in the order the checks ran."""
        self.findings.append(Finding(level, what, detail))

    def run(self) -> int:
        """Every check that can run (a broken config stops those that need it): 0 when
        none failed."""
        config = self.check_config()
        if raspberry_pi(self.device_tree) is None:
            self.say(FAIL, "board", f"this is not a Raspberry Pi ({platform.machine()}): doctor "
                     "checks a unit on its Pi; here, `cityunit sim` plays the unit")  # fmt: skip
            return 1
        self.service_active = service_active = self.check_service()
        if config is None and service_active:
            self.say(
                WARN, "config", "the running service keeps the config it started with (or last "
                "reloaded); fix the file, then `sudo systemctl reload cityunit`",
            )  # fmt: skip
        if config is not None:
            self.check_gpio(config, service_active)
            self.check_pwm(config, service_active)
            display = config.hardware.driver != "none" and (self.step or 2) >= 2  # step 2 on
            if display and config.hardware.interface == "spi":
                self.check_spi(config)
            elif display and self.check_i2c(config):
                self.check_i2c_speed(config, service_active)
            if config.system.web_enabled:
                self.check_page(config.system.web_port, service_active)
        return 1 if any(f.level == FAIL for f in self.findings) else 0

    def check_config(self) -> Config | None:
        """The config as the service reads it, each mistake a FAIL line; None if broken."""
        try:
            config = load(self.config_path)
        except ConfigError as e:
            for line in e.lines:
                self.say(FAIL, "config", line)
            return None
        self.say(OK, "config", config.source)
        return config

    def check_service(self) -> bool:
        """Whether the service runs, and the one step if it does not: True if it does."""
        active = self.systemctl("is-active", "cityunit.service")
        enabled = self.systemctl("is-enabled", "cityunit.service")
        if active == "active":
            self.say(OK, "service", f"running ({enabled} at boot)")
        elif (
            (self.step or 0) >= 2
            and active == "inactive"
            and enabled in ("enabled", "disabled", "static")
        ):
            self.say(WARN, "service", "stopped (by hand?): the wiring test runs without it;"
                     " `sudo systemctl start cityunit` after it")  # fmt: skip
        elif enabled in ("enabled", "disabled", "static"):
            self.say(FAIL, "service", f"installed but {active}: see `journalctl -u cityunit -e`")
        else:
            self.say(WARN, "service", "not installed: `sudo python3 systemd/install.py`")
        return active == "active"

    def check_page(self, port: int, service_active: bool) -> None:
        """The players' page: the service's network for it (the installer's, when the
        config turned it on), the page answering, and where phones find it."""
        address = page_address(port)
        if not self.page_network.exists():
            self.say(FAIL, "page", "web.enabled is set, but the service has no network for "
                     "it: run the installer again (sudo python3 systemd/install.py)")  # fmt: skip
            return
        try:
            if service_active:
                self.fetch(f"http://127.0.0.1:{port}/state")
        except OSError as e:
            self.say(FAIL, "page", f"nothing answers on port {port} ({e}): "
                     "`journalctl -u cityunit -g page` says why")  # fmt: skip
            return
        self.say(OK, "page", f"{address} on this network (the menu's ON PHONES shows it"
                 " as a QR code)")  # fmt: skip

    def check_gpio(self, config: Config, service_active: bool) -> None:
        """The GPIO chip is there and ours to use, and the configured pins are free (or
        held by the running service)."""
        # gpiochip0 on most Pis; a Pi 5 on an older kernel has its header on gpiochip4.
        chips = sorted(self.dev.glob("gpiochip*"))
        if not chips:
            self.say(FAIL, "GPIO", f"no {self.dev}/gpiochip*: is this a Raspberry Pi?")
            return
        chip = chips[0]
        if not os.access(chip, os.R_OK | os.W_OK):
            self.say(
                FAIL,
                "GPIO",
                f"no access to {chip}: `sudo usermod -aG gpio $USER`, then log in again",
            )
            return
        self.say(OK, "GPIO", f"{chip} is accessible")
        if clashes := (i2s_clashes(config.pins) if i2s_on(self.device_tree) else []):
            self.say(FAIL, "pins", "; ".join(clashes) + ": an I2S overlay in config.txt"
                     " turns it on; move them in cityunit.toml's [pins], or remove it")  # fmt: skip
            return
        if service_active:
            self.say(OK, "pins", "held by the running service")
            return
        from gpiozero import DigitalInputDevice
        from gpiozero.exc import GPIOZeroError

        pins = config.pins
        for name in ("auction", "build", "power", "led", "buzzer"):
            pin = getattr(pins, name)
            try:
                DigitalInputDevice(pin, pin_factory=self.pin_factory).close()
            except (GPIOZeroError, OSError) as e:
                self.say(FAIL, "pins", f"GPIO{pin} ({name}) is in use by another program: {e}")
                return
        self.say(OK, "pins", "all five are free")

    def check_pwm(self, config: Config, service_active: bool) -> None:
        """Which outputs get the Pi's PWM hardware (steady tones), each channel tried by the
        service's own calls when the service does not hold it."""
        from cityunit.parts import pwm
        from cityunit.parts.gpio import BUZZER_MID, DUTY, LED_HZ, pwm_plan

        line = pwm.overlay(config.pins.buzzer, config.pins.led)
        overlay = f"`{line}` in config.txt (the installer adds it), then reboot" if line else ""
        hardware, software, fixes = [], [], []
        held: dict[str, str] = {}
        for part, found in pwm_plan(config, self.pwm_root, self.device_tree).items():
            if not isinstance(found, tuple):
                software.append(f"the {part}: {found}")
                fixes.append(overlay if "overlay" in found else "")
                continue
            gpio = getattr(config.pins, part)
            name = f"the {part} (GPIO{gpio}, {found[0].name} channel {found[1]})"
            if service_active:
                held[part] = name
                continue
            try:
                pwm.probe(found, LED_HZ if part == "led" else BUZZER_MID.frequency, DUTY["low"])
            except OSError as e:
                software.append(f"the {part}: its channel fails: {e}")
                fixes.append(pwm.hint(e, overlay))
            else:
                hardware.append(name)
        if software:
            level = WARN if config.hardware.pwm_hardware else OK  # software as chosen: fine
            fix = "".join(f"; {f}" for f in dict.fromkeys(fixes) if f) * (level == WARN)
            self.say(level, "PWM", "software for " + "; ".join(software) + fix)
        if held:
            self.say_held(held)
        if hardware:
            self.say(OK, "PWM", "hardware for " + " and ".join(hardware))

    def say_held(self, held: dict[str, str]) -> None:
        """The channels the running service holds: what its own log says it plays them on."""
        from cityunit.parts.pwm import on_hardware

        said = on_hardware(self.service_log())
        if said is None:
            self.say(OK, "PWM", " and ".join(held.values()) + ": held by the running service; "
                     "`journalctl -u cityunit -g PWM` says hardware or software")  # fmt: skip
            return
        fell = [name for part, name in held.items() if part not in said]
        if fell:
            self.say(WARN, "PWM", "the running service plays " + " and ".join(fell) + " in "
                     "software: see `journalctl -u cityunit -g PWM` for why")  # fmt: skip
        kept = [name for part, name in held.items() if part in said]
        if kept:
            self.say(OK, "PWM", "hardware for " + " and ".join(kept) + " (the running service)")

    def check_i2c(self, config: Config) -> bool:
        """The bus is there and ours, and the display answers at its address (True), or
        what does answer, and where."""
        port, address = config.hardware.i2c_port, config.hardware.i2c_address
        device = self.dev / f"i2c-{port}"
        if not device.exists():
            self.say(
                FAIL, "I2C",
                f"{device} is missing: I2C is off: `sudo raspi-config nonint do_i2c 0`, reboot",
            )  # fmt: skip
            return False
        try:
            bus = self.open_bus(port)
        except PermissionError:
            self.say(
                FAIL, "I2C", f"no access to {device}: `sudo usermod -aG i2c $USER`, log in again"
            )
            return False
        except OSError as e:
            self.say(FAIL, "I2C", f"cannot open {device}: {e.strerror or e}")
            return False
        try:
            if _answers(bus, address):
                self.say(OK, "display", f"{config.hardware.driver} answers at 0x{address:02X}")
                return True
            found = [a for a in range(0x03, 0x78) if _answers(bus, a)]
        finally:
            bus.close()
        if found:
            listed = ", ".join(f"0x{a:02X}" for a in found)
            self.say(
                FAIL, "display",
                f"nothing at 0x{address:02X}; answering: {listed}. Set display.i2c_address",
            )  # fmt: skip
        else:
            self.say(
                FAIL, "display",
                f"nothing answers on {device}: check VCC, GND, SDA (pin 3) and SCL (pin 5)",
            )  # fmt: skip
        return False

    def check_i2c_speed(self, config: Config, service_active: bool) -> None:
        """The bus's clock as the kernel has it (what config.txt set at boot) against the
        config's; and, where the service is surely stopped, whole frames sent at it, as
        the service sends them: 1 MHz is beyond the SSD1306's and SH1106's datasheets,
        and only a module that takes it may use it. Software cannot change the clock: the
        frames go at the running one, and are said to."""
        port, wanted = config.hardware.i2c_port, config.hardware.i2c_baudrate
        clock = self.i2c_adapters / f"i2c-{port}" / "of_node" / "clock-frequency"
        running = None
        with contextlib.suppress(OSError):
            running = int.from_bytes(clock.read_bytes()[:4], "big")
        if running is not None and running != wanted:
            self.say(WARN, "I2C", f"the bus runs at {running} Hz, the config says {wanted}:"
                     " run the installer again (config.txt; I2C bus 1 only), reboot")  # fmt: skip
            return
        state = self.systemctl("is-active", "cityunit.service")
        if service_active or state not in ("inactive", "failed"):
            return  # its frames and ours would cross on the glass (activating: soon running)
        from luma.core.error import Error as LumaError

        panel, failed = self.frames_panel(config.hardware), 0
        try:
            for n in range(FRAMES):
                try:
                    if n == 0 or failed:
                        panel.start()
                    panel.display(_noise(n))
                except (OSError, LumaError):
                    failed += 1
            with contextlib.suppress(OSError, LumaError):
                panel.blank()
        finally:
            panel.close()
        speed = f"{wanted if running is None else running} Hz"
        if failed:
            self.say(FAIL, "display", f"{failed} of {FRAMES} whole frames failed at {speed}:"
                     " set display.i2c_baudrate lower (400000), or check the wires")  # fmt: skip
        else:
            self.say(OK, "display", f"{FRAMES} whole frames at {speed}, none refused by the bus")

    def check_spi(self, config: Config) -> None:
        """The bus's device file; the display itself cannot answer on SPI (no read back)."""
        p = config.hardware
        device = self.dev / f"spidev{p.spi_port}.{p.spi_device}"
        if not device.exists():
            self.say(
                FAIL, "SPI",
                f"{device} is missing: SPI is off: `sudo raspi-config nonint do_spi 0`, reboot",
            )  # fmt: skip
        elif not os.access(device, os.R_OK | os.W_OK):
            self.say(
                FAIL, "SPI", f"no access to {device}: `sudo usermod -aG spi $USER`, log in again"
            )
        else:
            self.say(OK, "SPI", f"{device} is accessible")
            self.say(
                WARN, "display",
                f"{p.driver} on SPI cannot be read back; look at the screen:"
                " `cityunit doctor --interactive` shows a test pattern",
            )  # fmt: skip


FRAMES = 20  # whole frames the speed check sends: 0.2 s at 1 MHz, 1 s at 100 kHz


def _noise(seed: int) -> Image.Image:
    """A frame unlike the one before in nearly every byte: each is sent whole."""
    from PIL import Image

    return Image.frombytes("1", (128, 64), random.Random(seed).randbytes(128 * 64 // 8))


def _answers(bus: Any, address: int) -> bool:
    try:
        bus.read_byte(address)
    except OSError:
        return False
    return True


def report(doctor: Doctor) -> str:
    """The findings as the terminal shows them, one aligned line each."""
    marks = {OK: "  ok  ", WARN: " warn ", FAIL: " FAIL "}
    return "\n".join(f"{marks[f.level]} {f.what:8} {f.detail}" for f in doctor.findings)
