"""The config file: TOML, checked in full at start, every mistake named on its own line.

A maker's typo must never become a traceback or a half-working unit: each error says
the file, the key and the reason, and `cityunit` exits with code 2.
"""

from __future__ import annotations

import dataclasses
import tomllib
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cityunit.permit import Permit
from cityunit.rules import Rules, setting

I2C_PINS = {2: "SDA", 3: "SCL"}
DEFAULT_PATH = Path("/etc/cityunit/config.toml")
PACKAGED = Path(__file__).with_name("default-config.toml")


@dataclass(frozen=True)
class Pins:
    """BCM GPIO numbers; defaults follow hardware/pinout.toml."""

    auction: int = setting("pins.auction", 17, lo=0, hi=27)
    build: int = setting("pins.build", 27, lo=0, hi=27)
    power: int = setting("pins.power", 22, lo=0, hi=27)
    led: int = setting("pins.led", 13, lo=0, hi=27)
    buzzer: int = setting("pins.buzzer", 18, lo=0, hi=27)


@dataclass(frozen=True)
class Parts:
    buzzer: str = setting("buzzer.kind", "passive", choices=("passive", "active"))
    led_pwm: bool = setting("led.pwm", True)
    hardware_pwm: bool = setting("pwm.hardware", True)  # the Pi's PWM block, when it is on
    display: str = setting("display.driver", "ssd1306", choices=("ssd1306", "sh1106", "none"))
    i2c_port: int = setting("display.i2c_port", 1, lo=0, hi=31)
    i2c_address: int = setting("display.i2c_address", 0x3C, lo=0x03, hi=0x77)
    # Half turns only: the screens are drawn landscape, and a quarter turn would crop them.
    rotate: int = setting("display.rotate", 0, choices=(0, 2))


@dataclass(frozen=True)
class System:
    console_port: str = setting("console.port", "")  # empty: no serial console
    console_baudrate: int = setting("console.baudrate", 115200, lo=1200, hi=4_000_000)
    shutdown_command: list[str] = setting("power.shutdown_command", [])
    # Where the game is kept across restarts; "" = systemd's $STATE_DIRECTORY, if any.
    state_dir: str = setting("state.dir", "")


@dataclass(frozen=True)
class Config:
    rules: Rules = dataclasses.field(default_factory=Rules)
    pins: Pins = dataclasses.field(default_factory=Pins)
    parts: Parts = dataclasses.field(default_factory=Parts)
    system: System = dataclasses.field(default_factory=System)
    source: str = "(built-in defaults)"


SECTIONS = {"rules": Rules, "pins": Pins, "parts": Parts, "system": System}


class ConfigError(Exception):
    """One or more mistakes, each a full line: 'FILE: KEY: REASON'."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def _fields() -> dict[str, tuple[str, dataclasses.Field[Any], Any]]:
    """TOML path -> (section attribute, dataclass field, its Python type)."""
    out = {}
    for attr, cls in SECTIONS.items():
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            out[f.metadata["path"]] = (attr, f, hints[f.name])
    return out


def _check(value: Any, f: dataclasses.Field[Any], kind: Any) -> tuple[Any, str | None]:
    """The value converted to the field's type, or a reason it cannot be."""
    meta = f.metadata
    origin = typing.get_origin(kind)
    if kind is bool:
        if not isinstance(value, bool):
            return None, f"must be true or false, not {value!r}"
    elif kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            return None, f"must be a whole number, not {value!r}"
        lo, hi = meta.get("lo"), meta.get("hi")
        if lo is not None and hi is not None and not lo <= value <= hi:
            return None, f"must be between {lo} and {hi}, not {value}"
        if meta.get("choices") and value not in meta["choices"]:
            return None, f"must be one of {', '.join(map(str, meta['choices']))}, not {value}"
    elif kind is str:
        if not isinstance(value, str):
            return None, f"must be a string, not {value!r}"
        choices = meta.get("choices")
        if choices and value.lower() not in choices:
            return None, f"must be one of {', '.join(map(repr, choices))}, not {value!r}"
        value = value.lower() if choices else value
    elif origin is list:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            return None, f"must be a list of strings, not {value!r}"
    elif origin is dict:
        return _check_odds(value)
    return value, None


def _check_odds(value: Any) -> tuple[Any, str | None]:
    names = ", ".join(f'"{p.value}"' for p in Permit)
    if not isinstance(value, dict):
        return None, f"must be a table of weights for {names}"
    odds = {}
    for key, weight in value.items():
        permit = Permit.named(str(key))
        if permit is None:
            return None, f"unknown permit {key!r}; permits are {names}"
        if isinstance(weight, bool) or not isinstance(weight, int) or weight < 0:
            return None, f"weight of {key!r} must be a whole number >= 0, not {weight!r}"
        odds[permit] = weight
    if sum(odds.values()) <= 0:
        return None, "at least one permit needs a weight above 0"
    return odds, None


def parse(data: dict[str, Any], source: str) -> Config:
    """Build a Config from TOML data; every mistake is collected before raising."""
    fields = _fields()
    values: dict[str, dict[str, Any]] = {attr: {} for attr in SECTIONS}
    errors = []
    sections = {path.split(".")[0] for path in fields}
    for section, table in data.items():
        if section not in sections:
            errors.append(
                f"{section}: unknown section; expected one of {', '.join(sorted(sections))}"
            )
            continue
        if not isinstance(table, dict):
            errors.append(f"{section}: must be a table ([{section}])")
            continue
        for key, value in table.items():
            path = f"{section}.{key}"
            if path not in fields:
                known = sorted(p.split(".")[1] for p in fields if p.startswith(section + "."))
                errors.append(f"{path}: unknown key; expected one of {', '.join(known)}")
                continue
            attr, f, kind = fields[path]
            converted, reason = _check(value, f, kind)
            if reason:
                errors.append(f"{path}: {reason}")
            else:
                values[attr][f.name] = converted
    # Keys that failed keep their defaults, so the cross-checks still see the rest.
    config = Config(**{attr: SECTIONS[attr](**v) for attr, v in values.items()}, source=source)
    errors += _cross_checks(config)
    if errors:
        raise ConfigError([f"{source}: {e}" for e in errors])
    return config


def _cross_checks(config: Config) -> list[str]:
    errors = []
    r = config.rules
    if r.auction_min_s > r.auction_max_s:
        errors.append(
            f"auction.min_s: {r.auction_min_s} is above auction.max_s ({r.auction_max_s})"
        )
    seen: dict[int, str] = {}
    for f in dataclasses.fields(Pins):
        pin = getattr(config.pins, f.name)
        path = f.metadata["path"]
        if pin in seen:
            errors.append(f"{path}: GPIO{pin} is already used by {seen[pin]}")
        seen.setdefault(pin, path)
        if pin in I2C_PINS and config.parts.display != "none":
            errors.append(
                f"{path}: GPIO{pin} is the display's I2C {I2C_PINS[pin]} line; choose another pin"
            )
    return errors


def load(path: Path | None) -> Config:
    """The config at `path`; with None, /etc/cityunit/config.toml if present, else defaults."""
    if path is None:
        if not DEFAULT_PATH.exists():
            return Config()
        path = DEFAULT_PATH
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError([f"{path}: cannot read: {e.strerror or e}"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"{path}: not UTF-8 text"]) from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError([f"{path}: invalid TOML: {e}"]) from None
    return parse(data, str(path))
