"""The settings menu, worked with the two buttons: BUILD moves on, AUCTION changes the item,
a long press of either leaves. It closes by itself when left untouched."""

from __future__ import annotations

from collections.abc import Iterable

from cityunit.core import settings, sounds
from cityunit.core.gestures import Button
from cityunit.core.modes.base import Context, Mode
from cityunit.core.permit import Permit
from cityunit.core.rules import Rules
from cityunit.core.screens import MenuScreen, PageLink, Screen

IDLE_MS = 30_000  # the menu closes by itself after this long untouched
SETTINGS = [s.name for s in settings.SETTINGS]


def items(page: PageLink | None) -> list[str]:
    """The menu's items: the settings, the players' page's QR code where it is served,
    the last permits, a new game."""
    return [*SETTINGS, *(["page"] if page is not None else []), "history", "new_game"]


def menu_page(
    index: int, rules: Rules, history: Iterable[Permit], page: PageLink | None = None
) -> Screen:
    """The menu on its item `index` (0: as it opens), `page` where it is served."""
    shown = items(page)
    item, lang = shown[index], rules.language
    if item == "page":
        return MenuScreen(index, len(shown), item, page=page)
    setting = settings.BY_NAME.get(item)
    if setting is None:
        return MenuScreen(index, len(shown), item, permits=tuple(history))
    value = setting.label(setting.get(rules), lang)
    return MenuScreen(index, len(shown), item, setting.title[lang], value)


class Settings(Mode):
    """The settings menu (STATE's "settings"): one item on show, the timer that closes it."""

    name = "settings"

    def __init__(self, unit: Context) -> None:
        super().__init__(unit)
        self._close = self.timer(self.close)
        self._item = 0

    def enter(self) -> None:
        self.unit.cues.play(sounds.MENU_OPEN, self.unit.now)
        self._close.set(self.unit.now + IDLE_MS)

    def close(self) -> None:
        self.unit.to("idle")
        self.unit.cues.play(sounds.MENU_CLOSE, self.unit.now)

    @property
    def _items(self) -> list[str]:
        return items(self.unit.page)

    def screen(self, now: int) -> Screen:
        unit = self.unit
        return menu_page(self._item, unit.game.rules, unit.game.history, unit.page)

    def chord(self) -> None:
        """Both held in the menu: nothing. The pause is the game's screen's, where PAUSED
        shows; here it paused the clock unseen, the menu still on show."""

    def ahead(self, now: int) -> list[Screen]:
        """BUILD's next item; AUCTION's next choice of a setting."""
        unit, items = self.unit, self._items
        rules, history, item = unit.game.rules, unit.game.history, items[self._item]
        out = [menu_page((self._item + 1) % len(items), rules, history, unit.page)]
        if item in settings.BY_NAME:
            out.append(menu_page(self._item, settings.cycle(rules, item), history, unit.page))
        return out

    def tap(self, button: Button) -> None:
        unit, items = self.unit, self._items
        item = items[self._item]
        self._close.set(unit.now + IDLE_MS)
        if button is Button.BUILD:
            self._item = (self._item + 1) % len(items)
        elif item in settings.BY_NAME:
            unit.game.set_rules(settings.cycle(unit.game.rules, item))
            unit.cues.play(sounds.MENU_CHANGE, unit.now)
        elif item == "new_game":
            self.close()
            unit.new_game()

    def long(self, button: Button) -> None:
        self.close()
