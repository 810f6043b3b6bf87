"""Drawing this turn's build permit from the odds table."""

from __future__ import annotations

import random
from collections.abc import Mapping

from cityunit.rules import Permit


def draw(rng: random.Random, odds: Mapping[Permit, int]) -> Permit:
    values = [v for v, w in odds.items() if w > 0]
    weights = [odds[v] for v in values]
    return rng.choices(values, weights)[0]
