"""What the first stage finds of a Pi's kernel in the process `cityunit bench
--instructions` counts (probe.py): the GPIO chip and the bus are files in the run's
folder, and their ioctls are answered here. Imported by the probe, top-level, from its
folder."""

from __future__ import annotations

import os

TYPE_CHECKING = False  # typing: imported by the unit after the first light, not before
if TYPE_CHECKING:
    from typing import Any


class Ioctl:
    """fcntl as the first stage finds it on a Pi, here: its ioctls on the run's files
    answered as the kernel would (a line request's descriptor, the switch OFF), the rest
    fcntl's own."""

    def __init__(self, fcntl: Any, dev: str) -> None:
        self._fcntl, self._dev = fcntl, dev

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fcntl, name)

    def ioctl(self, fd: int, request: int, arg: Any = 0, mutate: bool = True) -> int:
        if request == 0xC250B407:  # GPIO_V2_GET_LINE_IOCTL: the request's fd, at its end
            line = os.open(os.path.join(self._dev, "line"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC)
            arg[588:592] = line.to_bytes(4, "little")
        elif request == 0xC010B40E:  # GPIO_V2_LINE_GET_VALUES_IOCTL: high, the switch OFF
            arg[0] |= 1
        return 0
