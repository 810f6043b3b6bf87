"""The whole unit on gpiozero mock pins: pin edges in, LED and buzzer pins out."""

from __future__ import annotations

import random
import signal
import threading
from pathlib import Path

import pytest
from gpiozero.pins.mock import MockFactory

from cityunit.clock import VirtualClock
from cityunit.config import Config, Parts, System
from cityunit.display import Display, luma_device
from cityunit.parts import Parts as GpioParts
from cityunit.runtime import Runtime
from fakes import FlakyBus, mock_factory, run_unit

AUCTION, BUILD, POWER, LED, BUZZER = 17, 27, 22, 13, 18


class Rig:
    """A unit on mock pins and a virtual clock, with a fresh MockFactory."""

    def __init__(
        self, config: Config | None = None, switch_on: bool = False, state_dir: Path | None = None
    ) -> None:
        self.factory: MockFactory = mock_factory()
        self.config = config or Config()
        self.clock = VirtualClock()
        self.bus = FlakyBus()
        make = luma_device(self.config.parts, bus=self.bus)

        def parts(on_edge):
            gpio = GpioParts(self.config, on_edge, self.factory)
            if switch_on:  # a switch left ON: closed before the program starts
                self.pin(POWER).drive_low()
            return gpio

        self.runtime = Runtime(
            self.config,
            self.clock,
            parts=parts,
            display=lambda fault: Display(make, fault),
            rng=random.Random(5),
            state_dir=state_dir,
        )
        self.events: list = []
        self.runtime.listeners.append(self.events.append)
        self.on_at_start = self.runtime.unit.power
        self.runtime.pump()

    def pin(self, number: int):
        return self.factory.pin(number)

    def at(self, t: int) -> Rig:
        self.clock.set_ms(t)
        self.runtime.pump()
        return self

    def press(self, number: int, ms: int = 80) -> Rig:
        self.pin(number).drive_low()
        self.runtime.pump()
        self.at(self.clock.now_ms() + ms)
        self.pin(number).drive_high()
        self.runtime.pump()
        return self

    def names(self) -> list[str]:
        return [e.event for e in self.events if e.event not in ("led", "tone")]


@pytest.fixture
def rig() -> Rig:
    r = Rig()
    yield r
    r.runtime.close()


def test_the_switch_read_at_start_begins_hour_1() -> None:
    rig = Rig(switch_on=True)
    assert rig.on_at_start, "read at start, before any edge is handled"
    assert rig.names()[:2] == ["power", "hour.start"]
    rig.runtime.close()


def test_a_button_pin_starts_an_auction_and_drives_the_led_and_buzzer_pins(rig: Rig) -> None:
    rig.pin(POWER).drive_low()
    rig.at(1_000)
    rig.pin(AUCTION).drive_low()
    rig.runtime.pump()
    assert rig.pin(BUZZER).frequency == pytest.approx(4000), "the click, on the edge"
    assert rig.pin(LED).state == 1.0, "the blip, on the edge"
    rig.at(1_100)
    rig.pin(AUCTION).drive_high()
    rig.runtime.pump()
    assert "auction.start" in rig.names()
    rig.at(1_200)
    assert rig.pin(LED).state == 1.0
    rig.at(1_700)
    assert rig.pin(LED).state == 0.0, "flashing"
    rig.at(60_000)
    assert rig.names()[-1] == "auction.end"
    assert rig.pin(LED).state == 0.0 and rig.pin(BUZZER).frequency is None


def test_the_display_gets_each_new_screen(rig: Rig) -> None:
    rig.pin(POWER).drive_low()
    rig.at(10)
    frames = rig.runtime.display.frames_sent
    rig.press(BUILD)
    rig.at(1_000)
    assert rig.runtime.display.frames_sent > frames
    assert rig.runtime.unit.state()["mode"] == "permit"


def test_a_chattering_pin_is_one_press(rig: Rig) -> None:
    rig.pin(POWER).drive_low()
    rig.at(1_000)
    for i in range(6):
        rig.at(1_000 + i * 2)
        (rig.pin(BUILD).drive_low if i % 2 == 0 else rig.pin(BUILD).drive_high)()
    rig.at(1_100)
    rig.pin(BUILD).drive_high()
    rig.at(2_500)
    assert rig.names().count("permit") == 1


def test_the_unit_keeps_time_and_light_while_the_display_is_unplugged(rig: Rig) -> None:
    rig.pin(POWER).drive_low()
    rig.at(100)
    rig.bus.unplugged = True
    rig.press(AUCTION)
    rig.at(10_000)
    faults = [e.data for e in rig.events if e.event == "fault"]
    assert faults and faults[0]["part"] == "display" and faults[0]["detail"].startswith("lost")
    assert rig.pin(LED).state in (0.0, 1.0) and "auction.start" in rig.names()
    rig.bus.unplugged = False
    rig.at(11_000)
    assert [e.data["detail"] for e in rig.events if e.event == "fault"][-1] == "back"
    assert rig.runtime.display.device is not None


def test_stop_leaves_the_led_off_the_buzzer_silent_and_the_screen_blank() -> None:
    rig = Rig(switch_on=True)
    rig.at(100)
    rig.pin(AUCTION).drive_low()
    rig.runtime.pump()
    assert rig.pin(BUZZER).frequency is not None and rig.pin(LED).state > 0
    thread = threading.Thread(target=rig.runtime.run)
    thread.start()
    rig.runtime.stop()
    thread.join(timeout=10)
    assert not thread.is_alive()
    assert rig.pin(LED).state == 0 and rig.pin(BUZZER).frequency is None
    assert rig.bus.commands[-1] == [0xAE], "display off"


def test_an_active_buzzer_and_a_plain_led_work_too() -> None:
    config = Config(parts=Parts(buzzer="active", led_pwm=False))
    rig = Rig(config, switch_on=True)
    assert rig.pin(BUZZER).state == 1, "the power-on tune"
    rig.at(5_000)
    assert rig.pin(BUZZER).state == 0
    rig.runtime.close()


def test_the_shutdown_gesture_runs_the_configured_command(tmp_path: Path) -> None:
    marker = tmp_path / "halted"
    config = Config(system=System(shutdown_command=["touch", str(marker)]))
    rig = Rig(config)
    rig.pin(AUCTION).drive_low()
    rig.pin(BUILD).drive_low()
    rig.at(100)
    rig.at(5_200)
    rig.pin(AUCTION).drive_high()
    rig.pin(BUILD).drive_high()
    rig.at(8_000)
    assert "shutdown" in rig.names()
    assert rig.runtime.shutdown_process is not None
    assert rig.runtime.shutdown_process.wait(timeout=10) == 0
    assert marker.exists()
    rig.runtime.close()


def test_cityunit_run_on_mock_pins_answers_sigterm_and_exits_0(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[display]\ndriver = "none"\n')
    proc = run_unit(config)
    proc.send_signal(signal.SIGTERM)
    assert proc.finish() == 0
    log = "".join(proc.log)
    assert "Traceback" not in log and "stopped: LED off, buzzer silent, screen blank" in log


def test_sigterm_right_after_start_always_stops_the_unit(tmp_path: Path) -> None:
    """A SIGTERM landing just as the loop goes to sleep must still wake it. It once did
    not, about one start in twenty: a blocking queue.get can miss a signal that arrives
    just before it sleeps; the loop now sleeps in select on a pipe the signal writes to."""
    config = tmp_path / "config.toml"
    config.write_text(f'[display]\ndriver = "none"\n[state]\ndir = "{tmp_path}"\n')
    for _ in range(12):
        proc = run_unit(config)
        proc.send_signal(signal.SIGTERM)
        assert proc.finish(timeout=5) == 0
