"""First light: the service's first instants, before anything heavy is imported.

The whole unit takes a Pi Zero about a second of CPU to import and start. Before any of
it, this stage, which imports nothing but builtins, os, fcntl and marshal, reads the
switch and puts on the glass the frame the unit is about to show (and lights the LED
where the unit would), in a few million instructions from exec (docs/performance.md).
The service's launcher (systemd/start) runs it under `python -S`, then adds site's paths
and runs the unit.

What to do was kept by the unit itself beside its saved game (service/keepsake.py), or
by the installer or the image for a unit not started yet, for the config file as it was
then (its bytes: edited since, the keepsake is not used): the lines of the switch and
the LED (or the LED's PWM channel, left lit for the unit to take as it finds it), the
display's bus, luma's init sequence without its DISPLAYOFF, and each switch position's
whole frame as the very bytes each write puts on the bus. Anything that cannot be done
(no keepsake, a damaged one, no device, a wrong bus) is skipped, silently: the unit then
starts as it would without this stage. What was done is left in `LIT` for the unit: the
lines it still holds (released before gpiozero claims them), and what the glass shows,
so that luma sends no DISPLAYOFF and the first frame is a diff.
"""

import fcntl
import marshal
import os
import time  # (loaded with the interpreter already: it costs nothing here)

TYPE_CHECKING = False  # typing's own costs more than this whole stage (mypy reads it so)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FORMAT = 4  # the keepsake's layout: one the unit wrote for another is not read
NAME = "first-light"  # in the service's StateDirectory
CONFIG_BYTES = 65536  # a config file's at most (config.MAX_BYTES: a test holds them equal)

# linux/gpio.h, the character device's v2 interface
GET_LINE = 0xC250B407  # GPIO_V2_GET_LINE_IOCTL: struct gpio_v2_line_request, 592 bytes
GET_VALUES = 0xC010B40E  # GPIO_V2_LINE_GET_VALUES_IOCTL: struct gpio_v2_line_values
SET_VALUES = 0xC010B40F  # GPIO_V2_LINE_SET_VALUES_IOCTL
INPUT, OUTPUT, PULL_UP = 1 << 2, 1 << 3, 1 << 8  # GPIO_V2_LINE_FLAG_*
OUTPUT_VALUES = 2  # GPIO_V2_LINE_ATTR_ID_OUTPUT_VALUES
I2C_SLAVE = 0x0703  # linux/i2c-dev.h
PWM_WAIT_S = 1.0  # for udev to give a channel just exported to the unit's group
SPI_SPEED = 0x40046B04  # SPI_IOC_WR_MAX_SPEED_HZ, linux/spi/spidev.h


class Lit:
    """What this stage did, for the unit: `glass` the bus, the init sent and the memory
    the glass shows (None: not lit), `switch` as read (None: not read), `held` the line
    requests it keeps until the unit's own pins take over (`release`)."""

    __slots__ = ("glass", "held", "switch")

    def __init__(self) -> None:
        self.glass: tuple[tuple[object, ...], tuple[bytes, ...], bytes] | None = None
        self.switch: bool | None = None
        self.held: list[int] = []

    def release(self) -> None:
        """The lines given back, for gpiozero to claim (idempotent)."""
        while self.held:
            os.close(self.held.pop())


LIT = Lit()


def _word(value: int, size: int) -> bytes:
    return value.to_bytes(size, "little")


def request(chip: str, lines: tuple[int, ...], flags: int, values: int = 0) -> int:
    """A request for `lines` of `chip` (their values, bit i for lines[i], if OUTPUT):
    its file descriptor, which holds them until closed."""
    config = _word(flags, 8) + _word(1 if flags & OUTPUT else 0, 4) + bytes(20)
    if flags & OUTPUT:  # one attribute: the output values, for every line
        config += _word(OUTPUT_VALUES, 8) + _word(values, 8) + _word((1 << len(lines)) - 1, 8)
    config += bytes(272 - len(config))
    offsets = b"".join(_word(line, 4) for line in lines)
    buffer = bytearray(offsets + bytes(256 - len(offsets)) + b"cityunit".ljust(32, b"\0"))
    buffer += config + _word(len(lines), 4) + bytes(28)
    fd = os.open(chip, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, GET_LINE, buffer, True)
    finally:
        os.close(fd)
    return int.from_bytes(buffer[588:592], "little", signed=True)


def set_values(held: int, values: int, mask: int) -> None:
    fcntl.ioctl(held, SET_VALUES, _word(values, 8) + _word(mask, 8))


def read_switch(chip: str, line: int) -> bool:
    """Whether the switch is ON: its contact closed, the line pulled up read low."""
    held = request(chip, (line,), INPUT | PULL_UP)
    try:
        values = bytearray(_word(0, 8) + _word(1, 8))
        fcntl.ioctl(held, GET_VALUES, values, True)
    finally:
        os.close(held)
    return not values[0] & 1


def light_led(chip: str, line: int) -> None:
    """The LED lit, its line held high until the unit takes it: only an LED the config
    puts on a plain GPIO line (one on the PWM hardware is another function of its pin,
    which a line request would take from it), and only where the unit lights it at its
    start (the keepsake says so for each position of the switch)."""
    LIT.held.append(request(chip, (line,), OUTPUT, 1))


def pwm_write(path: str, value: int) -> None:
    """One value to one of the kernel's PWM files, in one write(), as sysfs takes it."""
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, str(value).encode())
    finally:
        os.close(fd)


def pwm_read(path: str) -> int:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return int(os.read(fd, 32))
    finally:
        os.close(fd)


def pwm_writable(path: str) -> bool:
    return os.access(path, os.W_OK)


def light_pwm(chip: str, device: str, index: int, period: int, level: float) -> None:
    """The LED lit on its PWM channel (`chip`/pwm`index`, `chip` still the PWM block
    `device`: another numbering since is left alone), as the unit's parts/pwm.py sets
    one: exported if it is not, then the period, the duty and enable, each write the
    kernel's whole new state (the duty first where the one there is above the new
    period). Left lit and exported: the unit's channel takes the LED as it finds it."""
    if os.path.basename(os.path.realpath(f"{chip}/device")) != device:
        raise ValueError(chip)
    path = f"{chip}/pwm{index}"
    if not os.path.exists(path):
        pwm_write(f"{chip}/export", index)
        # udev gives the new channel's files to the unit's group a moment later (at
        # boot, with every other device, a second or more): waited for, a while only.
        end = time.monotonic() + PWM_WAIT_S
        while not all(pwm_writable(f"{path}/{n}") for n in ("period", "duty_cycle", "enable")):
            if time.monotonic() >= end:
                raise PermissionError(path)
            time.sleep(0.01)
    high = round(period * min(level, 1.0))
    if pwm_read(f"{path}/duty_cycle") > period:
        pwm_write(f"{path}/duty_cycle", high)
    for name, value in (("period", period), ("duty_cycle", high), ("enable", 1)):
        pwm_write(f"{path}/{name}", value)


def send_i2c(device: str, address: int, writes: tuple[bytes, ...]) -> None:
    """Each write one I2C transaction to `address`, its control byte first (kept so)."""
    fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, I2C_SLAVE, address)
        for write in writes:
            os.write(fd, write)
    finally:
        os.close(fd)


def send_spi(
    device: str, hz: int, chip: str, dc: int, reset: int, writes: tuple[bytes, ...]
) -> None:
    """Each write a transfer, DC low for a command and high for data (the write's first
    byte says which; it is not sent), after a reset pulse (the glass is dark at a start:
    the unit blanks it at every stop). DC and RST are held until the unit takes them, RST
    high."""
    held = request(chip, (dc, reset), OUTPUT, 0)
    LIT.held.append(held)
    mask = 3
    fd = os.open(device, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.ioctl(fd, SPI_SPEED, _word(hz, 4))
        level = -1
        for write in writes:
            if write[0] != level:
                level = write[0]
                set_values(held, level | 2, mask)  # RST (bit 1) high from here on
            os.write(fd, write[1:])
    finally:
        os.close(fd)


FAILED = object()


def attempt(step: "Callable[..., object]", *args: object) -> object:
    """`step(*args)`, or FAILED where it raises, whatever the reason: what this stage
    cannot do, the unit does after it."""
    try:
        return step(*args)
    except Exception:
        return FAILED


def regular(path: str, limit: int, flags: int = 0) -> bytes:
    """A regular file's bytes, `limit` at most: a FIFO or a device there is refused
    before it can hang or flood the start (ValueError)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC | flags)
    try:
        status = os.fstat(fd)
        if status.st_mode & 0o170000 != 0o100000 or status.st_size > limit:
            raise ValueError(path)
        return os.read(fd, limit + 1)
    finally:
        os.close(fd)


def read(path: str) -> "dict[str, Any]":
    """The keepsake: a regular file of the service's own (not a link), a config and some
    frames in size at most."""
    kept = marshal.loads(regular(path, 2 * CONFIG_BYTES, os.O_NOFOLLOW))
    if kept["format"] != FORMAT:
        raise ValueError(kept["format"])
    return kept  # type: ignore[no-any-return]


def same_config(kept: tuple[str, bytes], argv: list[str]) -> bool:
    """Whether the unit starts with the config file the keepsake was kept with, to the
    byte: another file, or the same edited since, may name other pins and another bus.
    (Not by its inode and time: a card's FAT numbers its files anew at each mount.)"""
    given = argv[argv.index("--config") + 1] if "--config" in argv else None
    return given == kept[0] and regular(given, CONFIG_BYTES) == kept[1]


def light(path: str, argv: list[str]) -> Lit:
    """Everything the keepsake at `path` says, for the unit started with `argv`, each part
    done if it can be: `LIT`. A keepsake of any shape, or none, never stops the start."""
    try:
        kept = read(path)
        if not same_config(kept["config"], argv):
            return LIT
        chip, bus, frames, pages = kept["chip"], kept["bus"], kept["frames"], kept["pages"]
        if chip is not None and kept["switch"] is not None:
            closed = attempt(read_switch, chip, kept["switch"])
            LIT.switch = None if closed is FAILED else bool(closed)
        on = bool(LIT.switch)  # unread: OFF's frame, which the unit's first frame follows
        writes, memory, sent = frames[on], pages[on], FAILED
        if not isinstance(memory, bytes) or not all(isinstance(w, bytes) for w in writes):
            return LIT
        if bus[0] == "i2c":
            sent = attempt(send_i2c, bus[1], bus[2], writes)
        elif chip is not None:
            sent = attempt(send_spi, bus[1], bus[2], chip, bus[3], bus[4], writes)
        if sent is not FAILED:
            LIT.glass = (bus, kept["init"], memory)
        # The LED after the glass, which says more; lit only where the unit lights it.
        level = kept["level"][on]
        if chip is not None and kept["led"] is not None and level > 0:
            attempt(light_led, chip, kept["led"])
        elif kept["pwm"] is not None and level > 0:
            attempt(light_pwm, *kept["pwm"], level)
    except Exception:  # none, not ours, or damaged: the unit does it all, as before
        pass
    return LIT


def keepsake() -> str:
    """Where the unit keeps it: systemd's StateDirectory (its first, as the unit's)."""
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0] or "/var/lib/cityunit"
    return f"{state}/{NAME}"
