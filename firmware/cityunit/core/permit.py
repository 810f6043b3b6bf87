"""This turn's build permit: 1, 2 or 3 buildings, or one free station."""

from __future__ import annotations

import random
from collections.abc import Mapping
from enum import Enum


class Permit(Enum):
    """The values are the protocol's: `1`, `2`, `3` or `"station"` in JSON."""

    ONE = 1
    TWO = 2
    THREE = 3
    STATION = "station"

    @property
    def buildings(self) -> int:
        """How many buildings it allows (the station allows a station, no building)."""
        return self.value if isinstance(self.value, int) else 0

    @classmethod
    def named(cls, word: str) -> Permit | None:
        """The permit a config file or a saved game calls `word` ("1", "station"), if any."""
        return next((p for p in cls if str(p.value) == word.lower()), None)


def draw(rng: random.Random, odds: Mapping[Permit, int]) -> Permit:
    """One permit at random, each as likely as its weight; a weight of 0 never comes. At
    least one weight must be above 0 (the config refuses odds without one)."""
    values = [v for v, w in odds.items() if w > 0]
    weights = [odds[v] for v in values]
    return rng.choices(values, weights)[0]
