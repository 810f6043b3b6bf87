"""A maker's first evening, on the virtual Pi: install, reboot, check, play, break it,
reconfigure, shut down. The tests run in this order on one guest per release
(conftest.py: bookworm's, then trixie's for those marked `trixie`); each leaves the guest
as the next expects it. Trixie's guest runs what its newer kernel (6.12's GPIO, PWM and
SPI), Python (3.13), systemd (257) and polkit can change: the install, the devices,
doctor, a game, a reload, the watchdog, stop, SPI, polkit and the shutdown gesture. The
restart after kill -9 (the card image proves a trixie unit resumes its hour after a
pulled plug) and the doctor's step 2 (the I2C the game drives) run on bookworm's alone,
as do the HIL suite and the bench.

What they prove is what a real kernel, Debian, systemd and polkit say of the firmware,
its installer and its service; not the Pi's own drivers, timing or electrical behaviour
(docs/testing.md, "The virtual Pi").
"""

from __future__ import annotations

import itertools
import json
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import zxingcpp
from frames import picture, showed, shown_i2c, shown_spi
from guest_image import recipe
from PIL import Image
from virtual_pi import I2CWrite, PWMState, VirtualPi

from cityunit.config import Config
from cityunit.console.client import Client
from cityunit.core.screens import HourScreen, SwitchOffScreen
from cityunit.tools.wiring import pattern
from fakes import Controller

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
CONFIG = "/etc/cityunit/config.toml"
AUCTION, BUILD, POWER = 17, 27, 22  # the default pins
LED_CHANNEL, BUZZER_CHANNEL = 1, 0  # GPIO13: PWM1, GPIO18: PWM0
T = TypeVar("T")


def until(what: str, check: Callable[[], T | None], within_s: float = 120) -> T:
    """`check()` once it gives something, tried again at a steady pace until `within_s`:
    each try is a round trip to the guest, which is what it waits on."""
    deadline = time.monotonic() + within_s
    while True:
        found = check()
        if found:
            return found
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {within_s:.0f} s: {what}")
        time.sleep(0.5)  # the pace of the tries; what is waited for is `check`


def main_pid(pi: VirtualPi) -> int:
    return int(pi.run("systemctl show -p MainPID --value cityunit").stdout)


def active(pi: VirtualPi) -> bool:
    return pi.run("systemctl is-active cityunit", check=False).stdout.strip() == "active"


def edit_config(pi: VirtualPi, **values: str) -> None:
    """Set `key = value` lines of /etc/cityunit/config.toml (each key once in the file)."""
    for key, value in values.items():
        section, _, name = key.partition("__")
        pi.sudo(
            f"python3 - <<'EOF'\nimport re, pathlib\np = pathlib.Path({CONFIG!r})\n"
            f"text = p.read_text()\nsection = text.index('[{section}]')\n"
            f"head, tail = text[:section], text[section:]\n"
            f"tail, n = re.subn(r'(?m)^{name} *=[^#\\n]*', {f'{name} = {value}   '!r}, tail, 1)\n"
            f"assert n == 1\np.write_text(head + tail)\nEOF"
        )


@pytest.fixture(scope="module")
def console(pi: VirtualPi) -> Iterator[Callable[[], Client]]:
    """The unit's console on the guest's serial port, opened when first asked for (the
    config names the port only after the installer ran)."""
    opened: list[Client] = []

    def get() -> Client:
        if not opened or opened[0].closed:
            opened[:] = [Client.port(pi.console_url)]
        return opened[0]

    yield get
    for client in opened:
        client.close()


@pytest.mark.trixie
def test_the_installer_runs_offline_from_a_clone(pi: VirtualPi) -> None:
    result = pi.run("cd cityunit && sudo python3 systemd/install.py", timeout=1_200)
    assert "installed:" in result.stdout, result.stdout + result.stderr
    packages = pi.run("dpkg-query -W -f='${Status}\\n' python3-lgpio polkitd i2c-tools").stdout
    assert packages.count("install ok installed") == 3, "apt installed what the Pi lacks"
    boot = pi.run("cat /boot/firmware/config.txt").stdout
    assert "dtparam=i2c_arm=on" in boot and "dtparam=i2c_arm_baudrate=400000" in boot
    assert "dtoverlay=pwm-2chan,pin=18,func=2,pin2=13,func2=4" in boot
    assert "i2c-dev" in pi.run("cat /etc/modules").stdout
    groups = pi.run("id -nG cityunit").stdout.split()
    assert {"gpio", "i2c", "spi", "dialout"} <= set(groups)
    # raspi-config brings I2C up at once, at the bus's default speed; the rest of what
    # config.txt says (400 kHz, the PWM overlay) waits for the next boot, as on a Pi.
    pi.run("test -c /dev/i2c-1")
    assert pi.run("cat /sys/module/vpi_i2c/parameters/baudrate").stdout.strip() == "100000"
    assert pi.run("test -e /sys/class/pwm/pwmchip0", check=False).returncode != 0
    # The installer kept the first light of a unit not started yet: the unit's very first
    # start lit the glass before it started, and the file is the unit's to keep anew.
    journal = pi.journal()
    assert "first light: the glass lit before the unit started" in journal, journal
    assert pi.sudo("stat -c %U /var/lib/cityunit/first-light").stdout.strip() == "cityunit"
    # The console on the guest's second serial port, for the tests that follow; the unit
    # restarted on it, so that its first light is kept for the config as it is now.
    edit_config(pi, console__port='"/dev/ttyS1"')
    pi.sudo("systemctl restart cityunit")


@pytest.mark.trixie
def test_after_a_reboot_the_service_plays_on_the_pis_devices(pi: VirtualPi) -> None:
    pi.reboot()
    until("the service is active", lambda: active(pi))
    for device in ("/dev/gpiochip0", "/dev/i2c-1", "/sys/class/pwm/pwmchip0"):
        pi.run(f"test -e {device}")
    assert pi.run("cat /sys/module/vpi_i2c/parameters/baudrate").stdout.strip() == "400000"
    journal = until("the service said which outputs are on the PWM hardware",
                    lambda: "PWM hardware for" in (j := pi.journal()) and j)  # fmt: skip
    assert "unavailable" not in journal and "software PWM" not in journal, journal
    assert "PWM hardware for: buzzer, led" in journal, journal
    fresh = pi.run("cat /sys/class/pwm/pwmchip0/pwm0/period /sys/class/pwm/pwmchip0/pwm1/period")
    assert fresh.stdout.split() == ["0", "0"], "on channels exported fresh on this boot"


def logged_at(pi: VirtualPi, said: str) -> float:
    """When (s since boot, CLOCK_MONOTONIC as the I2C record's) the service first logged
    a line with `said` in it since this boot."""
    lines = pi.sudo("journalctl -q -b -o short-monotonic -u cityunit --no-pager").stdout
    for line in lines.splitlines():
        if said in line:
            return float(line[1 : line.index("]")])
    raise AssertionError(f"never logged: {said!r}: {lines}")


def glass_states(writes: list[I2CWrite]) -> tuple[list[Image.Image], list[bool], list[int]]:
    """The glass after each write, whether it was lit, and the writes with a DISPLAYOFF."""
    panel, offs, images, lit = Controller("ssd1306"), [], [], []
    single = panel._single

    def command(byte: int) -> None:
        if byte == 0xAE:
            offs.append(len(images))
        single(byte)

    panel._single = command  # type: ignore[method-assign]
    for write in writes:
        panel.write_i2c_block_data(write.addr, write.data[0], list(write.data[1:]))
        images.append(picture(panel.visible()))
        lit.append(panel.on)
    return images, lit, offs


@pytest.mark.trixie
def test_first_light_at_boot_and_the_unit_takes_the_glass_over_without_a_dark_frame(
    pi: VirtualPi,
) -> None:
    """The boot after the reboot above: the service's first stage put the screen the unit
    kept at its stop on the glass (its init without DISPLAYOFF, the whole frame, the glass
    lit) before the unit logged a line, claimed a pin or sent a byte; the unit then took
    it over with nothing sent at all (the same screen: SWITCH OFF, the switch read OFF by
    both), and the glass never went dark. A keepsake naming a bus that is not there: the
    stage does nothing, and the unit starts as it always did."""
    writes = pi.i2c_writes()
    images, lit, offs = glass_states(writes)
    assert offs == [], "no DISPLAYOFF since boot"
    first_on = lit.index(True)
    assert all(lit[first_on:]), "lit once, never dark again"
    stage = writes[: first_on + 1]
    assert len(stage) <= 6 and sum(len(w.data) - 1 for w in stage) >= 1024, "one whole frame"
    assert showed(images[first_on : first_on + 1], SwitchOffScreen()), "the unit's screen"
    took_over = logged_at(pi, "first light: the glass lit before the unit started")
    assert stage[-1].t_ns / 1e9 < took_over < logged_at(pi, "running with")
    assert "the switch read OFF" in pi.journal()
    # No first light: the bus it names is not there (written once the unit has stopped:
    # a clean stop keeps its own).
    before = len(pi.i2c_writes())
    started = main_pid(pi)
    pi.sudo("systemctl stop cityunit")
    pi.sudo(
        "python3 - <<'EOF'\nimport marshal\np = '/var/lib/cityunit/first-light'\n"
        "k = marshal.loads(open(p, 'rb').read())\nk['bus'] = ('i2c', '/dev/i2c-9', 60)\n"
        "open(p, 'wb').write(marshal.dumps(k))\nEOF"
    )
    pi.sudo("systemctl start cityunit")
    until("the service is active again", lambda: active(pi) and main_pid(pi) != started)
    images, lit, offs = glass_states(pi.i2c_writes())
    assert lit[-1] and showed(images[before:][-1:], SwitchOffScreen()), "the unit's, as before"
    invocation = pi.run("systemctl show -p InvocationID --value cityunit").stdout.strip()
    journal = pi.sudo(f"journalctl -q -o cat _SYSTEMD_INVOCATION_ID={invocation}").stdout
    assert "running with" in journal and "first light:" not in journal, journal
    kept = "python3 -c \"import marshal; print(marshal.loads(open('/var/lib/cityunit/first-light', 'rb').read())['bus'])\""
    until("the unit kept its first light again, on its bus",
          lambda: "/dev/i2c-1" in pi.sudo(kept).stdout)  # fmt: skip


@pytest.mark.trixie
def test_doctor_is_all_ok_and_says_what_the_service_does(pi: VirtualPi) -> None:
    result = pi.run("cityunit doctor", check=False)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "FAIL" not in report and "warn" not in report, report
    assert "ssd1306 answers at 0x3C" in report, report
    assert "PWM      hardware for the buzzer (GPIO18, pwmchip0 channel 0) and the led " in report
    assert "(the running service)" in report, "what the service's own log says"


def test_step_2_the_oled_alone_lights_the_screen_and_doctor_checks_it(pi: VirtualPi) -> None:
    """The build guide's step 2 on a unit whose switch is not wired (its line floats high
    on the pull-up: OFF): the screen says SWITCH OFF, and `cityunit doctor --step 2`
    stops the service (sudo), draws its test pattern, asks, and starts it again."""

    def glass() -> Iterator[Image.Image]:
        return shown_i2c(pi.i2c_writes())

    until("the glass says SWITCH OFF", lambda: showed(glass(), SwitchOffScreen()))
    before = main_pid(pi)
    result = pi.run("cityunit doctor --step 2", input=b"y\n", check=False)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    assert "doctor: step 2, The OLED" in report and "ssd1306 answers at 0x3C" in report, report
    assert "sudo systemctl stop cityunit" in report and "ok   OLED     seen" in report, report
    assert showed(glass(), pattern()), "doctor's own pattern"
    until("the service is active again", lambda: active(pi))
    assert main_pid(pi) != before, "stopped for the test, started after it"
    until("the glass says SWITCH OFF again, the unit never yet ON",
          lambda: showed(list(glass())[-1:], SwitchOffScreen()))  # fmt: skip


def led_flashes(states: list[PWMState]) -> list[int]:
    """The times (ns) the LED's channel went on."""
    times, on = [], False
    for state in states:
        if state.channel != LED_CHANNEL:
            continue
        lit = state.enabled and state.duty == state.period
        if lit and not on:
            times.append(state.t_ns)
        on = lit
    return times


@pytest.mark.trixie
def test_a_game_moved_by_gpio_edges(pi: VirtualPi, console: Callable[[], Client]) -> None:
    unit = console()
    unit.ok("EVENTS ON")
    unit.forget_events()
    pi.line(POWER).drive(False)  # the toggle joins GPIO22 to GND: ON
    assert unit.wait_for("hour.start", within_ms=60_000)["hour"] == 1
    first_minute = [HourScreen(1, f"00:{s:02d}") for s in range(60)]
    until("the glass shows HOUR 1 in its first minute",
          lambda: showed(shown_i2c(pi.i2c_writes()), *first_minute))  # fmt: skip

    pi.sudo("echo > /sys/kernel/debug/vpi-pwm/log")
    pi.line(AUCTION).tap()
    unit.wait_for("auction.start", within_ms=30_000)
    for _ in range(6):
        unit.wait_for("led", within_ms=30_000, level=1.0)
    pi.line(AUCTION).tap()
    assert unit.wait_for("auction.end", within_ms=30_000)["stopped"] is True
    stopped = Image.open(GOLDEN / "stopped.en.png")
    until("the glass shows STOPPED", lambda: showed(shown_i2c(pi.i2c_writes()), stopped))
    until("the unit is back in the game", lambda: unit.state()["mode"] == "idle", 60)
    states = pi.pwm_states()  # the STOPPED tune has ended: every note is in
    flashes = led_flashes(states)
    assert len(flashes) >= 5, states
    gaps = sorted(b - a for a, b in itertools.pairwise(flashes))
    assert 0.9e9 <= gaps[len(gaps) // 2] <= 1.1e9, f"the LED flashes once a second: {gaps}"
    tones = {s.period for s in states if s.channel == BUZZER_CHANNEL and s.enabled}
    # The buzzer played only notes the unit called, and every note it held 300 ms or more.
    # Not every note: a guest stalled longer than a short note skips it, as deadlines mean.
    events = list(unit.events)
    notes = [(e["t_ms"], e["hz"]) for e in events if e["event"] == "tone"]
    called = {round(1e9 / hz) for _, hz in notes if hz}
    assert tones <= called, f"the buzzer's periods {tones}, the unit's notes {called}"
    start = next(e["t_ms"] for e in events if e["event"] == "auction.start")
    held = {round(1e9 / hz) for (t, hz), (end, _) in itertools.pairwise(notes)
            if hz and t >= start and end - t >= 300}  # fmt: skip
    assert held, f"the auction held no note: {notes}"
    assert held <= tones, f"the auction's long notes {held}, the buzzer's periods {tones}"
    pi.line(BUILD).tap()
    permit = unit.wait_for("permit", within_ms=60_000)["value"]
    golden = Image.open(GOLDEN / f"permit-{permit}.en.png")
    until(f"the glass shows permit {permit}", lambda: showed(shown_i2c(pi.i2c_writes()), golden))


def test_rpigpio_moves_a_game_and_the_stop_leaves_the_outputs_off(
    pi: VirtualPi, console: Callable[[], Client], tmp_path: Path
) -> None:
    """README offers `GPIOZERO_PIN_FACTORY=rpigpio` (RPi.GPIO: rpi-lgpio on Bookworm and
    Trixie), as a maker sets it: rpi-lgpio in the unit's venv, the variable in a drop-in.
    The switch and a button move the game through it, the LED and the buzzer play, the
    stop leaves them off; then the drop-in goes and lgpio drives the pins again."""
    wheels = tmp_path / "wheels"
    subprocess.run([*recipe.PIP_DOWNLOAD, "--no-deps", "--only-binary=:all:", "-d", wheels,
                    "rpi-lgpio"], check=True, timeout=600)  # fmt: skip
    wheel = next(wheels.glob("rpi_lgpio-*.whl"))
    pi.put({wheel.name: (wheel.read_bytes(), 0o644)}, "/home/pi/wheels")
    pi.sudo(f"/opt/cityunit/venv/bin/python -m pip install -q --no-index --no-deps "
            f"/home/pi/wheels/{wheel.name}")  # fmt: skip
    drop_in = "/etc/systemd/system/cityunit.service.d/rpigpio.conf"
    pi.sudo(f"mkdir -p {drop_in.rsplit('/', 1)[0]} && printf '[Service]\\n"
            f"Environment=GPIOZERO_PIN_FACTORY=rpigpio\\n' > {drop_in}")  # fmt: skip
    try:
        pi.line(POWER).drive(True)  # OFF, so that switching ON is an edge seen through it
        pi.sudo("systemctl daemon-reload && systemctl restart cityunit")
        assert pins_through(pi) == "RPiGPIOFactory"  # (restart returns once it is READY)
        console().close()  # the console started again with the service
        unit = console()
        unit.ok("EVENTS ON")
        unit.forget_events()
        pi.line(POWER).drive(False)  # ON
        assert unit.wait_for("power", within_ms=30_000)["on"] is True
        until("the unit is in its game", lambda: unit.state()["mode"] == "idle", 60)
        pi.sudo("echo > /sys/kernel/debug/vpi-pwm/log")
        pi.line(AUCTION).tap()
        unit.wait_for("auction.start", within_ms=30_000)
        unit.wait_for("led", within_ms=30_000, level=1.0)
        pi.sudo("systemctl stop cityunit")
        states = pi.pwm_states()
        assert any(s.channel == BUZZER_CHANNEL and s.enabled for s in states), states
        assert led_flashes(states), states
        last = {state.channel: state for state in states}
        assert not last[LED_CHANNEL].enabled and not last[BUZZER_CHANNEL].enabled, last
    finally:
        pi.sudo(f"rm -f {drop_in} && systemctl daemon-reload && systemctl restart cityunit")
    assert pins_through(pi) == "LGPIOFactory", "lgpio again, for the tests that follow"
    console().close()


def pins_through(pi: VirtualPi) -> str | None:
    """The pin factory the service said it drives the pins through, last this boot."""
    said = re.findall(r"pins through (\w+)", pi.journal())
    return said[-1] if said else None


def test_the_hil_suite_passes_against_the_services_console(
    pi: VirtualPi, console: Callable[[], Client]
) -> None:
    console().close()  # the port takes one client at a time
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         str(ROOT / "tests" / "hil"), "--cityunit-target", pi.console_url],
        capture_output=True, text=True, timeout=1_200, check=False, cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-5000:] + result.stderr[-2000:]
    assert re.search(r"\d+ passed", result.stdout), result.stdout[-2000:]


def test_a_reload_takes_a_good_file_and_refuses_a_bad_one(
    pi: VirtualPi, console: Callable[[], Client]
) -> None:
    unit, pid = console(), main_pid(pi)
    pi.sudo(f"cp {CONFIG} /tmp/installed.toml")
    edit_config(pi, game__language='"fr"')
    pi.sudo("systemctl reload cityunit")
    until("the reload is in", lambda: unit.settings()["language"] == "fr", 60)
    pi.sudo(
        f"cp {CONFIG} /tmp/good.toml && printf '[game]\\nlanguage = 7\\n[pins]\\nled = 99\\n' > {CONFIG}"
    )
    pi.sudo("systemctl reload cityunit")
    until("the refusal, key by key, is in the journal",
          lambda: "game.language" in (j := pi.journal()) and "pins.led" in j)  # fmt: skip
    assert active(pi) and main_pid(pi) == pid, "one process all along"
    assert unit.settings()["language"] == "fr", "the good file's settings stand"
    pi.sudo(f"cp /tmp/installed.toml {CONFIG} && systemctl reload cityunit")
    until("the installed file is back", lambda: unit.settings()["language"] == "en", 60)


def test_kill_9_restarts_the_service_in_the_same_hour(
    pi: VirtualPi, console: Callable[[], Client]
) -> None:
    unit = console()
    unit.switch(True)  # as the switch is (the HIL suite's last test may have said OFF)
    until("a game is on", lambda: unit.state()["mode"] == "idle", 60)
    before, pid = unit.state(), main_pid(pi)
    pi.sudo("systemctl kill -s KILL cityunit")
    until("systemd started it again", lambda: main_pid(pi) not in (0, pid) and active(pi), 120)
    unit.close()
    after = console().state()  # a new session: the unit's console started again
    assert after["power"] == "on" and after["hour"] == before["hour"], (before, after)
    assert after["hour_elapsed_ms"] >= before["hour_elapsed_ms"] - 1_000, (before, after)
    assert "RESUMED" in after["screen"], after


@pytest.mark.trixie
def test_a_hung_loop_is_restarted_by_the_watchdog(pi: VirtualPi) -> None:
    pid = main_pid(pi)
    pi.sudo("systemctl kill -s STOP cityunit")
    until("the watchdog restarted it", lambda: main_pid(pi) not in (0, pid) and active(pi), 180)
    assert "Watchdog timeout" in pi.journal(), "systemd's watchdog, not a crash"


def test_the_bench_on_the_guest_and_its_start_to_the_first_frame(
    pi: VirtualPi, capsys: pytest.CaptureFixture[str]
) -> None:
    """Figures, not targets (docs/performance.md prints them): `systemctl start` to the
    first frame's bytes on the bus and to READY, and `cityunit bench` (the service
    stopped) on the guest's Python and Debian's packages."""
    pi.sudo("systemctl stop cityunit")
    started = pi.sudo(
        "python3 -c 'import subprocess, time; t = time.monotonic_ns();"
        ' subprocess.run(["systemctl", "start", "cityunit"], check=True);'
        " print(t, time.monotonic_ns())'"
    ).stdout.split()
    t0, ready = map(int, started)
    frames = [w.t_ns for w in pi.i2c_writes() if w.t_ns > t0 and w.data[:1] == b"\x40"]
    assert frames, "no frame on the bus after the start"
    first = frames[0]
    pi.sudo("systemctl stop cityunit")  # the bench alone on the CPU, as --device asks
    bench = pi.run("cityunit bench --quick --json", timeout=900).stdout
    pi.sudo("systemctl start cityunit")
    figures = json.loads(bench)
    assert figures["presses"] > 0 and figures["startup_to_first_frame_ms"] > 0, figures
    with capsys.disabled():
        print(f"\nthe guest: systemctl start -> first frame {(first - t0) / 1e6:.0f} ms, "
              f"-> READY {(ready - t0) / 1e6:.0f} ms; cityunit bench --quick: {bench}")  # fmt: skip
    assert first < ready, "the first frame is on the bus before `systemctl start` returns"


@pytest.mark.trixie
def test_stop_leaves_the_led_and_buzzer_off_and_the_glass_dark(
    pi: VirtualPi, console: Callable[[], Client]
) -> None:
    unit = console()
    unit.ok("EVENTS ON")
    until("the unit is in its game", lambda: unit.state()["mode"] == "idle", 60)
    pi.line(AUCTION).tap()  # an auction: the LED flashing and the buzzer sounding
    unit.wait_for("auction.start", within_ms=60_000)
    unit.wait_for("led", within_ms=30_000, level=1.0)
    pi.sudo("systemctl stop cityunit")
    last: dict[int, PWMState] = {}
    for state in pi.pwm_states():
        last[state.channel] = state
    assert not last[LED_CHANNEL].enabled and not last[BUZZER_CHANNEL].enabled, last
    writes = pi.i2c_writes()
    assert writes[-1].data == bytes([0x00, 0xAE]), "the last command: display off"
    # doctor with the service stopped tries each channel as the service plays it
    doctor = pi.run("cityunit doctor", check=False)
    report = doctor.stdout
    assert "ok   PWM      hardware for the buzzer (GPIO18, pwmchip0 channel 0)" in report, (
        f"doctor exited {doctor.returncode}\n{report}{doctor.stderr}"
    )
    pi.sudo("systemctl start cityunit")
    until("the service is active", lambda: active(pi))


def get_json(url: str, data: bytes | None = None, token: str = "") -> dict | None:
    """A phone's request: the JSON it got (a POST's 204: {}), or None if none came."""
    request = urllib.request.Request(url, data, {"X-Unit-Token": token} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            body = answer.read()
    except (OSError, ValueError):
        return None
    return json.loads(body) if body else {}


def test_the_players_page_on_the_lan_and_a_press_with_the_glass_qr_code(
    pi: VirtualPi, console: Callable[[], Client]
) -> None:
    """The config turns the page on; the installer gives the service its network (LAN
    addresses only). A phone on QEMU's network (this machine, through 10.0.2.2) reads
    the state, the unit finds its own address (10.0.2.15), and the phone presses with the
    token it reads off the glass's QR code, as a camera would."""
    edit_config(pi, web__enabled="true")
    result = pi.run("cd cityunit && sudo python3 systemd/install.py", timeout=1_200)
    assert "wrote /etc/systemd/system/cityunit.service.d/web.conf" in result.stdout, result.stdout
    until("the service is active", lambda: active(pi))
    page = f"http://127.0.0.1:{pi.web_port}"
    assert until("the page answers from the LAN", lambda: get_json(f"{page}/state"))["v"] == 1
    until("the unit says where its page is",
          lambda: "the players' page is at http://10.0.2.15:8080/" in pi.journal())  # fmt: skip
    console().close()  # the unit's console started again with the service
    unit = console()
    unit.switch(True)
    until("a game is on", lambda: unit.state()["mode"] == "idle", 60)
    unit.hold("BUILD", 2_000)  # the menu
    for _ in range(12):
        if unit.state()["screen"][1:2] == ["ON PHONES"]:
            break
        unit.press("BUILD")
    assert unit.state()["screen"][1:] == ["ON PHONES", "http://10.0.2.15:8080/"]

    def read_qr() -> str | None:
        frames = list(shown_i2c(pi.i2c_writes()))
        image = frames[-1].convert("L").resize((256, 128)) if frames else None
        codes = [] if image is None else zxingcpp.read_barcodes(image)
        return codes[0].text if codes else None

    link = until("the glass shows the QR code", read_qr)
    assert link.startswith("HTTP://10.0.2.15:8080/K/"), link
    token = link.rsplit("/", 1)[1]
    unit.hold("BUILD", 2_000)  # out of the menu
    press = json.dumps({"button": "auction", "down": True}).encode()
    assert get_json(f"{page}/press", press, "WRONG") is None, "no press without the token"
    assert get_json(f"{page}/press", press, token) == {}
    assert get_json(f"{page}/press", press.replace(b"true", b"false"), token) == {}
    until("the phone's press started an auction", lambda: unit.state()["mode"] == "auction", 60)
    unit.press("AUCTION")  # stopped, from the box


def test_the_spi_display_in_a_second_configuration(
    pi: VirtualPi, console: Callable[[], Client]
) -> None:
    edit_config(pi, display__driver='"ssd1309"', display__interface='"spi"')
    result = pi.run("cd cityunit && sudo python3 systemd/install.py", timeout=1_200)
    assert "dtparam=spi=on" in pi.run("cat /boot/firmware/config.txt").stdout, result.stdout
    pi.reboot()
    until("the service is active", lambda: active(pi))
    pi.run("test -c /dev/spidev0.0 && test -c /dev/spidev0.1")
    console().close()  # the unit's console started again with the guest
    state = until(
        "the unit is back in its game", lambda: (st := console().state())["mode"] == "idle" and st
    )
    assert state["power"] == "on", "the switch is still ON across the reboot"
    played = state["hour_elapsed_ms"] // 1000
    near = [
        HourScreen(state["hour"], f"{s // 60:02d}:{s % 60:02d}")
        for s in range(max(0, played - 30), played + 60)
    ]
    parts = Config().hardware  # the default D/C and RST pins, which the config keeps
    until("the SPI glass shows the hour",
          lambda: showed(shown_spi(pi.spi_writes(), parts.dc_pin, parts.reset_pin), *near))  # fmt: skip
    # An output read back with its time: luma pulses RST (low, then high) before it
    # sends the panel anything, which the kernel's gpio_value events show.
    first = pi.spi_writes()[0].t_ns
    rst = [level for t, line, level in pi.gpio_sets() if line == parts.reset_pin and t < first]
    assert rst[-2:] == [0, 1], f"RST before the first transfer: {rst}"
    result = pi.run("cityunit doctor", check=False)
    assert result.returncode == 0 and "/dev/spidev0.0 is accessible" in result.stdout, result.stdout


@pytest.mark.trixie
def test_polkit_lets_the_service_user_power_off_and_nothing_more(pi: VirtualPi) -> None:
    """As polkit itself decides it for the service's process: logind's power-off (alone or
    with other sessions open), and starting poweroff.target, which `systemctl poweroff`
    falls back to when logind's call fails (it did here once, an SSH session ending
    during the gesture: "Stale file handle"); not stopping its own service."""

    service = main_pid(pi)  # a process of the cityunit user's, as the subject

    def allowed(action: str, *details: str) -> bool:
        # asked as root: polkit takes details only from a trusted caller
        asked = " ".join(f"--detail {d}" for d in details)
        check = f"pkcheck --action-id {action} --process {service} {asked}"
        return pi.sudo(check, check=False).returncode == 0

    assert allowed("org.freedesktop.login1.power-off")
    assert allowed("org.freedesktop.login1.power-off-multiple-sessions")
    manage = "org.freedesktop.systemd1.manage-units"
    assert allowed(manage, "unit poweroff.target", "verb start")
    assert not allowed(manage, "unit cityunit.service", "verb stop")
    assert not allowed("org.freedesktop.login1.reboot")


@pytest.mark.trixie
def test_the_safe_shutdown_gesture_powers_the_pi_off(pi: VirtualPi) -> None:
    pi.line(POWER).drive(True)  # switch OFF
    pi.line(AUCTION).hold(pi.line(BUILD), ms=7_000)  # both, 5 s and more
    try:
        assert pi.wait_powered_off(300) == 0, "QEMU ends when the guest powers off"
    except subprocess.TimeoutExpired:
        log = pi.sudo("journalctl -b -n 60 -o cat --no-pager", check=False).stdout
        raise AssertionError(f"the guest is still on; its journal ends:\n{log}") from None
