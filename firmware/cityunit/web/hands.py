"""A phone's hands on the unit: what a page with the token may do."""

from __future__ import annotations

import asyncio
import hmac
import json
from collections.abc import Callable
from http import HTTPStatus
from typing import Protocol

from cityunit.core.gestures import Button
from cityunit.loop.inbox import Input
from cityunit.loop.runtime import Runtime
from cityunit.web.http import Refused, Request

HOLD_LIMIT_S = 8.0  # a button held from a phone that went away is let go (before the
# unit's own 10 s would call it a stuck button: a phone that vanished is no broken part)


class Hands(Protocol):
    """What a phone with the token may do to the unit (any thread)."""

    switch_on_page: bool  # the page offers the power switch (the simulator's phone)

    def press(self, button: Button, down: bool) -> None: ...

    def switch(self, on: bool) -> None: ...


class UnitHands:
    """A phone's press on a unit with real buttons: as the console's, through the loop.
    Its switch stays the one on the box (a page that turned it OFF would end the game)."""

    switch_on_page = False

    def __init__(self, runtime: Runtime) -> None:
        self._runtime = runtime

    def press(self, button: Button, down: bool) -> None:
        runtime = self._runtime

        def act(t: int, present: int) -> None:  # the loop's: only it touches the unit
            if down:
                runtime.unit.press(button, t, present)
            else:
                runtime.unit.release(button, t)

        runtime.inbox.put(Input(runtime.clock.now_ms(), act))

    def switch(self, on: bool) -> None:
        raise NotImplementedError("the switch is on the box")


class Presses:
    """A phone's press or switch, checked: the token (in constant time), then the body;
    a button held from a phone that never lets go is let go after HOLD_LIMIT_S. The
    phones' thread only (its asyncio loop keeps the holds' timers)."""

    def __init__(self, hands: Hands, token: Callable[[], str]) -> None:
        self.hands = hands
        self._token = token
        self._held: dict[Button, asyncio.TimerHandle] = {}

    def act(self, request: Request) -> None:
        """`request` (POST /press or /switch) done, or Refused with its 4xx."""
        given = request.headers.get("x-unit-token", "").encode("latin-1")
        if not hmac.compare_digest(given, self._token().encode()):
            raise Refused(HTTPStatus.FORBIDDEN, "the unit's screen shows the code to play")
        try:
            body = json.loads(request.body)
        except (ValueError, UnicodeDecodeError):
            raise Refused(HTTPStatus.BAD_REQUEST, "the body must be JSON") from None
        if not isinstance(body, dict):
            raise Refused(HTTPStatus.BAD_REQUEST, "the body must be a JSON object")
        if request.path == "/switch":
            if not isinstance(on := body.get("on"), bool):
                raise Refused(HTTPStatus.BAD_REQUEST, 'expected {"on": true|false}')
            self.hands.switch(on)
            return
        down, name = body.get("down"), body.get("button")
        if not isinstance(down, bool) or name not in ("auction", "build"):
            expected = 'expected {"button": "auction"|"build", "down": true|false}'
            raise Refused(HTTPStatus.BAD_REQUEST, expected)
        button = Button(name)
        if (held := self._held.pop(button, None)) is not None:
            held.cancel()
        if down:  # let go by itself if the phone never says so
            later = asyncio.get_running_loop().call_later
            self._held[button] = later(HOLD_LIMIT_S, self._let_go, button)
        self.hands.press(button, down)

    def _let_go(self, button: Button) -> None:
        del self._held[button]
        self.hands.press(button, False)
