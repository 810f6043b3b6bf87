"""An auction or a deal: a secret length (or a fixed one, counted down), a final phase of
beeps and fast flashing, then SOLD. A tap stops it early, a long press cancels it."""

from __future__ import annotations

from cityunit.core import lights, sounds
from cityunit.core.events import EventKind
from cityunit.core.gestures import Button
from cityunit.core.modes.base import Context, Mode
from cityunit.core.screens import AuctionScreen, Screen, SoldScreen

FRAME_MS = 500  # the dots move on this often


class Auction(Mode):
    """A countdown on the table's behalf; the module says how it runs and ends."""

    name = "auction"

    def __init__(self, unit: Context) -> None:
        super().__init__(unit)
        self._final = self.timer(self._final_phase)
        self._end = self.timer(lambda: self.end(stopped=False))
        self._start = 0
        self._length = 0
        self._hour_ended = False  # the game's end came during the auction: it finishes first
        self._shown = False  # a fixed length, counted down on screen (decided at the start)

    def enter(self) -> None:
        unit, now = self.unit, self.unit.now
        rules = unit.game.rules
        self._shown = rules.auction_mode == "fixed"
        if self._shown:
            self._length = rules.auction_fixed_s * 1000
        else:
            self._length = unit.rng.randint(rules.auction_min_s * 1000, rules.auction_max_s * 1000)
        self._start = now
        unit.emit(EventKind.AUCTION_START)
        unit.cues.light(lights.AUCTION_FLASH, now)
        unit.cues.play(sounds.AUCTION_START, now)
        self._final.set(now + max(0, self._length - rules.auction_final_s * 1000))
        self._end.set(now + self._length)

    def _final_phase(self) -> None:
        unit, now = self.unit, self.unit.now
        unit.emit(EventKind.AUCTION_FINAL)
        unit.cues.light(lights.AUCTION_FINAL_FLASH, now)
        unit.cues.beep(sounds.FINAL_BEEPS, now)

    def end(self, stopped: bool, cancelled: bool = False) -> None:
        unit, now = self.unit, self.unit.now
        unit.emit(
            EventKind.AUCTION_END, stopped=stopped, **({"cancelled": True} if cancelled else {})
        )
        unit.cues.quiet_buzzer(now)
        if cancelled:
            unit.cues.play(sounds.CANCELLED, now)
        else:
            unit.cues.play(sounds.STOPPED if stopped else sounds.SOLD, now)
        if self._hour_ended:
            unit.to("hour_end")
        else:
            unit.to("idle", sold=None if cancelled else stopped)

    # ----- what it shows --------------------------------------------------------------

    def _countdown(self, now: int) -> int | None:
        """Seconds left, rounded up: shown only for a fixed length, which is public (a
        secret auction stays secret even if the setting changes while it runs)."""
        if not self._shown:
            return None
        return -(-(self._start + self._length - now) // 1000)

    def screen(self, now: int) -> Screen:
        return AuctionScreen((now - self._start) // FRAME_MS, self._countdown(now))

    def next_frame(self, now: int) -> int | None:
        at = self._start + ((now - self._start) // FRAME_MS + 1) * FRAME_MS
        if self._countdown(now) is not None:
            left = self._start + self._length - now
            at = min(at, now + (left % 1000 or 1000))
        return at

    def ahead(self, now: int) -> list[Screen]:
        """STOPPED for a tap, SOLD! for its end, its next dot."""
        return [SoldScreen(True), SoldScreen(False), *super().ahead(now)]

    # ----- what the players do ----------------------------------------------------------

    def tap(self, button: Button) -> None:
        if button is Button.AUCTION:
            self.end(stopped=True)

    def long(self, button: Button) -> None:
        if button is Button.AUCTION:
            self.end(stopped=True, cancelled=True)

    def hour_over(self) -> None:
        self._hour_ended = True

    def leave(self) -> None:
        super().leave()
        self.unit.cues.beep(sounds.NO_BEEPS, self.unit.now)  # the final beeps are this mode's

    def switched_off(self) -> None:
        self.unit.emit(EventKind.AUCTION_END, stopped=True, cancelled=True)
