"""The unit's core: inputs stamped with unit time in, a snapshot and effects out.

No I/O, threads or sleeps, so a virtual clock replays an hour of play exactly and fast.
The contract with the loop that drives it:

- inputs: `edge`, `press`, `release`, `switch`, `set_setting`, `fault`, `boot`, each at
  its own time; `advance(t)` runs every timer up to `t`, in order;
- `next_deadline()`: when the core next needs to run: its earliest timer (the frame and
  the save are timers too);
- `snapshot()`: what the outputs must show, as one immutable value;
- `drain()`: the effects since the last call (events, a shutdown to run, a save due);
- `revision`: goes up whenever anything happened, so a loop knows when to look again.

What the unit does in each mode lives in `cityunit.core.modes`; the game that goes on across
modes (the hour, the pause, the permits drawn) in `cityunit.core.game`.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any

from cityunit.core import modes, settings, sounds
from cityunit.core.cues import Cues
from cityunit.core.debounce import Contact
from cityunit.core.events import Event, EventKind, new_event
from cityunit.core.game import Game
from cityunit.core.gestures import Button, Gesture, Gestures
from cityunit.core.hour import HOUR_MS, HourClock
from cityunit.core.notice import Notice
from cityunit.core.rules import Rules
from cityunit.core.saved import SavedGame
from cityunit.core.screens import PageLink, Screen
from cityunit.core.snapshot import Effects, Light, Picture, Snapshot, Sound
from cityunit.core.timers import Timers, earliest

SAVE_EVERY_MS = 5_000  # while the game clock runs: a crash loses at most this much play


class Unit(modes.Context):
    """One Monopoly City unit. Call `advance(t)` to let time pass; inputs carry their time."""

    def __init__(self, rules: Rules, rng: random.Random | None = None, now: int = 0) -> None:
        self.rng = rng or random.Random()
        self._power_on = (rules, self.rng.getstate())  # what `reset` goes back to
        self.revision = 0
        self._effects = Effects()
        self.page: PageLink | None = None  # see `show_page`; a reset keeps it
        self._start(rules, now)

    def _start(self, rules: Rules, now: int) -> None:
        """All that power-on makes anew (here, and in `reset`)."""
        self.now = now
        self.present = now  # the loop's time as it handles the latest input (see `edge`)
        self.timers = Timers()
        self.power = False
        # Two timers of the unit's own: the next save while the game clock runs, and the
        # screen's next frame (it moves on by itself: an animation, a clock).
        self._save = self.timers.timer(self.worth_saving)
        self._frame = self.timers.timer()  # only wakes: `_changed` tells the observers
        self._until = now  # where the advance under way goes (now, between advances)
        self.cues = Cues(self._told, self._silent)
        self.game = Game(self, rules)
        self._gestures = Gestures(self.timers, rules.long_press_ms, self._gesture)
        self._contacts = {
            name: Contact(rules.debounce_ms, self.timers, self._now, changed)
            for name, changed in (
                ("auction", partial(self._button, Button.AUCTION)),
                ("build", partial(self._button, Button.BUILD)),
                ("power", self._switch),
            )
        }
        self.mode: modes.Mode = modes.Off(self)
        self.notices = Notice(self.timers)

    def _now(self) -> int:
        return self.now

    def _silent(self) -> bool:
        return self.game.rules.volume == "off"

    # ----- time ----------------------------------------------------------------------

    def advance(self, t: int) -> None:
        """Run every timer up to `t` in order, the outputs stepping at each change between."""
        self._until = max(self.now, t)
        while True:
            at = self.timers.next()  # first, the outputs' steps before it (they set no timer)
            last = t if at is None or at > t else at - 1
            if (step := self.cues.next_at) is not None and step <= last:
                self.now = self.cues.run(self.now, last, self._effects.events)
                self.revision += 1
            if (due := self.timers.pop_due(t)) is None:
                break
            at, timer = due
            self.now = max(self.now, at)
            timer.fire()
            self._followed()
        self.now = self._until
        self._next_frame()
        self.cues.sync(self.now)

    def next_deadline(self) -> int | None:
        """Its earliest timer (a mode's step, the next frame or save) or output's step."""
        return earliest(self.timers.next(), self.cues.next_at)

    def loop_due(self, frames: bool) -> int | None:
        """The next save (and frame): a virtual clock's loop steps there, as a real one does."""
        return earliest(self._save.at, self._frame.at if frames else None)

    def _followed(self) -> None:
        """After each timer: the LED and the buzzer follow, and observers are told to
        look again."""
        self.cues.sync(self.now)
        self.revision += 1

    def _changed(self) -> None:
        """After each input: as after a timer, and the next frame as the input left it (an
        advance sets it once, at its end)."""
        self._followed()
        self._next_frame()

    def _next_frame(self) -> None:
        """The frame timer at the screen's next change after now. The frames an advance
        passes over are one change to look at, not one each: the timer fires once (at
        the first), and is set again from where the advance ends."""
        self._frame.set_or_cancel(self.mode.next_frame(self.now))

    # ----- inputs ----------------------------------------------------------------------

    def edge(self, name: str, level: bool, t: int, present: int | None = None) -> None:
        """A raw contact edge of 'auction', 'build' or 'power' at `t`; debounced here.

        `present`: the loop's time as it handles the edge, if later. What the edge means
        is decided as of `t`; its click and blip cannot start before `present`, so a
        press handled late is still heard and seen.
        """
        self.advance(t)
        self.present = max(self.now, t if present is None else present)
        self._contacts[name].edge(level, self.now)
        self._changed()

    def press(self, button: Button, t: int, present: int | None = None) -> None:
        """A clean (already debounced) button going down, as from the console."""
        self.advance(t)
        self.present = max(self.now, t if present is None else present)
        self._gestures.down(button, self.now)
        self._changed()

    def release(self, button: Button, t: int) -> None:
        self.advance(t)
        self._gestures.up(button, self.now)
        self._changed()

    def switch(self, on: bool, t: int) -> None:
        """The power switch, already debounced."""
        self.advance(t)
        self._switch(on)
        self._changed()

    def set_setting(self, name: str, choice: str, t: int) -> None:
        """Change one setting (the console's SET); raises KeyError/ValueError if unknown."""
        setting = settings.BY_NAME[name]
        if choice not in setting.choices:
            raise ValueError(choice)
        self.advance(t)
        self.game.set_rules(setting.put(self.game.rules, choice))
        self._changed()

    def fault(self, part: str, detail: str, t: int) -> None:
        """A part failed or came back (the display): told, and nothing else changes."""
        self.advance(t)
        self.emit(EventKind.FAULT, part=part, detail=detail)

    def reset(self) -> None:
        """Back to power-on (a simulator's RESET, its power cut): switch OFF, no game, the
        config's rules, the random source as it started; time and the revision go on."""
        rules, state = self._power_on
        self.rng.setstate(state)
        self._start(rules, self.now)
        self.revision += 1
        self.mode.enter()  # OFF from power-on: its power-off time runs
        self._next_frame()

    def reconfigure(self, rules: Rules, t: int) -> None:
        """The config file's rules, re-read while running (see Game.reconfigure)."""
        self.advance(t)
        self.game.reconfigure(rules)
        self.mode.rules_changed()
        self.notices.end()  # a refused file's notice: this one was read good
        self._changed()

    def notice(self, screen: Screen, t: int) -> None:
        """A screen over the mode's for a while (Notice), such as a refused config's."""
        self.advance(t)
        self.notices.show(screen, self.now)
        self._changed()

    def boot(self, switch_on: bool, saved: SavedGame | None, t: int) -> None:
        """Start up: take back a saved game, and the switch as it stands. With the switch
        still ON and a game that was on when saved (a crash, a pulled plug), the same hour
        goes on from its save; otherwise switching ON starts a new hour, as on the original."""
        self.advance(t)
        if saved is not None:
            self.game.restore(saved)
        self._contacts["power"].assume(switch_on)
        if switch_on and saved is not None and saved.power:
            self._resume(saved)
        elif switch_on:
            self._switch(True)
        else:
            self.to("off")  # OFF from the start: its power-off time runs
        self.worth_saving()
        self._changed()

    # ----- outputs ---------------------------------------------------------------------

    def snapshot(self) -> Snapshot:
        game = self.game
        return Snapshot(
            t_ms=self.now,
            revision=self.revision,
            power=self.power,
            mode=self.mode.name,
            hour=game.hour if self.power else 0,
            clock=game.clock if self.power else HourClock(),
            paused=game.paused,
            permit=self.mode.permit,
            light=Light(self.cues.level),
            sound=Sound(self.cues.hz, game.rules.volume),
            picture=Picture(self.notices.screen or self.mode.screen(self.now), game.rules.language),
        )

    def state(self) -> dict[str, Any]:
        return self.snapshot().state()

    def drain(self) -> Effects:
        effects, self._effects = self._effects, Effects()
        return effects

    def saved(self) -> SavedGame:
        """The game as it must survive a crash or a power cut."""
        return self.game.saved(self.now, self.power)

    def settings(self) -> dict[str, str]:
        return settings.read(self.game.rules)

    # ----- what modes and the game ask of the unit (modes.Context, game.Host) -------------

    def emit(self, kind: EventKind, **data: Any) -> None:
        self._told(self.now, kind, data)

    def _told(self, t: int, kind: EventKind, data: dict[str, Any]) -> None:
        """An event at `t` (the outputs' steps tell theirs at each step's own time)."""
        self._effects.events.append(new_event(Event, (t, kind, data)))
        self.revision += 1

    def worth_saving(self) -> None:
        """The game changed in a way worth saving; while its clock runs, save again soon."""
        self._effects.save = True
        running = self.game.clock.running  # then 5 s after where the advance under way ends
        self._save.set_or_cancel(self._until + SAVE_EVERY_MS if running else None)
        self.revision += 1

    def request_shutdown(self) -> None:
        self._effects.shutdown = True

    def enter(self, mode: modes.Mode) -> None:
        self.mode.leave()
        self.mode = mode
        mode.enter()
        self.worth_saving()

    def new_hour(self) -> None:
        self.game.stop()
        self.game.start_hour(self.now, show=partial(self.to, "idle"))

    def show_page(self, page: PageLink) -> None:
        """The players' page is served: the menu shows where, with the token (which lets a
        phone press the buttons) in its QR code only, never in STATE's text."""
        self.page = page
        self._changed()

    def new_game(self) -> None:
        """The menu's NEW GAME: the hour count starts again at 1."""
        self.game.new_game()
        self.emit(EventKind.NEW_GAME)
        self.new_hour()

    def to(self, name: modes.ModeName, **options: Any) -> None:
        self.enter(modes.BY_NAME[name](self, **options))

    def hour_over(self) -> None:
        self.mode.hour_over()

    # ----- gestures and the switch ---------------------------------------------------------

    def _button(self, button: Button, down: bool) -> None:
        (self._gestures.down if down else self._gestures.up)(button, self.now)

    def _gesture(self, gesture: Gesture, button: Button | None) -> None:
        if gesture in (Gesture.STUCK, Gesture.UNSTUCK):
            detail = "stuck down: ignored" if gesture is Gesture.STUCK else "released"
            self.emit(EventKind.FAULT, part=f"button.{button}", detail=detail)
            return
        if gesture is Gesture.DOWN:
            self.notices.end()
        self.mode.gesture(gesture, button)

    def _switch(self, on: bool) -> None:
        if on == self.power:
            return
        self.power = on
        self.emit(EventKind.POWER, on=on)
        self._gestures.hold_again(self.now)
        if on:
            self.game.session_hours = 0
            self.new_hour()
            self.cues.play(sounds.POWER_ON, self.now)
        else:
            self.mode.switched_off()
            self.game.stop()
            self.to("off", notice=True)

    def _resume(self, saved: SavedGame) -> None:
        self.power = True
        self.emit(EventKind.POWER, on=True)
        game = self.game
        game.resume(saved, self.now)
        self.emit(EventKind.RESUME, hour=game.hour, hour_elapsed_ms=game.clock.banked)
        self.to("idle", resumed=True)
        self.cues.play(sounds.POWER_ON, self.now)
        if game.clock.banked >= HOUR_MS and game.last_hour():
            game.end()
        else:
            game.schedule()
