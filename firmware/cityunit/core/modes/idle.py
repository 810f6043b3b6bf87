"""Between events: the hour and its clock, and briefly the last auction's outcome."""

from __future__ import annotations

from cityunit.core.gestures import Button
from cityunit.core.modes import openings
from cityunit.core.modes.base import Context, Mode
from cityunit.core.screens import HourScreen, Screen, SoldScreen

SOLD_SHOW_MS = 3_000
RESUMED_SHOW_MS = 8_000


class Idle(Mode):
    """The hour screen: AUCTION starts an auction, BUILD draws a permit, a long BUILD
    opens the menu."""

    name = "idle"

    def __init__(self, unit: Context, sold: bool | None = None, resumed: bool = False) -> None:
        """`sold`: an auction just ended (True: stopped early); `resumed`: after a restart."""
        super().__init__(unit)
        self._sold = sold
        self._resumed = resumed
        self._until = 0  # when the banner (SOLD!, STOPPED, RESUMED) goes

    def enter(self) -> None:
        now = self.unit.now
        if self._sold is not None:
            self._until = now + SOLD_SHOW_MS
        elif self._resumed:
            self._until = now + RESUMED_SHOW_MS
        self.unit.cues.light(self.rest_light(), now)

    def screen(self, now: int) -> Screen:
        banner = now < self._until
        if banner and self._sold is not None:
            return SoldScreen(self._sold)
        game = self.unit.game
        clock = None
        if game.rules.show_clock:
            seconds = game.elapsed(now) // 1000
            clock = f"{seconds // 60:02d}:{seconds % 60:02d}"
        return HourScreen(game.hour, clock, game.paused, resumed=banner and self._resumed)

    def next_frame(self, now: int) -> int | None:
        banner = self._until if now < self._until else None
        game = self.unit.game
        if self._sold is not None and banner is not None:
            return banner  # SOLD! fills the screen: no clock under it
        if game.rules.show_clock and game.clock.running:
            tick = now + 1000 - game.elapsed(now) % 1000
            return tick if banner is None else min(tick, banner)
        return banner

    def ahead(self, now: int) -> list[Screen]:
        """An auction's start, a draw; then its next tick or banner's end. Not the menu:
        it opens on a long press, while the button is held, a moment nobody times to the
        millisecond; readying it too would cost every tick of the clock another plan."""
        return [openings.auction(self.unit.game.rules), openings.PERMIT, *super().ahead(now)]

    def tap(self, button: Button) -> None:
        if button is Button.AUCTION:
            self.unit.to("auction")
        else:
            self.unit.to("permit")

    def long(self, button: Button) -> None:
        if button is Button.BUILD:
            self.unit.to("settings")

    def chord(self) -> None:
        super().chord()
        self.unit.cues.light(self.rest_light(), self.unit.now)
