"""What the unit tells the world: the console's EVT lines, the logs, the simulator's pane.

The names are the protocol's (docs/protocol.md lists each; a test holds the two together).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, NamedTuple


class EventKind(StrEnum):
    """Each event's name, as an EVT line's `event` field spells it."""

    POWER = "power"
    HOUR_START = "hour.start"
    HOUR_WARNING = "hour.warning"
    HOUR_END = "hour.end"
    AUCTION_START = "auction.start"
    AUCTION_FINAL = "auction.final"
    AUCTION_END = "auction.end"
    PERMIT = "permit"
    LED = "led"
    TONE = "tone"
    FAULT = "fault"
    PAUSE = "pause"
    SHUTDOWN = "shutdown"
    SETTING = "setting"
    NEW_GAME = "new_game"
    RESUME = "resume"


# The two kinds of most events, read as globals where they are hot (a global is read in a
# tenth of an Enum member's time).
LED, TONE = EventKind.LED, EventKind.TONE
# Output changes: many a second, so logs keep them at debug level and the UIs leave them out.
OUTPUT_CHANGES = frozenset({EventKind.LED, EventKind.TONE})


class Event(NamedTuple):
    """(A tuple: thousands are made in an hour of play.)"""

    t_ms: int
    event: EventKind
    data: dict[str, Any]  # JSON values only

    def as_dict(self) -> dict[str, Any]:
        """An EVT line's object: `t_ms` and `event` first, then the event's own fields."""
        return {"t_ms": self.t_ms, "event": str(self.event), **self.data}


# An Event made as namedtuple's own _make makes one: new_event(Event, (t, kind, data)), at a
# third of the cost of calling Event (whose __new__ is generated Python), thousands an hour.
new_event = tuple.__new__
