"""The unit itself: modes, the hour clock, auctions and permits, with no I/O at all.

It takes inputs stamped with unit time (ms), runs its deadlines in order when told
the time, and leaves behind the events it produced and the state of its outputs.
Nothing here sleeps, threads or touches hardware, so a virtual clock replays an hour
of play exactly and fast.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from cityunit import settings, sounds
from cityunit.deadlines import Deadlines
from cityunit.debounce import Debouncer
from cityunit.gestures import Button, Gesture, Gestures
from cityunit.hour import HourClock
from cityunit.patterns import Pattern, Track
from cityunit.permit import draw
from cityunit.rules import HOUR_MS, Permit, Rules, warning_times
from cityunit.screens import (
    AuctionScreen,
    Blank,
    HourEndScreen,
    HourScreen,
    MenuScreen,
    PermitScreen,
    Screen,
    ShutdownScreen,
    SoldScreen,
)


class Mode(StrEnum):
    OFF = "off"
    IDLE = "idle"
    AUCTION = "auction"
    PERMIT = "permit"
    HOUR_END = "hour_end"
    SHUTDOWN = "shutdown"
    SETTINGS = "settings"


@dataclass(frozen=True)
class Event:
    t_ms: int
    event: str
    data: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"t_ms": self.t_ms, "event": self.event, **self.data}


@dataclass
class _Auction:
    start: int
    length: int
    final: bool = False


AUCTION_FRAME_MS = 500
AUCTION_FINAL_FRAME_MS = 250
SOLD_SHOW_MS = 3_000
STATION_FLASH_MS = 400
REMINDER_MS = 60_000
SHUTDOWN_MS = 2_000
HISTORY = 10
MENU_IDLE_MS = 30_000  # the menu closes by itself after this long untouched
MENU = [s.name for s in settings.SETTINGS] + ["history", "new_game"]
RESUMED_SHOW_MS = 8_000


def _nothing() -> None:
    """A deadline that only wakes the unit (an output pattern's next step)."""


class Unit:
    """One Monopoly City unit. Call `advance(t)` to let time pass; inputs carry their time."""

    def __init__(self, rules: Rules, rng: random.Random | None = None, now: int = 0) -> None:
        self.rules = rules
        self._config_rules = rules  # what the config file says, before the table's settings
        self.rng = rng or random.Random()
        self.now = now
        self.events: list[Event] = []
        self._deadlines = Deadlines()
        self._gestures = Gestures(self._deadlines, rules.long_press_ms, self._gesture)
        self._debounce: dict[str, Debouncer] = {}
        self.led: Track[float] = Track(0.0)
        self.buzzer: Track[int | None] = Track(None)
        self.led_level = 0.0
        self.tone_hz: int | None = None

        self.power = False
        self.mode = Mode.OFF
        self.hour = 0  # the hour of play; counts on across OFF/ON
        self.session_hours = 0  # hours since the switch went ON
        self.paused = False
        self.clock = HourClock()
        self._auction: _Auction | None = None
        self._game_over_pending = False
        self.permit: Permit | None = None  # the permit on show
        self._drawn: Permit | None = None  # the permit being revealed by the animation
        self._permit_at = 0
        self.history: deque[Permit] = deque(maxlen=HISTORY)
        self._sold: tuple[bool, int] | None = None  # (stopped early, shown until)
        self.shutdown_requested = False
        self._resumed_until = 0  # the screen says the game was taken back until then
        self._menu = 0  # the menu's item, in SETTINGS mode

    # ----- time -----------------------------------------------------------------

    def advance(self, t: int) -> None:
        """Run every deadline up to `t`, each at its own time, in order."""
        while (due := self._deadlines.pop_due(t)) is not None:
            self.now = max(self.now, due.t)
            due.run()
            self._sync_outputs()
        self.now = max(self.now, t)
        self._sync_outputs()

    def next_deadline(self) -> int | None:
        """When the unit next needs to run: a deadline, or a screen that changes by itself."""
        times = [t for t in (self._deadlines.next(), self._next_frame()) if t is not None]
        return min(times, default=None)

    def drain(self) -> list[Event]:
        events, self.events = self.events, []
        return events

    # ----- inputs ----------------------------------------------------------------

    def edge(self, name: str, level: bool, t: int) -> None:
        """A raw contact edge of 'auction', 'build' or 'power'; debounced here."""
        self.advance(t)
        bouncer = self._debounce.setdefault(name, Debouncer(self.rules.debounce_ms))
        self._debounced(name, bouncer, bouncer.edge(level, self.now))
        self._sync_outputs()

    def _debounced(self, name: str, bouncer: Debouncer, level: bool | None) -> None:
        """Act on a debounced edge, and check the contact again when its window closes."""
        if bouncer.quiet_at is not None:
            self._deadlines.set(
                f"debounce.{name}",
                bouncer.quiet_at,
                lambda: self._debounced(name, bouncer, bouncer.settle(self.now)),
            )
        if level is None:
            return
        if name == "power":
            self._switch(level)
        elif level:
            self._gestures.down(Button(name), self.now)
        else:
            self._gestures.up(Button(name), self.now)

    def boot(self, switch_on: bool, saved: dict[str, Any] | None, t: int) -> None:
        """Start up: take back a saved game, and the switch as it stands.

        With the switch still ON and a game that was on when saved (a crash, a pulled
        plug), the same hour goes on from where it was saved. Otherwise switching ON
        starts a new hour, as on the original.
        """
        self.advance(t)
        if saved is not None:
            self.hour = saved["hour"]
            self.history.extend(saved["history"][:HISTORY])
            # Settings made on the unit come back, unless the config file was edited
            # for that setting since: then the maker's edit wins.
            config_now = settings.read(self._config_rules)
            config_then = saved.get("config", {})
            kept = {
                name: choice
                for name, choice in saved.get("settings", {}).items()
                if config_then.get(name) == config_now.get(name)
            }
            self.rules = settings.apply(self.rules, kept)
        bouncer = self._debounce.setdefault("power", Debouncer(self.rules.debounce_ms))
        bouncer.level = bouncer.raw = switch_on
        if switch_on and saved is not None and saved["power"]:
            self._resume(saved)
        elif switch_on:
            self._switch(True)
        self._sync_outputs()

    def snapshot(self) -> dict[str, Any]:
        """What must survive a crash or a power cut (issue: nothing is lost)."""
        return {
            "power": self.power,
            "hour": self.hour,
            "session_hours": self.session_hours,
            "hour_elapsed_ms": self.hour_elapsed(),
            "paused": self.paused,
            "history": list(self.history),
            "settings": settings.read(self.rules),
            "config": settings.read(self._config_rules),
        }

    def settings(self) -> dict[str, str]:
        return settings.read(self.rules)

    def set_setting(self, name: str, choice: str, t: int) -> None:
        """Change one setting (the console's SET); raises KeyError/ValueError if unknown."""
        setting = settings.BY_NAME[name]
        if choice not in setting.choices:
            raise ValueError(choice)
        self.advance(t)
        self._set_rules(setting.put(self.rules, choice))
        self._sync_outputs()

    def press(self, button: Button, t: int) -> None:
        """A clean (already debounced) button going down, as from the console."""
        self.advance(t)
        self._gestures.down(button, self.now)
        self._sync_outputs()

    def release(self, button: Button, t: int) -> None:
        self.advance(t)
        self._gestures.up(button, self.now)
        self._sync_outputs()

    def switch(self, on: bool, t: int) -> None:
        """The power switch, already debounced."""
        self.advance(t)
        self._switch(on)
        self._sync_outputs()

    # ----- state -----------------------------------------------------------------

    def hour_elapsed(self) -> int:
        if not self.power:
            return 0
        return self.clock.elapsed(self.now)

    @property
    def screen(self) -> Screen:
        now = self.now
        if self.mode is Mode.SHUTDOWN:
            return ShutdownScreen()
        if self.mode is Mode.OFF:
            return Blank()
        if self.mode is Mode.HOUR_END:
            return HourEndScreen(self.session_hours)
        if self.mode is Mode.SETTINGS:
            return self._menu_screen()
        if self.mode is Mode.AUCTION and self._auction is not None:
            a = self._auction
            countdown = None
            if self.rules.auction_mode == "fixed":
                countdown = -(-(a.start + a.length - now) // 1000)
            return AuctionScreen(self._auction_frame(a), countdown)
        if self.mode is Mode.PERMIT:
            since = now - self._permit_at
            if self.permit is None:
                faces = (1, 2, 3, "station")
                return PermitScreen(faces[(since // sounds.DRAW_FRAME_MS) % 4], drawing=True)
            visible = self.permit != "station" or (since // STATION_FLASH_MS) % 2 == 0
            return PermitScreen(self.permit, visible=visible)
        if self._sold is not None and now < self._sold[1]:
            return SoldScreen(self._sold[0])
        clock = None
        if self.rules.show_clock:
            seconds = self.hour_elapsed() // 1000
            clock = f"{seconds // 60:02d}:{seconds % 60:02d}"
        return HourScreen(self.hour, clock, self.paused, resumed=now < self._resumed_until)

    def _menu_screen(self) -> MenuScreen:
        lang, item = self.rules.language, MENU[self._menu]
        if item in settings.BY_NAME:
            setting = settings.BY_NAME[item]
            return MenuScreen(self._menu, len(MENU), item, setting.title[lang],
                              setting.label(setting.get(self.rules), lang))  # fmt: skip
        return MenuScreen(self._menu, len(MENU), item, "", "", tuple(self.history))

    def _auction_frame(self, a: _Auction) -> int:
        return (self.now - a.start) // AUCTION_FRAME_MS

    def _next_frame(self) -> int | None:
        """When the screen will next change by itself (animation, clock), if ever."""
        now, at = self.now, None
        if self.mode is Mode.AUCTION and self._auction is not None:
            a = self._auction
            at = a.start + (self._auction_frame(a) + 1) * AUCTION_FRAME_MS
            if self.rules.auction_mode == "fixed":
                at = min(at, now + 1000 - (a.start + a.length - now) % 1000)
        elif self.mode is Mode.PERMIT:
            step = sounds.DRAW_FRAME_MS if self.permit is None else STATION_FLASH_MS
            if self.permit is None or self.permit == "station":
                at = now + step - (now - self._permit_at) % step
        elif self.mode is Mode.IDLE:
            if self._sold is not None and now < self._sold[1]:
                at = self._sold[1]
            elif now < self._resumed_until:
                at = self._resumed_until
            elif self.rules.show_clock and self.clock.running:
                at = now + 1000 - self.hour_elapsed() % 1000
        return at

    def state(self) -> dict[str, Any]:
        """The unit as the console's STATE shows it (never an auction's time left)."""
        return {
            "power": "on" if self.power else "off",
            "mode": str(self.mode),
            "hour": self.hour if self.power else 0,
            "hour_elapsed_ms": self.hour_elapsed(),
            "paused": self.paused,
            "led": self.led_level,
            "tone_hz": self.tone_hz,
            "permit": self.permit,
            "volume": self.rules.volume,
            "screen": self.screen.lines(self.rules.language),
        }

    # ----- outputs ---------------------------------------------------------------

    def _emit(self, event: str, **data: Any) -> None:
        self.events.append(Event(self.now, event, data))

    def _sync_outputs(self) -> None:
        now = self.now
        level, led_ms = self.led.state(now)
        if level != self.led_level:
            self.led_level = level
            self._emit("led", level=level)
        hz, tone_ms = self.buzzer.state(now)
        if self.rules.volume == "off":
            hz = None  # silent; every light signal stays
        if hz != self.tone_hz:
            self.tone_hz = hz
            self._emit("tone", hz=hz)
        for name, ms in (("led", led_ms), ("tone", tone_ms)):
            if ms is None:
                self._deadlines.cancel(name)
            else:
                self._deadlines.set(name, now + ms, _nothing)

    def _light(self, pattern: Pattern[float]) -> None:
        self.led.set_base(pattern, self.now)

    def _play(self, tune: Pattern[int | None]) -> None:
        self.buzzer.play(tune, self.now)

    def _mode_light(self) -> Pattern[float]:
        if self.mode is Mode.HOUR_END:
            return sounds.LIT
        if self.paused:
            return sounds.PAUSED
        return sounds.DARK

    # ----- gestures --------------------------------------------------------------

    def _gesture(self, gesture: Gesture, button: Button | None) -> None:
        if gesture in (Gesture.STUCK, Gesture.UNSTUCK):
            detail = "stuck down: ignored" if gesture is Gesture.STUCK else "released"
            self._emit("fault", part=f"button.{button}", detail=detail)
            return
        if not self.power:
            if gesture is Gesture.CHORD_HOLD and self.mode is Mode.OFF:
                self._shutdown()
            return
        if gesture is Gesture.DOWN:
            self._feedback()
        elif gesture is Gesture.TAP:
            self._tap(button)
        elif gesture is Gesture.LONG:
            self._long(button)
        elif gesture is Gesture.CHORD and self.mode is not Mode.HOUR_END:
            self._toggle_pause()

    def _feedback(self) -> None:
        """A click and a blip the instant a button goes down, whatever it will mean."""
        self._play(sounds.CLICK)
        blip = 0.0 if self.led.base_value(self.now) >= 0.5 else 1.0
        self.led.play(Pattern(((blip, sounds.BLIP_MS),)), self.now)

    def _tap(self, button: Button | None) -> None:
        mode = self.mode
        if mode is Mode.SETTINGS:
            self._menu_tap(button)
            return
        if button is Button.AUCTION:
            if mode is Mode.AUCTION:
                self._end_auction(stopped=True)
            elif mode in (Mode.IDLE, Mode.PERMIT):
                self._start_auction()
        elif button is Button.BUILD and (
            mode is Mode.IDLE or (mode is Mode.PERMIT and self.permit is not None)
        ):
            self._start_draw()

    def _long(self, button: Button | None) -> None:
        if self.mode is Mode.SETTINGS:
            self._close_menu()
            return
        if button is Button.BUILD and self.mode is Mode.IDLE:
            self._open_menu()
            return
        if button is Button.AUCTION:
            if self.mode is Mode.AUCTION:
                self._end_auction(stopped=True, cancelled=True)
            elif self.mode is Mode.HOUR_END:
                self._new_hour()
        elif button is Button.BUILD and self.mode is Mode.PERMIT and self.permit is not None:
            self._to_idle()

    # ----- the settings menu -----------------------------------------------------

    def _open_menu(self) -> None:
        self.mode = Mode.SETTINGS
        self._menu = 0
        self._sold = None
        self._play(sounds.MENU_OPEN)
        self._deadlines.set("menu", self.now + MENU_IDLE_MS, self._close_menu)

    def _close_menu(self) -> None:
        self._deadlines.cancel("menu")
        if self.mode is Mode.SETTINGS:
            self.mode = Mode.IDLE
            self._play(sounds.MENU_CLOSE)

    def _menu_tap(self, button: Button | None) -> None:
        """BUILD moves to the next item; AUCTION changes it."""
        self._deadlines.set("menu", self.now + MENU_IDLE_MS, self._close_menu)
        item = MENU[self._menu]
        if button is Button.BUILD:
            self._menu = (self._menu + 1) % len(MENU)
        elif item in settings.BY_NAME:
            self._set_rules(settings.cycle(self.rules, item))
            self._play(sounds.MENU_CHANGE)
        elif item == "new_game":
            self._close_menu()
            self.hour = 0
            self.session_hours = 0
            self._emit("new_game")
            self._new_hour()

    def _set_rules(self, rules: Rules) -> None:
        before = settings.read(self.rules)
        self.rules = rules
        for name, choice in settings.read(rules).items():
            if before[name] != choice:
                self._emit("setting", name=name, value=choice)
        if self.clock.running:
            self._schedule_hour()

    # ----- power -----------------------------------------------------------------

    def _switch(self, on: bool) -> None:
        if on == self.power:
            return
        self.power = on
        self._emit("power", on=on)
        if on:
            self.session_hours = 0
            self._new_hour()
            self._play(sounds.POWER_ON)
        else:
            if self._auction is not None:
                self._emit("auction.end", stopped=True, cancelled=True)
            self._reset_play()
            self.mode = Mode.OFF
            self.led.silence(self.now)
            self.buzzer.silence(self.now)

    def _reset_play(self) -> None:
        self._deadlines.cancel(
            "hour",
            "reminder",
            "shutdown",
            "menu",
            "auction.final",
            "auction.end",
            "permit.reveal",
            "permit.expire",
        )
        self._auction = None
        self._game_over_pending = False
        self.permit = self._drawn = None
        self._sold = None
        self.paused = False
        self.clock.reset()

    def _shutdown(self) -> None:
        """Both buttons held while OFF: light and sound confirm, then the Pi may halt."""
        self.mode = Mode.SHUTDOWN
        self.shutdown_requested = True
        self._emit("shutdown")
        self._light(sounds.SHUTDOWN_LIGHT)
        self._play(sounds.SHUTDOWN)
        self._deadlines.set("shutdown", self.now + SHUTDOWN_MS, self._shutdown_done)

    def _shutdown_done(self) -> None:
        self.mode = Mode.OFF
        self.led.silence(self.now)
        self.buzzer.silence(self.now)

    def _resume(self, saved: dict[str, Any]) -> None:
        self.power = True
        self._emit("power", on=True)
        self.session_hours = max(1, saved["session_hours"])
        self.paused = saved["paused"]
        self.clock.start(self.now, banked=saved["hour_elapsed_ms"])
        if self.paused:
            self.clock.stop(self.now)
        self.mode = Mode.IDLE
        self._emit("resume", hour=self.hour, hour_elapsed_ms=self.clock.banked)
        self._resumed_until = self.now + RESUMED_SHOW_MS
        self._play(sounds.POWER_ON)
        if self.clock.banked >= HOUR_MS and self._last_hour():
            self.clock.stop(self.now)
            self._game_over()
        else:
            self._light(self._mode_light())
            self._schedule_hour()

    # ----- the hour --------------------------------------------------------------

    def _new_hour(self) -> None:
        self._reset_play()
        self.hour += 1
        self.session_hours += 1
        self.clock.start(self.now)
        self.mode = Mode.IDLE
        self._light(self._mode_light())
        self._emit("hour.start", hour=self.hour)
        self._schedule_hour()

    def _last_hour(self) -> bool:
        return 0 < self.rules.game_hours <= self.session_hours

    def _schedule_hour(self) -> None:
        """One deadline: the next warning beep or the end of the hour."""
        self._deadlines.cancel("hour")
        if not self.clock.running:
            return
        elapsed = self.hour_elapsed()
        target = HOUR_MS
        if self._last_hour():
            for left in warning_times(self.rules.warning_minutes * 60_000):
                if HOUR_MS - left > elapsed:
                    target = HOUR_MS - left
                    break
        at = self.clock.when(target)
        assert at is not None
        self._deadlines.set("hour", at, self._on_hour)

    def _on_hour(self) -> None:
        remaining = HOUR_MS - self.hour_elapsed()
        if remaining > 0:
            self._emit("hour.warning", remaining_ms=remaining)
            self._play(sounds.HOUR_WARNING)
            self._schedule_hour()
            return
        self._emit("hour.end", hour=self.hour)
        if not self._last_hour():
            self._play(sounds.HOUR_SIGNAL)
            self.hour += 1
            self.session_hours += 1
            self.clock.start(self.now)
            self._emit("hour.start", hour=self.hour)
            self._schedule_hour()
            return
        self.clock.stop(self.now)
        if self.mode is Mode.AUCTION:
            self._game_over_pending = True  # the auction running now finishes first
        else:
            self._game_over()

    def _game_over(self) -> None:
        self._deadlines.cancel("permit.reveal", "permit.expire")
        self.permit = self._drawn = None
        self._sold = None
        self.mode = Mode.HOUR_END
        self._light(self._mode_light())
        self._play(sounds.HOUR_END)
        self._deadlines.set("reminder", self.now + REMINDER_MS, self._remind)

    def _remind(self) -> None:
        self._play(sounds.REMINDER)
        self._deadlines.set("reminder", self.now + REMINDER_MS, self._remind)

    def _toggle_pause(self) -> None:
        if self.paused:
            self.paused = False
            self.clock.start(self.now, banked=self.clock.banked)
            self._play(sounds.RESUME)
        else:
            self.clock.stop(self.now)
            self.paused = True
            self._play(sounds.PAUSE)
        self._emit("pause", paused=self.paused)
        if self.mode is Mode.IDLE:
            self._light(self._mode_light())
        self._schedule_hour()

    # ----- auctions and deals ----------------------------------------------------

    def _auction_length(self) -> int:
        r = self.rules
        if r.auction_mode == "fixed":
            return r.auction_fixed_s * 1000
        return self.rng.randint(r.auction_min_s * 1000, r.auction_max_s * 1000)

    def _start_auction(self) -> None:
        self._clear_permit()
        self._sold = None
        a = self._auction = _Auction(self.now, self._auction_length())
        self.mode = Mode.AUCTION
        self._emit("auction.start")
        self._light(sounds.AUCTION_FLASH)
        self._play(sounds.AUCTION_START)
        final_at = a.start + max(0, a.length - self.rules.auction_final_s * 1000)
        self._deadlines.set("auction.final", final_at, self._auction_final)
        self._deadlines.set("auction.end", a.start + a.length, self._end_auction)

    def _auction_final(self) -> None:
        if self._auction is not None:
            self._auction.final = True
        self._emit("auction.final")
        self._light(sounds.AUCTION_FINAL_FLASH)
        self.buzzer.set_base(sounds.FINAL_BEEPS, self.now)

    def _end_auction(self, stopped: bool = False, cancelled: bool = False) -> None:
        self._deadlines.cancel("auction.final", "auction.end")
        self._auction = None
        data: dict[str, Any] = {"stopped": stopped}
        if cancelled:
            data["cancelled"] = True
        self._emit("auction.end", **data)
        self.mode = Mode.IDLE
        self.buzzer.silence(self.now)
        if cancelled:
            self._play(sounds.CANCELLED)
        else:
            self._play(sounds.STOPPED if stopped else sounds.SOLD)
            self._sold = (stopped, self.now + SOLD_SHOW_MS)
        self._light(self._mode_light())
        if self._game_over_pending:
            self._game_over_pending = False
            self._game_over()

    # ----- build permits ---------------------------------------------------------

    def _start_draw(self) -> None:
        self._sold = None
        self.mode = Mode.PERMIT
        self.permit = None
        self._drawn = draw(self.rng, self.rules.odds)
        self._permit_at = self.now
        self._light(self._mode_light())
        self._play(sounds.DRAW)
        self._deadlines.cancel("permit.expire")
        self._deadlines.set("permit.reveal", self.now + sounds.DRAW_MS, self._reveal)

    def _reveal(self) -> None:
        value = self._drawn
        assert value is not None
        self.permit, self._drawn = value, None
        self._permit_at = self.now
        self.history.appendleft(value)
        self._emit("permit", value=value)
        self._play(sounds.permit_tune(value))
        self._light(sounds.permit_light(value))
        show_ms = self.rules.permit_show_s * 1000
        self._deadlines.set("permit.expire", self.now + show_ms, self._to_idle)

    def _clear_permit(self) -> None:
        self._deadlines.cancel("permit.reveal", "permit.expire")
        self.permit = self._drawn = None

    def _to_idle(self) -> None:
        self._clear_permit()
        self.mode = Mode.IDLE
        self._light(self._mode_light())
