"""The console protocol (version 1): one text protocol to drive and watch the unit.

The same on hardware (a serial port) and in the simulator (stdio or a pty). Each
command gets exactly one reply, in order; `EVT` lines carry the unit's events once
asked for. A bad line gets `ERR` and the console goes on. Commands run on the loop
thread, through the same paths as the buttons.
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Callable, Mapping
from functools import partial
from typing import Protocol

from cityunit import __version__
from cityunit.console.lines import MAX_LINE, TooLong, blank
from cityunit.core import settings
from cityunit.core.events import LED, TONE, Event
from cityunit.core.gestures import Button
from cityunit.loop.clock import VirtualClock
from cityunit.loop.runtime import Runtime

PROTOCOL = "1.2"  # 1.1 added PROTOCOL and RESET to version 1; 1.2, SCREEN, EDGE, FAULT
MAX_HOLD_MS = 600_000
MAX_ADVANCE_MS = 7 * 24 * 3_600_000
_SPACE = re.compile(r"[ \t]+")  # words are separated by ASCII spaces and tabs, nothing else
_DIGITS = re.compile(r"[0-9]+")


# Encoders made once: json.dumps with options builds a new one on every call.
_COMPACT = json.JSONEncoder(separators=(",", ":")).encode
_TEXT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def event_json(event: Event) -> str:
    """One event as compact JSON. LED and tone changes, most of the stream (thousands an
    hour, a few levels and pitches), are written directly: the same bytes as the json
    module, each level's or pitch's text made once."""
    t, kind, data = event
    if kind is LED:
        if (tail := _LED_TAILS.get(level := data["level"])) is None:
            tail = _LED_TAILS[level] = f',"event":"led","level":{level!r}}}'
        return f'{{"t_ms":{t}{tail}'
    if kind is TONE:
        if (tail := _TONE_TAILS.get(hz := data["hz"])) is None:
            tail = _TONE_TAILS[hz] = f',"event":"tone","hz":{"null" if hz is None else hz}}}'
        return f'{{"t_ms":{t}{tail}'
    return _COMPACT(event.as_dict())


_LED_TAILS: dict[float, str] = {}  # (the patterns' few levels and pitches)
_TONE_TAILS: dict[int | None, str] = {}


class CommandError(Exception):
    """A command refused: its reply is `ERR <code> <message>`."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def shown(word: str) -> str:
    """A client's word, safe to echo back: at most 32 characters, anything but printable
    ASCII escaped (an ESC or a BEL must not reach the client's terminal)."""
    return "".join(c if " " <= c <= "~" else ascii(c)[1:-1] for c in word[:32])


def ascii_upper(word: str) -> str:
    """Case-insensitive in ASCII only: in Unicode, a dotless i upper-cases to I."""
    return word.upper() if word.isascii() else word


def ascii_lower(word: str) -> str:
    return word.lower() if word.isascii() else word


def _button(word: str) -> Button:
    try:
        return Button(ascii_lower(word))
    except ValueError:
        raise CommandError("bad-argument", "expected AUCTION or BUILD") from None


def number(word: str, lo: int, hi: int, what: str) -> int:
    """ASCII digits only: Python's int() would take "1_000", "+5", "-0" and other scripts'
    digits."""
    if not _DIGITS.fullmatch(word):
        raise CommandError("bad-argument", f"{what} must be a whole number (digits 0-9)")
    value = int(word)
    if not lo <= value <= hi:
        raise CommandError("bad-argument", f"{what} must be between {lo} and {hi}")
    return value


Command = Callable[[list[str]], str | None]  # its words after the name: the reply, or None
# What a session that only watches may send: it reads the unit, it never plays it.
WATCHING = frozenset(
    {"PING", "VERSION", "HELP", "PROTOCOL", "STATE", "EVENTS", "SETTINGS", "SCREEN"}
)
# The simulator's own commands (console/controls.py), with their arity and usage (None:
# any words): a unit without them checks a line's words, then refuses it as the simulator's.
SIMULATOR: dict[str, tuple[int, str] | None] = {
    "SEED": (1, "SEED <int>"),
    "RESET": (0, "RESET"),
    "SCREEN": (0, "SCREEN"),
    "EDGE": (2, "EDGE AUCTION|BUILD|POWER LOW|HIGH"),
    "FAULT": None,
}
# Every command of the protocol, in HELP's order.
ALL = ("PING", "VERSION", "HELP", "PRESS", "HOLD", "SWITCH", "STATE", "EVENTS", "ADVANCE",
       "SEED", "SETTINGS", "SET", "PROTOCOL", "RESET", "SCREEN", "EDGE", "FAULT")  # fmt: skip
PLAYING = frozenset({"PRESS", "HOLD", "SWITCH", "ADVANCE", "SET", *SIMULATOR} - WATCHING)


class Controls(Protocol):
    """Commands added to each session by whoever serves it (the simulator's: SIMULATOR).
    None may take a built-in command's name; `reads` names those a session that only
    watches may keep (they read the unit, never change it)."""

    reads: frozenset[str]

    def commands(self, session: Session) -> Mapping[str, Command]:
        """`session`'s own: each acts on its unit and answers it."""


class Session:
    """One console client. Lines go in through `receive` on the loop thread; replies go to
    `reply` and event lines (once asked for) to `event`, the same sink unless a front end
    keeps them apart. `controls` adds its commands; a `watching` session may only read."""

    def __init__(
        self,
        runtime: Runtime,
        reply: Callable[[str], None],
        event: Callable[[str], None] | None = None,
        *,
        controls: Controls | None = None,
        watching: bool = False,
    ) -> None:
        self.runtime = runtime
        self._reply_to = reply
        self._event_to = event or reply
        self.watching = watching
        self.events = False
        self._pending: deque[bytes | TooLong] = deque()
        self._busy = False  # a HOLD on the real clock finishes later; later lines wait
        self._present: int | None = None  # the loop's time as it handles this line
        self._forget = runtime.on_event(self._event)
        self.commands: dict[str, Command] = {
            "PING": self._ping,
            "VERSION": self._version,
            "HELP": self._help,
            "PRESS": self._press,
            "HOLD": self._hold,
            "SWITCH": self._switch,
            "STATE": self._state,
            "EVENTS": self._events,
            "ADVANCE": self._advance,
            "SETTINGS": self._settings,
            "SET": self._set,
            "PROTOCOL": self._protocol,
        }
        if watching:
            self.commands = {k: v for k, v in self.commands.items() if k in WATCHING}
        if controls is not None:
            added = controls.commands(self)
            if taken := added.keys() & set(ALL) - set(SIMULATOR):
                raise ValueError(f"controls may not replace the built-in {sorted(taken)}")
            self.commands.update(
                (k, v) for k, v in added.items() if not watching or k in controls.reads
            )

    def close(self) -> int:
        """No more events; the lines still waiting are dropped: how many."""
        self._forget()
        dropped = len(self._pending)
        self._pending.clear()
        return dropped

    @property
    def idle(self) -> bool:
        """Every line received is answered (none waits behind a HOLD)."""
        return not self._pending and not self._busy

    @property
    def virtual(self) -> bool:
        """The unit's clock is virtual: ADVANCE works, and a HOLD is answered at once."""
        return self.runtime.clock.virtual

    # ----- lines -------------------------------------------------------------------

    def receive(
        self, line: bytes | TooLong, t: int | None = None, present: int | None = None
    ) -> None:
        """A line that arrived at `t`: the loop has taken the unit there before calling
        this, so each command acts as of its line's arrival (`present`: the loop's time)."""
        self._present = present
        self._pending.append(line)
        self._drain()

    def _drain(self) -> None:
        while self._pending and not self._busy:
            self._run(self._pending.popleft())

    def _run(self, line: bytes | TooLong) -> None:
        if blank(line):
            return
        if isinstance(line, TooLong):
            self._reply(f"ERR line-too-long lines are at most {MAX_LINE} bytes")
            return
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError:
            self._reply("ERR bad-argument not UTF-8 text")
            return
        words = _SPACE.split(text.strip(" \t"))
        name, args = ascii_upper(words[0]), words[1:]
        try:
            payload = self._command(name, words[0])(args)
        except CommandError as e:
            self._reply(f"ERR {e.code} {e}")
            return
        if payload is not None:
            self._reply(payload)

    def _command(self, name: str, word: str) -> Command:
        command = self.commands.get(name)
        if command is not None:
            return command
        if self.watching and name in PLAYING:
            raise CommandError("not-allowed", f"{name} plays the unit: this session only watches")
        if name in SIMULATOR:
            return partial(self._simulator_only, name)
        raise CommandError("unknown-command", f"{shown(word)}; try HELP")

    def _simulator_only(self, name: str, args: list[str]) -> str:
        if (usage := SIMULATOR[name]) is not None:
            self.arity(args, *usage)
        raise CommandError("not-allowed", f"{name} is for the simulator only")

    def _reply(self, text: str) -> None:
        self.runtime.deliver()  # the events a command caused come before its reply
        self._reply_to(text)

    def present(self) -> int | None:
        """The loop's time as it handles the line now running (None: as of now)."""
        return self._present

    def _event(self, event: Event) -> None:
        if self.events:
            self._event_to("EVT " + event_json(event))

    # ----- commands ------------------------------------------------------------------

    @staticmethod
    def arity(args: list[str], n: int, usage: str) -> None:
        if len(args) != n:
            raise CommandError("bad-argument", f"usage: {usage}")

    def _ping(self, args: list[str]) -> str:
        self.arity(args, 0, "PING")
        return "OK PONG"

    def _version(self, args: list[str]) -> str:
        self.arity(args, 0, "VERSION")
        return f"OK {__version__}"

    def _help(self, args: list[str]) -> str:
        self.arity(args, 0, "HELP")
        # the simulator's too (a unit without them refuses them as such), and any extra
        simulator = {n for n in SIMULATOR if not self.watching or n in WATCHING}
        known = [n for n in ALL if n in self.commands or n in simulator]
        return "OK " + " ".join([*known, *(n for n in self.commands if n not in ALL)])

    def _press(self, args: list[str]) -> str:
        self.arity(args, 1, "PRESS AUCTION|BUILD")
        button = _button(args[0])
        unit = self.runtime.unit
        unit.press(button, unit.now, self._present)
        unit.release(button, unit.now)
        return "OK"

    def _hold(self, args: list[str]) -> str | None:
        self.arity(args, 2, "HOLD AUCTION|BUILD <ms>")
        button = _button(args[0])
        ms = number(args[1], 1, MAX_HOLD_MS, "ms")
        runtime = self.runtime
        pressed = runtime.unit.now
        runtime.unit.press(button, pressed, self._present)
        if self.virtual:
            self._advance_by(ms)
            runtime.unit.release(button, runtime.clock.now_ms())
            return "OK"
        self._busy = True

        def release(at: int) -> None:
            runtime.unit.release(button, at)
            self._busy = False
            self._present = None  # the lines that waited act as of now
            self._reply("OK")
            self._drain()

        runtime.later(pressed + ms, release)
        return None

    def _switch(self, args: list[str]) -> str:
        self.arity(args, 1, "SWITCH ON|OFF")
        word = ascii_upper(args[0])
        if word not in ("ON", "OFF"):
            raise CommandError("bad-argument", "expected ON or OFF")
        self.runtime.unit.switch(word == "ON", self.runtime.unit.now)
        return "OK"

    def _state(self, args: list[str]) -> str:
        self.arity(args, 0, "STATE")
        self.runtime.deliver()
        state = self.runtime.unit.state()
        state["clock"] = "virtual" if self.virtual else "real"
        state["t_ms"] = self.runtime.unit.now
        return "OK " + _TEXT(state)

    def _events(self, args: list[str]) -> str:
        self.arity(args, 1, "EVENTS ON|OFF")
        word = ascii_upper(args[0])
        if word not in ("ON", "OFF"):
            raise CommandError("bad-argument", "expected ON or OFF")
        self.runtime.deliver()  # events from before the switch are not shown after it
        self.events = word == "ON"
        return "OK"

    def _advance(self, args: list[str]) -> str:
        self.arity(args, 1, "ADVANCE <ms>")
        if not self.virtual:
            raise CommandError("not-allowed", "ADVANCE needs the virtual clock")
        self._advance_by(number(args[0], 0, MAX_ADVANCE_MS, "ms"))
        return "OK"

    def _advance_by(self, ms: int) -> None:
        clock = self.runtime.clock
        assert isinstance(clock, VirtualClock)
        self.runtime.advance_to(clock.now_ms() + ms, clock)
        self.runtime.deliver()  # (each save is written in its turn on the virtual clock)

    def _settings(self, args: list[str]) -> str:
        self.arity(args, 0, "SETTINGS")
        return "OK " + _COMPACT(self.runtime.unit.settings())

    def _set(self, args: list[str]) -> str:
        self.arity(args, 2, "SET <name> <value>")
        name, choice = ascii_lower(args[0]), ascii_lower(args[1])
        setting = settings.BY_NAME.get(name)
        if setting is None:
            known = ", ".join(settings.BY_NAME)
            raise CommandError("bad-argument", f"unknown setting {shown(name)}; settings: {known}")
        if choice not in setting.choices:
            allowed = ", ".join(setting.choices)
            raise CommandError("bad-argument", f"{name} is one of: {allowed}")
        self.runtime.unit.set_setting(name, choice, self.runtime.unit.now)
        return "OK"

    def _protocol(self, args: list[str]) -> str:
        self.arity(args, 0, "PROTOCOL")
        return f"OK {PROTOCOL}"
