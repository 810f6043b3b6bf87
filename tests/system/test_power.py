"""The switch is not power: the Pi runs on when it is OFF, and says so; and, if asked,
it shuts itself down after a while OFF (a boxed game must not drain its power bank)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cityunit.config import load
from cityunit.core.rules import Rules
from cityunit.core.saved import SavedGame
from cityunit.core.screens import SwitchOffScreen
from cityunit.display.memory import pages
from cityunit.display.render import render
from conftest import Table
from fakes import Controller

ROOT = Path(__file__).resolve().parents[2]

# A game saved by a unit that was ON, then switched OFF: it has been played.
PLAYED = SavedGame(power=False, hour=1, session_hours=1, hour_elapsed_ms=0, paused=False)


def test_switching_off_says_for_a_while_that_the_pi_is_still_on() -> None:
    table = Table()
    table.wait(60_000).switch(False)
    assert table.state()["screen"] == ["UNIT OFF", "Pi still on", "both 5 s: shut down",
                                       "then unplug it"]  # fmt: skip
    table.wait(7_900)
    assert table.state()["screen"][0] == "UNIT OFF"
    table.wait(200)
    assert table.state()["screen"] == [] and table.state()["led"] == 0.0


def test_off_after_minutes_shuts_the_pi_down_unless_switched_on_meanwhile() -> None:
    table = Table(Rules(off_after_minutes=10))
    table.switch(False)
    assert table.state()["screen"][-1] == "auto off in 10 min"
    table.wait(9 * 60_000).switch(True).wait(1_000).switch(False)
    table.wait(9 * 60_000)
    assert table.events("shutdown") == [] and table.shutdowns == 0, "the count starts again"
    table.wait(60_000 + 2_100)
    assert [e.t_ms for e in table.events("shutdown")] == [table.t - 2_100]
    assert table.shutdowns == 1, "with the same confirmation as the gesture"


def test_off_after_minutes_counts_from_start_up_when_the_switch_is_off() -> None:
    table = Table(Rules(off_after_minutes=5), on=False)
    table.unit.boot(False, PLAYED, 0)
    assert table.state()["screen"] == [], "a unit that has been ON is dark OFF"
    table.wait(5 * 60_000 + 2_100)
    assert table.shutdowns == 1
    untimed = Table(on=False)
    untimed.unit.boot(False, PLAYED, 0)
    untimed.wait(24 * 3_600_000)
    assert untimed.shutdowns == 0, "0: never"


def test_a_unit_never_yet_on_says_the_switch_is_off_and_never_shuts_down() -> None:
    """A new build (the switch perhaps not wired yet, which reads OFF): not a dark screen
    that looks broken, and no Pi halted under the maker 30 minutes after each boot."""
    new = Table(Rules(off_after_minutes=30), on=False)
    new.unit.boot(False, None, 0)
    assert new.state()["screen"] == ["SWITCH OFF", "flip it ON", "to play"]
    new.wait(24 * 3_600_000)
    assert new.shutdowns == 0 and new.events("shutdown") == []
    new.unit.reconfigure(Rules(off_after_minutes=1), new.t)  # systemctl reload
    new.wait(2 * 60_000)
    assert new.shutdowns == 0
    new.switch(True)
    assert new.state()["screen"][0] == "HOUR 1"
    new.switch(False).wait(8_000)
    assert new.state()["screen"] == [], "once ON, OFF is dark, as on the original"
    new.wait(60_000 - 8_000 + 2_100)
    assert new.shutdowns == 1, "and its time OFF counts"


def test_step_2_of_the_guide_lights_the_screen_as_it_promises(make_rig, tmp_path: Path) -> None:
    """hardware/README.md, step 2: the OLED wired alone, on a fresh card with the
    installer's config. The switch's input floats high on its pull-up (OFF): the glass
    shows what the guide says, and hours later the Pi is still on."""
    root = tmp_path / "root"
    subprocess.run([sys.executable, str(ROOT / "systemd/install.py"), "--root", str(root)],
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    config = load(root / "etc/cityunit/config.toml")
    assert config.rules.off_after_minutes == 30
    harmless = config.system.replace(shutdown_command=["true"])  # not this host's
    glass = Controller("ssd1306")
    rig = make_rig(config.replace(system=harmless), bus=glass, state_dir=tmp_path)
    rig.at(1_000)
    screen = rig.unit.state()["screen"]
    guide = (ROOT / "hardware/README.md").read_text()
    step_2 = " ".join(guide.split("2. **The OLED.**")[1].split("3. **")[0].split())
    assert f"the screen says **{screen[0]}**, *{' '.join(screen[1:])}*" in step_2, screen
    assert glass.visible() == pages(render(SwitchOffScreen(), "en")), "lit, as the guide says"
    rig.at(3 * 3_600_000)
    assert "shutdown" not in rig.names() and rig.runtime.shutdown_process is None


def test_the_config_check_takes_off_after_minutes(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        '[power]\noff_after_minutes = 10\nshutdown_command = ["systemctl", "poweroff"]\n'
    )
    check = [sys.executable, "-m", "cityunit", "run", "--config", str(config), "--check"]
    assert subprocess.run(check, capture_output=True, timeout=60).returncode == 0
    config.write_text("[power]\noff_after_minutes = -1\n")
    refused = subprocess.run(check, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "power.off_after_minutes" in refused.stderr
    config.write_text("[power]\noff_after_minutes = 10\n")  # and nothing to run
    refused = subprocess.run(check, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "needs power.shutdown_command" in refused.stderr


def test_a_reload_or_a_reset_while_off_counts_with_the_rules_as_they_stand() -> None:
    table = Table(on=False)
    table.unit.boot(False, PLAYED, 0)
    table.wait(60_000)
    table.unit.reconfigure(Rules(off_after_minutes=1), table.t)  # systemctl reload
    table.wait(60_000 + 2_100)
    assert table.shutdowns == 1
    reset = Table(Rules(off_after_minutes=1), on=False)
    reset.unit.boot(False, PLAYED, 0)
    reset.unit.reset()
    reset.wait(60_000 + 2_100)
    assert reset.shutdowns == 0, "RESET is a new unit: no game, so it waits for the switch"
    assert reset.state()["screen"][0] == "SWITCH OFF"


def test_a_halt_that_did_not_happen_is_not_asked_for_again_and_again() -> None:
    table = Table(Rules(off_after_minutes=1), on=False)
    table.unit.boot(False, PLAYED, 0)
    table.wait(10 * 60_000)
    assert table.shutdowns == 1 and len(table.events("shutdown")) == 1
