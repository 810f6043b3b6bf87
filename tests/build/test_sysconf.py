"""The card's first-boot settings (hardware/image/rootfs/usr/local/sbin/cityunit-sysconf),
read as the card's boot reads them, off the card: whatever a computer wrote in
sysconf.txt, no passphrase and no refused line's content reaches the log or goes back
onto the FAT, and the file is read in one pass. (The image tier boots it on the card.)"""

from __future__ import annotations

import base64
import importlib.machinery
import importlib.util
import re
import struct
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "hardware/image/rootfs/usr/local/sbin/cityunit-sysconf"
TEMPLATE = (ROOT / "hardware/image/rootfs/boot/firmware/sysconf.txt").read_text()
SECRET = "hunter2secretPW"
# an ed25519 public key as ssh-keygen writes it: its blob is the type and 32 bytes
BLOB = struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + bytes(range(32))
KEY = f"ssh-ed25519 {base64.b64encode(BLOB).decode()} me@laptop"


def load() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("cityunit_sysconf", str(SCRIPT))
    spec = importlib.util.spec_from_loader("cityunit_sysconf", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (its dataclass looks its module up)
    loader.exec_module(module)
    return module


sysconf = load()


def settings(*lines: str, eol: str = "\n") -> str:
    return eol.join(lines) + eol


def written(text: str) -> tuple[str, str]:
    """The file as it goes back onto the FAT, and everything logged."""
    reading = sysconf.read(text)
    old = text.encode(errors="surrogateescape")
    return sysconf.rewritten(old, reading).decode(errors="replace"), "\n".join(reading.said)


@pytest.mark.parametrize("eol", ["\r", "\n", "\r\n"], ids=["CR", "LF", "CRLF"])
@pytest.mark.parametrize("template_first", [True, False], ids=["template-first", "settings-first"])
def test_cr_lf_and_crlf_are_read_alike(eol: str, template_first: bool, tmp_path: Path) -> None:
    """An old Mac editor's CR-only file was one line: the SSID swallowed the rest and the
    passphrase went back onto the FAT; with the template first, nothing was read."""
    ours = settings("wifi_ssid=Kitchen", f"wifi_psk={SECRET}", "hostname=kitchen", eol=eol)
    template = TEMPLATE.replace("\n", eol)
    text = template + ours if template_first else ours + template
    back, said = written(text)
    assert SECRET not in back and SECRET not in said
    reading = sysconf.read(text)
    assert (reading.settings, reading.hostname) == (3, "kitchen")
    assert reading.network() is not None
    assert f"# applied: wifi_ssid (removed from this file){eol}" in back
    assert back.count(eol) >= text.count(eol), "each line keeps its place and its ending"
    sysconf.keep(reading, tmp_path)
    assert 'ssid="Kitchen"' in (tmp_path / "wifi.conf").read_text()


@pytest.mark.parametrize(
    ("line", "content"),
    [
        (SECRET, SECRET),
        (f"wifi_psk{SECRET}", SECRET),
        (f"{SECRET}=1", SECRET),
        ("wifi_psk = hunte", "hunte"),
        ("wifi_band=5", "wifi_band"),
    ],
)
def test_a_refused_line_is_named_by_its_number_alone(line: str, content: str) -> None:
    """A passphrase typed without its key was logged, and written back lower-cased, as a
    refused "first word"."""
    text = TEMPLATE + settings("hostname=kitchen", line)
    back, said = written(text)
    number = len(TEMPLATE.splitlines()) + 2
    for where in (back, said):
        assert content.lower() not in where.lower()
        assert f"line {number}" in where
    assert f"# refused (line {number}): " in back


def test_a_long_file_of_short_lines_is_read_in_one_pass_with_no_program_started(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """~9 ms a line with a program or more started for each: a 64 KiB file outlasted the
    service's 120 s at every boot, applied nothing and left the passphrase on the card."""

    def started(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"a program started while reading: {args}")

    monkeypatch.setattr(subprocess, "run", started)
    monkeypatch.setattr(subprocess, "Popen", started)
    lines = [f"wifi_psk={SECRET}", "wifi_ssid=Kitchen"] + ["x=1"] * 16_000
    text = settings(*lines)[: sysconf.LARGEST]
    reading = sysconf.read(text)
    assert reading.settings == text.count("\n") + (not text.endswith("\n"))
    back, said = written(text)
    assert SECRET not in back and SECRET not in said
    assert len(back.encode()) >= len(text.encode()), "every byte of the old file overwritten"


def ssid_of(conf: str) -> str:
    """The network's name as wpa_supplicant reads it: quoted, or hex."""
    found = re.search(r'^\s*ssid=(?:"(.*)"|([0-9a-f]+))$', conf, re.M)
    assert found is not None, conf
    return found[1] if found[1] is not None else bytes.fromhex(found[2]).decode()


def test_the_passphrase_is_kept_hashed_as_wpa_passphrase_does(tmp_path: Path) -> None:
    # IEEE 802.11i's test vector: "password" on the network "IEEE"
    reading = sysconf.read(settings("wifi_ssid=IEEE", "wifi_psk=password", "wifi_country=gb"))
    sysconf.keep(reading, tmp_path)
    conf = (tmp_path / "wifi.conf").read_text()
    assert "psk=f42c6fc52df0ebef9ebb4b90b38a5f902e83fe1b135a70e23aed762e9710a12e" in conf
    assert "country=GB" in conf and "password" not in conf
    assert ssid_of(conf) == "IEEE"


def test_a_name_with_quotes_is_kept_as_hex_and_read_back(tmp_path: Path) -> None:
    reading = sysconf.read(settings('wifi_ssid=Joe\'s "5G"', f"wifi_psk={SECRET}"))
    sysconf.keep(reading, tmp_path)
    conf = (tmp_path / "wifi.conf").read_text()
    assert '"5G"' not in conf and ssid_of(conf) == 'Joe\'s "5G"'


@pytest.mark.parametrize(
    ("line", "why"),
    [
        ("hostname=-bad", "not a hostname"),
        ("root_authorized_key=ssh-ed25519 AAAA me", "not an SSH public key"),
        ("root_authorized_key=ssh-rsa " + KEY.split()[1], "not an SSH public key"),
        ("ssh=on", "only ssh=off"),
        ("wifi_psk=short", "8 to 63"),
        ("wifi_country=GBR", "two letters"),
    ],
)
def test_each_setting_is_checked(line: str, why: str) -> None:
    back, said = written(settings(line))
    assert why in back and why in said


def test_wifi_needs_both_halves_and_keeps_nothing_without(tmp_path: Path) -> None:
    reading = sysconf.read(settings("wifi_ssid=Kitchen"))
    back, _ = written(settings("wifi_ssid=Kitchen"))
    assert back.startswith("# refused (line 1): Wi-Fi needs wifi_ssid and wifi_psk")
    sysconf.keep(reading, tmp_path)
    assert not (tmp_path / "wifi.conf").exists()


def test_keys_are_added_once_and_ssh_off_forgets_them(tmp_path: Path) -> None:
    sysconf.keep(sysconf.read(settings(f"root_authorized_key={KEY}")), tmp_path)
    sysconf.keep(sysconf.read(settings(f"root_authorized_key={KEY}")), tmp_path)
    assert (tmp_path / "authorized_keys").read_text() == KEY + "\n"
    sysconf.keep(sysconf.read(settings("ssh=off")), tmp_path)
    assert not (tmp_path / "authorized_keys").exists()


def test_the_file_is_overwritten_in_place_every_old_byte(tmp_path: Path) -> None:
    card = tmp_path / "sysconf.txt"
    text = TEMPLATE + settings("wifi_ssid=Kitchen", f"wifi_psk={SECRET}")
    card.write_text(text)
    inode = card.stat().st_ino
    sysconf.rewrite(card, sysconf.rewritten(text.encode(), sysconf.read(text)))
    assert card.stat().st_ino == inode and card.stat().st_size >= len(text.encode())
    assert SECRET not in card.read_text()


def test_a_notepad_files_byte_order_mark_is_not_part_of_its_first_line(tmp_path: Path) -> None:
    """Windows' Notepad starts a UTF-8 file with EF BB BF: the first setting was refused
    as "not a setting", and with it the Wi-Fi."""
    text = "\ufeffwifi_ssid=Home\r\nwifi_psk=hunter2hunter2\r\n"
    reading = sysconf.read(text)
    assert reading.network() is not None and "refused" not in " ".join(reading.said)
    assert not sysconf.has_settings("\ufeff# only a comment\n")


@pytest.mark.parametrize(
    ("lines", "keys", "wifi"),
    [
        ((f"root_authorized_key={KEY}", "ssh=off"), False, False),
        (("ssh=off", f"root_authorized_key={KEY}"), True, False),
        (("wifi_ssid=Home", f"wifi_psk={SECRET}", "wifi=off"), True, False),
        (("wifi=off", "wifi_ssid=Home", f"wifi_psk={SECRET}"), True, True),
    ],
    ids=["key-then-ssh-off", "ssh-off-then-key", "wifi-then-off", "off-then-wifi"],
)
def test_off_and_a_setting_are_taken_in_the_files_order(
    lines: tuple[str, ...], keys: bool, wifi: bool, tmp_path: Path
) -> None:
    """ssh=off after a key forgot the key? It was applied first, whatever the order: the
    key stayed, and SSH with it."""
    (tmp_path / "authorized_keys").write_text(KEY + "\n")  # kept from an earlier boot
    sysconf.keep(sysconf.read(settings(*lines)), tmp_path)
    assert (tmp_path / "authorized_keys").exists() == keys
    assert (tmp_path / "wifi.conf").exists() == wifi


def test_a_passphrase_typed_as_the_networks_name_leaves_the_file_too() -> None:
    back, said = written(settings(f"wifi_ssid={SECRET}", "wifi_psk=HomeNetwork"))
    assert SECRET not in back and SECRET not in said


@pytest.mark.parametrize("separator", ["\u2028", "\x0b", "\x1c", "\x85"])
def test_a_key_with_a_line_separator_in_it_is_refused(separator: str, tmp_path: Path) -> None:
    """sshd splits authorized_keys on LF alone; Python's splitlines on these too: a key
    whose comment held one became, once another key was added, a line of its own that
    no check had seen."""
    planted = f"{KEY}{separator}no-pty {KEY}"
    back, _ = written(settings(f"root_authorized_key={planted}"))
    assert "# refused (line 1): not an SSH public key" in back


def test_a_data_partition_that_refuses_keeps_nothing_and_the_secret_still_goes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = settings("hostname=kitchen", "wifi_ssid=Home", f"wifi_psk={SECRET}")
    card = tmp_path / "sysconf.txt"
    card.write_text(text)
    full = tmp_path / "full"
    full.mkdir()

    def refused(self: Path, data: str, *args: object, **kwargs: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", refused)
    monkeypatch.setattr(sysconf, "FILE", card)
    monkeypatch.setattr(
        sysconf.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0)
    )
    sysconf.read_file(full, write_back=True)
    back = card.read_text(errors="replace")
    assert SECRET not in back
    assert back.count("data partition refused it") == 3


def test_the_card_puts_back_no_more_than_a_config_may_hold() -> None:
    """cityunit-card (a shell script, booted in the image tier) copies the last good
    cityunit.toml back onto the FAT only up to the config's own limit: the two numbers
    are one fact, written twice, so they are checked here."""
    from cityunit import config

    card = (SCRIPT.parent / "cityunit-card").read_text()
    largest = re.search(r"^LARGEST=(\d+)\b", card, re.M)
    assert largest and int(largest[1]) == config.MAX_BYTES
