"""What the OLED shows, as plain data: the core says which screen, the renderer draws it.

Each screen also reads as text lines, for the console's STATE and for people who
test without looking at pixels. No screen ever carries the time left in a random
auction: that would spoil the surprise.
"""

from __future__ import annotations

from typing import Final, NamedTuple, Protocol

from cityunit.core.permit import Permit
from cityunit.core.values import Value

TEXT = {
    "en": {
        "hour": "HOUR {n}",
        "paused": "PAUSED",
        "resumed": "RESUMED",
        "auction": "AUCTION",
        "sold": "SOLD!",
        "stopped": "STOPPED",
        "permit": "PERMIT",
        "building": "building",
        "buildings": "buildings",
        "station": "free station",
        "over": "GAME OVER",
        "total": "Total your wealth:",
        "wealth": "cash + district rents",
        "played": "{n} h played",
        "bye": "Shutting down",
        "unit_off": "UNIT OFF",
        "pi_on": "Pi still on",
        "how_off": "both 5 s: shut down",
        "off_in": "auto off in {n} min",
        "unplug": "then unplug it",
        "switch_off": "SWITCH OFF",
        "flip_on": "flip it ON",
        "to_play": "to play",
        "settings": "SETTINGS {i}/{n}",
        "history": "LAST PERMITS",
        "page": "ON PHONES",
        "none": "none yet",
        "new_game": "NEW GAME",
        "start": "AUCTION: hour 1",
        "hint": "BUILD next · AUCTION change",
        "refused": "CONFIG REFUSED",
        "more": "and {n} more",
        "line": "line {n}",
        "last_good": "last good settings",
        "defaults": "default settings",
        "not_halted": "NOT SHUT DOWN",
        "no_command": "no shutdown",
        "command_in": "command in",
        "the_config": "the config",
    },
    "fr": {
        "hour": "HEURE {n}",
        "paused": "PAUSE",
        "resumed": "REPRISE",
        "auction": "ENCHÈRES",
        "sold": "VENDU !",
        "stopped": "ARRÊTÉ",
        "permit": "PERMIS",
        "building": "bâtiment",
        "buildings": "bâtiments",
        "station": "gare gratuite",
        "over": "FIN DE LA PARTIE",
        "total": "Comptez votre richesse :",
        "wealth": "argent + loyers",
        "played": "{n} h jouée(s)",
        "bye": "Arrêt en cours",
        "unit_off": "UNITÉ ÉTEINTE",
        "pi_on": "Pi encore allumé",
        "how_off": "2 boutons 5 s : arrêt",
        "off_in": "arrêt auto : {n} min",
        "unplug": "puis débranchez",
        "switch_off": "SUR ARRÊT",
        "flip_on": "mettez sur MARCHE",
        "to_play": "pour jouer",
        "settings": "RÉGLAGES {i}/{n}",
        "history": "DERNIERS PERMIS",
        "page": "SUR MOBILE",
        "none": "aucun encore",
        "new_game": "NOUVELLE PARTIE",
        "start": "ENCHÈRES : heure 1",
        "hint": "CONSTR. suiv. · ENCH. modif.",
        "refused": "CONFIG REFUSÉE",
        "more": "et {n} de plus",
        "line": "ligne {n}",
        "last_good": "derniers bons réglages",
        "defaults": "réglages d'usine",
        "not_halted": "PAS D'ARRÊT",
        "no_command": "aucune commande",
        "command_in": "d'arrêt dans",
        "the_config": "la config",
    },
}

DOTS = 4  # the auction screen's motion: a light running along four dots


class Screen(Protocol):
    """Any screen: immutable, comparable, and readable as text lines."""

    def lines(self, lang: str) -> list[str]:
        """The screen as text in `lang` ('en' or 'fr'): STATE's `screen`, a test's view."""
        ...


class Blank(Value):
    """Nothing on the OLED: the unit OFF, once its notice has gone."""

    __slots__ = ()

    def lines(self, lang: str) -> list[str]:
        return []


class HourScreen(Value):
    """The hour being played, between auctions."""

    __slots__ = ("clock", "hour", "paused", "resumed")
    hour: Final[int]
    clock: Final[str | None]  # "mm:ss" elapsed in the hour, or None when hidden
    paused: Final[bool]
    resumed: Final[bool]  # just taken back after a restart

    def __init__(
        self, hour: int, clock: str | None, paused: bool = False, resumed: bool = False
    ) -> None:
        self.hour = hour
        self.clock = clock
        self.paused = paused
        self.resumed = resumed

    def lines(self, lang: str) -> list[str]:
        """HOUR n; PAUSED, or else RESUMED; the clock if it is shown."""
        t = TEXT[lang]
        out = [t["hour"].format(n=self.hour)]
        if self.paused:
            out.append(t["paused"])
        elif self.resumed:
            out.append(t["resumed"])
        if self.clock is not None:
            out.append(self.clock)
        return out


class AuctionScreen(Value):
    """An auction running: a light along the dots, the time left only if it is public."""

    __slots__ = ("countdown_s", "frame")
    frame: Final[int]  # which dot is lit
    countdown_s: Final[int | None]  # only for a fixed-length auction, where it is public

    def __init__(self, frame: int, countdown_s: int | None = None) -> None:
        self.frame = frame
        self.countdown_s = countdown_s

    def lines(self, lang: str) -> list[str]:
        """AUCTION, the dots (● the lit one), and the seconds left when they are public."""
        dots = "".join("●" if i == self.frame % DOTS else "○" for i in range(DOTS))
        out = [TEXT[lang]["auction"], dots]
        if self.countdown_s is not None:
            out.append(str(self.countdown_s))
        return out


class SoldScreen(Value):
    """The banner after an auction: STOPPED if a player stopped it, SOLD! if its time ran
    out."""

    __slots__ = ("stopped",)
    stopped: Final[bool]

    def __init__(self, stopped: bool) -> None:
        self.stopped = stopped

    def lines(self, lang: str) -> list[str]:
        """The banner's one word."""
        return [TEXT[lang]["stopped" if self.stopped else "sold"]]


class PermitScreen(Value):
    """A permit on show, or (drawing=True) one face of the draw animation."""

    __slots__ = ("drawing", "value", "visible")
    value: Final[Permit]
    drawing: Final[bool]
    visible: Final[bool]  # the station icon flashes

    def __init__(self, value: Permit, drawing: bool = False, visible: bool = True) -> None:
        self.value = value
        self.drawing = drawing
        self.visible = visible

    def lines(self, lang: str) -> list[str]:
        """PERMIT, the buildings or STATION ("" while it flashes off), then their words;
        "..." in place of the words while drawing."""
        t = TEXT[lang]
        if self.value is Permit.STATION:
            big, small = "STATION", t["station"]
        else:
            big = str(self.value.buildings)
            small = t["building" if self.value is Permit.ONE else "buildings"]
        if self.drawing:
            return [t["permit"], big, "..."]
        return [t["permit"], big if self.visible else "", small]


class HourEndScreen(Value):
    """The hour is over: the players total their wealth."""

    __slots__ = ("hours_played",)
    hours_played: Final[int]

    def __init__(self, hours_played: int) -> None:
        self.hours_played = hours_played

    def lines(self, lang: str) -> list[str]:
        """GAME OVER, what to total, and the hours played."""
        t = TEXT[lang]
        return [t["over"], t["total"], t["wealth"], t["played"].format(n=self.hours_played)]


class MenuScreen(Value):
    """One item of the settings menu: a setting and its value, the history, a new game."""

    __slots__ = ("count", "index", "item", "page", "permits", "title", "value")
    index: Final[int]
    count: Final[int]
    item: Final[str]  # a setting's name, "page", "history" or "new_game"
    title: Final[str]  # a setting's title, in the language
    value: Final[str]  # its current choice, in words
    permits: Final[tuple[Permit, ...]]  # the history, newest first
    page: Final[PageLink | None]  # the players' page ("page"): its QR code and address

    def __init__(
        self,
        index: int,
        count: int,
        item: str,
        title: str = "",
        value: str = "",
        permits: tuple[Permit, ...] = (),
        page: PageLink | None = None,
    ) -> None:
        self.index = index
        self.count = count
        self.item = item
        self.title = title
        self.value = value
        self.permits = permits
        self.page = page

    def lines(self, lang: str) -> list[str]:
        """SETTINGS i/n (counted from 1), then: a setting's title, value and the buttons'
        hint; the last permits (a station as S, or G in French); the page's address; or
        NEW GAME."""
        t = TEXT[lang]
        head = t["settings"].format(i=self.index + 1, n=self.count)
        if self.page is not None:
            return [head, t["page"], self.page.address]
        if self.item == "history":
            station = "G" if lang == "fr" else "S"
            text = " ".join(station if p is Permit.STATION else str(p.value) for p in self.permits)
            return [head, t["history"], text or t["none"]]
        if self.item == "new_game":
            return [head, t["new_game"], t["start"]]
        return [head, self.title, self.value, t["hint"]]


class StillOnScreen(Value):
    """Just switched OFF: the unit is dark, but the Pi runs on (and drains a power bank)
    until it is shut down: say so, and how."""

    __slots__ = ("off_in_min",)
    off_in_min: Final[int]  # it powers itself off after this many minutes OFF (0: never)

    def __init__(self, off_in_min: int = 0) -> None:
        self.off_in_min = off_in_min

    def lines(self, lang: str) -> list[str]:
        """UNIT OFF, Pi still on, how to shut it down, and when it powers itself off (or,
        if it never does, to unplug it after)."""
        t = TEXT[lang]
        last = t["off_in"].format(n=self.off_in_min) if self.off_in_min else t["unplug"]
        return [t["unit_off"], t["pi_on"], t["how_off"], last]


class SwitchOffScreen(Value):
    """The switch OFF on a unit never yet switched ON (a new build, a wiped card): a dark
    screen would look broken, or unwired, so it says where the switch stands. Once the
    unit has been ON, OFF is dark, as on the original."""

    __slots__ = ()

    def lines(self, lang: str) -> list[str]:
        """SWITCH OFF, then what to do."""
        t = TEXT[lang]
        return [t["switch_off"], t["flip_on"], t["to_play"]]


class ShutdownScreen(Value):
    """The safe shutdown confirmed: the Pi is asked to halt 2 s after it shows."""

    __slots__ = ()

    def lines(self, lang: str) -> list[str]:
        return [TEXT[lang]["bye"]]


class NotHaltedScreen(Value):
    """The safe-shutdown gesture on a unit with no `power.shutdown_command`: the Pi was not
    halted, and why (the log says it too; a player sees only the screen)."""

    __slots__ = ()

    def lines(self, lang: str) -> list[str]:
        t = TEXT[lang]
        return [t["not_halted"], t["no_command"], t["command_in"], t["the_config"]]


class RefusedScreen(Value):
    """The config file refused at start (a mistake made on the card): where the first
    mistake is, and what the unit plays with instead. The reasons in full are in the
    journal and `cityunit run --check`'s."""

    __slots__ = ("last_good", "line", "more", "where")
    where: Final[str]  # the first mistake's key (`auction.min_s`), or a file's reason, cut short
    more: Final[int]  # how many other mistakes
    last_good: Final[bool]  # playing with the last file that was good; False: the defaults
    line: Final[int | None]  # or the first mistake's line in the file (TOML's syntax)

    def __init__(self, where: str, more: int, last_good: bool, line: int | None = None) -> None:
        self.where = where
        self.more = more
        self.last_good = last_good
        self.line = line

    def lines(self, lang: str) -> list[str]:
        t = TEXT[lang]
        where = self.where if self.line is None else t["line"].format(n=self.line)
        more = t["more"].format(n=self.more) if self.more else ""
        return [t["refused"], where, more, t["last_good" if self.last_good else "defaults"]]


PAGE_KEY = "K/"  # the page's path that carries the token: http://<address>/K/<token>


class PageLink(NamedTuple):
    """Where the players' page is, and the token that lets a phone press from it: one
    value, replaced whole (a new game, a new address), so no reader sees half of each."""

    address: str  # "http://192.168.1.20:8080/": shown in words
    token: str  # base32: in the QR code only, never in words

    @property
    def link(self) -> str:
        """The QR code's text: the page with the token, in QR's alphanumeric characters
        only (upper case, no '#' or '='), which keeps the code at 25x25 modules: two
        pixels each fit the OLED's height."""
        return f"{self.address.upper()}{PAGE_KEY}{self.token}"
