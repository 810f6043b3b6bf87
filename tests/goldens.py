"""Every screen with golden images (tests/golden/NAME.LANG.png), by name: what
test_screens.py compares pixel for pixel and test_recipes.py holds each screen to."""

from __future__ import annotations

from pathlib import Path

from cityunit.core.permit import Permit
from cityunit.core.screens import (
    AuctionScreen,
    Blank,
    HourEndScreen,
    HourScreen,
    MenuScreen,
    NotHaltedScreen,
    PermitScreen,
    RefusedScreen,
    ShutdownScreen,
    SoldScreen,
    StillOnScreen,
    SwitchOffScreen,
)
from cityunit.core.settings import BY_NAME

GOLDEN = Path(__file__).with_name("golden")
ONE, TWO, THREE, STATION = Permit


def menu(index: int, name: str, choice: str):
    """A settings item as the unit shows it, in each language."""
    setting = BY_NAME[name]
    return lambda lang: MenuScreen(index, 8, name, setting.title[lang], setting.label(choice, lang))


SCREENS = {
    "blank": Blank(),
    "hour": HourScreen(1, "12:34"),
    "hour-hidden-clock": HourScreen(3, None),
    "hour-paused": HourScreen(2, "47:05", paused=True),
    "hour-resumed": HourScreen(4, "21:07", resumed=True),
    "auction": AuctionScreen(1),
    "auction-fixed": AuctionScreen(2, countdown_s=37),
    "sold": SoldScreen(stopped=False),
    "stopped": SoldScreen(stopped=True),
    "draw": PermitScreen(TWO, drawing=True),
    "draw-station": PermitScreen(STATION, drawing=True),
    "permit-1": PermitScreen(ONE),
    "permit-2": PermitScreen(TWO),
    "permit-3": PermitScreen(THREE),
    "permit-station": PermitScreen(STATION),
    "permit-station-off": PermitScreen(STATION, visible=False),
    "hour-end": HourEndScreen(1),
    "hour-end-3h": HourEndScreen(3),
    "shutdown": ShutdownScreen(),
    "still-on": StillOnScreen(),
    "still-on-timed": StillOnScreen(30),
    "switch-off": SwitchOffScreen(),
    "not-halted": NotHaltedScreen(),
    "refused": RefusedScreen("auction.min_s", 2, last_good=True),
    "refused-defaults": RefusedScreen("line 12", 0, last_good=False),
    "menu-history": MenuScreen(
        6, 8, "history", permits=(THREE, ONE, STATION, TWO, TWO, ONE, THREE)
    ),
    "menu-history-empty": MenuScreen(6, 8, "history"),
    "menu-new-game": MenuScreen(7, 8, "new_game"),
    "menu-length": menu(0, "game_length", "2h"),
    "menu-volume": menu(1, "volume", "off"),
    "menu-auction": menu(2, "auction", "random"),
    "menu-odds": menu(3, "odds", "classic"),
    "menu-language": menu(4, "language", "fr"),
    "menu-clock": menu(5, "show_clock", "off"),
}
