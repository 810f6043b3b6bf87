#!/usr/bin/env python3
"""Install cityunit on Raspberry Pi OS (Trixie or Bookworm): one command, safe to run again.

    sudo python3 systemd/install.py               install, or upgrade in place
    sudo python3 systemd/install.py --uninstall   remove the service (keeps config and game)
    sudo python3 systemd/install.py --uninstall --purge   ... and the config, game and user
    python3 systemd/install.py --root DIR         write every file under DIR instead of /,
                                                  and list the system commands it would run

It enables I2C (at display.i2c_baudrate: 400 kHz by default), installs what is needed
from apt, puts the project in a venv at /opt/cityunit (seeing apt's lgpio), creates the
`cityunit` system user in the gpio, i2c and dialout groups, writes
/etc/cityunit/config.toml unless one is there already, keeps the first light of a unit
not started yet where no unit has (so the first start lights the screen at once), allows
that user to power the Pi off (polkit), and enables the service.
Needs only the system's python3 (3.11 on Bookworm, 3.13 on Trixie).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

SOURCE = Path(__file__).resolve().parents[1]
USER = "cityunit"
GROUPS = ("gpio", "i2c", "spi", "dialout")
# polkitd: the rule that lets the service power the Pi off needs polkit running (Lite has none).
APT = ("python3-venv", "python3-pip", "python3-lgpio", "i2c-tools", "polkitd")
PREFIX = Path("/opt/cityunit")
COMMAND = Path("/usr/local/bin/cityunit")
CONFIG = Path("/etc/cityunit/config.toml")
SERVICE = Path("/etc/systemd/system/cityunit.service")
POLKIT = Path("/etc/polkit-1/rules.d/50-cityunit.rules")
WEB = Path("/etc/systemd/system/cityunit.service.d/web.conf")  # the page's network
STATE = Path("/var/lib/cityunit")  # the service's StateDirectory: the game, its first light
BOOT_CONFIGS = (Path("/boot/firmware/config.txt"), Path("/boot/config.txt"))
I2C_SPEEDS = (100_000, 400_000, 1_000_000)  # display.i2c_baudrate's choices (config.py)
OURS = re.compile(r"dtoverlay=pwm(-2chan)?,pin=\d+,func=\d+(,pin2=\d+,func2=\d+)?$")
MARK = "# cityunit: the OLED's I2C bus at its speed, the buzzer and LED on the PWM hardware"
DTPARAM = re.compile(r"(dtparam|device_tree_param)=(.*)")
# The base device tree's other names for them (i2c_arm is i2c1 on all but the first Model Bs).
ALIASES = {"i2c": "i2c_arm", "i2c1": "i2c_arm", "i2c_baudrate": "i2c_arm_baudrate",
           "i2c1_baudrate": "i2c_arm_baudrate"}  # fmt: skip
ON = {"", "on", "true", "yes", "okay", "1"}  # what the firmware reads as on (bare: on)
MAX_INCLUDES = 8  # include within include: deep enough for any real file, and no loop
MAX_BYTES = 64 * 1024  # the kept config and config.txt, as the firmware reads a config

POLKIT_RULE = f"""\
// cityunit's safe-shutdown gesture: let its service user power the Pi off, nothing more.
// Through logind; and by starting poweroff.target, which `systemctl poweroff` falls back
// to when logind's call fails (as it does, with "Stale file handle", when an SSH session
// ends while logind asks polkit about it).
polkit.addRule(function(action, subject) {{
    if (subject.user == "{USER}" &&
        (action.id == "org.freedesktop.login1.power-off" ||
         action.id == "org.freedesktop.login1.power-off-multiple-sessions" ||
         (action.id == "org.freedesktop.systemd1.manage-units" &&
          action.lookup("unit") == "poweroff.target" && action.lookup("verb") == "start"))) {{
        return polkit.Result.YES;
    }}
}});
"""


def _param(item: str) -> tuple[str, str]:
    name, _, value = item.partition("=")
    return ALIASES.get(name, name), value


def _same(value: str, wanted: str) -> bool:
    return value == wanted or (wanted == "on" and value in ON)


def settle(
    text: str, wanted: list[str], read: Callable[[str], str | None] = lambda name: None
) -> str:
    """config.txt with each of `wanted` in effect for every Pi, whatever its model, GPIO
    jumpers or monitor. A line counts only outside conditional sections (before the first,
    or after [all]: [pi4], [cm4], [gpio4=1], [none]... keep what follows to some boards),
    and a dtparam only if no later line, in any section, sets it otherwise. Our dtparams
    set otherwise for every Pi are set right where they stand (as raspi-config does); our
    overlay, for pins since moved or kept to some boards, goes; what is still missing is
    appended, under [all] if the file ends in a conditional section. An `include FILE`
    (`read` gives its text, None if there is none) is followed where it stands, as the
    firmware does: its lines count, but only this file is edited (a file already being
    read is not read again, nor one off the boot partition). Line endings kept."""
    params = {w: _param(m[2]) for w in wanted if (m := DTPARAM.fullmatch(w))}
    want = dict(params.values())
    done: set[str] = set()  # the dtparams (by name) and overlay lines in effect for every Pi
    everywhere = True
    reading: list[str] = []  # the included files being read, outermost first

    def see(line: str, depth: int) -> str | None:
        """The line as it is to stay (None: it goes), its effect noted; included lines
        (depth > 0) are only noted."""
        nonlocal everywhere
        s = line.strip()
        if s.startswith("[") and s.endswith("]"):
            everywhere = s == "[all]"  # [all] ends every filter; any other narrows what follows
        elif s.startswith("include ") and len(reading) < MAX_INCLUDES:
            name = posixpath.normpath(s.partition(" ")[2].strip())
            if name not in reading and not name.startswith(("/", "..")):  # on the partition
                reading.append(name)  # and not a loop: a file including itself 8 times,
                for included in (read(name) or "").splitlines():  # 8 deep, is 8^8 reads
                    see(included, depth + 1)
                reading.pop()
        elif OURS.match(s) and depth == 0:
            if not (everywhere and s in wanted):
                return None  # for pins since moved, or kept to some boards: it goes
            done.add(s)
        elif m := DTPARAM.fullmatch(s):
            items = m[2].split(",")
            for i, (name, value) in enumerate(map(_param, items)):
                if name in want and everywhere and (depth == 0 or _same(value, want[name])):
                    if not _same(value, want[name]):
                        items[i] = f"{items[i].partition('=')[0]}={want[name]}"
                    done.add(name)
                elif name in want and not _same(value, want[name]):
                    done.discard(name)  # some boards, or some GPIO state, get it otherwise
            return line.replace(s, f"{m[1]}={','.join(items)}", 1)
        return line

    kept = [
        stayed for line in text.splitlines(keepends=True) if (stayed := see(line, 0)) is not None
    ]
    text = "".join(kept)
    missing = [w for w in wanted if (params[w][0] if w in params else w) not in done]
    if not missing:
        return text
    nl = "\r\n" if "\r\n" in text else "\n"
    block = ([] if everywhere else ["[all]"]) + [MARK, *missing]
    return text + (nl if text and not text.endswith("\n") else "") + nl.join(block) + nl


def _firmware(name: str) -> ModuleType:
    """One of the firmware's standard-library-only modules, from this checkout: cityunit is
    not installed yet, and the installer must read files as the unit reads them."""
    path = SOURCE / "firmware" / "cityunit" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"cityunit_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Installer:
    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.dry = root is not None
        self.files = _firmware("files")

    @functools.cached_property
    def kept(self) -> dict[str, Any] | None:
        """The tables of the config in place ({} for none), read as the unit reads it
        (bounded: a regular file, UTF-8, a size cap); None, after one line saying why,
        where it cannot be read: config.txt then gets the default pins' lines."""
        target = self.path(CONFIG)
        if not (target.exists() or target.is_symlink()):
            return {}
        try:
            data: dict[str, Any] = self.files.toml(target, MAX_BYTES)
            return data
        except self.files.Refused as e:
            print(f"install: {CONFIG}: {e}; config.txt gets the default pins' lines"
                  f" (`cityunit run --check` names each mistake)")  # fmt: skip
            return None

    def kept_table(self, name: str) -> dict[str, Any]:
        table = (self.kept or {}).get(name, {})
        return table if isinstance(table, dict) else {}

    def path(self, p: Path) -> Path:
        return p if self.root is None else self.root / p.relative_to("/")

    def run(self, *command: str, check: bool = True) -> int:
        print("+ " + shlex.join(command), flush=True)
        if self.dry:
            return 0
        result = subprocess.run(command)
        if check and result.returncode != 0:
            sys.exit(f"install: failed: {shlex.join(command)}")
        return result.returncode

    def write(self, p: Path, text: str, mode: int = 0o644) -> None:
        target = self.path(p)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode(errors="surrogateescape"))  # as read: bytes, CRLF kept
        target.chmod(mode)
        print(f"  wrote {p}")

    # ----- steps ---------------------------------------------------------------------

    def packages(self) -> None:
        self.run("apt-get", "update")
        self.run("apt-get", "install", "-y", *APT)

    def i2c(self) -> None:
        if self.dry or shutil.which("raspi-config"):
            self.run("raspi-config", "nonint", "do_i2c", "0")
        boot, text = self.boot_config
        settled = settle(
            text,
            [*self.i2c_lines(), *self.spi_lines(), *self.pwm_lines()],
            functools.partial(self.boot_file, boot),
        )
        if settled != text:
            self.write(boot, settled)
            print("  I2C and PWM take effect after a reboot")

    @functools.cached_property
    def boot_config(self) -> tuple[Path, str]:
        """config.txt (where this Pi has it) and its text, read as the kept config is; one
        that cannot be read stops the install before anything is changed."""
        boot = next((b for b in BOOT_CONFIGS if self.path(b).exists()), BOOT_CONFIGS[0])
        if not (self.path(boot).exists() or self.path(boot).is_symlink()):
            return boot, ""
        try:
            return boot, self.files.read(self.path(boot), MAX_BYTES).decode(
                errors="surrogateescape"
            )
        except self.files.Refused as e:
            sys.exit(f"install: {boot}: {e}; nothing was changed: put a regular config.txt back")

    def boot_file(self, boot: Path, name: str) -> str | None:
        """A file config.txt includes, beside it, as the firmware finds it (None: none)."""
        with contextlib.suppress(self.files.Refused):
            raw = self.files.read(self.path(boot.parent / name), MAX_BYTES)
            return str(raw.decode(errors="surrogateescape"))
        return None

    def i2c_lines(self) -> list[str]:
        """I2C on, at the config's clock (when there is one: 400 kHz by default)."""
        speed = self.kept_table("display").get("i2c_baudrate", 400_000)
        if type(speed) is not int or speed not in I2C_SPEEDS:
            print(f"  display.i2c_baudrate = {speed!r} is none of {I2C_SPEEDS}: 400 kHz")
            speed = 400_000
        return ["dtparam=i2c_arm=on", f"dtparam=i2c_arm_baudrate={speed}"]

    def spi_lines(self) -> list[str]:
        """SPI0 on, only if the config (when there is one) puts the display on it."""
        display = self.kept_table("display")  # as the unit reads it: strings only
        keys = {k: v.lower() for k, v in display.items() if isinstance(v, str)}
        on = keys.get("interface") == "spi" and keys.get("driver") != "none"
        return ["dtparam=spi=on"] if on else []

    def pwm_lines(self) -> list[str]:
        """The PWM overlay for the buzzer's and the LED's pins (the config's, if there is one)."""
        pins = {"buzzer": 18, "led": 13}
        configured = self.kept_table("pins")
        pins |= {k: v for k, v in configured.items() if k in pins and type(v) is int}
        line = _firmware("parts/pwm").overlay(pins["buzzer"], pins["led"])
        return [line] if line else []

    def user(self) -> None:
        groups = ",".join(GROUPS)
        if self.dry or subprocess.run(["id", USER], capture_output=True).returncode != 0:
            for group in GROUPS:  # present on Raspberry Pi OS; made if not (other distros)
                self.run("groupadd", "--force", "--system", group)
            self.run(
                "useradd", "--system", "--user-group", "--home-dir", str(STATE),
                "--no-create-home", "--shell", "/usr/sbin/nologin", "--groups", groups, USER,
            )  # fmt: skip
        else:
            self.run("usermod", "--append", "--groups", groups, USER)

    def venv(self) -> None:
        """The project in its venv, built once into a wheel. The venv has no pip of its own
        (ensurepip takes a minute on a Pi Zero): apt's pip, seen through
        --system-site-packages as lgpio is (python3-lgpio), installs into it."""
        venv = PREFIX / "venv"
        python = str(venv / "bin" / "python")
        if self.dry or not Path(python).exists():
            self.run(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                     str(venv))  # fmt: skip
        with tempfile.TemporaryDirectory(prefix="cityunit-") as built:
            self.run(python, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", built, str(SOURCE))
            wheels = [str(w) for w in Path(built).glob("cityunit-*.whl")]
            if not wheels and not self.dry:
                sys.exit(f"install: failed: pip built no wheel of {SOURCE}")
            wheel = wheels[0] if wheels else f"{built}/cityunit-*.whl"
            self.run(python, "-m", "pip", "install", "--upgrade", wheel)
            # The same version number may carry new code: put this checkout's in place.
            self.run(python, "-m", "pip", "install", "--force-reinstall", "--no-deps", wheel)
        for name in ("README.md", "LICENSE"):
            self.write(PREFIX / name, (SOURCE / name).read_text())
        self.write(PREFIX / "start", (SOURCE / "systemd" / "start").read_text())
        link = self.path(COMMAND)  # `cityunit doctor`, `cityunit console` on the PATH
        link.parent.mkdir(parents=True, exist_ok=True)
        link.unlink(missing_ok=True)
        link.symlink_to(venv / "bin" / "cityunit")
        print(f"  linked {COMMAND}")

    def config(self) -> None:
        default = (SOURCE / "firmware" / "cityunit" / "default-config.toml").read_text()
        default = default.replace(
            "shutdown_command = []    #", 'shutdown_command = ["systemctl", "poweroff"]  #'
        ).replace("off_after_minutes = 0    #", "off_after_minutes = 30   #")
        target = self.path(CONFIG)
        if self.kept == {} and not target.exists():
            self.write(CONFIG, default)
        elif self.kept is None or target.read_bytes() != default.encode():
            self.write(CONFIG.with_name("config.toml.new"), default)
            print(f"  kept your {CONFIG}; the new default is beside it as config.toml.new")

    def first_light(self) -> None:
        """A unit never started here gets the first light of its first start (the unit
        keeps its own from then on): never over a state a unit has left, a game's."""
        state = self.path(STATE)
        if state.is_dir() and any(state.iterdir()):
            return
        state.mkdir(parents=True, exist_ok=True)  # systemd makes it the unit's user's
        cityunit = str(PREFIX / "venv" / "bin" / "cityunit")
        self.run(cityunit, "run", "--config", str(CONFIG), "--keepsake", str(STATE / "first-light"),
                 check=False)  # fmt: skip

    def service(self) -> None:
        self.write(SERVICE, (SOURCE / "systemd" / "cityunit.service").read_text())
        if self.kept_table("web").get("enabled") is True:  # the page: a network, LAN only
            self.write(WEB, (SOURCE / "systemd" / "web.conf").read_text())
        else:
            self.remove(WEB)
        self.write(POLKIT, POLKIT_RULE)
        self.run("systemctl", "daemon-reload")
        self.run("systemctl", "enable", "cityunit.service")
        self.run("systemctl", "restart", "cityunit.service")

    def install(self) -> None:
        # What is read is read first: a file that cannot be is said before any change.
        self.kept, self.boot_config  # noqa: B018
        self.packages()
        self.i2c()
        self.user()
        self.venv()
        self.config()
        self.first_light()
        self.service()
        print("installed: `systemctl status cityunit`, then `cityunit doctor` to check the wiring")

    def uninstall(self, purge: bool) -> None:
        self.run("systemctl", "disable", "--now", "cityunit.service", check=False)
        for p in (SERVICE, WEB, POLKIT, COMMAND):
            self.remove(p)
        self.remove(PREFIX)
        self.run("systemctl", "daemon-reload", check=False)
        if purge:
            self.remove(CONFIG.parent)
            self.remove(STATE)
            self.run("userdel", USER, check=False)
        else:
            print(f"  kept {CONFIG} and {STATE} (--purge removes them)")

    def remove(self, p: Path) -> None:
        target = self.path(p)
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.exists() or target.is_symlink():
            target.unlink()
        else:
            return
        print(f"  removed {p}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="install under this folder instead of /")
    parser.add_argument("--uninstall", action="store_true", help="remove the service")
    parser.add_argument(
        "--purge", action="store_true", help="with --uninstall: also the config, game and user"
    )
    args = parser.parse_args(argv)
    if args.purge and not args.uninstall:  # alone it would install: the opposite of what is asked
        parser.error("--purge only goes with --uninstall: --uninstall --purge")
    if args.root is None and os.geteuid() != 0:
        sys.exit("install: run it as root (sudo), or with --root DIR to try it out")
    installer = Installer(args.root.resolve() if args.root else None)
    if args.uninstall:
        installer.uninstall(args.purge)
    else:
        installer.install()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
