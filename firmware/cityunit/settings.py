"""What the table can set on the unit itself, and through the console's SET.

One declaration per setting: its choices, their words in both languages, how it reads
from and writes into the rules. The menu, SETTINGS/SET and the saved state all use it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from cityunit.rules import ODDS_PRESETS, VOLUMES, Rules

Words = dict[str, dict[str, str]]  # choice -> language -> text


@dataclass(frozen=True)
class Setting:
    name: str
    title: dict[str, str]
    choices: tuple[str, ...]
    words: Words
    get: Callable[[Rules], str]
    put: Callable[[Rules, str], Rules]

    def label(self, choice: str, lang: str) -> str:
        return self.words.get(choice, {}).get(lang, choice)


def _same(en: str, fr: str | None = None) -> dict[str, str]:
    return {"en": en, "fr": fr or en}


def _length(r: Rules) -> str:
    return f"{r.game_hours}h" if r.game_hours else "untimed"


def _auction(r: Rules) -> str:
    return "random" if r.auction_mode == "random" else f"fixed{r.auction_fixed_s}"


def _put_auction(r: Rules, choice: str) -> Rules:
    if choice == "random":
        return dataclasses.replace(r, auction_mode="random")
    return dataclasses.replace(r, auction_mode="fixed", auction_fixed_s=int(choice[5:]))


def _odds(r: Rules) -> str:
    return next((name for name, table in ODDS_PRESETS.items() if table == r.odds), "custom")


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "game_length", _same("GAME LENGTH", "DURÉE"), ("1h", "2h", "3h", "untimed"),
        {"1h": _same("1 hour", "1 heure"), "2h": _same("2 hours", "2 heures"),
         "3h": _same("3 hours", "3 heures"), "untimed": _same("untimed", "libre")},
        _length,
        lambda r, c: dataclasses.replace(r, game_hours=0 if c == "untimed" else int(c[0])),
    ),
    Setting(
        "volume", _same("VOLUME"), VOLUMES,
        {"off": _same("off", "muet"), "low": _same("low", "bas"),
         "medium": _same("medium", "moyen"), "high": _same("high", "fort")},
        lambda r: r.volume, lambda r, c: dataclasses.replace(r, volume=c),
    ),
    Setting(
        "auction", _same("AUCTIONS", "ENCHÈRES"), ("random", "fixed30", "fixed50"),
        {"random": _same("13-50 s secret", "13-50 s secret"),
         "fixed30": _same("30 s shown", "30 s affiché"),
         "fixed50": _same("50 s shown", "50 s affiché")},
        _auction, _put_auction,
    ),
    Setting(
        "odds", _same("PERMIT ODDS", "TIRAGE DES PERMIS"), tuple(ODDS_PRESETS),
        {"classic": _same("classic", "classique"), "uniform": _same("even", "égaux"),
         "builder": _same("builder", "bâtisseur"), "custom": _same("custom", "perso")},
        _odds, lambda r, c: dataclasses.replace(r, odds=dict(ODDS_PRESETS[c])),
    ),
    Setting(
        "language", _same("LANGUAGE", "LANGUE"), ("en", "fr"),
        {"en": _same("English"), "fr": _same("Français")},
        lambda r: r.language, lambda r, c: dataclasses.replace(r, language=c),
    ),
    Setting(
        "show_clock", _same("GAME CLOCK", "CHRONO"), ("on", "off"),
        {"on": _same("shown", "affiché"), "off": _same("hidden", "caché")},
        lambda r: "on" if r.show_clock else "off",
        lambda r, c: dataclasses.replace(r, show_clock=c == "on"),
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
