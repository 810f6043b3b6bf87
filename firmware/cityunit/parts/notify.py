"""systemd's notify protocol: READY once the first screen shows, WATCHDOG from the loop.

Written out (a datagram to $NOTIFY_SOCKET) rather than taken from a package: the
protocol is a dozen lines, and the maintained binding (python-systemd) needs
libsystemd's headers to build on the Pi. Through `_socket`, the C module under `socket`:
`socket` itself (its enums) is 11 M instructions on the way to READY, for one datagram.
"""

from __future__ import annotations

import _socket
import os
from collections.abc import Mapping


class Notifier:
    """Tells systemd how the service is, or nobody where $NOTIFY_SOCKET is unset.
    `watchdog_ms`: how often to feed the watchdog (half its interval); None when systemd
    keeps no watchdog on this process."""

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
        """One datagram of `fields` (e.g. "READY=1"); lost quietly if nobody listens."""
        if self.address is None:
            return
        try:
            sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_DGRAM)
        except OSError:
            return
        try:
            sock.sendto("\n".join(fields).encode(), self.address)
        except OSError:  # systemd gone (shutting down) or not listening: nothing to tell
            pass
        finally:
            sock.close()

    def ready(self) -> None:
        """Start-up is over (Type=notify): sent once the first screen shows."""
        self.send("READY=1")

    def watchdog(self) -> None:
        """Every `watchdog_ms`, from the loop itself: a hung loop gets the service restarted."""
        self.send("WATCHDOG=1")

    def status(self, text: str) -> None:
        """A line for `systemctl status`, sent only when it changes."""
        if text != self._status:
            self._status = text
            self.send(f"STATUS={text}")

    def stopping(self) -> None:
        """Shutting down: the loop has ended, and the board closes next."""
        self.send("STOPPING=1")
