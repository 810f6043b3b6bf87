"""The end of the game: a long tune, the light steady, how to total your wealth, and a
reminder every minute until the switch is cycled or a long AUCTION press starts an hour."""

from __future__ import annotations

from cityunit.core import lights, sounds
from cityunit.core.gestures import Button
from cityunit.core.modes.base import Context, Mode
from cityunit.core.screens import HourEndScreen, Screen

REMINDER_MS = 60_000


class HourEnd(Mode):
    """The game over (STATE's "hour_end"), until the switch or a long AUCTION."""

    name = "hour_end"

    def __init__(self, unit: Context) -> None:
        super().__init__(unit)
        self._reminder = self.timer(self._remind)

    def enter(self) -> None:
        unit, now = self.unit, self.unit.now
        unit.cues.light(lights.LIT, now)
        unit.cues.play(sounds.HOUR_END, now)
        self._reminder.set(now + REMINDER_MS)

    def _remind(self) -> None:
        self.unit.cues.play(sounds.REMINDER, self.unit.now)
        self._reminder.set(self.unit.now + REMINDER_MS)

    def screen(self, now: int) -> Screen:
        return HourEndScreen(self.unit.game.session_hours)

    def long(self, button: Button) -> None:
        if button is Button.AUCTION:
            self.unit.new_hour()

    def chord(self) -> None:
        """The game is over: there is no clock left to pause."""
