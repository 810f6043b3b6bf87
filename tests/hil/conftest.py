"""The hardware-in-the-loop suite: written only against the console protocol, through
cityunit's own pytest plugin (`cityunit.console.pytest_plugin`): its first user.

By default each test gets a simulated unit at power-on (one headless simulator on the
virtual clock, RESET before each test). With `--cityunit-target PORT` (a serial port, a
pty or a pyserial URL) the same tests talk to that unit; with `--cityunit-clock real`
the simulator runs in real time. What needs the virtual clock is skipped elsewhere.
"""

from __future__ import annotations

import pytest

from cityunit.console.client import Client
from cityunit.console.pytest_plugin import MARKERS


@pytest.fixture
def unit(cityunit: Client) -> Client:
    """The unit, events off, as the protocol starts a session."""
    cityunit.ok("EVENTS OFF")
    cityunit.forget_events()
    return cityunit


@pytest.fixture
def virtual(unit: Client) -> Client:
    """The unit, for a test that needs the virtual clock (skipped on a real one)."""
    if not unit.virtual:
        pytest.skip(MARKERS["virtual_clock"])
    return unit


@pytest.fixture
def playing(virtual: Client) -> Client:
    """The unit on the virtual clock, switched ON, with its events on."""
    virtual.ok("EVENTS ON")
    virtual.ok("SWITCH ON")
    return virtual
