"""The Pi install, into a folder: every file it writes, every command it would run."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cityunit.config import load

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ROOT / "systemd" / "install.py"


def install(root: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(INSTALL), "--root", str(root), *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_it_writes_the_service_config_polkit_rule_and_i2c_lines(tmp_path: Path) -> None:
    out = install(tmp_path)
    service = tmp_path / "etc/systemd/system/cityunit.service"
    assert service.read_text() == (ROOT / "systemd/cityunit.service").read_text()
    config = load(tmp_path / "etc/cityunit/config.toml")
    assert config.system.shutdown_command == ["systemctl", "poweroff"]
    rule = (tmp_path / "etc/polkit-1/rules.d/50-cityunit.rules").read_text()
    assert '"cityunit"' in rule and "org.freedesktop.login1.power-off" in rule
    boot = (tmp_path / "boot/firmware/config.txt").read_text().splitlines()
    assert "dtparam=i2c_arm=on" in boot and "dtparam=i2c_arm_baudrate=400000" in boot
    assert "dtoverlay=pwm-2chan,pin=18,func=2,pin2=13,func2=4" in boot, "the buzzer and LED PWM"
    link = tmp_path / "usr/local/bin/cityunit"
    assert link.is_symlink() and str(link.readlink()) == "/opt/cityunit/venv/bin/cityunit"
    for command in (
        "+ apt-get install -y python3-venv python3-pip python3-lgpio i2c-tools",
        "+ raspi-config nonint do_i2c 0",
        "--groups gpio,i2c,dialout cityunit",
        "-m venv --system-site-packages /opt/cityunit/venv",
        f"+ /opt/cityunit/venv/bin/pip install --upgrade {ROOT}",
        "+ systemctl enable cityunit.service",
    ):
        assert command in out, command
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if not p.is_dir())
    assert written == [
        "boot/firmware/config.txt",
        "etc/cityunit/config.toml",
        "etc/polkit-1/rules.d/50-cityunit.rules",
        "etc/systemd/system/cityunit.service",
        "opt/cityunit/LICENSE",
        "opt/cityunit/README.md",
        "usr/local/bin/cityunit",
    ]


def test_running_it_again_upgrades_in_place_and_keeps_an_edited_config(tmp_path: Path) -> None:
    install(tmp_path)
    config = tmp_path / "etc/cityunit/config.toml"
    config.write_text('[game]\nlanguage = "fr"\n')
    boot = tmp_path / "boot/firmware/config.txt"
    out = install(tmp_path)
    assert config.read_text() == '[game]\nlanguage = "fr"\n'
    assert (tmp_path / "etc/cityunit/config.toml.new").exists()
    assert "kept your /etc/cityunit/config.toml" in out
    assert boot.read_text().count("dtparam=i2c_arm=on") == 1


def test_an_older_boot_config_is_edited_where_it_is(tmp_path: Path) -> None:
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot/config.txt").write_text("dtparam=audio=on")
    install(tmp_path)
    lines = (tmp_path / "boot/config.txt").read_text().splitlines()
    assert lines[0] == "dtparam=audio=on" and "dtparam=i2c_arm_baudrate=400000" in lines
    assert not (tmp_path / "boot/firmware").exists()


def test_uninstall_keeps_the_game_and_config_unless_purged(tmp_path: Path) -> None:
    install(tmp_path)
    (tmp_path / "var/lib/cityunit").mkdir(parents=True)
    out = install(tmp_path, "--uninstall")
    assert "+ systemctl disable --now cityunit.service" in out
    assert not (tmp_path / "etc/systemd/system/cityunit.service").exists()
    assert not (tmp_path / "etc/polkit-1/rules.d/50-cityunit.rules").exists()
    assert not (tmp_path / "opt/cityunit").exists()
    assert not (tmp_path / "usr/local/bin/cityunit").is_symlink()
    assert (tmp_path / "etc/cityunit/config.toml").exists()
    out = install(tmp_path, "--uninstall", "--purge")
    assert not (tmp_path / "etc/cityunit").exists() and not (tmp_path / "var/lib/cityunit").exists()
    assert "+ userdel cityunit" in out


def test_it_refuses_to_touch_the_system_without_root(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = importlib.util.spec_from_file_location("installer", INSTALL)
    assert spec is not None and spec.loader is not None
    installer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installer)
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(SystemExit, match="run it as root"):
        installer.main([])


@pytest.mark.skipif(
    shutil.which("systemd-analyze") is None, reason="systemd is not on this machine"
)
def test_the_service_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    # verify checks that ExecStart exists: point it at this checkout's cityunit.
    text = (ROOT / "systemd/cityunit.service").read_text()
    here = shutil.which("cityunit") or str(Path(sys.executable).with_name("cityunit"))
    unit = tmp_path / "cityunit.service"
    unit.write_text(text.replace("/opt/cityunit/venv/bin/cityunit", here))
    result = subprocess.run(
        ["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "", result.stderr


def test_the_service_is_hardened_as_asked() -> None:
    lines = set((ROOT / "systemd/cityunit.service").read_text().splitlines())
    for line in (
        "Type=notify", "WatchdogSec=10", "Restart=on-failure", "User=cityunit",
        "RuntimeDirectory=cityunit", "WorkingDirectory=%t/cityunit", "Environment=LG_WD=%t/cityunit",
        "StateDirectory=cityunit", "ProtectSystem=strict", "ProtectHome=yes",
        "NoNewPrivileges=yes", "PrivateTmp=yes", "DevicePolicy=closed",
        "DeviceAllow=char-gpiochip rw", "DeviceAllow=char-i2c rw", "DeviceAllow=char-ttyGS rw",
        "RestrictAddressFamilies=AF_UNIX", "CapabilityBoundingSet=",
    ):  # fmt: skip
        assert line in lines, line
    assert not any(line.startswith("PrivateDevices") for line in lines)


def test_its_lines_apply_to_every_pi_and_replace_an_earlier_overlay(tmp_path: Path) -> None:
    """A config.txt that ends inside a [pi4] section, with an overlay an earlier install
    wrote for pins since moved: the new lines go under [all], the old overlay goes."""
    boot = tmp_path / "boot/firmware/config.txt"
    boot.parent.mkdir(parents=True)
    boot.write_text("[pi4]\narm_boost=1\ndtoverlay=pwm-2chan,pin=12,func=4,pin2=19,func2=2\n")
    install(tmp_path)
    lines = boot.read_text().splitlines()
    assert lines.index("[all]") < lines.index("dtparam=i2c_arm=on")
    assert "dtoverlay=pwm-2chan,pin=12,func=4,pin2=19,func2=2" not in lines
    assert lines[-1] == "dtoverlay=pwm-2chan,pin=18,func=2,pin2=13,func2=4"
