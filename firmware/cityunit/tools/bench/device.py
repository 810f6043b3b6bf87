"""`cityunit bench --device`, on a Pi: the real bus, the real pins, the Pi's own Python.

The desktop figures say what the software costs; these say what a maker's unit does:
how long each kind of frame takes to send and holds the bus (I2C or SPI, at its speed),
how long the LED and the buzzer take to change, how long a frame takes to render, and
how long an hour of play takes to compute. The report is plain text, made to be pasted
into an issue.
"""

from __future__ import annotations

import platform
import statistics
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from gpiozero.exc import GPIOPinInUse, GPIOZeroError
from luma.core.error import Error as LumaError

from cityunit import __version__
from cityunit.board import configured_panel, loose_parts
from cityunit.config import Config
from cityunit.core.permit import Permit
from cityunit.core.screens import AuctionScreen, HourScreen, PermitScreen, Screen, SoldScreen
from cityunit.display.render import render
from cityunit.parts.gpio import pin_factory, pwm_root
from cityunit.tools.bench.hour import virtual_hour
from cityunit.tools.bench.rig import I2C_HZ, bus_ms, ms, pct, quiet

# Frames in the order a game shows them: the clock ticking, an auction moving, the screens
# taps bring. Each is timed on the real bus, and its bytes counted on a recorder.
KINDS: dict[str, list[Screen]] = {
    "idle tick": [HourScreen(1, f"12:{s:02d}") for s in range(40)],
    "auction frame": [AuctionScreen(f) for f in range(40)],
    "tap": [HourScreen(1, "12:40"), AuctionScreen(0), SoldScreen(True), HourScreen(1, "12:50"),
            PermitScreen(Permit.TWO, drawing=True), PermitScreen(Permit.THREE)] * 5,
}  # fmt: skip


def _render(screen: Screen) -> None:
    render(screen, "en")


def _timed(action: Callable[[], object], times: int = 1) -> list[float]:
    out = []
    for _ in range(times):
        t0 = time.perf_counter_ns()
        action()
        out.append(ms(time.perf_counter_ns() - t0))
    return out


def _line(name: str, values: list[float], unit: str = "ms") -> str:
    p50, p99 = statistics.median(values), pct(values, 99)
    return f"  {name:28} p50 {p50:8.2f} {unit}   p99 {p99:8.2f} {unit}"


def _wire(config: Config) -> tuple[str, Callable[[float], float]]:
    """Where the panel is, and how long its bus carries n bytes (SPI: 8 bits a byte)."""
    display = config.hardware
    if display.interface == "i2c":
        where = f"at 0x{display.i2c_address:02X}, I2C at {I2C_HZ // 1000} kHz (the installer's)"
        return where, bus_ms
    hz = display.spi_speed_hz
    where = (
        f"on SPI{display.spi_port}.{display.spi_device} at {hz / 1e6:g} MHz"
        f" (DC GPIO{display.dc_pin}, RST GPIO{display.reset_pin})"
    )
    return where, lambda n: n * 8 / hz * 1000


def frames(config: Config, bus: Any = None, gpio: Any = None) -> list[str]:
    """Each kind of frame on the real panel (`bus`, `gpio`: stand-ins): the send timed, its
    bytes on the bus (the panel's count, which the tests prove is the bus's) and their
    time on the wire at the bus's speed."""
    panel = configured_panel(config, bus=bus, pins=gpio)
    if panel is None:
        return ["  display: none configured (display.driver): no frame figures"]
    try:
        panel.start()
    except (OSError, LumaError) as e:
        panel.close()
        return [f"  display: not answering ({e}): no frame figures"]
    where, wire_ms = _wire(config)
    out = [f"  display: {config.hardware.driver} {where}"]
    try:
        for kind, screens in KINDS.items():
            sent, sizes = [], []
            for screen in screens:
                sent += _timed(partial(panel.display, render(screen, "en")))
                sizes.append(float(panel.sent))
            out += [
                _line(f"{kind}: send (diff + bus)", sent[1:]),
                _line(f"{kind}: bytes on the bus", sizes[1:], "B"),
                _line(f"{kind}: on the wire", [wire_ms(n) for n in sizes[1:]]),
            ]
        render_ms = [t for s in KINDS["tap"] for t in _timed(partial(_render, s))]
        out.append(_line("render a screen", render_ms))
    finally:
        panel.blank()
        panel.close()
    return out


def pins(config: Config) -> list[str]:
    """The LED and the buzzer, through the driver in use."""
    try:
        opened = loose_parts(config, pin_factory(), pwm_root())
    except (GPIOZeroError, OSError) as e:
        hint = "is the service stopped?" if isinstance(e, GPIOPinInUse) else "on a Pi?"
        return [f"  pins: cannot open ({type(e).__name__}: {e}; {hint}): no pin figures"]
    with opened as parts:
        driver = ", ".join(parts.pwm_hardware) or "none"

        def blink() -> None:
            parts.light(1.0)
            parts.light(0.0)

        def beep() -> None:
            parts.sound(2093)
            parts.sound(None)

        led, tone = _timed(blink, 200), _timed(beep, 200)
    return [
        f"  PWM hardware for: {driver}",
        _line("LED on and off (driver)", led),
        _line("a tone on and off (driver)", tone),
    ]


@quiet()
def report(config: Config, bus: Any = None, gpio: Any = None) -> str:
    """The whole report, as text to paste into an issue: the machine, the pins, the frames
    on the real panel (`bus`, `gpio`: stand-ins), and an hour of play computed."""
    model = Path("/proc/device-tree/model")
    machine = model.read_text().strip("\0\n") if model.exists() else platform.machine()
    hour = virtual_hour()
    lines = [
        f"cityunit {__version__} bench --device on {machine}",
        f"  Python {platform.python_version()}, {platform.system()} {platform.release()}",
        f"  config: {config.source}",
        *pins(config),
        *frames(config, bus, gpio),
        f"  an hour of play, computed: {hour['virtual_hour_wall_ms']:.0f} ms "
        f"({hour['virtual_hour_events']} events)",
    ]
    return "\n".join(lines)
