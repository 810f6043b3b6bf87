"""A failing display is not a failing unit: real luma drivers over a bus that fails."""

from __future__ import annotations

import pytest

from cityunit.config import Hardware
from cityunit.core.screens import HourScreen
from cityunit.display.oled import LumaPanel
from cityunit.display.panel import Display
from cityunit.loop.clock import VirtualClock
from fakes import FlakyBus

EN = "en"


def display_on(bus: FlakyBus, driver: str = "ssd1306") -> tuple[Display, list[str]]:
    faults: list[str] = []
    return Display(LumaPanel(Hardware(driver=driver), bus=bus), faults.append), faults


@pytest.mark.parametrize("driver", ["ssd1306", "sh1106"])
def test_a_frame_reaches_the_display_and_identical_frames_are_not_resent(driver: str) -> None:
    bus = FlakyBus()
    display, faults = display_on(bus, driver)
    display.poll(0)
    display.show(HourScreen(1, "00:00"), EN, 0)
    sent = bus.data_bytes
    assert sent >= 1024 and display.frames_sent == 1
    display.show(HourScreen(1, "00:00"), EN, 10)
    assert bus.data_bytes == sent and display.frames_sent == 1
    display.show(HourScreen(1, "00:01"), EN, 1_000)
    assert display.frames_sent == 2 and faults == []


def test_command_errors_and_data_errors_both_drop_the_device_and_retry_each_second() -> None:
    bus = FlakyBus()
    display, faults = display_on(bus)
    display.poll(0)
    bus.unplugged = True
    display.show(HourScreen(1, "00:02"), EN, 2_000)  # fails in command()
    assert not display.up and display.retry_at == 3_000
    assert len(faults) == 1 and faults[0].startswith("lost:")
    display.poll(2_500)
    assert bus.failures == 1, "no retry before its time"
    display.poll(3_000)
    assert bus.failures == 2 and display.retry_at == 4_000 and len(faults) == 1
    bus.unplugged = False
    inits = bus.inits()
    display.poll(4_000)
    assert display.up and faults[-1] == "back"
    assert bus.inits() == inits + 1, "the init sequence is sent again"
    assert display.frames_sent == 1, "the frame asked for while it was gone is shown at once"


def test_a_data_write_error_is_caught_too() -> None:
    class DataFails(FlakyBus):
        def write_i2c_block_data(self, addr: int, register: int, data: list[int]) -> None:
            if register == 0x40 and self.unplugged:
                self.failures += 1
                raise OSError(121, "Remote I/O error")
            super().write_i2c_block_data(addr, register, data)

    bus = DataFails()
    display, faults = display_on(bus)
    display.poll(0)
    bus.unplugged = True
    display.show(HourScreen(1, "00:03"), EN, 100)
    assert bus.failures == 1 and not display.up and len(faults) == 1


def test_a_display_missing_from_the_start_is_reported_once() -> None:
    bus = FlakyBus()
    bus.unplugged = True
    display, faults = display_on(bus)
    for t in range(0, 10_000, 500):
        display.poll(t)
    assert len(faults) == 1 and bus.failures == 10


@pytest.mark.parametrize(("rate", "frames"), [(0.01, 110), (0.05, 30)])
def test_failing_writes_never_escape_and_frames_keep_coming(rate: float, frames: int) -> None:
    bus = FlakyBus(error_rate=rate, seed=4)
    display, faults = display_on(bus)
    for t in range(0, 120_000, 250):
        display.poll(t)
        display.show(HourScreen(1, f"{t // 60_000:02d}:{t // 1000 % 60:02d}"), EN, t)
    # luma writes 32-byte blocks to a bus it did not open: a whole frame (after each
    # start) is ~35 writes, a clock tick's change 2. What matters is that nothing escapes,
    # frames keep coming, and the display keeps coming back.
    assert bus.failures >= 3
    assert display.frames_sent >= frames
    assert faults.count("back") in (len(faults) // 2, (len(faults) - 1) // 2)


def test_ten_minutes_unplugged_leave_one_driver_and_one_exit_hook() -> None:
    """Each retry starts the same panel again: no new luma driver, no new atexit hook."""
    import atexit

    bus = FlakyBus()
    bus.unplugged = True
    display, faults = display_on(bus)
    hooks = atexit._ncallbacks()
    for t in range(0, 600_000, 1_000):  # 600 retries
        display.poll(t)
    assert bus.failures == 600 and len(faults) == 1
    assert atexit._ncallbacks() - hooks <= 1
    bus.unplugged = False
    display.poll(600_000)
    display.show(HourScreen(1, "10:00"), EN, 600_000)
    assert display.up and display.frames_sent == 1 and faults[-1] == "back"
    assert atexit._ncallbacks() - hooks <= 1


def test_closing_blanks_the_screen_once_and_is_idempotent() -> None:
    bus = FlakyBus()
    display, _ = display_on(bus)
    display.poll(0)
    display.show(HourScreen(1, "00:00"), EN, 0)
    display.close()
    display.close()
    assert bus.commands[-1] == [0xAE] and bus.commands.count([0xAE]) == 1


def test_a_slow_failure_is_retried_later_so_the_loop_stays_free() -> None:
    """A bus held low fails each write only after a ~1 s timeout: retrying a second
    after that would leave the loop blocked half the time, with the LED frozen."""
    clock = VirtualClock()

    class HungPanel:
        def start(self) -> None:
            clock.set_ms(clock.now_ms() + 1_000)  # the kernel gives up after a second
            raise OSError(110, "Connection timed out")

        def display(self, image) -> None: ...
        def blank(self) -> None: ...
        def close(self) -> None: ...

    display = Display(HungPanel(), clock=clock.now_ms)
    display.poll(0)
    assert display.retry_at == 1_000 + 10 * 1_000


def test_closing_after_a_passing_error_still_blanks_the_screen() -> None:
    bus = FlakyBus()
    display, _ = display_on(bus)
    display.poll(0)
    display.show(HourScreen(1, "00:00"), EN, 0)
    bus.unplugged = True
    display.show(HourScreen(1, "00:01"), EN, 1_000)  # one failed write: marked down
    bus.unplugged = False
    display.close()
    assert bus.commands[-1] == [0xAE], "started again, cleared and switched off"
