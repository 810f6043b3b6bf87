"""The switch is not power: the Pi runs on when it is OFF, and says so; and, if asked,
it shuts itself down after a while OFF (a boxed game must not drain its power bank)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from cityunit.rules import Rules
from conftest import Table


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
    table.unit.boot(False, None, 0)
    table.wait(5 * 60_000 + 2_100)
    assert table.shutdowns == 1
    untimed = Table(on=False)
    untimed.unit.boot(False, None, 0)
    untimed.wait(24 * 3_600_000)
    assert untimed.shutdowns == 0, "0: never"


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
    table.unit.boot(False, None, 0)
    table.wait(60_000)
    table.unit.reconfigure(Rules(off_after_minutes=1), table.t)  # systemctl reload
    table.wait(60_000 + 2_100)
    assert table.shutdowns == 1
    reset = Table(Rules(off_after_minutes=1), on=False)
    reset.unit.boot(False, None, 0)
    reset.unit.reset()
    reset.wait(60_000 + 2_100)
    assert reset.shutdowns == 1, "RESET is power-on: OFF, counting"


def test_a_halt_that_did_not_happen_is_not_asked_for_again_and_again() -> None:
    table = Table(Rules(off_after_minutes=1), on=False)
    table.unit.boot(False, None, 0)
    table.wait(10 * 60_000)
    assert table.shutdowns == 1 and len(table.events("shutdown")) == 1
