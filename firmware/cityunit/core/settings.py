"""What the table can set on the unit itself, and through the console's SET.

One declaration per setting, as data: its choices, the rules' fields each sets, their
words in both languages. The menu, SETTINGS/SET, the saved state and the config's check
of the menu's shortest auction all read it; no choice's name is taken apart for a value.
"""

from __future__ import annotations

from typing import Any, Final

from cityunit.core.rules import LANGUAGES, ODDS_PRESETS, VOLUMES, Rules
from cityunit.core.values import Value


def _same(en: str, fr: str | None = None) -> dict[str, str]:
    return {"en": en, "fr": fr or en}


class Choice(Value):
    """One choice of a setting: its name (SET's word, the saved game's), the rules' fields
    it sets, and its words on the screen."""

    __slots__ = ("name", "sets", "words")
    name: Final[str]
    sets: Final[dict[str, Any]]
    words: Final[dict[str, str]]

    def __init__(self, name: str, sets: dict[str, Any], words: dict[str, str]) -> None:
        self.name, self.sets, self.words = name, sets, words


class Setting(Value):
    """A setting: its title on the screen and its choices. Rules that no choice gives (a
    file's 5-hour game, its own odds) read as the name `other` makes of them (a template
    filled in from the rules' fields), shown in `other_words` if it has any."""

    __slots__ = ("_by_name", "name", "options", "other", "other_words", "title")
    name: Final[str]
    title: Final[dict[str, str]]
    options: Final[tuple[Choice, ...]]
    other: Final[str]
    other_words: Final[dict[str, str] | None]
    _by_name: Final[dict[str, Choice]]

    def __init__(
        self,
        name: str,
        title: dict[str, str],
        options: tuple[Choice, ...],
        other: str = "custom",
        other_words: dict[str, str] | None = None,
    ) -> None:
        self.name, self.title, self.options = name, title, options
        self.other, self.other_words = other, other_words
        self._by_name = {o.name: o for o in options}

    @property
    def choices(self) -> tuple[str, ...]:
        """The choices' names, in the menu's order."""
        return tuple(self._by_name)

    def get(self, rules: Rules) -> str:
        """The choice the rules make (the first whose fields they all have)."""
        for option in self.options:
            if all(getattr(rules, k) == v for k, v in option.sets.items()):
                return option.name
        return self.other.format(**{key.name: getattr(rules, key.name) for key in rules.KEYS})

    def put(self, rules: Rules, choice: str) -> Rules:
        """The rules with `choice`'s fields (KeyError for a name that is no choice)."""
        sets = self._by_name[choice].sets
        return rules.replace(**{k: _copy(v) for k, v in sets.items()})

    def label(self, choice: str, lang: str) -> str:
        """`choice` as the screen says it in `lang` (what `other` made: its words, if any)."""
        option = self._by_name.get(choice)
        words = option.words if option is not None else self.other_words or {}
        return words.get(lang, choice)


def _copy(value: Any) -> Any:
    """A dict (the odds) copied: rules never share a preset's table."""
    return dict(value) if isinstance(value, dict) else value


def _hours(n: int) -> dict[str, str]:
    return _same(f"{n} hour" + "s" * (n > 1), f"{n} heure" + "s" * (n > 1))


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "game_length", _same("GAME LENGTH", "DURÉE"),
        (*(Choice(f"{n}h", {"length_hours": n}, _hours(n)) for n in (1, 2, 3)),
         Choice("untimed", {"length_hours": 0}, _same("untimed", "libre"))),
        other="{length_hours}h",
    ),
    Setting(
        "volume", _same("VOLUME"),
        tuple(Choice(v, {"volume": v}, words) for v, words in zip(VOLUMES, (
            _same("off", "muet"), _same("low", "bas"), _same("medium", "moyen"),
            _same("high", "fort")), strict=True)),
    ),
    Setting(
        "auction", _same("AUCTIONS", "ENCHÈRES"),
        (Choice("random", {"auction_mode": "random"}, _same("13-50 s secret")),
         *(Choice(f"fixed{n}", {"auction_mode": "fixed", "auction_fixed_s": n},
                  _same(f"{n} s shown", f"{n} s affiché")) for n in (30, 50))),
        other="fixed{auction_fixed_s}",
    ),
    Setting(
        "odds", _same("PERMIT ODDS", "TIRAGE DES PERMIS"),
        tuple(Choice(name, {"odds": table}, words) for (name, table), words in zip(
            ODDS_PRESETS.items(), (_same("classic", "classique"), _same("even", "égaux"),
            _same("builder", "bâtisseur")), strict=True)),
        other_words=_same("custom", "perso"),
    ),
    Setting(
        "language", _same("LANGUAGE", "LANGUE"),
        tuple(Choice(lang, {"language": lang}, _same(word))
              for lang, word in zip(LANGUAGES, ("English", "Français"), strict=True)),
    ),
    Setting(
        "show_clock", _same("GAME CLOCK", "CHRONO"),
        (Choice("on", {"show_clock": True}, _same("shown", "affiché")),
         Choice("off", {"show_clock": False}, _same("hidden", "caché"))),
    ),
)  # fmt: skip
BY_NAME = {s.name: s for s in SETTINGS}


def read(rules: Rules) -> dict[str, str]:
    return {s.name: s.get(rules) for s in SETTINGS}


def apply(rules: Rules, values: dict[str, str]) -> Rules:
    """Rules with the named choices in; unknown names or choices are left out."""
    for name, choice in values.items():
        setting = BY_NAME.get(name)
        if setting is not None and choice in setting.choices:
            rules = setting.put(rules, choice)
    return rules


def cycle(rules: Rules, name: str) -> Rules:
    """The next choice of a setting (the first one after a custom value)."""
    setting = BY_NAME[name]
    now = setting.get(rules)
    index = setting.choices.index(now) + 1 if now in setting.choices else 0
    return setting.put(rules, setting.choices[index % len(setting.choices)])
