"""The unit's modes, one class each. A mode hands over to another through its Context
(`unit.to_auction()`), so no mode's module imports another's: the unit builds them."""

from cityunit.core.modes.auction import Auction
from cityunit.core.modes.base import Context, Mode
from cityunit.core.modes.hour_end import HourEnd
from cityunit.core.modes.idle import Idle
from cityunit.core.modes.menu import Menu
from cityunit.core.modes.off import Off, Shutdown
from cityunit.core.modes.permit import PermitDraw

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
