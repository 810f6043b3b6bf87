"""Named one-shot deadlines: the core's only notion of the future."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(order=True)
class _Due:
    t: int
    seq: int
    run: Callable[[], None] = field(compare=False)


class Deadlines:
    """At most one pending deadline per name; setting a name again replaces it.

    Ties run in the order they were set, so a replay on the virtual clock is exact.
    """

    def __init__(self) -> None:
        self._due: dict[str, _Due] = {}
        self._seq = 0

    def set(self, name: str, t: int, run: Callable[[], None]) -> None:
        self._seq += 1
        self._due[name] = _Due(t, self._seq, run)

    def cancel(self, *names: str) -> None:
        for name in names:
            self._due.pop(name, None)

    def pending(self, name: str) -> bool:
        return name in self._due

    def when(self, name: str) -> int | None:
        due = self._due.get(name)
        return None if due is None else due.t

    def next(self) -> int | None:
        return min((d.t for d in self._due.values()), default=None)

    def pop_due(self, now: int) -> _Due | None:
        """The earliest deadline at or before `now`, removed; None when nothing is due."""
        if not self._due:
            return None
        name, due = min(self._due.items(), key=lambda item: item[1])
        if due.t > now:
            return None
        del self._due[name]
        return due
