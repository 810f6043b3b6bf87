"""`cityunit bench` runs and prints every figure (their values are reported, not tested)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from cityunit.tools.bench import TARGETS


def test_bench_quick_prints_every_figure_as_json() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cityunit", "bench", "--json", "--quick"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    figures = json.loads(result.stdout)
    browser = shutil.which("chromium") and shutil.which("chromedriver")
    measured = {key for key in TARGETS if browser or key != "page_first_paint_ms"}
    for key in measured:
        assert isinstance(figures[key], int | float) and figures[key] >= 0, key
    assert figures["presses"] >= 40 and figures["auctions"] >= 2
    assert figures["virtual_hour_events"] > 10_000
    assert set(figures["within_target"]) == measured
    assert figures["page_idle_wakeups"] == 0, "the page's thread woke with nobody watching"


def test_the_device_report_times_each_kind_of_frame_and_the_pins(monkeypatch) -> None:
    from cityunit.tools.bench.device import KINDS, report

    monkeypatch.setenv("GPIOZERO_PIN_FACTORY", "mock")
    from cityunit.config import Config
    from fakes import Controller

    text = report(Config(), bus=Controller("ssd1306"))
    for kind in KINDS:
        assert f"{kind}: send (diff + bus)" in text and f"{kind}: bytes on the bus" in text
    assert "LED on and off (driver)" in text and "a tone on and off (driver)" in text
    assert "an hour of play, computed" in text


def test_bench_device_runs_where_the_display_does_not_answer(tmp_path) -> None:
    import os

    config = tmp_path / "config.toml"
    config.write_text("[display]\ni2c_port = 31\n")  # no such bus
    result = subprocess.run(
        [sys.executable, "-m", "cityunit", "bench", "--device", "--config", str(config)],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "GPIOZERO_PIN_FACTORY": "mock"},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "display: not answering" in result.stdout and "PWM hardware for: none" in result.stdout


def test_bench_device_off_a_pi_is_one_line_not_gpiozeros_warnings() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cityunit", "bench", "--device"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("cityunit bench --device: this is not a Raspberry Pi")
    assert result.stderr.count("\n") == 1 and "Warning" not in result.stderr


def test_the_readmes_figures_table_is_the_benchs() -> None:
    """The same figures, in the same order, with the same targets."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme.split("<!-- figures", 1)[1].split("<!-- end: figures -->", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| [^|]+ \| ([\d.]+) \|", table, flags=re.MULTILINE)
    assert [(name, float(target)) for name, target in rows] == [
        (name, float(target)) for name, target in TARGETS.items()
    ]


def test_the_device_report_says_what_it_cannot_measure(monkeypatch) -> None:
    """No display configured, or pins that do not open (off a Pi, or held by the
    service): a line saying so, not a traceback."""
    from gpiozero.exc import BadPinFactory

    from cityunit.config import Config, Hardware
    from cityunit.tools.bench import device

    def no_pins(*args: object, **kw: object) -> None:
        raise BadPinFactory("Unable to load any default pin factory!")

    monkeypatch.setattr(device, "loose_parts", no_pins)
    text = device.report(Config(hardware=Hardware(driver="none")), bus=object())
    assert "display: none configured" in text and "pins: cannot open (BadPinFactory" in text


def test_slowed_holds_this_process_to_a_share_of_a_core_and_lets_go() -> None:
    """--slow N: the kernel's CPU quota (CFS bandwidth control) on a group made for the
    bench and removed after; where it cannot be had, the reason."""
    import os
    from pathlib import Path

    import pytest

    from cityunit.tools.bench.slow import PERIOD_US, NoQuota, slowed

    with pytest.raises(NoQuota, match="from 1 to 1000"), slowed(0.5):
        pass
    before = Path("/proc/self/cgroup").read_text()
    try:
        with slowed(20) as how:
            inside = Path("/proc/self/cgroup").read_text()
            group = Path(how.rsplit(": ", 1)[1].rstrip(")"))
            quota = (
                (group / "cpu.max").read_text().split()[0]
                if (group / "cpu.max").exists()
                else (group / "cpu.cfs_quota_us").read_text().strip()
            )
    except NoQuota as e:
        assert os.geteuid() != 0 or "cgroup" in str(e), e
        pytest.skip(f"no CPU quota here: {e}")
    assert f"cityunit-slow-{os.getpid()}" in inside and int(quota) == PERIOD_US // 20
    assert "0.05 of one core" in how
    assert Path("/proc/self/cgroup").read_text() == before and not group.exists()


def test_bench_slow_with_device_is_refused_with_its_reason() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "cityunit", "bench", "--device", "--slow", "20"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2 and "a Pi is as slow as it is" in result.stderr


def test_slowed_past_20_lengthens_the_period_and_refuses_what_is_no_number() -> None:
    """The kernel's least quota is 1 ms: --slow 40 was silently 1/20 of a core."""
    import math
    import os

    import pytest

    from cityunit.tools.bench.slow import NoQuota, slowed

    for bad in (math.nan, math.inf, 0.0, 1_001.0):
        with pytest.raises(NoQuota), slowed(bad):
            pass
    if os.geteuid() != 0:
        pytest.skip("a CPU quota needs root")
    try:
        with slowed(40) as how:
            assert "0.025 of one core (1000 us each 40000 us" in how, how
    except NoQuota as e:
        pytest.skip(f"no CPU quota here: {e}")


def test_the_unused_modules_wait_until_something_uses_them() -> None:
    """`run` and `sim` defer what gpiozero and Pillow import and never use: gpiozero and
    luma come up on them, and whatever does use them later gets the real module."""
    script = """
import sys
from cityunit.service.startup import Deferred, defer_unused
defer_unused()
import gpiozero, luma.oled.device, PIL.Image
from cityunit.parts.gpio import mock_pins
gpiozero.LED(13, pin_factory=mock_pins()).on()
NAMES = ("importlib.metadata", "PIL.ExifTags", "statistics", "colorzero", "multiprocessing")
import logging
logging.getLogger("cityunit").warning("a record: its process's name not asked for")
print(*(type(sys.modules[n]).__name__ for n in NAMES))
from luma.core.interface.serial import pca9633
fade = pca9633.transition.__new__(pca9633.transition)
assert type(fade.Process(target=print)).__name__ == "Process", "luma's, unbound"
rgb = gpiozero.RGBLED(5, 6, 12, pin_factory=mock_pins())
rgb.color = (1, 1, 0)
assert rgb.color.rgb == (1, 1, 0) and type(rgb.color).__name__ == "Color"
import statistics, colorzero
from statistics import median
assert median([3, 1, 2]) == 2 and statistics.mean([1, 2]) == 1.5
assert colorzero.Color("red").rgb == (1, 0, 0)
import importlib.metadata, importlib.util, PIL.ExifTags
assert importlib.util.find_spec("importlib.metadata").name == "importlib.metadata"
assert importlib.metadata is sys.modules["importlib.metadata"]
from importlib.metadata import entry_points
assert entry_points(group="cityunit-nothing") == ()
assert importlib.metadata.version("gpiozero")
assert PIL.Image.ExifTags.Base.Orientation == PIL.ExifTags.Base.Orientation == 0x0112
print(*(type(sys.modules[n]).__name__ for n in NAMES))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["Deferred " * 4 + "Deferred", "module " * 4 + "module"]


def test_bench_instructions_counts_the_service_to_ready() -> None:
    """callgrind's count of the service's start to READY, where valgrind is (bootstrap
    installs it): a count of the order of the unit's (457 M here), not a guess, with its
    first light a window of its own (32 M here), from the keepsake a first run kept."""
    from cityunit.tools.bench import instructions

    if (why := instructions.unavailable()) is not None:
        pytest.skip(why)
    root = instructions.checkout()
    assert root is not None
    counted = instructions._run("ready", root)
    assert 100 < instructions._total(counted) < 2000
    assert counted.labels == ["first-light"] and 10e6 < counted.dumps[0] < 100e6


def test_the_counts_windows_are_the_dumps_between_their_marks() -> None:
    from cityunit.tools.bench.instructions import Counted, _total, _windows

    counted = Counted([5, 7, 11, 13, 17, 19], ["tap", "readying"])
    assert _windows(counted, "tap") == [7e-6] and _windows(counted, "readying") == [13e-6]
    assert _total(counted) == 72e-6


def test_against_gives_another_revision_of_the_checkout() -> None:
    from cityunit.tools.bench import instructions

    with instructions.revision("HEAD") as tree:
        assert (tree / "firmware/cityunit/__init__.py").exists() and (tree / "sim").is_dir()
    done = subprocess.run([sys.executable, "-m", "cityunit", "bench", "--against", "HEAD"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 2 and "--against goes with --instructions" in done.stderr


def test_a_module_not_there_is_not_deferred(monkeypatch) -> None:
    """No stand-in for what is not installed (`import` of it must still fail), nor for
    what is imported already."""
    from cityunit.service import startup

    monkeypatch.setattr(startup, "UNUSED", {"json.nosuch": (), "nosuch.module": (), "json": ()})
    before = sys.modules["json"]
    startup.defer_unused()
    assert "json.nosuch" not in sys.modules and "nosuch.module" not in sys.modules
    assert sys.modules["json"] is before


def test_a_measurement_leaves_the_units_log_level_as_it_found_it() -> None:
    """The bench quiets the unit's events while it measures, then gives the level back:
    a level left at WARNING hid the INFO lines of every later test in the process."""
    import logging

    from cityunit.tools.bench.rig import quiet

    logger = logging.getLogger("cityunit")
    before = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        with quiet():
            assert logger.level == logging.WARNING
        assert logger.level == logging.DEBUG
    finally:
        logger.setLevel(before)
