"""The unit's modes, one class each. A mode hands over to another through its Context
(`unit.to_auction()`), so no mode's module imports another's: the unit builds them."""

from cityunit.modes.auction import Auction
from cityunit.modes.base import Context, Mode
from cityunit.modes.hour_end import HourEnd
from cityunit.modes.idle import Idle
from cityunit.modes.menu import Menu
from cityunit.modes.off import Off, Shutdown
from cityunit.modes.permit import PermitDraw

ALL: tuple[type[Mode], ...] = (Off, Shutdown, Idle, Auction, PermitDraw, Menu, HourEnd)

__all__ = [
    "ALL",
    "Auction",
    "Context",
    "HourEnd",
    "Idle",
    "Menu",
    "Mode",
    "Off",
    "PermitDraw",
    "Shutdown",
]
