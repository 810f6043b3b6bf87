"""The config file: every mistake named with its file, key and reason; exit code 2."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from cityunit import config
from cityunit.config import Config, ConfigError, load, parse
from cityunit.permit import Permit

ROOT = Path(__file__).resolve().parents[1]


def errors(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        parse(tomllib.loads(text), "unit.toml")
    return info.value.lines


def test_the_shipped_default_file_is_the_built_in_defaults() -> None:
    loaded = load(config.PACKAGED)
    assert loaded == Config(source=loaded.source)


def test_an_empty_file_means_all_defaults(tmp_path: Path) -> None:
    path = tmp_path / "empty.toml"
    path.write_text("")
    assert load(path) == Config(source=str(path))


def test_valid_values_are_taken() -> None:
    c = parse(
        tomllib.loads(
            '[game]\nlanguage = "FR"\nlength_hours = 2\n'
            '[auction]\nmode = "fixed"\nfixed_s = 30\n'
            '[permit]\nodds = { 1 = 1, station = 0, "2" = 5 }\n'
            '[display]\ndriver = "sh1106"\ni2c_address = 0x3D\n'
            '[pins]\nauction = 5\n[power]\nshutdown_command = ["systemctl", "poweroff"]\n'
        ),
        "x.toml",
    )
    assert c.rules.language == "fr" and c.rules.game_hours == 2
    assert c.rules.auction_mode == "fixed" and c.rules.auction_fixed_s == 30
    assert c.rules.odds == {Permit.ONE: 1, Permit.STATION: 0, Permit.TWO: 5}
    assert c.parts.display == "sh1106" and c.parts.i2c_address == 0x3D
    assert c.pins.auction == 5 and c.system.shutdown_command == ["systemctl", "poweroff"]


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("[speaker]\nvolume = 3", "unit.toml: speaker: unknown section; expected one of"),
        ("[game]\nlenght_hours = 2", "unit.toml: game.lenght_hours: unknown key; expected one of"),
        (
            "[game]\nlength_hours = '2'",
            "unit.toml: game.length_hours: must be a whole number, not '2'",
        ),
        (
            "[game]\nlength_hours = 13",
            "unit.toml: game.length_hours: must be between 0 and 12, not 13",
        ),
        ("[game]\nshow_clock = 1", "unit.toml: game.show_clock: must be true or false, not 1"),
        (
            "[game]\nlanguage = 'de'",
            "unit.toml: game.language: must be one of 'en', 'fr', not 'de'",
        ),
        ("[auction]\nmin_s = true", "unit.toml: auction.min_s: must be a whole number, not True"),
        (
            "[auction]\nmin_s = 40\nmax_s = 30",
            "unit.toml: auction.min_s: 40 is above auction.max_s (30)",
        ),
        ("[permit]\nodds = { 4 = 1 }", "unit.toml: permit.odds: unknown permit '4'"),
        (
            "[permit]\nodds = { 1 = -1 }",
            "unit.toml: permit.odds: weight of '1' must be a whole number >= 0",
        ),
        (
            "[permit]\nodds = { 1 = 0 }",
            "unit.toml: permit.odds: at least one permit needs a weight above 0",
        ),
        ("[permit]\nodds = 3", "unit.toml: permit.odds: must be a table of weights"),
        ("[pins]\nled = 40", "unit.toml: pins.led: must be between 0 and 27, not 40"),
        ("[pins]\nbuild = 17", "unit.toml: pins.build: GPIO17 is already used by pins.auction"),
        ("[pins]\nauction = 3", "unit.toml: pins.auction: GPIO3 is the display's I2C SCL line"),
        ("[display]\ndriver = 'st7735'", "unit.toml: display.driver: must be one of"),
        ("[display]\nrotate = 1", "unit.toml: display.rotate: must be one of 0, 2, not 1"),
        ("[power]\nshutdown_command = 'halt'", "unit.toml: power.shutdown_command: must be a list"),
        ("game = 3", "unit.toml: game: must be a table ([game])"),
    ],
)
def test_each_mistake_gets_one_line_naming_file_key_and_reason(text: str, line: str) -> None:
    lines = errors(text)
    assert len(lines) == 1 and lines[0].startswith(line), lines


def test_all_mistakes_are_reported_at_once() -> None:
    lines = errors("[game]\nlanguage = 'x'\n[pins]\nbuild = 17\nfoo = 1\n")
    assert len(lines) == 3


def test_gpio2_is_free_for_a_button_when_there_is_no_display() -> None:
    c = parse(tomllib.loads("[display]\ndriver = 'none'\n[pins]\nauction = 2\n"), "x")
    assert c.pins.auction == 2


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cityunit", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[game\n", "invalid TOML"),
        (b"\xff\xfe", "not UTF-8 text"),
        ("[pins]\nbuzzer = 17\n", "pins.buzzer: GPIO17 is already used by pins.auction"),
    ],
)
def test_the_command_prints_clean_lines_and_exits_2(
    tmp_path: Path, content: str | bytes, message: str
) -> None:
    path = tmp_path / "config.toml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    result = run("run", "--config", str(path))
    assert result.returncode == 2
    assert result.stderr.startswith(f"{path}: ") and message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_file_is_a_clean_error(tmp_path: Path) -> None:
    result = run("run", "--config", str(tmp_path / "nope.toml"))
    assert result.returncode == 2 and "cannot read: No such file" in result.stderr


def test_check_accepts_the_shipped_file() -> None:
    result = run("run", "--config", str(config.PACKAGED), "--check")
    assert result.returncode == 0 and result.stdout.endswith(": OK\n")


def test_defaults_follow_the_hardware_pinout() -> None:
    pinout = tomllib.loads((ROOT / "hardware" / "pinout.toml").read_text())
    parts = pinout["part"]
    pins = Config().pins
    for name in ("auction", "build", "power", "led", "buzzer"):
        assert parts[name]["gpio"] == getattr(pins, name), name
    assert parts["oled"]["i2c_address"] == Config().parts.i2c_address


def test_every_key_is_documented_in_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    for path in config._fields():
        assert f"| `{path}` |" in readme, path
