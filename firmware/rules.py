"""The game rules the table can choose: game length, auction timing, permit odds, text."""

from __future__ import annotations

from dataclasses import dataclass, field

HOUR_MS = 3_600_000

# A build permit: 1, 2 or 3 buildings, or one free station.
Permit = int | str
PERMITS: tuple[Permit, ...] = (1, 2, 3, "station")

# No rulebook gives the original's odds. Our choice: small builds are common, a
# 3-building turn and the free station each come one turn in five.
DEFAULT_ODDS: dict[Permit, int] = {1: 30, 2: 30, 3: 20, "station": 20}


@dataclass(frozen=True)
class Rules:
    language: str = "en"  # "en" or "fr"
    show_clock: bool = True  # the discreet elapsed-time readout
    game_hours: int = 1  # 0: untimed (each hour is still signalled)
    warning_minutes: int = 5  # beeps before the game's end; 0: none
    auction_mode: str = "random"  # "random" or "fixed"
    auction_min_s: int = 13
    auction_max_s: int = 50
    auction_fixed_s: int = 50
    auction_final_s: int = 5
    odds: dict[Permit, int] = field(default_factory=lambda: dict(DEFAULT_ODDS))
    permit_show_s: int = 20
    debounce_ms: int = 25
    long_press_ms: int = 1500


def warning_times(warning_ms: int, min_gap_ms: int = 2_000) -> list[int]:
    """Ms before the end at which to beep: every 30 s at 5 min, shrinking to every 2 s.

    Each gap is a tenth of the time left, so the beeps come more and more often.
    """
    times: list[int] = []
    left = warning_ms
    while left > 0:
        times.append(left)
        left -= max(min_gap_ms, left // 10 // 1000 * 1000)
    return times
