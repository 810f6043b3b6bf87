"""The Pi's hardware PWM channels, through the kernel's sysfs interface.

gpiozero's lgpio factory times PWM in software: on a busy Pi a tone wavers and the LED
flickers. GPIO12/18 (channel 0) and GPIO13/19 (channel 1) can be driven by the PWM
hardware instead, once the `pwm-2chan` overlay gives them to it (the installer adds it
for the configured pins). The kernel interface is a handful of files per channel, so
this is written out rather than taken from a package (the one maintained binding,
rpi-hardware-pwm, is Pi-4-only and has no way to be tested off a Pi).

    /sys/class/pwm/pwmchip0/export          write a channel's number to get pwmN/
    /sys/class/pwm/pwmchip0/pwmN/period     ns
    /sys/class/pwm/pwmchip0/pwmN/duty_cycle ns, never above the period
    /sys/class/pwm/pwmchip0/pwmN/enable     1 or 0
"""

from __future__ import annotations

import contextlib
import logging
import time
from pathlib import Path

log = logging.getLogger(__name__)

ROOT = Path("/sys/class/pwm")
# BCM GPIO -> channel. The Pi 0-4 PWM block has two channels; the Pi 5's (RP1) has four.
CHANNELS = {2: {12: 0, 18: 0, 13: 1, 19: 1}, 4: {12: 0, 13: 1, 18: 2, 19: 3}}
OVERLAY_FUNC = {12: 4, 13: 4, 18: 2, 19: 2}  # the ALT function that gives a pin to PWM
EXPORT_WAIT_S = 1.0  # udev makes the new channel's files writable for the gpio group


class Channel:
    """One hardware PWM channel. `set(hz, duty)`; `close()` stops it and gives it back."""

    def __init__(self, chip: Path, index: int) -> None:
        self.path = chip / f"pwm{index}"
        self._chip, self._index = chip, index
        self._period = 0
        self.closed = False
        if not self.path.exists():
            (chip / "export").write_text(str(index))
            self._wait_writable()
        self._write("enable", 0)

    def _wait_writable(self) -> None:
        end = time.monotonic() + EXPORT_WAIT_S
        while time.monotonic() < end:
            with contextlib.suppress(OSError):
                (self.path / "enable").write_text("0")
                return
            time.sleep(0.01)
        raise OSError(f"{self.path} did not appear, or is not writable")

    def _write(self, name: str, value: int) -> None:
        (self.path / name).write_text(str(value))

    def set(self, hz: float | None, duty: float) -> None:
        """A square wave at `hz` with `duty` (0-1) of each period high; None or 0: off."""
        if hz is None or duty <= 0:
            self._write("enable", 0)
            return
        period = round(1e9 / hz)
        if period != self._period:
            self._write("duty_cycle", 0)  # the kernel refuses a duty above the period
            self._write("period", period)
            self._period = period
        self._write("duty_cycle", round(period * min(duty, 1.0)))
        self._write("enable", 1)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            self._write("enable", 0)
            (self._chip / "unexport").write_text(str(self._index))


def chip(root: Path = ROOT) -> Path | None:
    """The Pi's PWM block, if the overlay has made one."""
    for candidate in sorted(root.glob("pwmchip*")):
        with contextlib.suppress(OSError, ValueError):
            if int((candidate / "npwm").read_text()) in CHANNELS:
                return candidate
    return None


def channel(gpio: int, root: Path = ROOT) -> Channel | None:
    """The hardware channel wired to `gpio`, or None (software PWM then), saying why."""
    found = chip(root)
    if found is None:
        return None
    index = CHANNELS[int((found / "npwm").read_text())].get(gpio)
    if index is None:
        log.info("GPIO%d has no hardware PWM channel: software PWM", gpio)
        return None
    try:
        return Channel(found, index)
    except OSError as e:
        log.warning("hardware PWM for GPIO%d unavailable (%s): software PWM", gpio, e)
        return None


def overlay(*gpios: int) -> str | None:
    """The config.txt line that gives these pins to the Pi's PWM block (None: none can go)."""
    by_channel = {CHANNELS[2][g]: g for g in gpios if g in CHANNELS[2]}
    if len(by_channel) == 2:
        a, b = by_channel[0], by_channel[1]
        return (
            f"dtoverlay=pwm-2chan,pin={a},func={OVERLAY_FUNC[a]},pin2={b},func2={OVERLAY_FUNC[b]}"
        )
    if by_channel:
        (gpio,) = by_channel.values()
        return f"dtoverlay=pwm,pin={gpio},func={OVERLAY_FUNC[gpio]}"
    return None
