"""What the page shows: the unit as the players at the table see it, one JSON object.

Made from the core's snapshot, its rules and its last permits, so it shows only what the
unit shows: an auction's time left only where its screen counts it down (a fixed length),
never a secret auction's length. `Table` follows the unit's events for the one thing a
snapshot does not say: whether an auction is in its final phase.
"""

from __future__ import annotations

from typing import Any

from cityunit.core.events import Event, EventKind
from cityunit.core.hour import HOUR_MS
from cityunit.core.permit import Permit
from cityunit.core.rules import Rules
from cityunit.core.screens import AuctionScreen, HourEndScreen, PermitScreen, SoldScreen
from cityunit.core.snapshot import Snapshot

VERSION = 1  # the page's JSON; a script reading /state checks it


class Table:
    """The page's state, kept up from the unit's events (loop thread)."""

    def __init__(self) -> None:
        self.final = False  # the auction under way is in its final phase

    def saw(self, event: Event) -> None:
        if event.event is EventKind.AUCTION_FINAL:
            self.final = True
        elif event.event in (EventKind.AUCTION_START, EventKind.AUCTION_END):
            self.final = False

    def state(
        self, snapshot: Snapshot, rules: Rules, history: tuple[Permit, ...], sim: bool
    ) -> dict[str, Any]:
        """The page's JSON: the hour's time only where the table shows it (game.show_clock);
        `sim` adds what a phone that is the unit plays (the LED's level, the buzzer's tone)."""
        screen = snapshot.picture.screen
        out: dict[str, Any] = {
            "v": VERSION,
            "power": snapshot.power,
            "mode": snapshot.mode,
            "language": snapshot.picture.language,
            "hour": snapshot.hour,
            "hour_elapsed_ms": snapshot.clock.elapsed(snapshot.t_ms) if rules.show_clock else None,
            "hour_ms": HOUR_MS,
            "running": snapshot.clock.running,
            "paused": snapshot.paused,
            "auction": None,
            "sold": None,
            "permit": None,
            "permits": [p.value for p in history],
            "game_over": None,
        }
        if isinstance(screen, AuctionScreen):
            phase = "final" if self.final else "running"
            out["auction"] = {"phase": phase, "countdown_s": screen.countdown_s}
            if self.final:
                out["auction"]["final_s"] = rules.auction_final_s
        elif isinstance(screen, SoldScreen):
            out["sold"] = "stopped" if screen.stopped else "sold"
        elif isinstance(screen, PermitScreen):
            out["permit"] = {"value": screen.value.value, "drawing": screen.drawing}
        elif isinstance(screen, HourEndScreen):
            out["game_over"] = {"hours_played": screen.hours_played}
        if sim:
            out["led"] = snapshot.light.level
            out["tone_hz"] = snapshot.sound.hz
            out["volume"] = snapshot.sound.volume
        return out
