"""A client of the console protocol, for tests and scripts: one class, the same against a
simulator it starts and against a unit on a serial port.

    from cityunit.console.client import Client

    with Client.simulator(seed=1) as unit:        # the virtual clock: time moves on demand
        unit.switch(True)
        unit.press("auction")
        end = unit.wait_for("auction.end", within_ms=60_000)
        assert 13_000 <= end["t_ms"] <= 50_000

Replies are matched to commands in order (the protocol gives exactly one each); event
lines are collected as they come, in `events`. `wait_for` advances a virtual clock, and
waits in real time on a real one.
"""

from __future__ import annotations

import base64
import itertools
import json
import sys
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Self

from cityunit.console import spawn
from cityunit.console.wire import (
    REPLY_TIMEOUT_S,
    Button,
    Contact,
    Level,
    Part,
    ProtocolError,
    State,
    Wire,
)
from cityunit.core.events import EventKind

__all__ = ["REPLY_TIMEOUT_S", "Button", "Client", "ProtocolError", "State"]

if TYPE_CHECKING:
    from PIL import Image

SCREEN_MAX = 1024  # a SCREEN reply's largest side: a unit's screens are 128 x 64
STEP_MS = 1_000  # how far wait_for advances a virtual clock at a time
EVENTS = frozenset({*map(str, EventKind), "dropped"})  # every event a unit can send


class _SimulatorCommands(Wire):
    """The commands only a simulator answers (a real unit refuses them: ERR not-allowed):
    SEED, and protocol 1.2's SCREEN, EDGE and FAULT."""

    def edge(self, contact: Contact, level: Level) -> None:
        """Simulator only: a raw level on a contact's pin ('auction', 'build' or 'power';
        'low': closed, 'high': open), debounced by the unit as a real contact's edge."""
        self.ok(f"EDGE {contact} {level}")

    def fault(self, part: Part, what: str | int) -> None:
        """Simulator only: a part broken or mended on purpose (FAULT): `fault("display",
        "gone")`, `("display", "back")`, `("bus", 3)` (its next 3 writes fail),
        `("save", "fail")`, `("save", "ok")`, `("save", 3)` (the next 3 saves fail),
        `("power", "cut")` (the unit starts again from its last save)."""
        self.ok(f"FAULT {part} {what}")

    def seed(self, seed: int) -> None:
        """Simulator only: reseed what picks auction lengths and permit draws."""
        self.ok(f"SEED {seed}")

    def _asked_simulator(self) -> bool | None:
        """SCREEN (protocol 1.2, read-only) is answered by a simulator, refused by a real
        unit; a unit of an older protocol knows no SCREEN, and `fresh()` tells then."""
        reply = self.send("SCREEN")
        if reply.startswith("ERR unknown-command"):
            return None
        return not reply.startswith("ERR not-allowed")

    def screen(self) -> Image.Image:
        """The picture the unit draws now (SCREEN, simulator only): a 1-bit PIL image."""
        from PIL import Image

        reply = self.ok("SCREEN")
        try:
            size, data = reply.split(" ")
            width, height = map(int, size.split("x"))
            pixels = base64.b64decode(data, validate=True)
        except ValueError:
            raise ProtocolError("SCREEN", f"OK {reply[:80]}") from None
        if not (0 < width <= SCREEN_MAX and 0 < height <= SCREEN_MAX) or len(pixels) != (
            (width + 7) // 8 * height
        ):
            raise ProtocolError("SCREEN", f"OK {reply[:80]}")  # not a picture of this size
        return Image.frombytes("1", (width, height), pixels)

    def assert_screen(self, golden: Path | str) -> None:
        """The unit's picture is the PNG `golden`, pixel for pixel (`picture.check`: on a
        difference the actual picture and the difference are written beside it)."""
        from cityunit.console import picture

        picture.check(self.screen(), Path(golden))


class Client(_SimulatorCommands):
    """One console connection. Use `Client.simulator(...)` or `Client.port(...)`, as a
    context manager (leaving it closes the connection and ends a simulator)."""

    def _connected(self) -> None:
        """What the unit is: its clock, whether it is a simulator, its time now."""
        state = self.state()
        self.virtual: bool = state["clock"] == "virtual"
        self.is_simulator: bool | None = self._asked_simulator()  # None: an older unit
        self.t0: int = state["t_ms"]  # unit time at the start (or at `fresh()`)

    # ----- making one ------------------------------------------------------------------

    @classmethod
    def simulator(
        cls,
        seed: int = 1,
        clock: str = "virtual",
        config: Path | str | None = None,
        python: str = sys.executable,
    ) -> Self:
        """A headless `cityunit sim` of this installation, on stdin/stdout."""
        command = [python, "-m", "cityunit", "sim", "--headless", "--console", "stdio"]
        command += ["--clock", clock, "--seed", str(seed)]
        if config is not None:
            command += ["--config", str(config)]
        return cls(*spawn.simulator(command))

    @classmethod
    def port(cls, url: str, baudrate: int = 115_200) -> Self:
        """A unit on a serial port, a pty or any pyserial URL (`socket://host:port`)."""
        import serial

        link = serial.serial_for_url(url.removeprefix("serial://"), baudrate=baudrate)
        link.timeout = None

        def read() -> bytes:
            try:
                return bytes(link.read(max(1, link.in_waiting)))
            # Closed under it: a port's handle goes (TypeError), socket:// sets its
            # socket to None (AttributeError).
            except (serial.SerialException, OSError, TypeError, AttributeError):
                return b""

        return cls(link.write, read, link.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- the commands ----------------------------------------------------------------

    def press(self, button: Button) -> None:
        """A short press of 'auction' or 'build'."""
        self.ok(f"PRESS {button}")

    def hold(self, button: Button, ms: int) -> None:
        """A press held `ms` of unit time (1500 or more: a long press); on a real clock the
        reply comes at the release."""
        self.ok(f"HOLD {button} {ms}", timeout_s=REPLY_TIMEOUT_S + ms / 1000)

    def switch(self, on: bool | Literal["on", "off"]) -> None:
        """The power switch: True or "on", False or "off" (anything else is a ValueError:
        any truthy value, "off" too, used to switch it ON)."""
        words = {True: "ON", False: "OFF", "on": "ON", "off": "OFF"}
        key = on.lower() if isinstance(on, str) else on
        if not isinstance(key, bool | str) or key not in words:
            raise ValueError(f"switch takes True, False, 'on' or 'off', not {on!r}")
        self.ok(f"SWITCH {words[key]}")

    def state(self) -> State:
        """The unit's STATE, with `clock` ('virtual' or 'real') and `t_ms`, its time now."""
        state: State = json.loads(self.ok("STATE"))
        return state

    def settings(self) -> dict[str, str]:
        """Each setting's name and its choice now."""
        settings: dict[str, str] = json.loads(self.ok("SETTINGS"))
        return settings

    def set(self, name: str, value: str) -> None:
        """Change one setting; a name or choice the unit does not know is a ProtocolError."""
        self.ok(f"SET {name} {value}")

    def advance(self, ms: int) -> None:
        """Virtual clock only: run every deadline up to `ms` from now."""
        self.ok(f"ADVANCE {ms}")

    def fresh(self) -> None:
        """Start from a known state: a simulator goes back to power-on (RESET); a real unit
        (which refuses RESET) is switched OFF. Events received so far are forgotten; unit
        time goes on (`t0` is where it stood)."""
        self._sync()
        reply = self.send("RESET")
        self.is_simulator = reply == "OK"
        if not self.is_simulator:
            if not reply.startswith("ERR not-allowed"):
                raise ProtocolError("RESET", reply)
            self.switch(False)
        self.forget_events()  # a command's events come before its reply: the rest are new
        self.ok("EVENTS ON")
        self.t0 = self.state()["t_ms"]

    # ----- events ----------------------------------------------------------------------

    def forget_events(self) -> None:
        """Events received so far are dropped (`wait_for` starts afresh too)."""
        with self._arrived:
            self.events.clear()
            self.event_lines.clear()
            self._waited.clear()
            self._by_name.clear()
            self._cursor.clear()

    def named(self, name: str) -> list[dict[str, Any]]:
        """Every event called `name` received so far."""
        with self._arrived:
            return [event for event in self.events if event["event"] == name]

    def iter_events(self, timeout_s: float | None = None) -> Iterator[dict[str, Any]]:
        """Each event as it comes, from the first received; ends after `timeout_s` with
        none new (None: never)."""
        for index in itertools.count():
            with self._arrived:
                if not self._arrived.wait_for(partial(self._has, index), timeout_s):
                    return
                event = self.events[index]
            yield event

    def _has(self, index: int) -> bool:
        return len(self.events) > index

    def wait_for(
        self, event: str, within_ms: int, step_ms: int = STEP_MS, **fields: Any
    ) -> dict[str, Any]:
        """The first event called `event` (with these fields) that no `wait_for` returned
        yet, received already or arriving within `within_ms` of unit time: advanced on a
        virtual clock, waited for on a real one. Raises TimeoutError; a name no unit sends
        is a ValueError at once. Its cost does not grow with the events before: each name
        keeps where its unreturned events begin."""
        if event not in EVENTS:
            raise ValueError(f"no event is called {event!r}; they are: {', '.join(sorted(EVENTS))}")

        def found() -> dict[str, Any] | None:
            places = self._by_name.get(event, [])
            start = self._cursor.get(event, 0)
            for k in range(start, len(places)):
                index = places[k]
                candidate = self.events[index]
                if index in self._waited or not candidate.items() >= fields.items():
                    continue
                self._waited.add(index)
                while start < len(places) and places[start] in self._waited:
                    start += 1
                self._cursor[event] = start
                return candidate
            return None

        with self._arrived:
            match = found()
        left = within_ms
        while match is None and left > 0 and self.virtual:
            step = min(step_ms, left)
            self.advance(step)
            left -= step
            with self._arrived:
                match = found()
        if match is None and not self.virtual:

            def arrived() -> bool:
                nonlocal match
                match = found()
                return match is not None

            with self._arrived:
                self._arrived.wait_for(lambda: arrived() or self._stopped, within_ms / 1000)
        if match is None and self._stopped:
            raise self._gone()
        if match is None:
            raise TimeoutError(f"no {event}{f' {fields}' if fields else ''} within {within_ms} ms")
        return match
