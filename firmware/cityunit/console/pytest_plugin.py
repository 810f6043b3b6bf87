"""cityunit's pytest plugin, installed with the package: a `cityunit` fixture for tests
written against the console protocol, run unchanged on the simulator or on a real unit.

    def test_an_auction_ends_within_50_s(cityunit):
        cityunit.switch(True)
        cityunit.press("auction")
        assert cityunit.wait_for("auction.end", within_ms=50_000)["stopped"] is False

`pytest` gives each test a fresh unit: one headless simulator for the session, sent back
to power-on (RESET) before each test. `pytest --cityunit-target PORT` runs the same tests
against the unit on PORT (a serial port, a pty, a pyserial URL), switched OFF before
each; `--cityunit-clock real` runs the simulator in real time, `--cityunit-seed N` and
`--cityunit-config FILE` start it with that seed or config. A target that cannot be
opened, or a simulator that will not start, ends the session with one line saying why.
Markers skip, with the reason, what a unit cannot do:

- `@pytest.mark.virtual_clock`: needs time to move on demand (ADVANCE, long stretches);
- `@pytest.mark.simulator`: needs a simulator (SEED, RESET);
- `@pytest.mark.board`: needs a real unit (what a simulator allows and a board refuses).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from cityunit.console.client import Client
from cityunit.console.links import said_once

MARKERS = {
    "virtual_clock": "needs the virtual clock (time moved by ADVANCE)",
    "simulator": "needs a simulator (SEED, RESET)",
    "board": "needs a real unit behind --cityunit-target",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    """--cityunit-target and --cityunit-clock, in a group of their own in `pytest -h`."""
    group = parser.getgroup("cityunit")
    group.addoption(
        "--cityunit-target", metavar="PORT",
        help="run the cityunit fixture's tests against the unit on PORT (e.g. /dev/ttyACM0, "
        "/dev/pts/5, socket://host:port) instead of a simulator",
    )  # fmt: skip
    group.addoption(
        "--cityunit-clock", choices=("virtual", "real"), default=None,
        help="the simulator's clock (default: virtual)",
    )  # fmt: skip
    group.addoption(
        "--cityunit-seed", type=int, default=None, metavar="N",
        help="the simulator's random seed (auction lengths, permits; default: 1)",
    )  # fmt: skip
    group.addoption(
        "--cityunit-config", metavar="FILE", default=None,
        help="the simulator's config file (default: the built-in defaults)",
    )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    """The three markers, registered so that `--strict-markers` takes them; options that
    cannot go together refused once, before any test."""
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    if config.getoption("--cityunit-target"):
        given = [f"--cityunit-{o}" for o in ("clock", "seed", "config")
                 if config.getoption(f"--cityunit-{o}") is not None]  # fmt: skip
        if given:
            raise pytest.UsageError(
                f"{', '.join(given)}: the simulator's, and --cityunit-target is a real unit"
                " (it has its own clock, random source and config)"
            )


@pytest.fixture(scope="session")
def cityunit_connection(request: pytest.FixtureRequest) -> Iterator[Client]:
    """The one connection of the session: to the target, or to a simulator started once."""
    option = request.config.getoption
    target = option("--cityunit-target")
    try:
        if target:
            client = Client.port(target)
        else:
            client = Client.simulator(
                seed=1 if option("--cityunit-seed") is None else option("--cityunit-seed"),
                clock=option("--cityunit-clock") or "virtual",
                config=option("--cityunit-config"),
            )
    except Exception as e:  # once for the session, not a traceback per test
        what = f"the unit on {target}" if target else "the simulator"
        pytest.exit(f"cityunit: cannot start with {what}: {said_once(e)}", returncode=4)
    with client:
        yield client


@pytest.fixture
def cityunit(cityunit_connection: Client, request: pytest.FixtureRequest) -> Client:
    """A unit in a known state: a simulator at power-on, a real unit switched OFF."""
    unit = cityunit_connection
    needs = {mark.name for mark in request.node.iter_markers() if mark.name in MARKERS}
    if "virtual_clock" in needs and not unit.virtual:  # before touching the unit
        pytest.skip(MARKERS["virtual_clock"])
    unit.fresh()
    if "simulator" in needs and not unit.is_simulator:
        pytest.skip(MARKERS["simulator"])
    if "board" in needs and unit.is_simulator:
        pytest.skip(MARKERS["board"])
    return unit
