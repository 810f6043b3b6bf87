"""The game as it must survive a crash or a power cut: one typed record, the one place
that knows its fields, checks what a file held (anything may be there: an old version,
an edit, a stranger's file) and gives the JSON the card keeps (loop/store.py writes it
whole or not at all, its format's version first)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from cityunit.core.permit import Permit
from cityunit.core.values import Value

_PERMITS = {p.value for p in Permit}
_MOST = 1_000_000  # hours played, in all and in this session: more is no real game


class SavedGame(Value):
    __slots__ = ("config", "history", "hour", "hour_elapsed_ms", "paused", "power",
                 "session_hours", "settings")  # fmt: skip
    power: Final[bool]  # the switch was ON
    hour: Final[int]  # the hour being played (0: never switched ON)
    session_hours: Final[int]  # hours since the switch went ON (the game's length counts these)
    hour_elapsed_ms: Final[int]  # of the hour being played (0 when OFF)
    paused: Final[bool]
    history: Final[tuple[Permit, ...]]  # the permits drawn, newest first
    settings: Final[Mapping[str, str]]  # the table's, by name
    config: Final[Mapping[str, str]]  # the file's, when saved

    def __init__(
        self, power: bool, hour: int, session_hours: int, hour_elapsed_ms: int, paused: bool,
        history: tuple[Permit, ...] = (), settings: Mapping[str, str] | None = None,
        config: Mapping[str, str] | None = None,
    ) -> None:  # fmt: skip
        self.power, self.hour, self.session_hours = power, hour, session_hours
        self.hour_elapsed_ms, self.paused, self.history = hour_elapsed_ms, paused, history
        self.settings = {} if settings is None else settings
        self.config = {} if config is None else config

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
