"""The unit at one instant (`Snapshot`), and what it asks of the world (`Effects`): the
core's two outputs, plain values that any thread may hold. The snapshot holds a record
for each part that shows the unit (`Light`, `Sound`, `Picture`), and each such part is
an `Output` the loop walks: a new output is a new part and a new record, not an edit in
the loop."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from cityunit.core.events import Event
from cityunit.core.hour import HourClock
from cityunit.core.permit import Permit
from cityunit.core.screens import Screen


class Light(NamedTuple):
    """What the LED shows: its level, 0 to 1."""

    level: float


class Sound(NamedTuple):
    """What the buzzer plays: a tone (None: silence), at the table's volume."""

    hz: int | None
    volume: str


class Picture(NamedTuple):
    """What the display shows: a screen, in the table's language."""

    screen: Screen
    language: str


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
    permit: Permit | None
    light: Light
    sound: Sound
    picture: Picture

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
            "led": self.light.level,
            "tone_hz": self.sound.hz,
            "permit": None if self.permit is None else self.permit.value,
            "volume": self.sound.volume,
            "screen": self.picture.screen.lines(self.picture.language),
        }


@dataclass
class Effects:
    """What the unit asks of the world since the loop last asked."""

    events: list[Event] = field(default_factory=list)
    shutdown: bool = False  # the safe-shutdown gesture was confirmed: halt the Pi
    save: bool = False  # the game changed in a way worth keeping on disk


class Output(Protocol):
    """A part that shows the unit: the LED, the buzzer, the display."""

    def follow(self, snapshot: Snapshot, now: int) -> None:
        """Show what `snapshot` says (its own record), skipping what it shows already."""
