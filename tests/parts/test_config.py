"""The config file: every mistake named with its file, key and reason; exit code 2."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cityunit import config, files
from cityunit.config import Config, ConfigError, load, parse
from cityunit.core.permit import Permit

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


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
    assert c.rules.language == "fr" and c.rules.length_hours == 2
    assert c.rules.auction_mode == "fixed" and c.rules.auction_fixed_s == 30
    assert c.rules.odds == {Permit.ONE: 1, Permit.STATION: 0, Permit.TWO: 5}
    assert c.hardware.driver == "sh1106" and c.hardware.i2c_address == 0x3D
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
            "unit.toml: permit.odds: weight of '1' must be a whole number between 0 and 1000, not -1",
        ),
        # A weight too large for a float: random.choices would fail at the first draw.
        (
            "[permit]\nodds = { 1 = 0x" + "f" * 300 + " }",
            "unit.toml: permit.odds: weight of '1' must be a whole number between 0 and 1000, not a number too large to show",
        ),
        (
            "[permit]\nodds = { 1 = 0 }",
            "unit.toml: permit.odds: at least one permit needs a weight above 0",
        ),
        ("[permit]\nodds = 3", "unit.toml: permit.odds: must be a table of weights"),
        ("[pins]\nled = 40", "unit.toml: pins.led: must be between 0 and 27, not 40"),
        ("[pins]\nbuild = 17", "unit.toml: pins.build: GPIO17 is already used by pins.auction"),
        ("[pins]\nauction = 3", "unit.toml: pins.auction: GPIO3 is the display's I2C1 SCL line"),
        # Issue 20: the bus the display is on, not always bus 1's pins
        (
            "[display]\ni2c_port = 0\n[pins]\nauction = 0",
            "unit.toml: pins.auction: GPIO0 is the display's I2C0 SDA line",
        ),
        ("[display]\ndriver = 'st7735'", "unit.toml: display.driver: must be one of"),
        ("[display]\nrotate = 1", "unit.toml: display.rotate: must be one of 0, 2, not 1"),
        (
            "[display]\ninterface = 'usb'",
            "unit.toml: display.interface: must be one of 'i2c', 'spi'",
        ),
        ("[display]\nspi_port = 1", "unit.toml: display.spi_port: must be one of 0, not 1"),
        (
            "[display]\nspi_speed_hz = 10_000_000",
            "unit.toml: display.spi_speed_hz: must be one of 500000,",
        ),
        ("[display]\ndc_pin = 0", "unit.toml: display.dc_pin: must be between 1 and 27, not 0"),
        # On SPI: the bus's pins (both chip selects: the kernel takes them), DC and RST.
        (
            "[display]\ninterface = 'spi'\n[pins]\nauction = 10",
            "unit.toml: pins.auction: GPIO10 is the display's SPI MOSI line; choose another pin",
        ),
        (
            "[display]\ninterface = 'spi'\n[pins]\nled = 7",
            "unit.toml: pins.led: GPIO7 is the display's SPI CE1 line",
        ),
        (
            "[display]\ninterface = 'spi'\n[pins]\nbuild = 24",
            "unit.toml: display.dc_pin: GPIO24 is already used by pins.build",
        ),
        (
            "[display]\ninterface = 'spi'\nreset_pin = 24",
            "unit.toml: display.reset_pin: GPIO24 is already used by display.dc_pin",
        ),
        (
            "[display]\ninterface = 'spi'\ndc_pin = 8",
            "unit.toml: display.dc_pin: GPIO8 is the display's SPI CE0 line",
        ),
        ("[power]\nshutdown_command = 'halt'", "unit.toml: power.shutdown_command: must be a list"),
        ("game = 3", "unit.toml: game: must be a table ([game])"),
        # Cross-field: the final phase is an auction's last final_s seconds.
        (
            "[auction]\nmin_s = 3\nfinal_s = 5",
            "unit.toml: auction.final_s: 5 s is not shorter than auction.min_s (3 s)",
        ),
        (
            "[auction]\nmin_s = 5",  # final_s 5: the auction would start in its final phase
            "unit.toml: auction.final_s: 5 s is not shorter than auction.min_s (5 s)",
        ),
        (
            "[auction]\nmode = 'fixed'\nfixed_s = 2\nfinal_s = 30",
            "unit.toml: auction.final_s: 30 s is not shorter than auction.fixed_s (2 s)",
        ),
        (
            "[auction]\nmin_s = 45\nfinal_s = 40",  # the menu offers a 30 s fixed auction
            "unit.toml: auction.final_s: 40 s is not shorter than the menu's fixed auction (30 s)",
        ),
        (
            "[console]\nport = '/dev/serial0'\n[pins]\nled = 14",
            "unit.toml: pins.led: GPIO14 is the UART's TXD line, which console.port '/dev/serial0' uses",
        ),
        (
            "[console]\nport = '/dev/ttyAMA0'\n[pins]\nbuild = 15",
            "unit.toml: pins.build: GPIO15 is the UART's RXD line",
        ),
        # Issue 20: spellings the kernel resolves to the same device
        *(
            (
                f"[console]\nport = '{port}'\n[pins]\nbuild = 15",
                f"unit.toml: pins.build: GPIO15 is the UART's RXD line, which console.port '{port}'",
            )
            for port in ("/dev//serial0", "//dev/serial0", "/dev/./serial0", "/tmp/../dev/ttyS0")
        ),
        # ... and pyserial's URLs that open the UART: the path they wrap, a pattern
        *(
            (
                f"[console]\nport = '{port}'\n[pins]\nbuild = 15",
                "unit.toml: pins.build: GPIO15 is the UART's RXD line",
            )
            for port in ("spy:///dev/serial0", "ALT:///dev/ttyAMA0?class=x", "hwgrep://ttyS")
        ),
        # a path of 60,000 characters is shown cut short, as every value
        (
            "[console]\nport = '/dev/serial0" + "/." * 30_000 + "'\n[pins]\nbuild = 15",
            "unit.toml: pins.build: GPIO15 is the UART's RXD line, which console.port"
            " '/dev/serial0/././.../././././././././.' uses; choose another pin",
        ),
        ("[console]\nport = 'ttyS0'", "unit.toml: console.port: 'ttyS0' is not a device path"),
        (
            "[power]\nshutdown_command = ['']",
            "unit.toml: power.shutdown_command: the program name is empty",
        ),
        (
            "[power]\nshutdown_command = ['bin/halt']",
            "unit.toml: power.shutdown_command: 'bin/halt' is a relative path",
        ),
        (
            "[power]\nshutdown_command = ['systemctl poweroff']",
            "unit.toml: power.shutdown_command: 'systemctl poweroff' is one string",
        ),
        (
            '[power]\nshutdown_command = ["halt\\u0000"]',  # Popen's ValueError, uncaught
            "unit.toml: power.shutdown_command: must not hold control characters, not ['halt\\x00']",
        ),
        ("[state]\ndir = 'state'", "unit.toml: state.dir: 'state' is a relative path"),
        (
            '[state]\ndir = "/var/\\u0000"',  # Path.mkdir's ValueError, uncaught
            "unit.toml: state.dir: must not hold control characters",
        ),
        # Whatever a file holds, an echoed key or value stays one short line.
        ('[game]\n"a\\nb\\u001b[2J" = 1', "unit.toml: game.'a\\nb\\x1b[2J': unknown key"),
        (
            "[game]\nlength_hours = 0x" + "f" * 5000,  # no decimal form: int max str digits
            "unit.toml: game.length_hours: must be between 0 and 12, not a number too large to show",
        ),
        (
            "[game]\nlanguage = '" + "x" * 10_000 + "'",
            "unit.toml: game.language: must be one of 'en', 'fr', not 'xxxx",
        ),
    ],
)
def test_each_mistake_gets_one_line_naming_file_key_and_reason(text: str, line: str) -> None:
    lines = errors(text)
    assert len(lines) == 1 and lines[0].startswith(line), lines
    assert lines[0].isprintable() and len(lines[0]) < 300, lines  # one short line


def test_all_mistakes_are_reported_at_once() -> None:
    lines = errors("[game]\nlanguage = 'x'\n[pins]\nbuild = 17\nfoo = 1\n")
    assert len(lines) == 3


def test_gpio2_is_free_for_a_button_when_there_is_no_display() -> None:
    c = parse(tomllib.loads("[display]\ndriver = 'none'\n[pins]\nauction = 2\n"), "x")
    assert c.pins.auction == 2


def test_gpio2_is_free_for_a_button_when_the_display_is_on_bus_0() -> None:
    c = parse(tomllib.loads("[display]\ni2c_port = 0\n[pins]\nauction = 2\n"), "x")
    assert c.pins.auction == 2


@pytest.mark.parametrize(
    ("display", "pin"),
    [("interface = 'spi'", 2), ("interface = 'spi'", 3), ("interface = 'i2c'", 10),
     ("interface = 'i2c'", 24), ("interface = 'spi'\ndriver = 'none'", 24)],
)  # fmt: skip
def test_each_interface_holds_only_its_own_pins(display: str, pin: int) -> None:
    c = parse(tomllib.loads(f"[display]\n{display}\n[pins]\nauction = {pin}\n"), "x")
    assert c.pins.auction == pin


def test_the_uart_pins_are_free_when_the_console_is_elsewhere() -> None:
    text = "[console]\nport = '/dev/ttyGS0'\n[pins]\nled = 14\n[power]\nshutdown_command = ['/sbin/poweroff']\n"
    c = parse(tomllib.loads(text), "x")
    assert c.pins.led == 14 and c.system.shutdown_command == ["/sbin/poweroff"]
    assert parse(tomllib.loads("[auction]\nmin_s = 1\nfinal_s = 0"), "x").rules.auction_min_s == 1


def test_errors_are_capped_with_a_count_of_the_rest() -> None:
    with pytest.raises(ConfigError) as info:
        parse({"game": {f"k{i}": 1 for i in range(100_000)}}, "unit.toml")
    lines = info.value.lines
    assert len(lines) == config.MAX_ERRORS + 1
    assert lines[-1] == "unit.toml: ... and 99,980 more mistakes"


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


def test_the_system_file_is_optional_but_an_unreadable_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(config, "DEFAULT_PATH", tmp_path / "none.toml")
    assert load(None) == Config()
    monkeypatch.setattr(config, "DEFAULT_PATH", tmp_path / ("x" * 300) / "config.toml")
    with pytest.raises(ConfigError, match="cannot read: File name too long"):
        load(None)  # Path.exists() raised this one


def test_a_missing_file_is_a_clean_error(tmp_path: Path) -> None:
    result = run("run", "--config", str(tmp_path / "nope.toml"))
    assert result.returncode == 2 and "cannot read: No such file" in result.stderr


HOSTILE = {
    "deep-arrays": b"a = " + b"[" * 496 + b"]" * 496,  # RecursionError inside tomllib
    "deep-tables": b"a = " + b"{b = " * 400 + b"1" + b"}" * 400,
    "deepish": b"[pins]\nled = " + b"[" * 20 + b"]" * 20,  # parses, but no config is so deep
    "dotted-key": b"a" + b".a" * 20_000 + b" = 1",  # 3 s in tomllib: time in its square
    # Issue 20: the same in a header or an inline table (1 s, and a reload's stalled loop)
    "dotted-table": b"[" + b".".join([b"a"] * 32_000) + b"]",
    "dotted-array": b"[[ " + b" . ".join([b'"a"'] * 10_000) + b"]]",
    "dotted-inline": b"x = {b = 1, " + b".".join([b"a"] * 32_000) + b" = 1}",
    "blank-line": b"[game]\n" + b" \t" * 30_000 + b"\nx = 1\n",  # 85 s in the key pre-check
    "huge-int": b"[game]\nlength_hours = " + b"9" * 5000,  # ValueError: int max str digits
    "bom": b"\xef\xbb\xbf[game]\nlanguage = 'fr'\n",
    "large": b"# " + b"x" * (64 * 1024) + b"\n",
    "many-keys": b"[game]\n" + b"".join(b"k%d = 1\n" % i for i in range(6000)),
}
REASONS = {
    "fifo": "is a FIFO, not a regular file",
    "dev-zero": "is a character device, not a regular file",
    "directory": "is a directory, not a regular file",
    "deep-arrays": "nested too deep",
    "deep-tables": "nested too deep",
    "deepish": "nested too deep",
    "dotted-key": "nested too deep",
    "dotted-table": "nested too deep",
    "dotted-array": "nested too deep",
    "dotted-inline": "nested too deep",
    "blank-line": "game.x: unknown key",
    "huge-int": "invalid TOML: a number too long to read",
    "bom": "starts with a UTF-8 byte-order mark: save it without one",
    "large": "larger than 64 KiB",
    "many-keys": "game.k0: unknown key",
}


def hostile(tmp_path: Path, name: str) -> Path:
    """A file that once got a traceback, a hang or all the memory."""
    path = tmp_path / f"{name}.toml"
    if name == "fifo":
        os.mkfifo(path)  # no writer: a plain open() waits forever
    elif name == "dev-zero":
        return Path("/dev/zero")  # endless: a plain read() takes all the memory
    elif name == "directory":
        path.mkdir()
    else:
        path.write_bytes(HOSTILE[name])
    return path


@pytest.mark.parametrize("name", REASONS)
def test_a_hostile_file_gets_a_reason_within_a_second(tmp_path: Path, name: str) -> None:
    """Within a second of this process's own CPU (a busy machine's wait for a core is not
    the reader's work: the wall clock failed this under load)."""
    path = hostile(tmp_path, name)
    start = time.process_time()
    with pytest.raises(ConfigError) as info:
        load(path)
    assert time.process_time() - start < 1
    assert info.value.lines[0].startswith(f"{path}: {REASONS[name]}"), info.value.lines
    assert len(info.value.lines) <= config.MAX_ERRORS + 1


@pytest.mark.parametrize("name", [n for n in HOSTILE if n.startswith("dotted")])
def test_a_long_dotted_key_is_refused_before_the_parser_sees_it(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The parser's time grows with the square of a key's parts: a structure bounded in
    bytes is not bounded in time, so these never reach it."""

    def slow(text: str) -> object:
        raise AssertionError("tomllib was handed a key of thousands of parts")

    monkeypatch.setattr(files.tomllib, "loads", slow)
    with pytest.raises(ConfigError, match="nested too deep"):
        load(hostile(tmp_path, name))


@pytest.mark.parametrize("name", ["fifo", "dev-zero", "deep-arrays", "huge-int", "many-keys"])
def test_the_check_command_answers_a_hostile_file_in_lines(tmp_path: Path, name: str) -> None:
    path = hostile(tmp_path, name)
    result = subprocess.run(
        [sys.executable, "-m", "cityunit", "run", "--config", str(path), "--check"],
        capture_output=True, text=True, timeout=60,  # a hang's guard, not a speed check
    )  # fmt: skip
    lines = result.stderr.splitlines()
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert REASONS[name] in lines[0] and 1 <= len(lines) <= config.MAX_ERRORS + 1
    assert all(line.startswith(f"{path}: ") for line in lines)


# Fragments that once broke the loader, mixed with the file's real shapes.
FRAGMENTS = st.sampled_from(
    ["[", "]", "{", "}", "[[", "]]", "=", ",", ".", '"', "'", "\n", " ", "#", "\ufeff",
     "\x00", "\x1b", "0x", "9" * 50, "1e999", "-", "true", "[game]", "[pins]", "[auction]",
     "[power]", "[console]", "[state]", "[permit]", "odds", "led", "final_s", "min_s", "port",
     "shutdown_command", "dir", '"/dev/serial0"', '""', "14", "a = ", "{ 1 = ", "\\u0000"]
)  # fmt: skip
SHAPES = st.builds(
    lambda opener, n, tail: opener * n + tail,
    st.sampled_from(["[", "{a = ", "a.", '["', "[{a = ["]),
    st.integers(0, 2000),
    st.text(max_size=5),
)
CONTENT = (
    st.binary(max_size=300)
    | st.lists(FRAGMENTS | SHAPES, max_size=40).map("".join)
    | st.builds(lambda key, body: f"{key} = {body}", FRAGMENTS, SHAPES)
)


@settings(max_examples=300, deadline=None)
@given(content=CONTENT)
def test_any_bytes_or_shape_give_a_config_or_capped_one_line_errors(
    tmp_path_factory: pytest.TempPathFactory, content: str | bytes
) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "config.toml"
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "replace"))
    try:
        assert isinstance(load(path), Config)
    except ConfigError as e:
        assert 1 <= len(e.lines) <= config.MAX_ERRORS + 1
        for line in e.lines:
            assert line.startswith(f"{path}: ") and line.isprintable() and len(line) < 400, line


def test_check_accepts_the_shipped_file() -> None:
    result = run("run", "--config", str(config.PACKAGED), "--check")
    assert result.returncode == 0 and result.stdout.endswith(": OK\n")


def test_check_accepts_an_ssd1309_on_spi(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(
        '[display]\ndriver = "ssd1309"\ninterface = "spi"\nspi_device = 1\n'
        "spi_speed_hz = 4_000_000\ndc_pin = 23\nreset_pin = 5\n"
    )
    result = run("run", "--config", str(path), "--check")
    assert result.returncode == 0 and result.stdout.endswith(": OK\n"), result.stderr
    parts = load(path).hardware
    assert (parts.driver, parts.interface, parts.spi_device) == ("ssd1309", "spi", 1)
    assert (parts.spi_speed_hz, parts.dc_pin, parts.reset_pin) == (4_000_000, 23, 5)


def test_defaults_follow_the_hardware_pinout() -> None:
    pinout = tomllib.loads((ROOT / "hardware" / "pinout.toml").read_text())
    parts = pinout["part"]
    pins = Config().pins
    for name in ("auction", "build", "power", "led", "buzzer"):
        assert parts[name]["gpio"] == getattr(pins, name), name
    assert parts["oled"]["i2c_address"] == Config().hardware.i2c_address


def test_the_readmes_table_of_keys_is_the_configs_own() -> None:
    """Every key once, its default as the unit has it, every choice named: the table is
    checked against the one definition of each key (rules.py, config.py)."""
    row = re.compile(r"\| `([a-z_]+\.[a-z_0-9]+)` \| `(.*?)` \| (.*) \|")
    rows = {m[1]: (m[2], m[3]) for m in map(row.fullmatch, README.splitlines()) if m}
    fields = config._fields()
    assert sorted(rows) == sorted(fields)
    for path, (attr, f, _) in fields.items():
        default, meaning = rows[path]
        section, key = path.split(".")
        written = parse(tomllib.loads(f"[{section}]\n{key} = {default}\n"), "README.md")
        assert getattr(getattr(written, attr), f.name) == getattr(getattr(Config(), attr), f.name)
        for choice in f.check.get("choices", ()):
            assert f"`{json.dumps(choice)}`" in meaning, (path, choice)


INT_KEYS = sorted(path for path, (_, _, kind) in config._fields().items() if kind is int)


@pytest.mark.parametrize("digits", ["0x" + "f" * 4000, "9" * 4000])
@pytest.mark.parametrize("path", INT_KEYS)
def test_a_huge_number_for_any_whole_number_key_is_one_short_line(
    tmp_path: Path, path: str, digits: str
) -> None:
    """Issue 20: the keys checked against a list of choices formatted the raw value (a
    traceback past 4,300 digits, a 4,000-digit line below)."""
    section, key = path.split(".")
    file = tmp_path / "config.toml"
    file.write_text(f"[{section}]\n{key} = {digits}\n")
    with pytest.raises(ConfigError) as info:
        load(file)
    assert all(len(line) < 300 for line in info.value.lines), info.value.lines
    assert any(f"{path}: " in line for line in info.value.lines), info.value.lines


def test_run_off_keeps_the_files_output_pins_where_a_default_would_collide(
    tmp_path: Path,
) -> None:
    """`auction = "x"` falls back to GPIO17, which the file gives the buzzer: the buzzer
    the file names must still be the one `run --off` silences."""
    path = tmp_path / "config.toml"
    path.write_text('[pins]\nauction = "x"\nled = 5\nbuzzer = 17\n')
    salvaged, mistakes = config.salvage(path)
    assert (salvaged.pins.led, salvaged.pins.buzzer) == (5, 17)
    assert mistakes and mistakes[0].startswith(f"{path}: pins.auction: must be a whole number")
    path.write_text("[pins]\nled = 2\nbuzzer = 13\n")  # the LED on the display's SDA
    salvaged, _ = config.salvage(path)
    assert (salvaged.pins.led, salvaged.pins.buzzer) == (13, 18), "defaults, never a clash"


def test_each_setting_is_named_in_the_code_as_in_the_file() -> None:
    """A field is its key's last word, or its section's and key's together: a reader
    looking for `display.driver` finds `driver` (was `display`), `pwm.hardware` finds
    `pwm_hardware` (was `hardware_pwm`)."""
    misnamed = []
    for path, (_, field, _) in config._fields().items():
        section, _, key = path.partition(".")
        if field.name not in (key, f"{section}_{key}"):
            misnamed.append(f"{path}: {field.name}")
    assert misnamed == []
