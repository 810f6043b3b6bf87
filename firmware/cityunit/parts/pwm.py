"""The Pi's hardware PWM channels, through the kernel's sysfs interface.

gpiozero's lgpio factory times PWM in software: on a busy Pi a tone wavers and the LED
flickers. GPIO12/18 (channel 0) and GPIO13/19 (channel 1) can be driven by the PWM
hardware instead, once the `pwm-2chan` overlay gives them to it (the installer adds it
for the configured pins). The kernel interface is a handful of files per channel, so
this is written out rather than taken from a package (the one maintained binding,
rpi-hardware-pwm, is Pi-4-only and has no way to be tested off a Pi).

    /sys/class/pwm/pwmchip0/export          write a channel's number to get pwmN/
    /sys/class/pwm/pwmchip0/pwmN/period     ns; 0 until set, and then nothing else is taken
    /sys/class/pwm/pwmchip0/pwmN/duty_cycle ns, never above the period
    /sys/class/pwm/pwmchip0/pwmN/enable     1 or 0
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import time
from pathlib import Path

log = logging.getLogger(__name__)

ROOT = Path("/sys/class/pwm")
DEVICE_TREE = Path("/proc/device-tree")
# The PWM block that drives the GPIO header, by its device's name, and its channels by
# BCM GPIO: the Pi 0-4's (BCM2835/2711, at ...20c000) has two, the Pi 5's (RP1) four.
BLOCKS = {
    "20c000.pwm": {12: 0, 18: 0, 13: 1, 19: 1},
    "1f00098000.pwm": {12: 0, 13: 1, 18: 2, 19: 3},
}
OVERLAY_FUNC = {12: 4, 13: 4, 18: 2, 19: 2}  # the ALT function that gives a pin to PWM
# udev makes a new channel's files writable for the gpio group: at boot, with udev busy
# with every other device, that took over a second on the virtual Pi under load
EXPORT_WAIT_S = 5.0
ATTRIBUTES = ("period", "duty_cycle", "enable")  # a channel's state, in the order it is set


class Sysfs:
    """How a channel reaches the kernel: its attribute files, each write one write() of
    the whole value, as sysfs takes it (and refuses it, with an errno). `Channel.sysfs`
    is where a test puts its model of the kernel instead."""

    def read(self, path: Path) -> str:
        """The attribute's text, its newline included."""
        return path.read_text()

    def write(self, path: Path, text: str) -> None:
        """The whole value in one write(); a refusal is the kernel's OSError, unchanged."""
        fd = os.open(path, os.O_WRONLY)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)

    def writable(self, path: Path) -> bool:
        """Whether this process may write the file yet (udev hands it to the gpio group
        a moment after the export)."""
        return os.access(path, os.W_OK)


class Channel:
    """One hardware PWM channel: `set(hz, duty)`; `close()` (or `with`) stops it and gives
    it back to the kernel, also when it could not be opened fully.

    Each write to period, duty_cycle or enable has the kernel apply the channel's whole
    state, and it refuses (EINVAL) one without a period or with the duty above the
    period. A channel keeps its state across unexport and export: it opens fresh (period
    0, where nothing but a period is taken) or as a killed process left it, so the writes
    follow the state read back, never an assumed one."""

    sysfs = Sysfs()

    def __init__(self, chip: Path, index: int, stop: bool = True) -> None:
        """`stop` false: what plays is left playing until the first `set` (the LED, which
        the unit sets at once, and which the service's first stage may have lit)."""
        self.path = chip / f"pwm{index}"
        self._chip, self._index = chip, index
        self._state = dict.fromkeys(ATTRIBUTES, 0)  # as the kernel has it
        self._exported = self.path.exists()  # by a killed process, say: ours to give back
        self.closed = False
        try:
            if not self._exported:
                self._put(chip / "export", index)
                self._exported = True
            self._wait_writable()
            for name in ATTRIBUTES:
                self._state[name] = int(self.sysfs.read(self.path / name))
            if stop:
                self.set(None, 0)  # stops what a killed process left playing
        except OSError:
            self.close()
            raise

    def _wait_writable(self) -> None:
        """udev gives a new channel's files to the gpio group a moment after the export.
        (A write cannot tell: at period 0 the kernel refuses all but a period's.)"""
        end = time.monotonic() + EXPORT_WAIT_S
        for file in (self.path / name for name in ATTRIBUTES):
            while not self.sysfs.writable(file):
                if time.monotonic() >= end:
                    code = errno.EACCES if file.exists() else errno.ENOENT
                    raise OSError(code, os.strerror(code), str(file))
                time.sleep(0.01)

    def _put(self, path: Path, value: int) -> None:
        """One value to one file; a refusal names both (`[Errno 22] ...: '0' -> '.../enable'`)."""
        try:
            self.sysfs.write(path, str(value))
        except OSError as e:
            raise OSError(e.errno, e.strerror, str(value), None, str(path)) from e

    def _write(self, name: str, value: int) -> None:
        self._put(self.path / name, value)
        self._state[name] = value

    def set(self, hz: float | None, duty: float) -> None:
        """A square wave at `hz` with `duty` (0-1) of each period high; None or 0: off.

        The period goes before the duty, except when the duty now on is above the new
        period: then the new duty goes first (it fits both periods)."""
        if hz is None or duty <= 0:
            if self._state["enable"]:  # else nothing plays (and at period 0, 0 is refused)
                self._write("enable", 0)
            return
        period = round(1e9 / hz)
        high = round(period * min(duty, 1.0))
        if self._state["duty_cycle"] > period:
            self._write("duty_cycle", high)
        for name, value in (("period", period), ("duty_cycle", high), ("enable", 1)):
            if self._state[name] != value:
                self._write(name, value)

    def __enter__(self) -> Channel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Stops the wave and unexports the channel, one a killed process left exported
        too; the kernel's refusals are ignored. Idempotent."""
        if self.closed:
            return
        self.closed = True
        with contextlib.suppress(OSError):
            self.set(None, 0)
        if self._exported:
            with contextlib.suppress(OSError):
                self._put(self._chip / "unexport", self._index)


def chip(root: Path = ROOT) -> tuple[Path, dict[int, int]] | None:
    """The PWM block that drives the GPIO header, with its channels, if the overlay is on.

    Other chips (a Pi 5's fan controller, say) are left alone."""
    for candidate in sorted(root.glob("pwmchip*")):
        device = os.path.basename(os.path.realpath(candidate / "device"))
        for name, channels in BLOCKS.items():
            if device.endswith(name):
                return candidate, channels
    return None


def routed(device_tree: Path = DEVICE_TREE) -> set[int] | None:
    """The GPIOs the overlay gives to the PWM block (None: this Pi does not say)."""
    for pins in device_tree.glob("soc/gpio@*/pwm_pins/brcm,pins"):
        with contextlib.suppress(OSError):
            data = pins.read_bytes()
            return {int.from_bytes(data[i : i + 4], "big") for i in range(0, len(data), 4)}
    return None


Assignment = dict[str, tuple[Path, int] | str]  # part -> (chip, channel), or why not


def assign(parts: dict[str, int], root: Path = ROOT, device_tree: Path = DEVICE_TREE) -> Assignment:
    """Which parts (name -> GPIO, the most important first) get a hardware channel, and
    why the others do not. One part per channel: two on one channel would share a signal."""
    found = chip(root)
    if found is None:
        return dict.fromkeys(parts, "the PWM overlay is off")
    path, channels = found
    pins, taken, out = routed(device_tree), set[int](), Assignment()
    for part, gpio in parts.items():
        index = channels.get(gpio)
        if index is None:
            out[part] = f"GPIO{gpio} has no PWM channel"
        elif pins is not None and gpio not in pins:
            given = ", ".join(f"GPIO{pin}" for pin in sorted(pins))
            out[part] = f"the overlay gives {given} to the PWM block, not GPIO{gpio}"
        elif index in taken:
            out[part] = f"its channel ({index}) is another part's"
        else:
            taken.add(index)
            out[part] = (path, index)
    return out


def overlay(*gpios: int) -> str | None:
    """The config.txt line that gives these pins (the most important first) to a Pi 0-4's
    PWM block; None when none can go."""
    by_channel: dict[int, int] = {}
    for gpio in gpios:
        index = BLOCKS["20c000.pwm"].get(gpio)
        if index is not None:
            by_channel.setdefault(index, gpio)
    if len(by_channel) == 2:
        a, b = by_channel[0], by_channel[1]
        pins = f"pin={a},func={OVERLAY_FUNC[a]},pin2={b},func2={OVERLAY_FUNC[b]}"
        return f"dtoverlay=pwm-2chan,{pins}"
    if by_channel:
        (gpio,) = by_channel.values()
        return f"dtoverlay=pwm,pin={gpio},func={OVERLAY_FUNC[gpio]}"
    return None


def probe(found: tuple[Path, int], hz: float, duty: float) -> None:
    """What the service does with a part's channel: open it, a tone or a level, silence,
    close (`cityunit doctor`). It sounds for the time of one write: a pulse or two."""
    with Channel(*found) as channel:
        channel.set(hz, duty)
        channel.set(None, 0.0)


def hint(error: OSError, overlay: str) -> str:
    """What to do about a channel the kernel refused, by its errno."""
    if error.errno in (errno.EACCES, errno.EPERM):
        return "the channels' files belong to the gpio group (udev): is the user in it?"
    if error.errno == errno.EINVAL:
        return "the kernel refused that value: a bug in cityunit, please report it with this line"
    if error.errno in (errno.ENODEV, errno.ENOENT):
        return "the channel is missing: " + overlay
    if error.errno == errno.EBUSY:
        return "another program or driver holds the channel (`sudo cat /sys/kernel/debug/pwm`)"
    return ""


def on_hardware(log: str) -> set[str] | None:
    """The parts the service's latest start put on the PWM hardware and kept there, from
    its log; None when the log says nothing of it."""
    parts: set[str] | None = None
    for line in log.splitlines():
        if "PWM hardware for" in line:  # "for: X", or "for X" in a journal from before
            listed = re.split(r"PWM hardware for:? ", line)[-1].strip()
            parts = set() if listed.startswith("none") else set(listed.split(", "))
        elif parts is not None and ": hardware PWM failed" in line:
            parts.discard(line.split(": hardware PWM failed")[0].split()[-1])
    return parts
