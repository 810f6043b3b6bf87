"""The first screen of each mode a tap leads to. A mode guesses what it may show next
(`Mode.ahead`) so the display can ready it while the unit idles; the screens of the modes
it hands over to are made here, one definition shared with the modes that show them."""

from __future__ import annotations

from cityunit.core.permit import Permit
from cityunit.core.rules import Rules
from cityunit.core.screens import AuctionScreen, PermitScreen, Screen

PERMIT = PermitScreen(next(iter(Permit)), drawing=True)  # a draw's first face


def auction(rules: Rules) -> Screen:
    """An auction's first frame (its countdown only for a fixed length, which is public)."""
    return AuctionScreen(0, rules.auction_fixed_s if rules.auction_mode == "fixed" else None)
