"""What the Pi's 40-pin header gives each part: the display's bus lines, the UART's and
I2S's, so the config can refuse a button, the LED or the buzzer on a line a bus already
uses, however the file spells the port that holds it, and doctor can name a line a sound
card's overlay has taken."""

from __future__ import annotations

import os
import re
from pathlib import Path

# Each I2C bus's SDA and SCL on the header: i2c_arm (bus 1), i2c_vc (bus 0), and the Pi 4's
# extra buses at their overlays' default pins. Others (i2c-gpio, HDMI's) are not checked.
I2C_PINS = {0: (0, 1), 1: (2, 3), 3: (4, 5), 4: (6, 7), 5: (12, 13), 6: (22, 23)}
# SPI0's lines: dtparam=spi=on gives the kernel GPIO7-11 whichever chip select is used.
SPI_PINS = {7: "CE1", 8: "CE0", 9: "MISO", 10: "MOSI", 11: "SCLK"}
# The Pi's UART is on GPIO14/15 whichever of these names the console uses.
UART_PORTS = ("/dev/serial0", "/dev/ttyAMA0", "/dev/ttyS0")
UART_PINS = {14: "TXD", 15: "RXD"}
# I2S (PCM): a sound card's overlay (a DAC's, an I2S amplifier's, dtparam=i2s=on) gives
# the kernel GPIO18-21 on every Pi with the 40-pin header; GPIO18 is the buzzer's default.
I2S_PINS = {18: "I2S BCLK", 19: "I2S LRCLK", 20: "I2S DIN", 21: "I2S DOUT"}
# Where the device tree has the I2S blocks: a Pi 0-4's SoC, a Pi 5's RP1.
I2S_BLOCKS = ("soc/i2s@*/status", "axi/*/rp1/i2s@*/status")


def bus(interface: str, i2c_port: int) -> dict[int, str]:
    """A display's bus pins, by name: SPI0's, or those of its I2C bus."""
    if interface == "spi":
        return {pin: f"SPI {line}" for pin, line in SPI_PINS.items()}
    if i2c_port in I2C_PINS:
        sda, scl = I2C_PINS[i2c_port]
        return {sda: f"I2C{i2c_port} SDA", scl: f"I2C{i2c_port} SCL"}
    return {}


def on_uart(port: str) -> bool:
    """Whether console.port opens the Pi's UART: as a path, or through pyserial's URLs
    that open a path they wrap (spy://, alt://) or the first port a pattern matches
    (hwgrep://, which also looks at the ports' descriptions: any UART name counts)."""
    scheme, url, rest = port.partition("://")
    if url and scheme.lower() == "hwgrep":
        names = {name for p in UART_PORTS for name in (p, _device(p))}
        try:
            return any(re.search(rest.partition("&")[0], name, re.I) for name in names)
        except (re.error, RecursionError, OverflowError):  # pyserial could not open it
            return False
    if url and scheme.lower() in ("spy", "alt"):
        port = rest.partition("?")[0]
    elif url:
        return False
    return _device(port) in {_device(p) for p in UART_PORTS}


def _device(path: str) -> str:
    """A path as the kernel resolves it: /dev//serial0, //dev/serial0 and /dev/./serial0
    are /dev/serial0, and a link (/dev/serial0 on a Pi) is the device it names."""
    return os.path.realpath("/" + path.lstrip("/")) if path.startswith("/") else path


def raspberry_pi(device_tree: Path = Path("/proc/device-tree")) -> str | None:
    """The board's model if its device tree names a Raspberry Pi ("Raspberry Pi Zero 2 W
    Rev 1.0"); None anywhere else, where the header's checks mean nothing."""
    try:
        model = (device_tree / "model").read_bytes().decode("ascii", "replace").strip("\0\n")
    except OSError:
        return None
    return model if model.startswith("Raspberry Pi") else None


def i2s_on(device_tree: Path = Path("/proc/device-tree")) -> bool:
    """Whether a sound card's overlay has turned an I2S block on, and so holds GPIO18-21:
    a pin gpiozero claims there is taken from the sound card without a word."""
    for pattern in I2S_BLOCKS:
        for status in device_tree.glob(pattern):
            try:
                if status.read_bytes().rstrip(b"\0") in (b"okay", b"ok"):
                    return True
            except OSError:
                continue
    return False


def i2s_clashes(pins: object) -> list[str]:
    """The parts (`Pins`' fields) on I2S's lines, each said with the line; the buzzer
    moves to GPIO12, PWM0's other pin, keeping its hardware PWM."""
    clashes = []
    for name in ("auction", "build", "power", "led", "buzzer"):
        if (pin := getattr(pins, name)) in I2S_PINS:
            move = " (the buzzer can go on GPIO12: PWM0 too)" if name == "buzzer" else ""
            clashes.append(f"GPIO{pin} ({name}) is the sound card's {I2S_PINS[pin]} line{move}")
    return clashes
