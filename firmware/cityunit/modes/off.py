"""The switch OFF: dark and silent, timers stopped. Both buttons held 5 s ask for a safe
shutdown of the Pi, which the unit confirms with light and sound first."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cityunit import sounds
from cityunit.events import EventKind
from cityunit.modes.base import Mode
from cityunit.screens import Screen, ShutdownScreen

if TYPE_CHECKING:
    from cityunit.unit import Unit

SHUTDOWN_MS = 2_000  # the confirmation, before the Pi may halt


class Off(Mode):
    name = "off"

    def enter(self) -> None:
        self.unit.cues.silence(self.unit.now)

    def down(self) -> None:
        """Dark and silent: no feedback."""

    def chord(self) -> None:
        pass

    def chord_hold(self) -> None:
        self.unit.enter(Shutdown(self.unit))


class Shutdown(Off):
    name = "shutdown"

    def __init__(self, unit: Unit) -> None:
        super().__init__(unit)
        self._done = self.timer(self._confirmed)

    def enter(self) -> None:
        unit, now = self.unit, self.unit.now
        unit.emit(EventKind.SHUTDOWN)
        unit.cues.light(sounds.SHUTDOWN_LIGHT, now)
        unit.cues.play(sounds.SHUTDOWN, now)
        self._done.set(now + SHUTDOWN_MS)

    def _confirmed(self) -> None:
        self.unit.enter(Off(self.unit))
        self.unit.request_shutdown()

    def screen(self, now: int) -> Screen:
        return ShutdownScreen()

    def chord_hold(self) -> None:
        """Already shutting down."""
