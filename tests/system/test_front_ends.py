"""The seam for front ends (a console, a page): a session that only watches, replies and
events through sinks of their own, the simulator's commands registered rather than
switched on, and whatever is attached closing with the board."""

from __future__ import annotations

import os
from typing import Any

import pytest

from cityunit.board import Board
from cityunit.config import Config
from cityunit.console.controls import SimulatorControls
from cityunit.console.links import FdLink
from cityunit.console.protocol import ALL, SIMULATOR, WATCHING, Session
from cityunit.loop.clock import VirtualClock
from cityunit.parts.gpio import mock_pins
from cityunit_sim.board import SimBoard


def board() -> Board:
    return Board(Config(), VirtualClock(), pin_factory=mock_pins(), panel=None, seed=1)


def test_a_session_that_watches_reads_the_unit_and_never_plays_it() -> None:
    replies: list[str] = []
    with SimBoard(Config(), VirtualClock(), seed=1, observed=False) as sim:
        session = Session(sim.runtime, replies.append, controls=sim.controls, watching=True)
        for line in (b"STATE", b"SETTINGS", b"SCREEN", b"EVENTS ON", b"PRESS AUCTION",
                     b"SWITCH ON", b"SET volume low", b"ADVANCE 10", b"RESET", b"HELP"):  # fmt: skip
            session.receive(line)
        assert sim.unit.power is False and sim.unit.settings()["volume"] != "low"
    state, settings, screen, events = replies[:4]
    assert state.startswith("OK {") and settings.startswith("OK {")
    assert screen.startswith("OK 128x64 ") and events == "OK"
    for refused in replies[4:9]:
        assert refused.startswith("ERR not-allowed ") and "only watches" in refused
    assert replies[9].split()[1:] == [name for name in ALL if name in WATCHING]


def test_replies_and_events_reach_a_front_end_through_their_own_sinks() -> None:
    replies: list[str] = []
    events: list[str] = []
    with board() as unit:
        session = Session(unit.runtime, replies.append, events.append)
        for line in (b"EVENTS ON", b"SWITCH ON", b"PRESS BUILD", b"PING"):
            session.receive(line)
    assert replies == ["OK", "OK", "OK", "OK PONG"]
    assert events and all(line.startswith("EVT {") for line in events)
    assert any('"event":"power"' in line for line in events)


def test_the_simulators_commands_are_its_controls_and_a_unit_without_them_refuses_them() -> None:
    assert set(SimulatorControls().commands(None).keys()) == set(SIMULATOR)  # type: ignore[arg-type]
    for controls, seed in ((SimulatorControls(), "OK"), (None, "ERR not-allowed ")):
        replies: list[str] = []
        with board() as unit:
            session = Session(unit.runtime, replies.append, controls=controls)
            for line in (b"SEED 7", b"SEED", b"FAULT DISPLAY GONE"):
                session.receive(line)
        assert replies[0].startswith(seed)
        assert replies[1].startswith("ERR bad-argument usage: SEED <int>")
        assert replies[2].startswith("ERR not-allowed ")  # no part to break, or no simulator


def test_what_is_attached_closes_with_the_board_before_its_parts() -> None:
    closed: list[str] = []

    class FrontEnd:
        def __init__(self, name: str) -> None:
            self.name = name

        def close(self) -> None:
            closed.append(self.name)
            assert not unit.parts.closed, "a front end closes while the parts still work"

    with board() as unit:
        first, second = unit.attach(FrontEnd("first")), unit.attach(FrontEnd("second"))
        assert (first.name, second.name) == ("first", "second")
    assert closed == ["second", "first"]


def test_a_console_on_stdio_lets_go_of_its_reader_when_it_closes() -> None:
    """Its input still open (a parent that never closes the pipe): the reader thread ends
    with the console, not with the process."""
    read, write = os.pipe()
    out = os.open(os.devnull, os.O_WRONLY)
    before = len(os.listdir("/proc/self/fd"))
    try:
        with board() as unit:
            served = unit.serve(FdLink(read, out))
            reader = served._in
            assert reader.is_alive()
        assert not reader.is_alive()
        assert len(os.listdir("/proc/self/fd")) == before, "the link's own pipe is closed"
    finally:
        for fd in (read, write, out):
            os.close(fd)


def helped(controls: SimulatorControls | None, watching: bool = False) -> str:
    replies: list[str] = []
    with board() as unit:
        Session(unit.runtime, replies.append, controls=controls, watching=watching).receive(b"HELP")
    return replies[0]


def test_help_names_the_protocols_commands_in_its_order() -> None:
    """A unit names the simulator's commands too (it refuses them as the simulator's); a
    session that only watches names what it may send."""
    every = "OK " + " ".join(ALL)
    assert helped(None) == helped(SimulatorControls()) == every
    assert helped(SimulatorControls(), watching=True) == "OK " + " ".join(
        name for name in ALL if name in WATCHING
    )


@pytest.mark.parametrize(
    ("line", "reply"),
    [("RESET now", "ERR bad-argument usage: RESET"), ("SCREEN 2", "ERR bad-argument usage: SCREEN"),
     ("EDGE", "ERR bad-argument usage: EDGE"), ("SEED 1 2", "ERR bad-argument usage: SEED"),
     ("RESET", "ERR not-allowed RESET is for the simulator only"),
     ("FAULT x", "ERR not-allowed FAULT is for the simulator only")],
)  # fmt: skip
def test_a_unit_without_the_simulators_commands_checks_their_words_then_refuses_them(
    line: str, reply: str
) -> None:
    replies: list[str] = []
    with board() as unit:
        Session(unit.runtime, replies.append).receive(line.encode())
    assert replies[0].startswith(reply)


def test_controls_neither_replace_a_built_in_nor_widen_a_session_that_watches() -> None:
    class Sneaky:
        reads = frozenset({"TICK"})

        def commands(self, session: Session) -> dict[str, Any]:
            return {"STATE": lambda args: "OK", "TICK": lambda args: "OK", "POKE": None}

    class Extra:
        reads: frozenset[str] = frozenset()

        def commands(self, session: Session) -> dict[str, Any]:
            return {"POKE": lambda args: "OK"}

    with board() as unit:
        with pytest.raises(ValueError, match="STATE"):
            Session(unit.runtime, print, controls=Sneaky())
        watching = Session(unit.runtime, print, controls=Extra(), watching=True)
        assert "POKE" not in watching.commands
        playing = Session(unit.runtime, print, controls=Extra())
        assert "POKE" in playing.commands
