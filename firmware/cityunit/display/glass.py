"""luma's writes as the panel sends them at a start, and as the service's first stage
(service/first_light.py) does: as the bytes the bus carries, so that the stage sends them
without knowing any controller.

On I2C a write is one transaction to the display's address, its control byte first
(0x00 commands, 0x40 data, as luma's i2c sends them); on SPI its first byte is the level
DC takes for it (0 command, 1 data) and the rest is the transfer. The unit's panel
(display/oled.py) makes them from what it sends itself, and knows them again at its
start: the same bus and init sequence, and the glass is lit with a known memory.
"""

from __future__ import annotations

from typing import Any

from cityunit.config import Hardware

Write = tuple[str, tuple[Any, ...]]  # as luma's driver makes it: ("command" or "data", args)
Bus = tuple[Any, ...]  # ("i2c", device, address) or ("spi", device, hz, DC, RST)
Keepsake = tuple[Bus, tuple[bytes, ...], tuple[bytes, ...], bytes]  # bus, init, frame, memory
Lit = tuple[Bus, tuple[bytes, ...], bytes]  # what the first stage lit: bus, init, memory
DISPLAYOFF, DISPLAYON = 0xAE, 0xAF
CONTROL = {"i2c": {"command": b"\x00", "data": b"\x40"},
           "spi": {"command": b"\x00", "data": b"\x01"}}  # fmt: skip


DEV = "/dev"  # where the buses' device files are (the bench's probe has its own)


def setup(init: list[Write]) -> list[Write]:
    """luma's init sequence without its blank frame (the window it opens and the data) and
    without lighting the glass: the first frame after a start is whole anyway, and the glass
    is lit once it is in, never showing noise or a stale memory."""
    setup: list[Write] = []
    for kind, args in init:
        if kind == "data":
            if setup and setup[-1][0] == "command":
                setup.pop()  # the window the blank frame was written to
        else:
            setup.append((kind, args))
    if setup and setup[-1] == ("command", (DISPLAYON,)):
        setup.pop()
    return setup


def bus(hardware: Hardware) -> Bus:
    """The display's bus as the first stage opens it."""
    dev = DEV
    if hardware.interface == "i2c":
        return ("i2c", f"{dev}/i2c-{hardware.i2c_port}", hardware.i2c_address)
    device = f"{dev}/spidev{hardware.spi_port}.{hardware.spi_device}"
    return ("spi", device, hardware.spi_speed_hz, hardware.dc_pin, hardware.reset_pin)


def wire(interface: str, writes: list[Write]) -> tuple[bytes, ...]:
    """luma's writes as the bus carries them (see above)."""
    control = CONTROL[interface]
    out = []
    for kind, args in writes:
        payload = bytes(args[0]) if kind == "data" else bytes(args)
        out.append(control[kind] + payload)
    return tuple(out)


def lit_init(interface: str, init: list[Write]) -> tuple[bytes, ...]:
    """The init sequence the first stage sends: luma's, less its DISPLAYOFF (the glass
    is dark at a start anyway, and a lit one must not blink)."""
    writes = wire(interface, init)
    first = writes[0] if writes else b""
    if first[1:2] == bytes((DISPLAYOFF,)):
        rest = first[:1] + first[2:]
        writes = (rest, *writes[1:]) if len(rest) > 1 else writes[1:]
    return writes
