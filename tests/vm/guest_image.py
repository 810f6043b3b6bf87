"""The virtual Pi's disk image: Debian bookworm or trixie (a Raspberry Pi OS release's
Debian) for amd64, built from Debian's packages and the Python package index only, with
test devices in place of the Pi's (tests/vm/guest), to be booted under QEMU by
virtual_pi.py.

    python3 tests/vm/guest_image.py [trixie]     build it (or say where the built one is)

Needs root (mmdebstrap in root mode, a chroot), mmdebstrap and e2fsprogs. Each release's
image is cached outside the checkout (CITYUNIT_VM_CACHE, else /var/cache/cityunit-vm),
under a key made of everything it is built from here: a change to the firmware does not
rebuild it (the tests copy the checkout in), a change to tests/vm/guest or pyproject.toml
does. Debian's archive is not pinned by date (snapshot.debian.org is out of reach from
these machines): the kernel and packages are the mirror's on the day of the build, listed
in the image's /opt/vpi/manifest.txt and in manifest.txt beside it.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GUEST = HERE / "guest"
INSTALLER = ROOT / "systemd" / "install.py"


@dataclass(frozen=True)
class Release:
    """A Debian release, as the Raspberry Pi OS of the same name is built on it: what
    the guest's wheels are chosen for (its Python and C library)."""

    suite: str
    python: str  # the guest's python3, as pip's --python-version
    glibc_minor: int  # its glibc is 2.N: the newest manylinux wheel it runs

    @property
    def mirrors(self) -> tuple[str, ...]:
        return (
            f"deb http://deb.debian.org/debian {self.suite} main",
            f"deb http://deb.debian.org/debian {self.suite}-updates main",
            f"deb http://deb.debian.org/debian-security {self.suite}-security main",
        )


# Raspberry Pi OS Bookworm (the tests' first guest) and Trixie (the imager's first).
RELEASES = {r.suite: r for r in (Release("bookworm", "3.11", 36), Release("trixie", "3.13", 41))}


def release_named(name: str | None) -> Release:
    """The release of that suite (None: bookworm's); KeyError names the choices."""
    if name is None:
        return RELEASES["bookworm"]
    if name not in RELEASES:
        raise KeyError(f"no release {name!r} (one of: {', '.join(RELEASES)})")
    return RELEASES[name]


# What a Pi OS Lite image has that matters here, and what builds the test devices and
# lgpio (gone again before the image is made: see guest/build.sh).
PACKAGES = (
    "systemd-sysv", "udev", "dbus", "kmod", "iproute2", "openssh-server", "sudo", "python3",
    "linux-image-amd64", "initramfs-tools", "linux-headers-amd64", "gcc", "make", "libc6-dev",
    "xz-utils", "apt-utils", "python3-dev", "python3-pip", "python3-setuptools",
    "python3-wheel", "swig",
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


def key(release: Release) -> str:
    """A digest of every input of the release's image that lives in this checkout."""
    digest = hashlib.sha256()
    inputs = [Path(__file__), ROOT / "pyproject.toml", *sorted(GUEST.rglob("*"))]
    for path in inputs:
        if path.is_file():
            digest.update(str(path.relative_to(ROOT)).encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
            digest.update(b"x" if os.access(path, os.X_OK) else b"-")
    digest.update(repr((release, PACKAGES, SIZE, installer_packages())).encode())
    return digest.hexdigest()[:16]


def image_for(release: Release) -> Image:
    """Where the release's image for this checkout is, built or not."""
    return Image(cache_root() / f"{release.suite}-{key(release)}")


def missing_tools() -> str | None:
    """Why this machine cannot build the image, or None."""
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


def wheelhouse(release: Release, into: Path, out: TextIO) -> None:
    """What the installer's pip will ask for, offline in the guest: the project's
    dependencies and what builds it, as wheels for the guest's Python, and lgpio's source
    for build.sh to build in the guest (the index has its wheels for some Pythons only)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    wanted = [*project["project"]["dependencies"], *project["build-system"]["requires"]]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "download"]
    # pip takes each tag as given: the legacy aliases too, or wheels tagged only so are missed
    tags = [f"manylinux_2_{n}" for n in range(5, release.glibc_minor + 1)]
    tags += ["manylinux1", "manylinux2010", "manylinux2014"]
    platforms = [f"--platform={tag}_x86_64" for tag in tags]
    for command in (
        [f"--python-version={release.python}", "--only-binary=:all:", *platforms, *wanted],
        ["--no-binary=:all:", "--no-deps", *project["project"]["optional-dependencies"]["pi"]],
    ):
        subprocess.run([*pip, "-d", str(into), *command], check=True, stdout=out, stderr=out)


def build(release: Release, log: Path | None = None) -> Image:
    """The release's image for this checkout's inputs: the cached one, or built now
    (~4 min here)."""
    image = image_for(release)
    if image.ready:
        return image
    why = missing_tools()
    if why:
        raise RuntimeError(why)
    # One image a release (~1.5 GB), no half-built one; a bare key is an older layout's.
    # Only this release's: the other's may be in use, or being built.
    stale = re.compile(rf"(?:{release.suite}-)?[0-9a-f]{{16}}|vpi-build-{release.suite}-.*")
    for old in cache_root().glob("*"):
        if stale.fullmatch(old.name) and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    image.folder.mkdir(parents=True)
    out = open(log or image.folder / "build.log", "w")  # noqa: SIM115 (closed below)
    try:
        with tempfile.TemporaryDirectory(
            prefix=f"vpi-build-{release.suite}-", dir=cache_root()
        ) as work:
            _build(release, image, Path(work), out)
    finally:
        out.close()
    (image.folder / "ready").write_text(key(release) + "\n")
    return image


def _build(release: Release, image: Image, work: Path, out: TextIO) -> None:
    def run(*command: str | Path) -> None:
        print("+", *command, file=out, flush=True)
        subprocess.run([str(c) for c in command], check=True, stdout=out, stderr=out)

    wheels = work / "wheels"
    wheelhouse(release, wheels, out)
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
        release.suite, tree, *release.mirrors,
    )  # fmt: skip
    kver = next((tree / "lib/modules").iterdir()).name
    shutil.copy(tree / "boot" / f"vmlinuz-{kver}", image.kernel)
    shutil.copy(tree / "boot" / f"initrd.img-{kver}", image.initrd)
    shutil.copy(tree / "opt/vpi/manifest.txt", image.folder / "manifest.txt")
    run("mke2fs", "-q", "-t", "ext4", "-L", "vpi-root", "-d", tree, image.disk, SIZE)
    shutil.rmtree(tree)


def main(argv: list[str]) -> int:
    """`guest_image.py [SUITE]`; argv without the program's name."""
    try:
        release = release_named(argv[0] if argv else None)
    except KeyError as e:
        print(f"vm image: {e.args[0]}", file=sys.stderr)
        return 2
    try:
        image = build(release)
    except (RuntimeError, subprocess.CalledProcessError) as e:
        print(f"vm image: {e}", file=sys.stderr)
        return 1
    print(image.folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
