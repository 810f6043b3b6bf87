"""The config file: TOML, checked in full at start, every mistake named on its own line.

A maker's typo must never become a traceback or a half-working unit: each error says
the file, the key and the reason, and `cityunit` exits with code 2. Nor may a hostile
file (a FIFO, /dev/zero, deep nesting, huge numbers, thousands of mistakes) hang, crash
or flood: what is read, how deep it nests, what is echoed and how many lines are
printed are all bounded.
"""

from __future__ import annotations

import typing
from pathlib import Path
from typing import Any, Final

from cityunit import files, header, keys
from cityunit.core.rules import Key, Rules, Section, setting
from cityunit.core.settings import BY_NAME
from cityunit.core.values import Value

SPI_SPEEDS = (500_000, 1_000_000, 2_000_000, 4_000_000, 8_000_000)  # luma's; SSD130x max 10 MHz
I2C_SPEEDS = (100_000, 400_000, 1_000_000)  # the Pi's standard, fast and fast-mode plus
DEFAULT_PATH = Path("/etc/cityunit/config.toml")
PACKAGED = Path(__file__).with_name("default-config.toml")
MAX_BYTES = 64 * 1024  # the annotated default is under 4 KiB
MAX_ERRORS = 20  # lines; then one line counting the rest
# The table can pick these fixed lengths from the menu whatever the file says.
MENU_FIXED_S = min(
    o.sets["auction_fixed_s"] for o in BY_NAME["auction"].options if "auction_fixed_s" in o.sets
)


class Pins(Section):
    """BCM GPIO numbers; defaults follow hardware/pinout.toml."""

    auction: int = setting("pins.auction", 17, lo=0, hi=27)
    build: int = setting("pins.build", 27, lo=0, hi=27)
    power: int = setting("pins.power", 22, lo=0, hi=27)
    led: int = setting("pins.led", 13, lo=0, hi=27)
    buzzer: int = setting("pins.buzzer", 18, lo=0, hi=27)


class Hardware(Section):
    """The parts a maker fitted: which buzzer, whether the LED dims, the display and its bus."""

    buzzer_kind: str = setting("buzzer.kind", "passive", choices=("passive", "active"))
    led_pwm: bool = setting("led.pwm", True)
    pwm_hardware: bool = setting("pwm.hardware", True)  # the Pi's PWM block, when it is on
    driver: str = setting(
        "display.driver", "ssd1306", choices=("ssd1306", "ssd1309", "sh1106", "none")
    )
    interface: str = setting("display.interface", "i2c", choices=("i2c", "spi"))
    i2c_port: int = setting("display.i2c_port", 1, lo=0, hi=31)
    i2c_address: int = setting("display.i2c_address", 0x3C, lo=0x03, hi=0x77)
    i2c_baudrate: int = setting("display.i2c_baudrate", 400_000, choices=I2C_SPEEDS)
    # SPI0 only: the bus whose pins are checked below and that the installer turns on.
    spi_port: int = setting("display.spi_port", 0, choices=(0,))
    spi_device: int = setting("display.spi_device", 0, choices=(0, 1))  # CE0 or CE1
    spi_speed_hz: int = setting("display.spi_speed_hz", 8_000_000, choices=SPI_SPEEDS)
    dc_pin: int = setting("display.dc_pin", 24, lo=1, hi=27)  # luma takes DC 0 for none
    reset_pin: int = setting("display.reset_pin", 25, lo=0, hi=27)
    # Half turns only: the screens are drawn landscape, and a quarter turn would crop them.
    rotate: int = setting("display.rotate", 0, choices=(0, 2))


class System(Section):
    """What the unit offers beyond the game: the console, the players' page, the power."""

    console_port: str = setting("console.port", "")  # empty: no serial console
    console_baudrate: int = setting("console.baudrate", 115200, lo=1200, hi=4_000_000)
    shutdown_command: list[str] = setting("power.shutdown_command", [])
    # Where the game is kept across restarts; "" = systemd's $STATE_DIRECTORY, if any.
    state_dir: str = setting("state.dir", "")
    # The players' page on the LAN (web/): off unless asked for (the image asks).
    web_enabled: bool = setting("web.enabled", False)
    web_port: int = setting("web.port", 8080, lo=1, hi=65535)


class Config(Value):
    """The whole file, read and checked: its sections, and where it came from."""

    __slots__ = ("hardware", "pins", "rules", "source", "system")
    rules: Final[Rules]
    pins: Final[Pins]
    hardware: Final[Hardware]
    system: Final[System]
    source: Final[str]

    def __init__(
        self,
        rules: Rules | None = None,
        pins: Pins | None = None,
        hardware: Hardware | None = None,
        system: System | None = None,
        source: str = "the built-in defaults",
    ) -> None:
        self.rules = Rules() if rules is None else rules
        self.pins = Pins() if pins is None else pins
        self.hardware = Hardware() if hardware is None else hardware
        self.system = System() if system is None else system
        self.source = source


SECTIONS: dict[str, type[Section]] = {
    "rules": Rules, "pins": Pins, "hardware": Hardware, "system": System
}  # fmt: skip


class ConfigError(Exception):
    """One or more mistakes, each a full line: 'FILE: KEY: REASON' (at most MAX_ERRORS
    of them, then one counting the rest); `count` is how many there are in all."""

    def __init__(self, lines: list[str], count: int | None = None) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines
        self.count = len(lines) if count is None else count


def _fields() -> dict[str, tuple[str, Key, Any]]:
    """TOML path -> (section attribute, the key's declaration, its field's Python type)."""
    out = {}
    for attr, cls in SECTIONS.items():
        hints = typing.get_type_hints(cls)
        for key in cls.KEYS:
            out[key.path] = (attr, key, hints[key.name])
    return out


def parse(data: dict[str, Any], source: str) -> Config:
    """Build a Config from TOML data; every mistake is collected before raising."""
    config, errors = _read_keys(data, source)
    errors += _cross_checks(config) + _system_checks(config.system)
    if errors:
        lines = [f"{source}: {e}" for e in errors[:MAX_ERRORS]]
        if len(errors) > MAX_ERRORS:
            lines.append(f"{source}: ... and {len(errors) - MAX_ERRORS:,} more mistakes")
        raise ConfigError(lines, len(errors))
    return config


def _read_keys(data: dict[str, Any], source: str) -> tuple[Config, list[str]]:
    """Each key converted on its own; one that fails keeps its default (so the
    cross-checks still see the rest), with its mistake."""
    fields = _fields()
    values: dict[str, dict[str, Any]] = {attr: {} for attr in SECTIONS}
    errors = []
    sections = {path.split(".")[0] for path in fields}
    for section, table in data.items():
        if section not in sections:
            expected = ", ".join(sorted(sections))
            errors.append(f"{keys.name(section)}: unknown section; expected one of {expected}")
            continue
        if not isinstance(table, dict):
            errors.append(f"{section}: must be a table ([{section}])")
            continue
        for key, value in table.items():
            path = f"{section}.{key}"
            if path not in fields:
                known = sorted(p.split(".")[1] for p in fields if p.startswith(section + "."))
                errors.append(
                    f"{section}.{keys.name(key)}: unknown key; expected one of {', '.join(known)}"
                )
                continue
            attr, declared, kind = fields[path]
            converted, reason = keys.check(value, declared, kind)
            if reason:
                errors.append(f"{path}: {reason}")
            else:
                values[attr][declared.name] = converted
    config = Config(
        Rules(**values["rules"]), Pins(**values["pins"]), Hardware(**values["hardware"]),
        System(**values["system"]), source,
    )  # fmt: skip
    return config, errors


def _cross_checks(config: Config) -> list[str]:
    errors = []
    r = config.rules
    if r.auction_min_s > r.auction_max_s:
        errors.append(
            f"auction.min_s: {r.auction_min_s} is above auction.max_s ({r.auction_max_s})"
        )
    # The final phase is an auction's last final_s seconds: as long as an auction, it
    # would replace its start (and give away that this one is short).
    shortest = [("auction.min_s", r.auction_min_s), ("the menu's fixed auction", MENU_FIXED_S)]
    if r.auction_mode == "fixed":
        shortest.append(("auction.fixed_s", r.auction_fixed_s))
    name, length = min(shortest, key=lambda item: item[1])
    if r.auction_final_s >= length:
        errors.append(
            f"auction.final_s: {r.auction_final_s} s is not shorter than {name} ({length} s);"
            " the final phase is the last final_s seconds of an auction"
        )
    if r.off_after_minutes and not config.system.shutdown_command:
        errors.append(
            "power.off_after_minutes: needs power.shutdown_command (the installer sets"
            ' ["systemctl", "poweroff"]): without it the unit cannot shut the Pi down'
        )
    port = config.system.console_port
    hardware = config.hardware
    used = [(getattr(config.pins, key.name), key.path) for key in Pins.KEYS]
    bus = _bus(hardware)
    if hardware.driver != "none" and hardware.interface == "spi":
        used += [(hardware.dc_pin, "display.dc_pin"), (hardware.reset_pin, "display.reset_pin")]
    seen: dict[int, str] = {}
    for pin, path in used:
        if pin in seen:
            errors.append(f"{path}: GPIO{pin} is already used by {seen[pin]}")
        seen.setdefault(pin, path)
        if pin in bus:
            errors.append(f"{path}: GPIO{pin} is the display's {bus[pin]} line; choose another pin")
        if pin in header.UART_PINS and header.on_uart(port):
            errors.append(
                f"{path}: GPIO{pin} is the UART's {header.UART_PINS[pin]} line, which console.port"
                f" {keys.show(port)} uses; choose another pin"
            )
    return errors


def _bus(hardware: Hardware) -> dict[int, str]:
    """The display's bus pins (none without a display)."""
    return {} if hardware.driver == "none" else header.bus(hardware.interface, hardware.i2c_port)


def _system_checks(s: System) -> list[str]:
    """What the unit would only find out when it is too late: at the shutdown gesture,
    or opening the console or the state directory under systemd (whose directory is /)."""
    errors = []
    if s.console_port and not s.console_port.startswith("/") and "://" not in s.console_port:
        errors.append(
            f"console.port: {keys.show(s.console_port)} is not a device path; give it in full,"
            ' e.g. "/dev/serial0"'
        )
    if s.state_dir and not s.state_dir.startswith("/"):
        errors.append(f"state.dir: {keys.show(s.state_dir)} is a relative path; give it from /")
    program = s.shutdown_command[0] if s.shutdown_command else None
    if program == "":
        errors.append("power.shutdown_command: the program name is empty")
    elif program and "/" in program and not program.startswith("/"):
        errors.append(
            f"power.shutdown_command: {keys.show(program)} is a relative path;"
            " give a name found on PATH or a path from /"
        )
    elif program and "/" not in program and any(c.isspace() for c in program):
        errors.append(
            f"power.shutdown_command: {keys.show(program)} is one string; give the program and"
            ' each argument as strings of their own, e.g. ["systemctl", "poweroff"]'
        )
    return errors


def load(path: Path | None) -> Config:
    """The config at `path`; with None, /etc/cityunit/config.toml if present, else defaults."""
    path = file_to_read(path)
    return Config() if path is None else parse(_data(path), str(path))


def load_raw(path: Path | None, follow: bool = True) -> tuple[Config, bytes | None]:
    """As `load`, with the bytes it read and checked (None: the defaults), so that a copy
    is of exactly what was found good. `follow` false: a symbolic link is refused."""
    path = file_to_read(path)
    if path is None:
        return Config(), None
    try:
        raw = files.read(path, MAX_BYTES, follow=follow)
        data = files.toml_of(raw)
    except files.Refused as e:
        raise ConfigError([f"{path}: {e}"]) from None
    return parse(data, str(path)), raw


def file_to_read(path: Path | None) -> Path | None:
    """The file to read: `path`, else the system's if there is one (None: the defaults)."""
    if path is not None:
        return path
    try:
        DEFAULT_PATH.stat()  # not exists(): it raises on some errors, hides others
    except FileNotFoundError:
        return None
    except OSError:
        pass  # files.read names it
    return DEFAULT_PATH


def salvage(path: Path | None) -> tuple[Config, list[str]]:
    """What `run --off` silences the outputs from, whatever the file holds: each key that
    reads on its own, the defaults for the rest, and the file's mistakes (none: the config
    itself). Only the outputs matter there, so the cross-checks are not asked; an output
    they would refuse (on the other output's pin, or on the display's bus) keeps its
    default, so the file's pins win wherever they can. The file is read once."""
    path = file_to_read(path)
    if path is None:
        return Config(), []
    try:
        data = _data(path)
    except ConfigError as e:
        return Config(), e.lines
    try:
        return parse(data, str(path)), []
    except ConfigError as e:
        mistakes = e.lines
    config, _ = _read_keys(data, str(path))
    pins, default = config.pins, Pins()
    taken = set(_bus(config.hardware))
    led = pins.led if pins.led not in taken else default.led
    buzzer = pins.buzzer if pins.buzzer not in taken | {led} else default.buzzer
    if buzzer == led:
        led, buzzer = default.led, default.buzzer
    return config.replace(pins=pins.replace(led=led, buzzer=buzzer)), mistakes


def _data(path: Path) -> dict[str, Any]:
    """The TOML tables of the file at `path`, bounded in bytes, depth and parse time."""
    try:
        return files.toml(path, MAX_BYTES)
    except files.Refused as e:
        raise ConfigError([f"{path}: {e}"]) from None
