"""The settings menu, worked with the two buttons: BUILD moves on, AUCTION changes the item,
a long press of either leaves. It closes by itself when left untouched."""

from __future__ import annotations

from collections.abc import Iterable

from cityunit.core import settings, sounds
from cityunit.core.gestures import Button
from cityunit.core.modes.base import Context, Mode
from cityunit.core.permit import Permit
from cityunit.core.rules import Rules
from cityunit.core.screens import MenuScreen, Screen

IDLE_MS = 30_000  # the menu closes by itself after this long untouched
SETTINGS = [s.name for s in settings.SETTINGS]
ITEMS = [*SETTINGS, "history", "new_game"]
WITH_PAGE = [*SETTINGS, "page", "history", "new_game"]  # the players' page's QR code too


def menu_page(
    index: int, rules: Rules, history: Iterable[Permit], page: tuple[str, str] | None = None
) -> Screen:
    """The menu on its item `index` (0: as it opens)."""
    items = ITEMS if page is None else WITH_PAGE
    item, lang = items[index], rules.language
    if item == "page":
        assert page is not None
        return MenuScreen(index, len(items), item, address=page[0], token=page[1])
    setting = settings.BY_NAME.get(item)
    if setting is None:
        return MenuScreen(index, len(items), item, permits=tuple(history))
    value = setting.label(setting.get(rules), lang)
    return MenuScreen(index, len(items), item, setting.title[lang], value)


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
        return ITEMS if self.unit.page is None else WITH_PAGE

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
