"""The unit's modes, one class each. A mode hands over to another through its Context
(`unit.to("auction")`), so no mode's module imports another's: the unit builds them."""

from cityunit.core.modes.auction import Auction
from cityunit.core.modes.base import Context, Mode, ModeName
from cityunit.core.modes.hour_end import HourEnd
from cityunit.core.modes.idle import Idle
from cityunit.core.modes.off import Off, Shutdown
from cityunit.core.modes.permit import PermitDraw
from cityunit.core.modes.settings import Settings

ALL: tuple[type[Mode], ...] = (Off, Shutdown, Idle, Auction, PermitDraw, Settings, HourEnd)
BY_NAME: dict[str, type[Mode]] = {mode.name: mode for mode in ALL}

__all__ = [
    "ALL",
    "BY_NAME",
    "Auction",
    "Context",
    "HourEnd",
    "Idle",
    "Mode",
    "ModeName",
    "Off",
    "PermitDraw",
    "Settings",
    "Shutdown",
]
