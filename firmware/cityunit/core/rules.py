"""The game rules the table can choose: game length, auction timing, permit odds, text.

Each field names its place in the config file, and its allowed values, so one
declaration serves the core, the config loader and the docs.
"""

from __future__ import annotations

from typing import Any, ClassVar, dataclass_transform

from cityunit.core.permit import Permit
from cityunit.core.values import Value


def _odds(one: int, two: int, three: int, station: int) -> dict[Permit, int]:
    return {Permit.ONE: one, Permit.TWO: two, Permit.THREE: three, Permit.STATION: station}


# No rulebook gives the original's odds. Our choice ("classic"): small builds are
# common, a 3-building turn and the free station each come one turn in five.
DEFAULT_ODDS = _odds(30, 30, 20, 20)
ODDS_PRESETS: dict[str, dict[Permit, int]] = {
    "classic": DEFAULT_ODDS,
    "uniform": _odds(25, 25, 25, 25),
    # "builder": a faster game, cities grow quicker (3 buildings as often as 2).
    "builder": _odds(20, 30, 30, 20),
}
VOLUMES = ("off", "low", "medium", "high")
LANGUAGES = ("en", "fr")  # every text on the screen is in each


class Key:
    """One key of the config file, as a section's field: the field's name, the key's TOML
    path ("section.key"), its default and its checks (choices=, lo=, hi=)."""

    __slots__ = ("check", "default", "name", "path")

    def __init__(self, path: str, default: Any, check: dict[str, Any]) -> None:
        self.name = ""  # the section's attribute, once its class is made
        self.path, self.default, self.check = path, default, check

    def fresh(self) -> Any:
        """The default; a table or list of its own, never one another record holds."""
        default = self.default
        return type(default)(default) if isinstance(default, dict | list) else default


def setting(path: str, default: Any, **check: Any) -> Any:
    """A section's field, declared where the section names it: `volume: str = setting(...)`."""
    return Key(path, default, check)


@dataclass_transform(kw_only_default=True, frozen_default=True)
class Section(Value):
    """A section of the config: fields declared with `setting`, given by keyword, the rest
    their defaults. What a frozen dataclass would make of it (mypy checks it as one) at a
    sixtieth of the import's cost. `KEYS`: its fields' declarations, in order."""

    KEYS: ClassVar[tuple[Key, ...]] = ()

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        declared = {name: key for name, key in vars(cls).items() if isinstance(key, Key)}
        for name, key in declared.items():
            key.name = name
        cls.KEYS = (*cls.KEYS, *declared.values())
        names = tuple(key.name for key in cls.KEYS)  # each once, and each a field (annotated)
        if names != cls.__match_args__:
            raise TypeError(f"{cls.__name__}: settings {names} are not its fields")

    def __init__(self, **given: Any) -> None:
        for key in self.KEYS:
            setattr(self, key.name, given.pop(key.name) if key.name in given else key.fresh())
        if given:
            raise TypeError(f"{type(self).__name__} has no setting {', '.join(given)}")


class Rules(Section):
    language: str = setting("game.language", "en", choices=LANGUAGES)
    show_clock: bool = setting("game.show_clock", True)
    volume: str = setting("sound.volume", "high", choices=VOLUMES)  # "off" still flashes
    length_hours: int = setting("game.length_hours", 1, lo=0, hi=12)  # 0: untimed
    warning_minutes: int = setting("game.warning_minutes", 5, lo=0, hi=30)
    auction_mode: str = setting("auction.mode", "random", choices=("random", "fixed"))
    auction_min_s: int = setting("auction.min_s", 13, lo=1, hi=600)
    auction_max_s: int = setting("auction.max_s", 50, lo=1, hi=600)
    auction_fixed_s: int = setting("auction.fixed_s", 50, lo=1, hi=600)
    auction_final_s: int = setting("auction.final_s", 5, lo=0, hi=60)
    odds: dict[Permit, int] = setting("permit.odds", DEFAULT_ODDS)
    permit_show_s: int = setting("permit.show_s", 20, lo=1, hi=600)
    debounce_ms: int = setting("buttons.debounce_ms", 25, lo=1, hi=100)
    long_press_ms: int = setting("buttons.long_press_ms", 1500, lo=300, hi=5000)
    # Minutes with the switch OFF before the Pi powers itself off (0: never): a unit boxed
    # with the game must not drain its power bank.
    off_after_minutes: int = setting("power.off_after_minutes", 0, lo=0, hi=24 * 60)


def warning_times(warning_ms: int, min_gap_ms: int = 2_000) -> list[int]:
    """Ms before the end at which to beep: every 30 s at 5 min, shrinking to every 2 s.

    Each gap is a tenth of the time left (in whole seconds), so beeps come more and
    more often.
    """
    times: list[int] = []
    left = warning_ms
    while left > 0:
        times.append(left)
        left -= max(min_gap_ms, left // 10 // 1000 * 1000)
    return times
