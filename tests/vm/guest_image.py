"""The virtual Pi's disk image: Debian bookworm (a Pi OS Bookworm's Debian) for amd64,
built from Debian's packages and the Python package index only, with test devices in
place of the Pi's (tests/vm/guest), to be booted under QEMU by virtual_pi.py.

    python3 tests/vm/guest_image.py            build it (or say where the built one is)

Needs root (mmdebstrap in root mode, a chroot), mmdebstrap and e2fsprogs. The image is
cached outside the checkout (CITYUNIT_VM_CACHE, else /var/cache/cityunit-vm), under a
key made of everything it is built from here: a change to the firmware does not rebuild
it (the tests copy the checkout in), a change to tests/vm/guest or pyproject.toml does.
Debian's archive is not pinned by date (snapshot.debian.org is out of reach from these
machines): the kernel and packages are the mirror's on the day of the build, listed in
the image's /opt/vpi/manifest.txt and in manifest.txt beside it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GUEST = HERE / "guest"
INSTALLER = ROOT / "systemd" / "install.py"
GUEST_PYTHON = (3, 11)  # bookworm's, as Raspberry Pi OS Bookworm's
SUITE = "bookworm"
MIRRORS = (
    f"deb http://deb.debian.org/debian {SUITE} main",
    f"deb http://deb.debian.org/debian {SUITE}-updates main",
    f"deb http://deb.debian.org/debian-security {SUITE}-security main",
)
# What a Pi OS Lite image has that matters here, and what builds the test devices (gone
# again before the image is made: see guest/build.sh).
PACKAGES = (
    "systemd-sysv", "udev", "dbus", "kmod", "iproute2", "openssh-server", "sudo", "python3",
    "linux-image-amd64", "initramfs-tools", "linux-headers-amd64", "gcc", "make", "libc6-dev",
    "xz-utils", "apt-utils",
)  # fmt: skip
SIZE = "3G"  # the root file system; sparse, so it costs what is in it


def cache_root() -> Path:
    return Path(os.environ.get("CITYUNIT_VM_CACHE", "/var/cache/cityunit-vm"))


@dataclass(frozen=True)
class Image:
    """A built image: the root file system, the kernel and initramfs to boot it with, and
    the key that `pi` logs in with over ssh."""

    folder: Path

    @property
    def disk(self) -> Path:
        return self.folder / "root.img"

    @property
    def kernel(self) -> Path:
        return self.folder / "vmlinuz"

    @property
    def initrd(self) -> Path:
        return self.folder / "initrd.img"

    @property
    def key(self) -> Path:
        return self.folder / "vpi_key"

    @property
    def ready(self) -> bool:
        return (self.folder / "ready").exists()


def key() -> str:
    """A digest of every input of the image that lives in this checkout."""
    digest = hashlib.sha256()
    inputs = [Path(__file__), ROOT / "pyproject.toml", INSTALLER, *sorted(GUEST.rglob("*"))]
    for path in inputs:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
            digest.update(b"x" if os.access(path, os.X_OK) else b"-")
    digest.update(repr((SUITE, MIRRORS, PACKAGES, SIZE, sys.version_info[:2])).encode())
    return digest.hexdigest()[:16]


def missing_tools() -> str | None:
    """Why this machine cannot build the image, or None."""
    if sys.version_info[:2] != GUEST_PYTHON:
        return (f"the virtual Pi's wheels are made by this Python for the guest's "
                f"{'.'.join(map(str, GUEST_PYTHON))}: run it with Python 3.11")  # fmt: skip
    if os.geteuid() != 0:
        return "building the virtual Pi's image needs root (mmdebstrap in root mode)"
    for tool in ("mmdebstrap", "mke2fs", "ssh-keygen"):
        if shutil.which(tool) is None:
            return f"building the virtual Pi's image needs {tool} (apt-get install mmdebstrap e2fsprogs)"
    return None


def installer_packages() -> list[str]:
    """What systemd/install.py asks apt for, less the stand-in made here (python3-lgpio)."""
    source = INSTALLER.read_text()
    found = re.search(r"^APT = \((.*?)\)", source, re.M | re.S)
    assert found, "systemd/install.py has no APT = (...) line"
    names = re.findall(r'"([^"]+)"', found[1])
    return [name for name in names if name != "python3-lgpio"]


def wheelhouse(into: Path, out: TextIO) -> None:
    """What the installer's pip will ask for, offline in the guest: the project's
    dependencies (built into wheels here where they ship only as source), setuptools
    for building the project itself, and lgpio for the python3-lgpio stand-in."""
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "-w", str(into), str(ROOT), "setuptools>=77", "lgpio"],
        check=True,
        stdout=out,
        stderr=out,
    )
    for own in into.glob("cityunit-*.whl"):
        own.unlink()  # the guest builds it from its clone


def build(log: Path | None = None) -> Image:
    """The image for this checkout's inputs: the cached one, or built now (~10 min)."""
    image = Image(cache_root() / key())
    if image.ready:
        return image
    why = missing_tools()
    if why:
        raise RuntimeError(why)
    for stale in cache_root().glob("*"):  # one image at a time (~1.5 GB), no half-built one
        if re.fullmatch(r"[0-9a-f]{16}|vpi-build-.*", stale.name) and stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
    image.folder.mkdir(parents=True)
    out = open(log or image.folder / "build.log", "w")  # noqa: SIM115 (closed below)
    try:
        with tempfile.TemporaryDirectory(prefix="vpi-build-", dir=cache_root()) as work:
            _build(image, Path(work), out)
    finally:
        out.close()
    (image.folder / "ready").write_text(key() + "\n")
    return image


def _build(image: Image, work: Path, out: TextIO) -> None:
    def run(*command: str | Path) -> None:
        print("+", *command, file=out, flush=True)
        subprocess.run([str(c) for c in command], check=True, stdout=out, stderr=out)

    wheels = work / "wheels"
    wheelhouse(wheels, out)
    (work / "apt-packages").write_text(" ".join(installer_packages()) + "\n")
    run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "vpi", "-f", image.key)
    tree = work / "root"
    run(
        "mmdebstrap", "--mode=root", "--variant=apt", "--format=directory",
        "--include=" + ",".join(PACKAGES),
        '--customize-hook=mkdir -p "$1/usr/src/vpi" "$1/opt/vpi/wheels"',
        f"--customize-hook=sync-in {GUEST / 'rootfs'} /",
        f"--customize-hook=sync-in {GUEST} /usr/src/vpi",
        f"--customize-hook=sync-in {wheels} /opt/vpi/wheels",
        f"--customize-hook=copy-in {image.key}.pub /tmp",
        f"--customize-hook=copy-in {work / 'apt-packages'} /usr/src/vpi",
        '--customize-hook=chroot "$1" sh /usr/src/vpi/build.sh',
        SUITE, tree, *MIRRORS,
    )  # fmt: skip
    kver = next((tree / "lib/modules").iterdir()).name
    shutil.copy(tree / "boot" / f"vmlinuz-{kver}", image.kernel)
    shutil.copy(tree / "boot" / f"initrd.img-{kver}", image.initrd)
    shutil.copy(tree / "opt/vpi/manifest.txt", image.folder / "manifest.txt")
    run("mke2fs", "-q", "-t", "ext4", "-L", "vpi-root", "-d", tree, image.disk, SIZE)
    shutil.rmtree(tree)


def main() -> int:
    try:
        image = build()
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"vm image: {e}", file=sys.stderr)
        return 1
    print(image.folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
