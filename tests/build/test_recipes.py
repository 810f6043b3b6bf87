"""docs/architecture.md's two recipes, held: a mode, or a display driver, that misses a
step fails here, naming the step."""

from __future__ import annotations

import inspect
import re
import typing
from pathlib import Path

import pytest

from cityunit import config
from cityunit.core import modes, screens
from cityunit.core.rules import LANGUAGES
from cityunit.display import oled, render
from conftest import Table
from fakes import ARGS, INTERFACES, WHOLE
from goldens import SCREENS

ROOT = Path(__file__).resolve().parents[2]
ENTRANCES = sorted(typing.get_args(modes.ModeName))


def entered(entrance: str) -> Table:
    table = Table()
    table.unit.to(entrance)
    return table


# ----- adding a mode -----------------------------------------------------------------------


def test_step_1_and_4_every_mode_is_in_all_and_entered_through_the_context() -> None:
    reached = {type(entered(e).unit.mode) for e in ENTRANCES}
    assert reached == set(modes.ALL), "a mode needs its name (STATE's) in modes.ModeName"
    names = [m.name for m in modes.ALL]
    assert len(set(names)) == len(names), "each mode's name (STATE's) is its own"
    assert set(modes.BY_NAME) == set(ENTRANCES)


def test_step_2_and_3_every_screen_a_mode_shows_is_painted_in_each_language_and_golden() -> None:
    shown: set[type] = set()
    for entrance in ENTRANCES:
        mode = entered(entrance).unit.mode
        shown |= {type(mode.screen(mode.unit.now + ms)) for ms in range(0, 60_000, 37)}
    declared = {
        cls
        for _, cls in inspect.getmembers(screens, inspect.isclass)
        if cls.__module__ == screens.__name__
        and hasattr(cls, "lines")
        and cls is not screens.Screen
    }
    assert shown <= declared, "a screen is a Value in screens.py"
    golden = {type(s(LANGUAGES[0]) if callable(s) else s) for s in SCREENS.values()}
    for cls in declared:
        assert cls in render.paint.registry, f"{cls.__name__}: no @paint.register in render.py"
        assert cls in golden, f"{cls.__name__}: no golden image (test_screens.SCREENS)"
    assert set(screens.TEXT) == set(LANGUAGES), "every text in every language"
    words = [set(screens.TEXT[lang]) for lang in LANGUAGES]
    assert all(w == words[0] for w in words), "each text in every language"


def test_step_5_every_mode_is_named_in_the_protocol_doc() -> None:
    row = next(
        line
        for line in (ROOT / "docs" / "protocol.md").read_text().splitlines()
        if line.startswith("| `mode` |")
    )
    assert sorted(re.findall(r'`"([a-z_]+)"`', row)) == sorted(m.name for m in modes.ALL)


# ----- adding a display driver -------------------------------------------------------------

DRIVERS = sorted(oled.DRIVERS)


def test_step_1_every_driver_is_a_config_choice() -> None:
    _, key, _ = config._fields()["display.driver"]
    assert sorted(set(key.check["choices"]) - {"none"}) == DRIVERS


@pytest.mark.parametrize("driver", DRIVERS)
def test_step_2_to_4_every_driver_has_a_controller_model_and_goldens_through_it(
    driver: str,
) -> None:
    assert driver in ARGS, "a controller model: its commands' argument counts (tests/fakes.py)"
    for interface in INTERFACES:
        assert (driver, interface) in WHOLE, "a whole frame's bytes, for its diff plan"


@pytest.mark.parametrize("driver", DRIVERS)
def test_step_5_every_driver_is_in_the_guides(driver: str) -> None:
    readme = (ROOT / "README.md").read_text()
    row = next(line for line in readme.splitlines() if line.startswith("| `display.driver` |"))
    assert f'`"{driver}"`' in row, "README's table of keys"
    assert driver in (ROOT / "hardware" / "README.md").read_text().lower(), "the maker's guide"


# ----- adding an output -----------------------------------------------------------------


def test_step_1_to_3_every_output_follows_a_record_of_its_own_and_is_in_the_boards_list() -> None:
    from cityunit.board import Board
    from cityunit.config import Config
    from cityunit.core.snapshot import Snapshot
    from cityunit.display.oled import LumaPanel
    from cityunit.loop.clock import VirtualClock
    from cityunit.parts.gpio import mock_pins
    from fakes import FlakyBus

    panel = LumaPanel(Config().hardware, bus=FlakyBus())
    with Board(Config(), VirtualClock(), pin_factory=mock_pins(), panel=panel) as board:
        outputs = board.runtime.outputs
        assert [type(o).__name__ for o in outputs] == ["LedOutput", "BuzzerOutput", "Display"]
        snapshot = board.unit.snapshot()
        records = [n for n in Snapshot.__match_args__ if isinstance(getattr(snapshot, n), tuple)]
        assert records == ["light", "sound", "picture"], "a record (NamedTuple) per output"
        for output in outputs:  # each reads only its record: step 2
            source = inspect.getsource(type(output).follow)
            assert [r for r in records if f"snapshot.{r}" in source] != [], type(output)
