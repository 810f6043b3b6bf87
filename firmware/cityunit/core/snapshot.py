"""The unit at one instant (`Snapshot`), and what it asks of the world (`Effects`): the
core's two outputs, plain values that any thread may hold. The snapshot holds a record
for each part that shows the unit (`Light`, `Sound`, `Picture`), and each such part is
an `Output` the loop walks: a new output is a new part and a new record, not an edit in
the loop."""

from __future__ import annotations

from typing import Any, Final, NamedTuple, Protocol

from cityunit.core.events import Event
from cityunit.core.hour import HourClock
from cityunit.core.permit import Permit
from cityunit.core.screens import Screen
from cityunit.core.values import Value


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


class Snapshot(Value):
    """The unit at one instant: safe to hand to any thread, never changed."""

    __slots__ = ("clock", "hour", "light", "mode", "paused", "permit", "picture", "power",
                 "revision", "sound", "t_ms")  # fmt: skip
    t_ms: Final[int]
    revision: Final[int]
    power: Final[bool]
    mode: Final[str]
    hour: Final[int]  # 0 when off
    clock: Final[HourClock]  # the hour's time played, at any instant: clock.elapsed(t)
    paused: Final[bool]
    permit: Final[Permit | None]
    light: Final[Light]
    sound: Final[Sound]
    picture: Final[Picture]

    def __init__(
        self, t_ms: int, revision: int, power: bool, mode: str, hour: int, clock: HourClock,
        paused: bool, permit: Permit | None, light: Light, sound: Sound, picture: Picture,
    ) -> None:  # fmt: skip
        self.t_ms, self.revision, self.power, self.mode = t_ms, revision, power, mode
        self.hour, self.clock, self.paused, self.permit = hour, clock, paused, permit
        self.light, self.sound, self.picture = light, sound, picture

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


class Effects:
    """What the unit asks of the world since the loop last asked."""

    __slots__ = ("events", "save", "shutdown")

    def __init__(
        self, events: list[Event] | None = None, shutdown: bool = False, save: bool = False
    ) -> None:
        self.events: list[Event] = [] if events is None else events
        self.shutdown = shutdown  # the safe-shutdown gesture was confirmed: halt the Pi
        self.save = save  # the game changed in a way worth keeping on disk


class Output(Protocol):
    """A part that shows the unit: the LED, the buzzer, the display."""

    def follow(self, snapshot: Snapshot, now: int) -> None:
        """Show what `snapshot` says (its own record), skipping what it shows already."""
