"""Named one-shot deadlines: the core's only notion of the future."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Due(NamedTuple):
    t: int
    seq: int  # unique, so tuples never compare further
    name: str
    run: Callable[[], None]


class Deadlines:
    """At most one pending deadline per name; setting a name again replaces it.

    Ties run in the order they were set, so a replay on the virtual clock is exact.
    """

    def __init__(self) -> None:
        self._due: dict[str, Due] = {}
        self._seq = 0

    def set(self, name: str, t: int, run: Callable[[], None]) -> None:
        self._seq += 1
        self._due[name] = Due(t, self._seq, name, run)

    def cancel(self, *names: str) -> None:
        for name in names:
            self._due.pop(name, None)

    def next(self) -> int | None:
        return min(self._due.values()).t if self._due else None

    def pop_due(self, now: int) -> Due | None:
        """The earliest deadline at or before `now`, removed; None when nothing is due."""
        if not self._due:
            return None
        due = min(self._due.values())
        if due.t > now:
            return None
        del self._due[due.name]
        return due
