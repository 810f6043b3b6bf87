"""`cityunit doctor`: what a maker gets wrong, found and said in plain words.

Each check says ok or what is wrong and the one thing to do about it. The exit code
is 0 only when every check passes.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cityunit.config import Config, ConfigError, load

OK, WARN, FAIL = "ok", "warn", "FAIL"


@dataclass
class Finding:
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


def _open_bus(port: int) -> Any:
    import smbus2

    return smbus2.SMBus(port)


@dataclass
class Doctor:
    config_path: Path | None
    dev: Path = Path("/dev")
    open_bus: Callable[[int], Any] = _open_bus
    systemctl: Callable[..., str] = _systemctl
    pin_factory: Any = None
    findings: list[Finding] = field(default_factory=list)

    def say(self, level: str, what: str, detail: str = "") -> None:
        self.findings.append(Finding(level, what, detail))

    def run(self) -> int:
        config = self.check_config()
        service_active = self.check_service()
        if config is not None:
            self.check_gpio(config, service_active)
            if config.parts.display != "none":
                self.check_i2c(config)
        return 1 if any(f.level == FAIL for f in self.findings) else 0

    def check_config(self) -> Config | None:
        try:
            config = load(self.config_path)
        except ConfigError as e:
            for line in e.lines:
                self.say(FAIL, "config", line)
            return None
        self.say(OK, "config", config.source)
        return config

    def check_service(self) -> bool:
        active = self.systemctl("is-active", "cityunit.service")
        enabled = self.systemctl("is-enabled", "cityunit.service")
        if active == "active":
            self.say(OK, "service", f"running ({enabled} at boot)")
        elif enabled in ("enabled", "disabled", "static"):
            self.say(FAIL, "service", f"installed but {active}: see `journalctl -u cityunit -e`")
        else:
            self.say(WARN, "service", "not installed: `sudo python3 systemd/install.py`")
        return active == "active"

    def check_gpio(self, config: Config, service_active: bool) -> None:
        chip = self.dev / "gpiochip0"
        if not chip.exists():
            self.say(FAIL, "GPIO", f"{chip} is missing: is this a Raspberry Pi?")
            return
        if not os.access(chip, os.R_OK | os.W_OK):
            self.say(
                FAIL,
                "GPIO",
                f"no access to {chip}: `sudo usermod -aG gpio $USER`, then log in again",
            )
            return
        self.say(OK, "GPIO", f"{chip} is accessible")
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

    def check_i2c(self, config: Config) -> None:
        port, address = config.parts.i2c_port, config.parts.i2c_address
        device = self.dev / f"i2c-{port}"
        if not device.exists():
            self.say(
                FAIL, "I2C",
                f"{device} is missing: I2C is off: `sudo raspi-config nonint do_i2c 0`, reboot",
            )  # fmt: skip
            return
        try:
            bus = self.open_bus(port)
        except PermissionError:
            self.say(
                FAIL, "I2C", f"no access to {device}: `sudo usermod -aG i2c $USER`, log in again"
            )
            return
        except OSError as e:
            self.say(FAIL, "I2C", f"cannot open {device}: {e.strerror or e}")
            return
        try:
            if _answers(bus, address):
                self.say(OK, "display", f"{config.parts.display} answers at 0x{address:02X}")
                return
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


def _answers(bus: Any, address: int) -> bool:
    try:
        bus.read_byte(address)
    except OSError:
        return False
    return True


def report(doctor: Doctor) -> str:
    marks = {OK: "  ok  ", WARN: " warn ", FAIL: " FAIL "}
    return "\n".join(f"{marks[f.level]} {f.what:8} {f.detail}" for f in doctor.findings)
