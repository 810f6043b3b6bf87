"""What every mode is: what it shows, how its light goes, what each gesture means in it,
and the one interface through which it acts on the unit (`Context`).

A mode owns the timers it makes: the unit calls `enter` when it takes over and `leave`
when another does, and leaving cancels every timer the mode holds, so no deadline of
an old mode can ever fire into a new one.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any, ClassVar, Literal, Protocol, overload

from cityunit.core import lights
from cityunit.core.game import Game, Host
from cityunit.core.gestures import Button, Gesture
from cityunit.core.patterns import Pattern
from cityunit.core.permit import Permit
from cityunit.core.screens import Blank, PageLink, Screen
from cityunit.core.timers import Timer

# Every mode, as STATE names it: the one way a mode names another (Context.to).
ModeName = Literal["off", "shutdown", "idle", "auction", "permit", "settings", "hour_end"]


class Context(Host, Protocol):
    """What a mode may do with the unit it runs on: its time and timers, its cues, the
    game and its rules, the random source, events, and asking for another mode. A mode
    names the modes it hands over to through this, never their classes (a mode's module
    imports no other mode's), and the unit is the one place that builds them."""

    present: int  # the loop's time as it handles the latest input (a late press's click)
    game: Game
    rng: random.Random
    page: PageLink | None  # the players' page: where, and the token to play from it

    @overload
    def to(self, name: Literal["idle"], *, sold: bool | None = None) -> None: ...
    @overload
    def to(self, name: Literal["off"], *, timed: bool = True) -> None: ...
    @overload
    def to(
        self, name: Literal["shutdown", "auction", "permit", "settings", "hour_end"]
    ) -> None: ...
    def to(self, name: ModeName, **options: Any) -> None:
        """Hand over to the mode STATE calls `name`, built by the unit with `options`
        (idle's `sold`: an auction just ended, True if stopped early; off's `timed`: the
        Pi powers off after `power.off_after_minutes`). Typed per mode for a checker."""

    def new_hour(self) -> None:
        """The next hour of play starts (its chime, the hour screen)."""

    def new_game(self) -> None:
        """The hour count starts again at 1."""

    def request_shutdown(self) -> None:
        """The safe-shutdown gesture was confirmed: the loop runs the shutdown command."""


class Mode:
    """One state of the unit, and what each gesture means in it; the defaults here are a
    mode that shows nothing and answers only the pause chord."""

    name: ClassVar[str]  # as the console's STATE says it

    def __init__(self, unit: Context) -> None:
        self.unit = unit
        self._timers: list[Timer] = []

    def timer(self, run: Callable[[], None]) -> Timer:
        """A timer this mode owns: cancelled when the mode is left, so it never fires into
        the next one."""
        timer = self.unit.timers.timer(run)
        self._timers.append(timer)
        return timer

    def enter(self) -> None:
        """Take over: set the light, start the timers."""

    def leave(self) -> None:
        """Handed over to another mode: every timer it owns is cancelled."""
        for timer in self._timers:
            timer.cancel()

    # ----- what it shows -------------------------------------------------------------

    def screen(self, now: int) -> Screen:
        """What the OLED shows at `now` (a pure function of the mode and the time)."""
        return Blank()

    def next_frame(self, now: int) -> int | None:
        """When the screen will next change by itself (an animation, a clock), if ever."""
        return None

    def ahead(self, now: int) -> list[Screen]:
        """The screens it may show next, the likeliest first, for the display to ready
        while the unit idles (a tap then costs only the bus): its next frame, and (the
        modes add them) the first screens its taps lead to (`openings`). A guess: a miss
        costs time alone."""
        at = self.next_frame(now)
        return [] if at is None else [self.screen(at)]

    @property
    def permit(self) -> Permit | None:
        """The permit on show, if any."""
        return None

    def rest_light(self) -> Pattern[float]:
        """The light between events: dark, or a heartbeat while the game clock is paused."""
        return lights.PAUSED if self.unit.game.paused else lights.DARK

    # ----- what the players do (the switch ON) ------------------------------------------

    def gesture(self, gesture: Gesture, button: Button | None) -> None:
        """A button's gesture, to its handler below (stuck and released are the unit's)."""
        if gesture is Gesture.DOWN:
            self.down()
        elif gesture is Gesture.CHORD:
            self.chord()
        elif gesture is Gesture.CHORD_HOLD:
            self.chord_hold()
        elif button is not None:
            (self.tap if gesture is Gesture.TAP else self.long)(button)

    def down(self) -> None:
        """A button went down: the click and the blip, at once, before its meaning is known."""
        self.unit.cues.feedback(max(self.unit.now, self.unit.present))

    def tap(self, button: Button) -> None:
        """A short press of `button`, at its release."""

    def long(self, button: Button) -> None:
        """`button` held for `buttons.long_press_ms`, as soon as it has been."""

    def chord(self) -> None:
        """Both held: the game clock pauses or goes on, whatever else is happening."""
        self.unit.game.toggle_pause()

    def chord_hold(self) -> None:
        """Both held on (the safe-shutdown gesture, in the modes that take it)."""

    # ----- what the game does to it ------------------------------------------------------

    def hour_over(self) -> None:
        """The game's last hour is up."""
        self.unit.to("hour_end")

    def rules_changed(self) -> None:
        """The rules were changed from outside the menu (the config file reloaded)."""

    def switched_off(self) -> None:
        """The switch went OFF while this mode ran."""
