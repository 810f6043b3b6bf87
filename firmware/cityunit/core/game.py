"""The game as it goes on across modes: which hour, how much of it is played, the pause,
the permits drawn, the rules the table chose.

The hour runs whatever the unit shows (an auction, a permit, the menu), so its timer
lives here, not in a mode: one timer for the next warning beep or the end of the hour.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from cityunit.core import settings, sounds
from cityunit.core.cues import Cues
from cityunit.core.events import EventKind
from cityunit.core.hour import HOUR_MS, HourClock
from cityunit.core.permit import Permit
from cityunit.core.rules import Rules, warning_times
from cityunit.core.saved import SavedGame
from cityunit.core.timers import Timers

HISTORY = 10  # permits kept for the menu's "last permits"


class Host(Protocol):
    """What the game needs of the unit it is played on (the unit is one)."""

    now: int
    timers: Timers
    cues: Cues

    def emit(self, kind: EventKind, **data: Any) -> None: ...

    def worth_saving(self) -> None: ...

    def hour_over(self) -> None:
        """The last hour is up: the mode on show decides what follows."""


class Game:
    def __init__(self, unit: Host, rules: Rules) -> None:
        self._unit = unit
        self.rules = rules
        self.config_rules = rules  # what the config file says, before the table's settings
        self.hour = 0  # the hour of play; counts on across OFF/ON
        self.session_hours = 0  # hours since the switch went ON
        self.clock = HourClock()
        self.paused = False
        self.history: deque[Permit] = deque(maxlen=HISTORY)
        self._hour_timer = unit.timers.timer(self._on_hour)
        self._named: list[tuple[Rules, dict[str, str]]] = []  # see `_names`

    # ----- the hour ------------------------------------------------------------------

    def elapsed(self, now: int) -> int:
        return self.clock.elapsed(now)

    @property
    def begun(self) -> bool:
        """The switch has been ON since the unit was new: hour 0 only until then (saved)."""
        return self.hour > 0

    def last_hour(self) -> bool:
        return 0 < self.rules.length_hours <= self.session_hours

    def start_hour(self, now: int, show: Callable[[], None] | None = None) -> None:
        """The one place an hour starts: counted, its clock from zero, saved, announced
        and its first deadline set. `show`: the screen the hour starts on, entered once
        it is counted and before it is announced (the switch turned ON, the menu's NEW
        GAME); None: the mode shown stays (an hour ran out and the next began)."""
        self.hour += 1
        self.session_hours += 1
        self.clock = HourClock(0, now)
        self._unit.worth_saving()
        if show is not None:
            show()
        self._unit.emit(EventKind.HOUR_START, hour=self.hour)
        self.schedule()

    def stop(self) -> None:
        """The switch went OFF (or a new hour is about to start): no clock, no pause."""
        self._hour_timer.cancel()
        self.paused = False
        self.clock = HourClock()

    def schedule(self) -> None:
        """One timer: the next warning beep, or the end of the hour."""
        if not self.clock.running:
            self._hour_timer.cancel()
            return
        elapsed = self.elapsed(self._unit.now)
        target = HOUR_MS
        if self.last_hour():
            for left in warning_times(self.rules.warning_minutes * 60_000):
                if HOUR_MS - left > elapsed:
                    target = HOUR_MS - left
                    break
        at = self.clock.when(target)
        assert at is not None
        self._hour_timer.set(at)

    def _on_hour(self) -> None:
        unit, now = self._unit, self._unit.now
        remaining = HOUR_MS - self.elapsed(now)
        if remaining > 0:
            unit.emit(EventKind.HOUR_WARNING, remaining_ms=remaining)
            unit.cues.play(sounds.HOUR_WARNING, now)
            self.schedule()
            return
        unit.emit(EventKind.HOUR_END, hour=self.hour)
        if not self.last_hour():
            unit.cues.play(sounds.HOUR_SIGNAL, now)
            self.start_hour(now)
            return
        self.end()

    @property
    def over(self) -> bool:
        """The last hour is up (an auction may still be finishing)."""
        return not self.clock.running and self.clock.banked >= HOUR_MS and self.last_hour()

    def end(self) -> None:
        """The last hour is up: the clock stops, and the mode shown decides what follows."""
        self.clock = self.clock.stopped(self._unit.now)
        self._unit.hour_over()

    def toggle_pause(self) -> None:
        """Both buttons held: the game clock stops or goes on (not once the game is over)."""
        unit, now = self._unit, self._unit.now
        if self.over:
            return
        if self.paused:
            self.paused = False
            self.clock = self.clock.started(now)
            unit.cues.play(sounds.RESUME, now)
        else:
            self.clock = self.clock.stopped(now)
            self.paused = True
            unit.cues.play(sounds.PAUSE, now)
        unit.emit(EventKind.PAUSE, paused=self.paused)
        unit.worth_saving()
        self.schedule()

    # ----- permits and rules ---------------------------------------------------------

    def drawn(self, permit: Permit) -> None:
        self.history.appendleft(permit)
        self._unit.worth_saving()

    def set_rules(self, rules: Rules) -> None:
        before = settings.read(self.rules)
        self.rules = rules
        for name, choice in settings.read(rules).items():
            if before[name] != choice:
                self._unit.emit(EventKind.SETTING, name=name, value=choice)
        self._unit.worth_saving()
        if self.clock.running:
            self.schedule()

    def reconfigure(self, config: Rules) -> None:
        """The config file, re-read while running: its rules apply, except the settings
        the table changed and the file did not (as after a restart: the maker's edit wins)."""
        kept = _kept(settings.read(self.rules), settings.read(self.config_rules), config)
        self.config_rules = config
        self.set_rules(settings.apply(config, kept))

    # ----- kept across restarts -------------------------------------------------------

    def saved(self, now: int, power: bool) -> SavedGame:
        """What must survive a crash or a power cut."""
        return SavedGame(
            power=power,
            hour=self.hour,
            session_hours=self.session_hours,
            hour_elapsed_ms=self.elapsed(now) if power else 0,
            paused=self.paused,
            history=tuple(self.history),
            settings=self._names(self.rules),
            config=self._names(self.config_rules),
        )

    def _names(self, rules: Rules) -> dict[str, str]:
        """settings.read, remembered for the last two Rules (frozen: a change is a new
        object): a save every 5 s of play read every setting twice."""
        for known, names in self._named:
            if known is rules:
                return dict(names)
        names = settings.read(rules)
        self._named = [(rules, names), *self._named[:1]]
        return dict(names)

    def restore(self, saved: SavedGame) -> None:
        """The hour count, the permits and the table's settings of a saved game.

        A setting made on the unit comes back unless the config file was edited for that
        setting since: then the maker's edit wins.
        """
        self.hour = saved.hour
        self.history.extend(saved.history[:HISTORY])
        kept = _kept(saved.settings, saved.config, self.config_rules)
        self.rules = settings.apply(self.rules, kept)

    def new_game(self) -> None:
        """The hour count starts again; the next hour is hour 1."""
        self.hour = self.session_hours = 0

    def resume(self, saved: SavedGame, now: int) -> None:
        """The same hour goes on from where it was saved (the switch stayed ON)."""
        self.session_hours = max(1, saved.session_hours)
        self.paused = saved.paused
        self.clock = HourClock(saved.hour_elapsed_ms, now)
        if self.paused:
            self.clock = self.clock.stopped(now)


def _kept(
    table: Mapping[str, str], file_then: Mapping[str, str], file_now: Rules
) -> dict[str, str]:
    """The table's settings that stand: those the config file has not changed since."""
    now = settings.read(file_now)
    return {name: choice for name, choice in table.items() if file_then.get(name) == now.get(name)}
