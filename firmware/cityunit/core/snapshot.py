"""The unit at one instant (`Snapshot`), and what it asks of the world (`Effects`): the
core's two outputs, plain values that any thread may hold."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cityunit.core.events import Event
from cityunit.core.hour import HourClock
from cityunit.core.permit import Permit
from cityunit.core.screens import Screen


@dataclass(frozen=True)
class Snapshot:
    """The unit at one instant: safe to hand to any thread, never changed."""

    t_ms: int
    revision: int
    power: bool
    mode: str
    hour: int  # 0 when off
    clock: HourClock  # the hour's time played, at any instant: clock.elapsed(t)
    paused: bool
    led: float
    tone_hz: int | None
    permit: Permit | None
    volume: str
    language: str
    screen: Screen

    @property
    def status(self) -> str:
        """One line for systemd and logs: 'hour 2, auction, paused'."""
        if not self.power:
            return "switch OFF"
        return f"hour {self.hour}, {self.mode}" + (", paused" if self.paused else "")

    def state(self) -> dict[str, Any]:
        """The console's STATE (never an auction's time left)."""
        return {
            "power": "on" if self.power else "off",
            "mode": self.mode,
            "hour": self.hour,
            "hour_elapsed_ms": self.clock.elapsed(self.t_ms),
            "paused": self.paused,
            "led": self.led,
            "tone_hz": self.tone_hz,
            "permit": None if self.permit is None else self.permit.value,
            "volume": self.volume,
            "screen": self.screen.lines(self.language),
        }


@dataclass
class Effects:
    """What the unit asks of the world since the loop last asked."""

    events: list[Event] = field(default_factory=list)
    shutdown: bool = False  # the safe-shutdown gesture was confirmed: halt the Pi
    save: bool = False  # the game changed in a way worth keeping on disk
