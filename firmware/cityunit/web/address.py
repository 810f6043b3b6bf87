"""Where phones reach the page: the Pi's address on its LAN, found again whenever the
kernel's addresses change (Wi-Fi coming up after the unit, a new DHCP lease), so that
the menu's QR code is never stale, with no timer: the kernel tells (netlink)."""

from __future__ import annotations

import contextlib
import socket

# rtnetlink's multicast group for IPv4 addresses added and removed (linux/rtnetlink.h):
# the page's address is IPv4 (IPv6's privacy addresses would wake it for nothing).
RTMGRP_IPV4_IFADDR = 0x10


def lan_address() -> str:
    """This machine's address on its LAN (the numeric IP: `.local` is unreliable on
    Android): the source address a route out would use, found without sending a packet;
    127.0.0.1 where there is no network."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("10.255.255.255", 1))
            address: str = probe.getsockname()[0]
        except OSError:
            return "127.0.0.1"
    return address


def page_address(port: int) -> str:
    """The page's URL as a phone on this LAN types it (the numeric IP)."""
    return f"http://{lan_address()}:{port}/"


def address_changes() -> socket.socket | None:
    """A socket that becomes readable when the kernel adds or removes an address (read
    it empty, then look again); None where there is no netlink (not Linux, a sandbox)."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE)
    except (OSError, AttributeError):
        return None
    try:
        sock.bind((0, RTMGRP_IPV4_IFADDR))
    except OSError:
        sock.close()
        return None
    sock.setblocking(False)
    return sock


def drain(sock: socket.socket) -> None:
    """What the kernel said, read and dropped: that something changed is all we use (an
    overrun, ENOBUFS, says that too)."""
    with contextlib.suppress(OSError):
        while sock.recv(65536):
            pass
