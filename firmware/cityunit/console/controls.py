"""The simulator's commands (protocol.SIMULATOR), added to a session by whoever serves a
simulated unit: SEED, EDGE and SCREEN act on the unit alone; RESET and FAULT also on the
parts a simulator can break, which it hands over as a `Workshop`. A unit served without
them (`cityunit run`) refuses them as the simulator's; the loop knows none of them."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from functools import partial
from typing import Protocol

from cityunit.console.protocol import (
    SIMULATOR,
    Command,
    CommandError,
    Session,
    ascii_lower,
    ascii_upper,
    number,
)

MAX_SEED = 2**64 - 1


def _arity(session: Session, args: list[str], name: str) -> None:
    usage = SIMULATOR[name]
    assert usage is not None
    session.arity(args, *usage)


class Workshop(Protocol):
    """The parts a simulator can break on purpose (FAULT) and mend (RESET)."""

    def inject(self, words: list[str]) -> None:
        """FAULT's words, lower-cased; ValueError (its message the reply) for others."""

    def mend(self) -> None:
        """Every part broken on purpose works again."""


class SimulatorControls:
    """protocol.Controls for a simulated unit; `workshop`: its breakable parts, if any.
    (The simulator's board is its own workshop.)"""

    reads = frozenset({"SCREEN"})  # what a session that only watches keeps

    def __init__(self, workshop: Workshop | None = None) -> None:
        self.workshop = workshop

    def commands(self, session: Session) -> Mapping[str, Command]:
        return {
            "SEED": partial(self._seed, session),
            "RESET": partial(self._reset, session),
            "SCREEN": partial(self._screen, session),
            "EDGE": partial(self._edge, session),
            "FAULT": partial(self._fault, session),
        }

    @staticmethod
    def _seed(session: Session, args: list[str]) -> str:
        _arity(session, args, "SEED")
        session.runtime.unit.rng.seed(number(args[0], 0, MAX_SEED, "the seed"))
        return "OK"

    def _reset(self, session: Session, args: list[str]) -> str:
        """Back to power-on: the core as it started, every part broken on purpose mended,
        nothing known of the parts, and the fresh game saved before the reply, so that a
        power cut after it finds no older game."""
        _arity(session, args, "RESET")
        runtime = session.runtime
        runtime.deliver()  # what happened before is told before it is forgotten
        runtime.unit.reset()
        if self.workshop is not None:
            self.workshop.mend()
        saver = runtime.saver
        if saver is not None:
            saver.flush(1.0)  # a save on its way fails or lands before the forgetting
        runtime.restarted()
        if saver is not None:
            saver.save(runtime.unit.saved())
            saver.flush(1.0)
        return "OK"

    @staticmethod
    def _screen(session: Session, args: list[str]) -> str:
        """The picture the unit draws now, as the OLED gets it (see docs/protocol.md)."""
        _arity(session, args, "SCREEN")
        from cityunit.display.render import HEIGHT, WIDTH, render

        session.runtime.deliver()
        snapshot = session.runtime.unit.snapshot()
        picture = render(*snapshot.picture).tobytes()
        return f"OK {WIDTH}x{HEIGHT} {base64.b64encode(picture).decode()}"

    @staticmethod
    def _edge(session: Session, args: list[str]) -> str:
        """A raw level on a contact's pin, where a GPIO edge enters the core: debounced,
        timed and taken as a gesture there, as a real contact's would be."""
        _arity(session, args, "EDGE")
        contact, level = ascii_lower(args[0]), ascii_upper(args[1])
        if contact not in ("auction", "build", "power"):
            raise CommandError("bad-argument", "expected AUCTION, BUILD or POWER")
        if level not in ("LOW", "HIGH"):
            raise CommandError("bad-argument", "expected LOW (closed: pressed, ON) or HIGH")
        unit = session.runtime.unit
        unit.edge(contact, level == "LOW", unit.now, session.present())
        return "OK"

    def _fault(self, session: Session, args: list[str]) -> str:
        """A part broken (or mended) on purpose, for the unit's own reaction to be seen."""
        if self.workshop is None:
            raise CommandError("not-allowed", "this simulator has no part to break")
        try:
            self.workshop.inject([ascii_lower(word) for word in args])
        except ValueError as e:
            raise CommandError("bad-argument", str(e)) from None
        return "OK"
