"""systemd's notify protocol: READY once the first screen shows, WATCHDOG from the loop.

Written out (a datagram to $NOTIFY_SOCKET) rather than taken from a package: the
protocol is a dozen lines, and the maintained binding (python-systemd) needs
libsystemd's headers to build on the Pi.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from contextlib import suppress


class Notifier:
    def __init__(self, env: Mapping[str, str] = os.environ) -> None:
        address = env.get("NOTIFY_SOCKET", "")
        if address.startswith("@"):
            address = "\0" + address[1:]  # an abstract socket
        self.address = address or None
        usec = env.get("WATCHDOG_USEC", "")
        pid = env.get("WATCHDOG_PID", "")
        mine = not pid or pid == str(os.getpid())
        # Feed the watchdog at twice the rate it needs, as sd_watchdog_enabled advises.
        self.watchdog_ms = int(usec) // 2000 if usec.isdigit() and int(usec) > 0 and mine else None
        self._status = ""  # what systemd was last told

    def send(self, *fields: str) -> None:
        if self.address is None:
            return
        # systemd gone (shutting down) or not listening: nothing to tell.
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock, suppress(OSError):
            sock.sendto("\n".join(fields).encode(), self.address)

    def ready(self) -> None:
        self.send("READY=1")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")

    def status(self, text: str) -> None:
        """A line for `systemctl status`, sent only when it changes."""
        if text != self._status:
            self._status = text
            self.send(f"STATUS={text}")

    def stopping(self) -> None:
        self.send("STOPPING=1")
