"""A player's first evening with the SD-card image, on QEMU's Pi: the card's cityunit.toml
and sysconf.txt edited on a computer, the card in, power on; the unit answers on its
console and plays, and leaves the card alone when switched off; the plug pulled mid-hour
and put back (a mistake made in cityunit.toml meanwhile); a new image flashed over the
card.

The tests share one card and run in file order, each from where the one before left the
emulated Pi (booted, or its plug pulled): run the file, not one test alone.

What it proves is what Debian's kernel, systemd and the image's own boot (the read-only
root, the data partition made on the first boot) make of the firmware; not the Pi's
GPIO, PWM or timing (QEMU emulates no PWM block, and no display answers on its I2C bus).
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from emulated_pi import BOOT_S, Card, EmulatedPi, image_build

import cityunit
from cityunit.console.client import Client

# The tests' config: the unit's console on the first UART (the image's default has none),
# a short fixed auction to play to its end.
CONSOLE = "/dev/ttyAMA0"
AUCTION_S = 8


def players_config(card: Card) -> bytes:
    """The card's own cityunit.toml, as a player edits it: three values changed."""
    text = card.read("cityunit.toml").decode()
    for old, new in (
        ('port = ""', f'port = "{CONSOLE}"'),
        ('mode = "random"', 'mode = "fixed"'),
        ("fixed_s = 50", f"fixed_s = {AUCTION_S}"),
    ):
        assert old in text, f"the image's cityunit.toml has no {old!r}"
        text = text.replace(old, new, 1)
    return text.encode()


# The first-boot settings a player may write in sysconf.txt (the SSH key is made here).
SSID, PASSPHRASE, HOSTNAME = "Kitchen # 2", "correct horse#battery", "kitchen-unit"
TEMPLATE = image_build.HERE / "rootfs/boot/firmware/sysconf.txt"  # the card's, as flashed


def players_sysconf(card: Card, public_key: str) -> bytes:
    """The card's sysconf.txt with a setting of each kind written under its comments."""
    settings = (f"hostname = {HOSTNAME}\r\nroot_authorized_key={public_key}\n"
                f"wifi_ssid={SSID}\nwifi_psk={PASSPHRASE}\nwifi_country=gb\nwifi_band=5\n"
                f"wifi_psk: {PASSPHRASE}\n")  # fmt: skip
    return card.read("sysconf.txt") + settings.encode()


def journal_on_the_uart(card: Card) -> None:
    """The journal on the kernel's console too (the card's cmdline.txt, as a maker would
    edit it): the only way out of a Pi with no network and no login."""
    cmdline = card.read("cmdline.txt").decode().strip()
    card.write("cmdline.txt", f"{cmdline} systemd.journald.forward_to_console=1\n".encode())


def console(pi: EmulatedPi) -> Client:
    """The unit's console, once it answers: tried again until the boot gets there."""
    deadline = time.monotonic() + BOOT_S
    while True:
        try:
            return Client.port(f"socket://127.0.0.1:{pi.port}")
        except Exception:
            if time.monotonic() > deadline:
                raise
            assert pi.process and pi.process.poll() is None, f"QEMU ended: {pi.tail()}"


@pytest.fixture(scope="module")
def ssh_key(tmp_path_factory: pytest.TempPathFactory) -> str:
    key = tmp_path_factory.mktemp("ssh") / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key.with_suffix(".pub").read_text().strip()


@pytest.fixture(scope="module")
def unit(card: Card, emulated: EmulatedPi, ssh_key: str) -> Iterator[Client]:
    """The card, with the tests' config and first-boot settings on it, booted; its
    console."""
    card.write("cityunit.toml", players_config(card))
    card.write("sysconf.txt", players_sysconf(card, ssh_key))
    journal_on_the_uart(card)
    emulated.boot()
    emulated.wait_for(r"cityunit \S+ running with")
    running = time.monotonic() - emulated.started
    client = console(emulated)
    answered = time.monotonic() - emulated.started
    print(f"\nplug-in to the unit running: {running:.0f} s; to its console answering:"
          f" {answered:.0f} s (QEMU raspi3b, software emulation)")  # fmt: skip
    try:
        yield client
    finally:
        client.close()


def test_the_unit_answers_its_console(unit: Client) -> None:
    assert unit.ok("PROTOCOL").startswith("1.")
    assert unit.ok("VERSION") == cityunit.__version__


def test_the_first_boot_settings_are_read_and_no_secret_is_logged(
    emulated: EmulatedPi, unit: Client
) -> None:
    emulated.wait_for(r"cityunit-sysconf: sysconf.txt read: 7 setting\(s\)")
    assert PASSPHRASE not in emulated.log.read_text(errors="replace")


def test_switch_on_starts_hour_one(unit: Client) -> None:
    unit.switch(True)
    state = unit.state()
    assert (state["power"], state["hour"]) == ("on", 1)


def test_an_auction_runs_to_its_end(unit: Client) -> None:
    unit.press("AUCTION")
    unit.wait_for("auction.start", within_ms=10_000)
    end = unit.wait_for("auction.end", within_ms=(AUCTION_S + 10) * 1000)
    assert end["stopped"] is False


def test_the_display_is_tried_and_logged_down(emulated: EmulatedPi, unit: Client) -> None:
    """QEMU's I2C controller has no SSD1306 on it: the writes are tried, fail, and the unit
    says so and plays on."""
    emulated.wait_for(r"cityunit.*display lost \(I2C device not found on address: 0x3C\)",
                      timeout=60)  # fmt: skip
    assert unit.state()["power"] == "on"


def test_the_players_page_is_served(emulated: EmulatedPi, unit: Client) -> None:
    """The image turns the page on, with its network (cityunit.service.d/web.conf). QEMU's
    raspi3b gives the emulated Pi no network interface here (its only NIC would be on
    USB, which this machine's QEMU does not wire to one), so no phone can fetch it: the
    unit listens, and says where (127.0.0.1: no network, no other address)."""
    emulated.wait_for(r"cityunit.*the players' page is at http://[0-9.]+:8080/", timeout=60)
    assert unit.state()["power"] == "on"


def a_mistake(good: bytes) -> bytes:
    """cityunit.toml as a player mistypes it on a computer: a volume that does not exist."""
    assert b'volume = "high"' in good
    return good.replace(b'volume = "high"', b'volume = "loud"')


@pytest.fixture(scope="module")
def seen() -> dict[str, dict]:
    """What a test saw that a later one judges (the tests share one Pi and its boots)."""
    return {}


def test_a_pulled_plug_loses_nothing(
    card: Card, emulated: EmulatedPi, unit: Client, seen: dict[str, dict]
) -> None:
    """QEMU killed mid-hour and started again: the same hour goes on, at most the 5 s
    since the unit's last save behind. Meanwhile the card was in a computer, and a
    mistake was made in its cityunit.toml (judged by the test after the next)."""
    before = unit.state()
    assert before["hour_elapsed_ms"] > 5_000  # else a new hour would pass for the same
    emulated.cut_power()
    card.write("cityunit.toml", a_mistake(card.read("cityunit.toml")))
    emulated.boot()
    after_boot = console(emulated)
    try:
        state = seen["after the plug"] = after_boot.state()
        assert state["hour"] == before["hour"]
        assert state["hour_elapsed_ms"] >= before["hour_elapsed_ms"] - 5_000
    finally:
        after_boot.close()


def data_file(card: Card, name: str) -> str:
    """A file of the card's data partition (debugfs: read as any Linux computer could)."""
    return subprocess.run(
        ["debugfs", "-R", f"cat {name}", f"{card.path}?offset={image_build.SIZE}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip


def test_the_first_boot_settings_are_kept_and_their_secret_leaves_the_card(
    card: Card, emulated: EmulatedPi, ssh_key: str, unit: Client
) -> None:
    """sysconf.txt was read on the first boot: on this one (after the pulled plug) its
    settings come from the data partition; the file on the FAT holds no passphrase."""
    emulated.wait_for(f"cityunit-sysconf: hostname {HOSTNAME}")
    emulated.wait_for(r"cityunit-sysconf: SSH on, for root with 1 key")
    emulated.wait_for(r"Server listening on")  # sshd, with the card's own host key
    emulated.wait_for(r"cityunit-sysconf: Wi-Fi on wlan0, for the network kept on the card")
    assert "sysconf.txt read" not in emulated.log.read_text(errors="replace")
    emulated.cut_power()
    sysconf = card.read("sysconf.txt").decode()
    assert PASSPHRASE not in sysconf
    # a refused line is named by its number: wifi_band=5, then the passphrase after a colon
    band = len(TEMPLATE.read_text().splitlines()) + 6
    for line in (f"# applied: hostname={HOSTNAME}", f"# applied: root_authorized_key={ssh_key}",
                 "# applied: wifi_ssid (removed from this file)",
                 "# applied: wifi_psk (removed from this file)",
                 f"# refused (line {band}): no such setting",
                 f"# refused (line {band + 1}): not a setting (key=value)"):  # fmt: skip
        assert line in sysconf.splitlines()
    assert "wifi_band" not in sysconf
    wifi = data_file(card, "/system/wifi.conf")
    assert PASSPHRASE not in wifi and "country=GB" in wifi and f'ssid="{SSID}"' in wifi
    assert re.search(r"^\s*psk=[0-9a-f]{64}$", wifi, re.M)
    assert data_file(card, "/system/authorized_keys").strip() == ssh_key
    assert "ssh-ed25519" in data_file(card, "/system/ssh_host_ed25519_key.pub")


def test_a_broken_cityunit_toml_is_refused_and_the_unit_plays_on(
    card: Card, emulated: EmulatedPi, seen: dict[str, dict]
) -> None:
    """The mistake made on the card while its plug was out: the unit said so on its
    screen and played with the last good file (its console is that file's, so it still
    answered), and the journal names the key. The card is mended for the next boot."""
    if "after the plug" not in seen:
        pytest.fail("the card was not booted after its mistake (the pulled-plug test failed)")
    state = seen["after the plug"]
    assert state["screen"][:2] == ["CONFIG REFUSED", "sound.volume"]
    assert state["power"] == "on" and state["hour"] == 1
    emulated.cut_power()  # (the test before cut it already: the log of that boot stays)
    assert re.search(r"sound\.volume: must be one of", emulated.log.read_text(errors="replace"))
    card.write("cityunit.toml", card.read("cityunit.toml").replace(b'"loud"', b'"high"'))


def superblock(disk: Path, offset: int) -> dict[str, str]:
    """An ext4's superblock, read from a disk image at a partition's offset (dumpe2fs)."""
    out = subprocess.run(
        ["dumpe2fs", "-h", f"{disk}?offset={offset}"], capture_output=True, text=True,
        check=True,
    ).stdout  # fmt: skip
    return dict(line.split(":", 1) for line in out.splitlines() if ":" in line)


def test_the_root_was_never_written(
    sd_image: Path, card: Card, emulated: EmulatedPi, unit: Client
) -> None:
    """Every boot so far mounted the card's root read-only: its superblock is as built
    (no mount counted, no write time), while the data partition's counts its mounts."""
    emulated.cut_power()
    root = image_build.BOOT[0] + image_build.BOOT[1]
    built, now = superblock(sd_image, root), superblock(card.path, root)
    for field in ("Mount count", "Last mount time", "Last write time", "Filesystem state"):
        assert now[field] == built[field], field
    data = superblock(card.path, image_build.SIZE)
    assert int(data["Mount count"]) >= 2  # the first boot's, and the one after the plug


def test_a_new_image_flashed_over_keeps_the_game_and_the_settings(
    sd_image: Path, card: Card, emulated: EmulatedPi
) -> None:
    """An update: the image written over the card's first 2 GiB. The data partition
    beyond is taken back, with the first-boot settings it keeps, and the player's
    cityunit.toml is put back over the default."""
    ours = card.read("cityunit.toml")
    Card.flash(sd_image, card.path)
    assert card.read("cityunit.toml") != ours  # the image's default, as flashed
    journal_on_the_uart(card)
    emulated.boot()
    client = console(emulated)  # the console is our file's: it is back
    try:
        state = client.state()
        assert state["power"] == "on" and state["hour"] == 1
    finally:
        client.close()
    emulated.wait_for("taking back the data partition")
    emulated.wait_for(f"cityunit-sysconf: hostname {HOSTNAME}")  # the first-boot settings too
    assert card.read("cityunit.toml") == ours


def writes_seen(card: Card, seconds: float) -> list[float]:
    """When the card was written to in the next `seconds` (looked at twice a second),
    in seconds from now. The span watched is the measure, not a wait for behaviour."""
    seen, last, start = [], card.written_ns(), time.monotonic()
    while time.monotonic() - start < seconds:
        time.sleep(0.5)
        if (now := card.written_ns()) != last:
            seen.append(round(time.monotonic() - start, 1))
            last = now
    return seen


def quiet_for(card: Card, seconds: float, within: float = 180) -> float:
    """Waited for: the card left alone for `seconds` on end; how long that took."""
    start = time.monotonic()
    while writes_seen(card, seconds):
        assert time.monotonic() - start < within, f"the card is still written to after {within} s"
    return time.monotonic() - start


def test_nothing_is_written_to_the_card_while_the_unit_is_off(
    card: Card, emulated: EmulatedPi, unit: Client
) -> None:
    """Playing, the unit saves every 5 s; switched off, it saves once and then leaves the
    card alone (the system writes to RAM, the journal too): a card wears by its writes,
    and a plug pulled mid-write is the one way to hurt it."""
    client = console(emulated)  # (the card booted by the test above)
    try:
        assert client.state()["power"] == "on"
        playing = writes_seen(card, 20)
        client.switch(False)
        # The last save, then the kernel's writing back of it: its journal within 5 s, the
        # blocks in place once 30 s old (vm.dirty_expire_centisecs).
        settled = quiet_for(card, 35)
        idle = writes_seen(card, 30)
    finally:
        client.close()
    print(f"\nwrites to the card seen: {len(playing)} in 20 s of play; switched off, quiet"
          f" for 35 s after {settled:.0f} s, then {len(idle)} in 30 s")  # fmt: skip
    assert len(playing) >= 2  # the witness sees the saves
    assert idle == [], f"written to at {idle} s into the 30 s watched"


def plant(card: Card, name: str, data: bytes, tmp_path: Path) -> None:
    """A file put on the card's data partition as a Linux computer would: the partition
    checked first (the plug was pulled: its journal is replayed, or the next boot's replay
    would bring the old blocks back over the new file), then written with debugfs; only
    the blocks that changed go back onto the card."""
    part, local = tmp_path / "citydata.img", tmp_path / "planted"
    subprocess.run(["dd", f"if={card.path}", f"of={part}", "bs=4M", "iflag=skip_bytes",
                    f"skip={image_build.SIZE}", "conv=sparse", "status=none"], check=True)  # fmt: skip
    checked = subprocess.run(["e2fsck", "-fy", str(part)], capture_output=True, text=True)
    assert checked.returncode <= 1, checked.stdout + checked.stderr  # 1: mended
    local.write_bytes(data)
    folder, _, leaf = name.rpartition("/")
    script = tmp_path / "debugfs"
    script.write_text(f"cd {folder or '/'}\nrm {leaf}\nwrite {local} {leaf}\n")
    subprocess.run(["debugfs", "-w", "-f", str(script), str(part)], capture_output=True, check=True)
    with open(part, "rb") as new, open(card.path, "r+b") as old:
        old.seek(image_build.SIZE)
        while chunk := new.read(1 << 20):
            at = old.tell()
            if old.read(len(chunk)) != chunk:
                old.seek(at)
                old.write(chunk)


def test_a_last_good_copy_larger_than_a_config_stays_off_the_card(
    sd_image: Path, card: Card, emulated: EmulatedPi, tmp_path: Path
) -> None:
    """A re-flash over a data partition whose last good cityunit.toml has grown past what a
    config may hold (64 KiB, config.MAX_BYTES): the copy is not put back on the FAT (no
    file of any size goes from there onto it), the image's own stays, and the journal says
    why."""
    emulated.cut_power()
    ours = card.read("cityunit.toml")
    Card.flash(sd_image, card.path)
    flashed = card.read("cityunit.toml")
    kept = "/cityunit/config.last-good.toml"
    plant(card, kept, ours + b"#" * (64 * 1024 + 1 - len(ours)), tmp_path)
    assert len(data_file(card, kept)) == 64 * 1024 + 1
    journal_on_the_uart(card)
    emulated.boot()
    emulated.wait_for(r"the last good cityunit\.toml is over 65536 bytes, no config: not put back")
    emulated.wait_for(r"Finished cityunit-card\.service")
    emulated.cut_power()
    assert card.read("cityunit.toml") == flashed


# Printed by the emulated Pi once its boot is done: what the unit's start waited for.
# (systemd.run boots into its command alone: systemd.unit brings the card's boot back, and
# the command, run in it, starts the chain as a unit of its own, which waits for the end
# of the boot: critical-chain answers only then.)
CRITICAL_CHAIN = (
    'systemd.run="systemd-run --no-block --unit=critical-chain sh -c'
    " 'systemctl is-system-running --wait; systemd-analyze critical-chain cityunit.service'\""
    " systemd.run_success_action=none systemd.run_failure_action=none"
    " systemd.unit=multi-user.target systemd.wants=kernel-command-line.service"
)
_STAMP = re.compile(r"^\[\s*(\d+\.\d+)\]")


def guest_s(line: str) -> float:
    """The guest's own clock (seconds since its kernel started) on a journal line."""
    stamp = _STAMP.match(line)
    assert stamp, f"no time on {line!r}"
    return float(stamp[1])


def test_power_on_to_first_light_and_to_ready_are_timed(
    sd_image: Path, emulated: EmulatedPi, tmp_path: Path
) -> None:
    """Issue 41: a new card, as flashed, with a display on the header's I2C (DISPLAY: it
    acknowledges every byte). At its very first boot the service's first stage lights the
    glass before the unit's imports, with the image's first light (`cityunit run
    --keepsake`, given to the new data partition by cityunit-card), and the unit then keeps
    its own. From power-on: the first write to the display's address (QEMU's trace), the
    unit READY (systemd's "Started"), and the critical chain that led to it
    (docs/performance.md has them)."""
    emulated.cut_power()  # the other tests' Pi: one emulator at a time
    card = Card.flash(sd_image, tmp_path / "card.img")
    journal_on_the_uart(card)  # (the FAT's cmdline.txt: cityunit.toml stays as flashed)
    with EmulatedPi(card, tmp_path / "run", display=True, append=CRITICAL_CHAIN) as pi:
        ready = guest_s(pi.wait_for(r"Started cityunit\.service"))
        seen = time.monotonic() - pi.started  # (the log is read each second)
        made = pi.wait_for(r"cityunit-card: making the data partition")
        lit = pi.wait_for(r"first light: the glass lit before the unit started")
        power = pi.wait_for(r"cityunit\.loop\.runtime: power \{'on': (True|False)\}")
        said = "ON" if "True" in power else "OFF"  # (QEMU's GPIO reads the switch ON)
        assert lit.endswith(f"the switch read {said}"), (lit, power)
        pi.wait_for(r"kept, for the first light of the next start")
        pi.wait_for(r"critical-chain\.service: Deactivated successfully")
        write = pi.first_write_s()
        assert write is not None, "no write reached the display's address"
        log = pi.log.read_text(errors="replace")
    chain = re.search(r"\] (\S+\[\d+\]): The time when unit became active", log)
    assert chain, "no critical chain"
    steps = [line for line in log.splitlines() if f"] {chain[1]}: " in line]
    formatted = re.search(r"\[\s*(\d+\.\d+)\] .*Finished cityunit-card", log)
    print(f"\na new card's first boot, from power-on: the first write to 0x3C {write:.1f} s,"
          f" READY seen {seen:.0f} s (at {ready:.1f} s of the guest's clock); the data"
          f" partition made at {guest_s(made):.1f} s, the card's step done at"
          f" {formatted and formatted[1]} s", *steps, sep="\n")  # fmt: skip
    assert log.count("first light: the glass lit before the unit started") == 1, "one start"
    assert write < seen - 1, "the glass is lit before the unit is READY"
    assert steps, "the critical chain was printed"
