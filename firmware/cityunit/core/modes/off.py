"""The switch OFF: dark and silent, timers stopped. Both buttons held 5 s ask for a safe
shutdown of the Pi, which the unit confirms with light and sound first.

Unlike the original's batteries, the Pi runs on with the switch OFF: for a few seconds
after switching OFF the screen says so and how to shut it down, and after
`power.off_after_minutes` OFF (if set) the unit shuts the Pi down by itself. A unit never
yet switched ON (a new build: the switch may not even be wired) says it is OFF instead of
staying dark, and never shuts the Pi down by itself: a maker checking the screen before
the switch is wired would otherwise find a blank screen and, later, a Pi halted."""

from __future__ import annotations

from cityunit.core import lights, sounds
from cityunit.core.events import EventKind
from cityunit.core.modes.base import Context, Mode
from cityunit.core.screens import Blank, Screen, ShutdownScreen, StillOnScreen, SwitchOffScreen

SHUTDOWN_MS = 2_000  # the confirmation, before the Pi may halt
NOTICE_MS = 8_000  # how long "the Pi is still on" shows after switching OFF


class Off(Mode):
    """The switch OFF; with `notice`, the still-on reminder first."""

    name = "off"

    def __init__(self, unit: Context, notice: bool = False, timed: bool = True) -> None:
        """`notice`: just switched OFF (say the Pi runs on); `timed`: count towards
        `power.off_after_minutes` (not once the Pi was asked to halt: a halt that failed
        must not replay the shutdown tune every so often)."""
        super().__init__(unit)
        self._notice = notice
        self._timed = timed
        self._hide = self.timer(self._hidden)
        self._power_off = self.timer(self._time_is_up)

    def enter(self) -> None:
        unit, now = self.unit, self.unit.now
        unit.cues.silence(now)
        if self._notice:
            self._hide.set(now + NOTICE_MS)
        self.rules_changed()

    def rules_changed(self) -> None:
        """(Re)count the time OFF, from now, with the rules as they stand."""
        game = self.unit.game
        minutes = game.rules.off_after_minutes
        if self._timed and minutes and game.begun:
            self._power_off.set(self.unit.now + minutes * 60_000)
        else:
            self._power_off.cancel()

    def _hidden(self) -> None:
        self._notice = False

    def _time_is_up(self) -> None:
        self.unit.to("shutdown")

    def screen(self, now: int) -> Screen:
        if self._notice:
            return StillOnScreen(self.unit.game.rules.off_after_minutes)
        return Blank() if self.unit.game.begun else SwitchOffScreen()

    def down(self) -> None:
        """Dark and silent: no feedback."""

    def chord(self) -> None:
        pass

    def chord_hold(self) -> None:
        self.unit.to("shutdown")


class Shutdown(Off):
    """The safe-shutdown gesture's confirmation: its light and tune, then the Pi halts."""

    name = "shutdown"

    def __init__(self, unit: Context) -> None:
        super().__init__(unit, timed=False)
        self._done = self.timer(self._confirmed)

    def enter(self) -> None:
        unit, now = self.unit, self.unit.now
        unit.emit(EventKind.SHUTDOWN)
        unit.cues.light(lights.SHUTDOWN, now)
        unit.cues.play(sounds.SHUTDOWN, now)
        self._done.set(now + SHUTDOWN_MS)

    def _confirmed(self) -> None:
        self.unit.to("off", timed=False)
        self.unit.request_shutdown()

    def screen(self, now: int) -> Screen:
        return ShutdownScreen()

    def chord_hold(self) -> None:
        """Already shutting down."""
