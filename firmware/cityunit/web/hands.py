"""A phone's hands on the unit: what a page with the token may do, any thread."""

from __future__ import annotations

from typing import Protocol

from cityunit.core.gestures import Button
from cityunit.loop.inbox import Input
from cityunit.loop.runtime import Runtime


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
        unit = self._runtime.unit

        def act(t: int, present: int) -> None:
            if down:
                unit.press(button, t, present)
            else:
                unit.release(button, t)

        self._runtime.inbox.put(Input(self._runtime.clock.now_ms(), act))

    def switch(self, on: bool) -> None:
        raise NotImplementedError("the switch is on the box")
