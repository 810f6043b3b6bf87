"""The game as it must survive a crash or a power cut: one typed record, the one place
that knows its fields, checks what a file held (anything may be there: an old version,
an edit, a stranger's file) and gives the JSON the card keeps (loop/store.py writes it
whole or not at all, its format's version first)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cityunit.core.permit import Permit

_PERMITS = {p.value for p in Permit}
_MOST = 1_000_000  # hours played, in all and in this session: more is no real game


@dataclass(frozen=True)
class SavedGame:
    power: bool  # the switch was ON
    hour: int  # the hour being played (0: never switched ON)
    session_hours: int  # hours since the switch went ON (the game's length counts these)
    hour_elapsed_ms: int  # of the hour being played (0 when OFF)
    paused: bool
    history: tuple[Permit, ...] = ()  # the permits drawn, newest first
    settings: Mapping[str, str] = field(default_factory=dict)  # the table's, by name
    config: Mapping[str, str] = field(default_factory=dict)  # the file's, when saved

    def as_json(self) -> dict[str, Any]:
        return {
            "power": self.power,
            "hour": self.hour,
            "session_hours": self.session_hours,
            "hour_elapsed_ms": self.hour_elapsed_ms,
            "paused": self.paused,
            "history": [p.value for p in self.history],
            "settings": dict(self.settings),
            "config": dict(self.config),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SavedGame | None:
        """The game a file's JSON object holds, or None if it cannot be one."""
        if not _valid(data):
            return None
        return cls(
            power=data["power"],
            hour=data["hour"],
            session_hours=data["session_hours"],
            hour_elapsed_ms=data["hour_elapsed_ms"],
            paused=data["paused"],
            history=tuple(Permit(value) for value in data["history"]),
            settings=dict(data.get("settings", {})),
            config=dict(data.get("config", {})),
        )


def _valid(data: Mapping[str, Any]) -> bool:
    def whole(key: str, lo: int, hi: int) -> bool:
        value = data.get(key)
        return isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi

    def names(key: str) -> bool:  # optional: {setting name: choice}, all strings
        table = data.get(key, {})
        return isinstance(table, dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in table.items()
        )

    history = data.get("history")
    return (
        names("settings")
        and names("config")
        and isinstance(data.get("power"), bool)
        and isinstance(data.get("paused"), bool)
        and whole("hour", 1 if data.get("power") else 0, _MOST)  # hour 0: never ON
        and whole("session_hours", 0, _MOST)
        and whole("hour_elapsed_ms", 0, 3_600_000)
        and isinstance(history, list)
        and all(isinstance(p, int | str) and p in _PERMITS for p in history)
    )
