"""The first screen of each mode a tap leads to. A mode guesses what it may show next
(`Mode.ahead`) so the display can ready it while the unit idles; the screens of the modes
it hands over to are made here, one definition shared with the modes that show them."""

from __future__ import annotations

from collections.abc import Iterable

from cityunit import settings
from cityunit.permit import Permit
from cityunit.rules import Rules
from cityunit.screens import AuctionScreen, MenuScreen, PermitScreen, Screen

PERMIT = PermitScreen(next(iter(Permit)), drawing=True)  # a draw's first face
MENU_ITEMS = [s.name for s in settings.SETTINGS] + ["history", "new_game"]


def auction(rules: Rules) -> Screen:
    """An auction's first frame (its countdown only for a fixed length, which is public)."""
    return AuctionScreen(0, rules.auction_fixed_s if rules.auction_mode == "fixed" else None)


def menu_page(index: int, rules: Rules, history: Iterable[Permit]) -> Screen:
    """The settings menu on its item `index` (0: as it opens)."""
    item, lang = MENU_ITEMS[index], rules.language
    setting = settings.BY_NAME.get(item)
    if setting is None:
        return MenuScreen(index, len(MENU_ITEMS), item, permits=tuple(history))
    value = setting.label(setting.get(rules), lang)
    return MenuScreen(index, len(MENU_ITEMS), item, setting.title[lang], value)
