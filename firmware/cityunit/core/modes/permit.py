"""A build permit: a short draw animation, then 1, 2 or 3 buildings or the station, each
with its own beeps and blinks, shown for a while. Another BUILD draws again."""

from __future__ import annotations

from cityunit.core import lights, sounds
from cityunit.core.events import EventKind
from cityunit.core.gestures import Button
from cityunit.core.modes import openings
from cityunit.core.modes.base import Context, Mode
from cityunit.core.permit import Permit, draw
from cityunit.core.screens import PermitScreen, Screen

STATION_FLASH_MS = 400
FACES = tuple(Permit)  # the draw animation runs through every face, from openings.PERMIT


class PermitDraw(Mode):
    """A permit's draw (STATE's "permit"): decided at the press, revealed after the
    animation, shown for `permit.show_s`."""

    name = "permit"

    def __init__(self, unit: Context) -> None:
        super().__init__(unit)
        self._reveal = self.timer(self._revealed)
        self._expire = self.timer(lambda: self.unit.to("idle"))
        self._drawn: Permit | None = None  # decided at the press, shown after the animation
        self._shown: Permit | None = None
        self._since = 0

    def enter(self) -> None:
        unit, now = self.unit, self.unit.now
        self._drawn = draw(unit.rng, unit.game.rules.odds)
        self._since = now
        unit.cues.light(self.rest_light(), now)
        unit.cues.play(sounds.DRAW, now)
        self._reveal.set(now + sounds.DRAW_MS)

    def _revealed(self) -> None:
        unit, now = self.unit, self.unit.now
        permit = self._drawn
        assert permit is not None
        self._shown, self._since = permit, now
        unit.game.drawn(permit)
        unit.emit(EventKind.PERMIT, value=permit.value)
        unit.cues.play(sounds.permit_tune(permit), now)
        unit.cues.light(lights.permit_light(permit), now)
        self._expire.set(now + unit.game.rules.permit_show_s * 1000)

    @property
    def permit(self) -> Permit | None:
        return self._shown

    def screen(self, now: int) -> Screen:
        since = now - self._since
        if self._shown is None:
            face = FACES[(since // sounds.DRAW_FRAME_MS) % len(FACES)]
            return PermitScreen(face, drawing=True)
        visible = self._shown is not Permit.STATION or (since // STATION_FLASH_MS) % 2 == 0
        return PermitScreen(self._shown, visible=visible)

    def next_frame(self, now: int) -> int | None:
        if self._shown is None:
            step = sounds.DRAW_FRAME_MS
        elif self._shown is Permit.STATION:
            step = STATION_FLASH_MS
        else:
            return None
        return now + step - (now - self._since) % step

    def ahead(self, now: int) -> list[Screen]:
        """The next face, then the permit itself (decided at the press); once it shows,
        another draw; an auction's start either way."""
        auction = openings.auction(self.unit.game.rules)
        if self._shown is None and self._drawn is not None:
            return [*super().ahead(now), PermitScreen(self._drawn), auction]
        return [*super().ahead(now), openings.PERMIT, auction]

    def tap(self, button: Button) -> None:
        if button is Button.AUCTION:
            self.unit.to("auction")
        elif self._shown is not None:  # a new turn; never during the animation
            self.unit.to("permit")

    def long(self, button: Button) -> None:
        if button is Button.BUILD and self._shown is not None:
            self.unit.to("idle")  # put away
