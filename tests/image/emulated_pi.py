"""The SD-card image booted under QEMU's Raspberry Pi 3B (software emulation), as a Pi
boots it: from a card holding the image, its FAT read as the Pi's firmware reads it.

    sudo python3 tests/image/emulated_pi.py [IMAGE]    boot it, the consoles on this terminal

QEMU is trixie's (10.0: bookworm's 7.2 emulates no I2C controller on this board), run
from a chroot of Debian's packages cached beside the images, without entering it: its
dynamic loader is given the chroot's libraries. The stand-in for the Pi's firmware (its
GPU's boot loader) takes config.txt's kernel, initramfs and overlays and cmdline.txt from
the card; the device tree is the Pi Zero 2 W's that the image carries, with the
overlays applied as the firmware applies them (fdtoverlay), and one of the tests'
own: QEMU's board has no Bluetooth chip on the first UART, so the tree frees it for the
unit's console. The kernel's console (ttyS1, the header's UART) is a log file.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "hardware" / "image"))

import build as image_build  # noqa: E402
import recipe  # noqa: E402

QEMU_PACKAGES = ("qemu-system-arm", "qemu-utils", "device-tree-compiler")
CARD_SIZE = 4 << 30  # QEMU's SD card must be a power of 2: the image, and room after it
BOARD = "bcm2837-rpi-zero-2-w.dtb"
REVISION = "902120"  # a Pi Zero 2 W 1.0 (Sony UK, 512 MB), as its firmware says
BOOT_S = 900  # to the unit's console: ~2-4 min here; generous for a busy machine
# What stands for the display on the header's I2C (BSC1: the kernel's i2c-1): QEMU has no
# SSD1306 (its ssd0303 refuses luma's stream), but an EEPROM at the display's address
# acknowledges every byte a display would, so each of the unit's writes goes through (what
# the glass would show is not modelled). QEMU's trace of the bus, with the host's time,
# says when the first write reached that address.
DISPLAY = ["-device", "at24c-eeprom,bus=i2c-bus.1,address=0x3c,rom-size=256"]
_I2C_START = re.compile(r"@(\d+\.\d+):i2c_event start\(addr:0x3c\)")


def qemu_root() -> Path:
    """trixie's QEMU (and dtc, qemu-img) in a chroot, built once (~1 min) and cached."""
    suite, mirror = "trixie", recipe.RELEASES["trixie"].mirrors()[0]
    cached = recipe.stage("qemu", suite, recipe.digest(suite, mirror, QEMU_PACKAGES))
    with cached as (folder, building):
        if building:
            building.run("mmdebstrap", "--mode=root", "--variant=apt",
                         "--include=" + ",".join(QEMU_PACKAGES), suite, folder / "root",
                         mirror)  # fmt: skip
        return folder / "root"


def tool(name: str) -> list[str]:
    """A program of the QEMU chroot, run here through the chroot's own loader."""
    root = qemu_root()
    libs = f"{root}/usr/lib/x86_64-linux-gnu:{root}/lib/x86_64-linux-gnu"
    return [f"{root}/lib64/ld-linux-x86-64.so.2", "--library-path", libs, f"{root}/usr/bin/{name}"]


class Card:
    """The SD card: a copy of the image on a sparse 4 GiB file, its FAT partition read
    and written with mtools (as any computer's card reader would)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fat = f"{path}@@{image_build.BOOT[0]}"
        self.env = {**os.environ, "MTOOLS_SKIP_CHECK": "1"}

    @classmethod
    def flash(cls, image: Path, path: Path) -> Card:
        """`image` written to a new card at `path` (or over the one there: what follows
        the image on it is kept, as on a real card)."""
        subprocess.run(["dd", f"if={image}", f"of={path}", "bs=4M", "conv=notrunc,sparse",
                        "status=none"], check=True)  # fmt: skip
        with open(path, "r+b") as f:
            f.truncate(max(CARD_SIZE, os.fstat(f.fileno()).st_size))
        return cls(path)

    def written_ns(self) -> int:
        """When the Pi last wrote to its card: QEMU writes the guest's sectors to the file
        as they come. (Its block statistics are no witness: its SD card model counts no
        writes, so they stay 0 whatever the Pi does.)"""
        return os.stat(self.path).st_mtime_ns

    def read(self, name: str) -> bytes:
        return subprocess.run(
            ["mcopy", "-n", "-i", self.fat, f"::{name}", "-"], env=self.env, check=True,
            capture_output=True,
        ).stdout  # fmt: skip

    def write(self, name: str, data: bytes) -> None:
        with tempfile.NamedTemporaryFile() as f:
            f.write(data)
            f.flush()
            subprocess.run(["mcopy", "-o", "-i", self.fat, f.name, f"::{name}"], env=self.env,
                           check=True)  # fmt: skip


def firmware(card: Card, into: Path) -> list[str]:
    """What the Pi's firmware does before the kernel runs, as QEMU's arguments: the
    kernel, initramfs and cmdline.txt named on the card, and the board's tree with the
    card's overlays and the tests' own (qemu-board.dts) applied."""
    config = card.read("config.txt").decode()
    kernel = re.search(r"^kernel=(\S+)", config, re.M)
    initrd = re.search(r"^initramfs (\S+)", config, re.M)
    assert kernel and initrd, f"config.txt names no kernel or initramfs:\n{config}"
    for name in (kernel[1], initrd[1], BOARD):
        (into / name).write_bytes(card.read(name))
    overlays = []
    for line in re.findall(r"^dtoverlay=(\S+)", config, re.M):
        name, *params = line.split(",")
        dtbo = into / f"{name}.dtbo"
        dtbo.write_bytes(card.read(f"overlays/{name}.dtbo"))
        defaults(dtbo, params)
        overlays.append(dtbo)
    board = into / "qemu-board.dtbo"
    subprocess.run([*tool("dtc"), "-q", "-@", "-I", "dts", "-O", "dtb", "-o", str(board),
                    str(HERE / "qemu-board.dts")], check=True)  # fmt: skip
    tree = into / "board.dtb"
    subprocess.run([*tool("fdtoverlay"), "-i", str(into / BOARD), "-o", str(tree),
                    *map(str, overlays), str(board)], check=True)  # fmt: skip
    # What the firmware adds to every tree: the board's revision code (a Pi Zero 2 W's,
    # which gpiozero reads to know the header), and its serial number.
    for command in (["-c", "/system"], ["-t", "x", "/system", "linux,revision", REVISION],
                    ["-t", "x", "/system", "linux,serial", "0", "0xc17e0001"]):  # fmt: skip
        subprocess.run([*tool("fdtput"), str(tree), *command], check=True)
    cmdline = card.read("cmdline.txt").decode().strip()
    return ["-kernel", str(into / kernel[1]), "-initrd", str(into / initrd[1]),
            "-dtb", str(tree), "-append", cmdline]  # fmt: skip


def defaults(dtbo: Path, params: list[str]) -> None:
    """fdtoverlay applies an overlay as it is, not its parameters: each given must be the
    value the overlay has already (the image's are), or this stand-in cannot boot it."""
    source = subprocess.run([*tool("dtc"), "-q", "-I", "dtb", "-O", "dts", str(dtbo)],
                            check=True, capture_output=True, text=True).stdout  # fmt: skip
    overrides = source[source.index("__overrides__ {") :]
    for param in params:
        name, _, value = param.partition("=")
        found = re.search(rf"\b{re.escape(name)} = ([<\[][^;]*)[>\]];", overrides)
        assert found, f"{dtbo.name} has no parameter {name}"
        raw = _bytes(found[1] + ">")
        phandle, target = int.from_bytes(raw[:4], "big"), raw[4:].split(b"\0")[0].decode()
        prop, _, offset = target.partition(":")
        node = source[: source.index(f"phandle = <{phandle:#04x}>")]
        cells = _bytes(re.findall(rf"\b{re.escape(prop)} = (<[^;]*)>;", node)[-1] + ">")
        have = int.from_bytes(cells[int(offset) : int(offset) + 4], "big")
        assert have == int(value, 0), f"{dtbo.name}: {name}={value}, the stand-in has {have}"


def _bytes(value: str) -> bytes:
    """A property's value as dtc writes it: <cells> or [bytes]."""
    if value.startswith("<"):
        return b"".join(int(c, 16).to_bytes(4, "big") for c in value.strip("<>").split())
    return bytes.fromhex(value.strip("[]>").replace(" ", ""))


class EmulatedPi:
    """QEMU booting a card; the unit's console on a TCP port of the loopback (pyserial's
    socket://), the kernel's and the journal's lines in `log`. A context manager: it
    ends the QEMU it started, by its pid."""

    def __init__(self, card: Card, run_dir: Path, display: bool = False, append: str = "") -> None:
        """`display`: one stands on the header's I2C (DISPLAY); `append`: more words for
        the kernel's command line than the card's cmdline.txt has."""
        self.card, self.dir = card, run_dir
        self.log = run_dir / "ttyS1.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = 0
        self.display, self.append = display, append
        self.i2c = run_dir / "i2c.trace"
        self.powered = 0.0  # the host's time.time() at power-on

    def boot(self) -> None:
        boot_dir = self.dir / "boot"
        boot_dir.mkdir(parents=True, exist_ok=True)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log.write_bytes(b"")
        command = [
            *tool("qemu-system-aarch64"), "-M", "raspi3b", *firmware(self.card, boot_dir),
            "-drive", f"file={self.card.path},format=raw,if=sd",
            "-serial", f"tcp:127.0.0.1:{self.port},server=on,wait=off",
            "-serial", f"file:{self.log}", "-display", "none", "-monitor", "none",
            "-pidfile", str(self.dir / "qemu.pid"), "-no-reboot",
        ]  # fmt: skip
        if self.append:
            command[command.index("-append") + 1] += f" {self.append}"
        if self.display:
            command += [*DISPLAY, "-d", "trace:i2c_event", "-D", str(self.i2c),
                        "-msg", "timestamp=on"]  # fmt: skip
        (self.dir / "qemu.command").write_text(shlex.join(command) + "\n")
        env = {**os.environ, "QEMU_MODULE_DIR": f"{qemu_root()}/usr/lib/x86_64-linux-gnu/qemu"}
        out = open(self.dir / "qemu.out", "ab")  # noqa: SIM115 (the process's, closed with it)
        self.powered = time.time()
        self.process = subprocess.Popen(command, stdout=out, stderr=out, env=env)
        out.close()
        self.started = time.monotonic()

    def first_write_s(self) -> float | None:
        """Seconds from power-on to the first transfer to the display's address (None:
        none yet), by QEMU's trace."""
        text = self.i2c.read_text(errors="replace") if self.i2c.exists() else ""
        found = _I2C_START.search(text)
        return None if found is None else float(found[1]) - self.powered

    def wait_for(self, pattern: str, timeout: float = BOOT_S) -> str:
        """The first line of the kernel's console matching `pattern` (a regex), waited for."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.log.read_text(errors="replace")
            found = re.search(f".*{pattern}.*", text)
            if found:
                return found[0]
            assert self.process and self.process.poll() is None, f"QEMU ended: {self.tail()}"
            time.sleep(1)  # polling a log file QEMU writes, not waiting for behaviour
        raise TimeoutError(f"no {pattern!r} after {timeout:.0f} s: {self.tail()}")

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]

    def cut_power(self) -> None:
        """The plug pulled: QEMU killed, no shutdown."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self.process = None

    def __enter__(self) -> EmulatedPi:
        self.boot()
        return self

    def __exit__(self, *exc: object) -> None:
        self.cut_power()


def main(argv: list[str]) -> int:
    image = Path(argv[0]) if argv else image_build.image()
    with tempfile.TemporaryDirectory(prefix="emulated-pi-") as run:
        card = Card.flash(image, Path(run) / "card.img")
        with EmulatedPi(card, Path(run)) as pi, contextlib.suppress(KeyboardInterrupt):
            print(f"console: socket://127.0.0.1:{pi.port}; kernel log: {pi.log}", file=sys.stderr)
            subprocess.call(["tail", "-f", str(pi.log)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
