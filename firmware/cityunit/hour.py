"""The hour of play's clock: it runs, pauses, and is taken back after a restart."""

from __future__ import annotations

from dataclasses import dataclass

from cityunit.rules import HOUR_MS


@dataclass
class HourClock:
    banked: int = 0  # ms of the hour played before `since`
    since: int | None = None  # unit time it last started running; None while stopped

    @property
    def running(self) -> bool:
        return self.since is not None

    def elapsed(self, now: int) -> int:
        running = 0 if self.since is None else now - self.since
        return min(HOUR_MS, self.banked + running)

    def start(self, now: int, banked: int = 0) -> None:
        self.banked, self.since = banked, now

    def stop(self, now: int) -> None:
        self.banked, self.since = self.elapsed(now), None

    def reset(self) -> None:
        self.banked, self.since = 0, None

    def when(self, elapsed: int) -> int | None:
        """The unit time at which `elapsed` ms of the hour will have been played."""
        return None if self.since is None else self.since + elapsed - self.banked
