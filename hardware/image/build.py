#!/usr/bin/env python3
"""The cityunit SD-card image: Debian trixie for arm64 with the unit installed, for a Pi
Zero 2 W, 3 or 4. Flash it with any imager, edit cityunit.toml on the card, plug in.

    sudo python3 hardware/image/build.py [--out DIR]    (python3 bootstrap.py image)

Built from Debian's packages and the Python package index only, in two stages, each
cached outside the checkout (CITYUNIT_IMAGE_CACHE, else /var/cache/cityunit-image) under
a key of its inputs: the base OS (mmdebstrap, arm64 under qemu-user: base.sh, boot/;
~15 min here) and the firmware on it (systemd/install.py run in its chroot, offline:
firmware.sh, rootfs/; a few minutes), so a firmware change costs minutes. Debian's
archive is not pinned by date (snapshot.debian.org is out of reach here): what went in
is listed in the image's /opt/cityunit-image/manifest.txt and beside the image.

The card: a FAT partition CITYUNIT (the Pi's firmware, the kernel, cityunit.toml), the
root file system (cityroot, read-only under a layer in RAM), both within the image's
2 GiB; the data partition (citydata: the game) is made on the first boot after them.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SUITE, PYTHON, GLIBC_MINOR = "trixie", "3.13", 41  # the wheels are chosen for these
MIRRORS = (
    f"deb http://deb.debian.org/debian {SUITE} main non-free-firmware",
    f"deb http://deb.debian.org/debian {SUITE}-updates main non-free-firmware",
    f"deb http://deb.debian.org/debian-security {SUITE}-security main non-free-firmware",
)


def installer_packages() -> tuple[str, ...]:
    """What systemd/install.py asks apt for, less python3-lgpio (base.sh makes it)."""
    found = re.search(r"^APT = \((.*?)\)", (ROOT / "systemd/install.py").read_text(), re.M | re.S)
    assert found, "systemd/install.py has no APT = (...) line"
    return tuple(name for name in re.findall(r'"([^"]+)"', found[1]) if name != "python3-lgpio")


# What the unit and its boot need, the installer's packages (so that its apt step finds
# them installed, offline), the Wi-Fi a first-boot file may ask for, and what builds
# lgpio (gone again at the end of base.sh).
INSTALLER_PACKAGES = installer_packages()
PACKAGES = (
    "linux-image-arm64", "raspi-firmware", "firmware-brcm80211", "systemd-sysv", "udev",
    "dbus", "kmod", "initramfs-tools", "e2fsprogs", "fdisk", "wpasupplicant",
    "openssh-server", "python3", *INSTALLER_PACKAGES, "python3-dev", "python3-setuptools",
    "python3-wheel", "swig", "gcc", "make", "libc6-dev", "apt-utils",
)  # fmt: skip
MIB = 1 << 20
BINFMT = Path("/proc/sys/fs/binfmt_misc")
SIZE = 2048 * MIB  # the image, fixed: the data partition starts here (cityunit-data)
BOOT = (4 * MIB, 256 * MIB)  # the FAT partition's start and size
# The checkout's files the firmware stage installs (besides hardware/image's own).
FIRMWARE_INPUTS = ("firmware", "systemd", "pyproject.toml", "README.md", "LICENSE")


def cache_root() -> Path:
    return Path(os.environ.get("CITYUNIT_IMAGE_CACHE", "/var/cache/cityunit-image"))


def version() -> str:
    """The firmware's version, as cityunit/__init__.py gives it (pyproject's is dynamic)."""
    found = re.search(
        r'^__version__ = "(.+)"', (ROOT / "firmware/cityunit/__init__.py").read_text(), re.M
    )
    assert found, "firmware/cityunit/__init__.py has no __version__"
    return found[1]


def tracked(*paths: str) -> list[Path]:
    """The files under `paths` that a clone has (git's list, as they are on disk now)."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard",
         "--", *paths],
        capture_output=True, check=True,
    ).stdout.split(b"\0")  # fmt: skip
    return sorted(p for name in listed if name and (p := ROOT / name.decode()).is_file())


def _digest(files: list[Path], *extra: object) -> str:
    digest = hashlib.sha256(repr(extra).encode())
    for path in files:
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
        digest.update(b"x" if os.access(path, os.X_OK) else b"-")
    return digest.hexdigest()[:16]


def debian_key() -> str:
    """Debian's packages as installed: the suite, the mirrors, the package list."""
    return _digest([], SUITE, MIRRORS, PACKAGES)


def base_key() -> str:
    """The base OS's inputs: Debian's, its script and boot files, lgpio."""
    files = [HERE / "base.sh", *tracked("hardware/image/boot")]
    return _digest(files, debian_key(), _pyproject()["optional-dependencies"]["pi"])


def image_key() -> str:
    """The image's inputs: the base's, and everything of the firmware that goes in."""
    files = [Path(__file__), HERE / "firmware.sh", HERE / "cityunit-overlay.dts"]
    files += tracked("hardware/image/rootfs", *FIRMWARE_INPUTS)
    return _digest(files, base_key(), SIZE, BOOT)


def _pyproject() -> dict[str, Any]:
    project: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return project


def missing_tools() -> str | None:
    """Why this machine cannot build the image, or None."""
    if os.geteuid() != 0:
        return "building the image needs root (mmdebstrap in root mode, a chroot)"
    for tool in ("mmdebstrap", "mke2fs", "mkfs.vfat", "mcopy", "sfdisk", "dtc", "xz", "git"):
        if shutil.which(tool) is None:
            return f"building the image needs {tool} (python3 bootstrap.py image installs it)"
    if not arm64_programs():
        return "building the image needs qemu-user-static with binfmt_misc (arm64 programs)"
    return None


def arm64_programs() -> bool:
    """Whether the kernel runs arm64 programs through qemu-user (binfmt_misc): enabled
    here if it can be (a container may have binfmt_misc unmounted, or the entry off)."""
    entry = BINFMT / "qemu-aarch64"
    if not entry.exists() and shutil.which("update-binfmts"):
        if not (BINFMT / "register").exists():
            subprocess.run(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT)],
                           check=False, capture_output=True)  # fmt: skip
        subprocess.run(["update-binfmts", "--enable", "qemu-aarch64"], check=False,
                       capture_output=True)  # fmt: skip
    return entry.exists()


class Log:
    """The build's commands and their output, in one file."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def run(self, *command: str | Path, **kw: object) -> None:
        print("+", *command, file=self.out, flush=True)
        subprocess.run([str(c) for c in command], check=True, stdout=self.out,
                       stderr=self.out, **kw)  # type: ignore[call-overload]  # fmt: skip


def wheelhouse(into: Path, log: Log) -> None:
    """What the installer's pip will ask for in the chroot, offline: the project's
    dependencies and what builds it, as wheels for trixie's Python on arm64 (lgpio is
    apt's: base.sh made python3-lgpio)."""
    project = _pyproject()
    build = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    tags = [f"manylinux_2_{n}" for n in range(17, GLIBC_MINOR + 1)] + ["manylinux2014"]
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "download",
           "-d", str(into)]  # fmt: skip
    platforms = [f"--platform={tag}_aarch64" for tag in tags]
    log.run(*pip, f"--python-version={PYTHON}", "--only-binary=:all:", *platforms,
            *project["dependencies"], *build)  # fmt: skip


@contextlib.contextmanager
def stage(name: str, key: str) -> Iterator[tuple[Path, bool]]:
    """A cached stage's folder, and whether it is built; a failed build leaves nothing,
    and a stale one of the same name goes."""
    folder = cache_root() / f"{name}-{key}"
    ready = (folder / "ready").exists()
    if not ready:
        for old in cache_root().glob(f"{name}-*"):
            shutil.rmtree(old, ignore_errors=True)
        folder.mkdir(parents=True)
    try:
        yield folder, ready
    except BaseException:
        if not ready:
            shutil.rmtree(folder, ignore_errors=True)
        raise
    (folder / "ready").write_text(key + "\n")


def debian(log: Log) -> Path:
    """Debian's packages installed for arm64 (mmdebstrap, qemu-user): the slow part
    (~20 min here), cached by the package list alone."""
    with stage("debian", debian_key()) as (folder, ready):
        tree = folder / "root"
        if not ready:
            log.run(
                "mmdebstrap", "--mode=root", "--arch=arm64", "--variant=apt",
                "--components=main,non-free-firmware", "--include=" + ",".join(PACKAGES),
                SUITE, tree, *MIRRORS,
            )  # fmt: skip
        return tree


def base(log: Log) -> Path:
    """The base OS: Debian's tree with the boot set up for a Pi (boot/, base.sh), python3-
    lgpio made, the build tools gone; built or cached (~5 min)."""
    with stage("base", base_key()) as (folder, ready):
        tree = folder / "root"
        if ready:
            return tree
        log.run("cp", "-a", debian(log), tree)
        log.run("cp", "-a", f"{HERE / 'boot'}/.", tree)
        sources = tree / "opt/cityunit-image/wheels"
        sources.mkdir(parents=True)
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "download"]
        log.run(*pip, "-d", sources, "--no-binary=:all:", "--no-deps",
                *_pyproject()["optional-dependencies"]["pi"])  # fmt: skip
        (tree / "opt/cityunit-image/installer-packages").write_text(" ".join(INSTALLER_PACKAGES))
        run_in(tree, HERE / "base.sh", log)
        return tree


def run_in(tree: Path, script: Path, log: Log) -> None:
    """A shell script of ours run in the tree's chroot."""
    shutil.copy(script, tree / "tmp" / script.name)
    with chroot(tree):
        log.run("chroot", tree, "sh", f"/tmp/{script.name}")
    (tree / "tmp" / script.name).unlink()


@contextlib.contextmanager
def chroot(tree: Path) -> Iterator[None]:
    """The tree with /proc, /sys and /dev (and /dev/pts) in it, for programs run in it."""
    mounted: list[Path] = []
    try:
        for kind, where in (("proc", "proc"), ("sysfs", "sys"), ("bind", "dev")):
            target = tree / where
            target.mkdir(exist_ok=True)
            source = ["--rbind", "/dev"] if kind == "bind" else ["-t", kind, kind]
            subprocess.run(["mount", *source, str(target)], check=True)
            mounted.append(target)
        yield
    finally:
        for target in reversed(mounted):
            subprocess.run(["umount", "--recursive", "--lazy", str(target)], check=False)


def image(log: Log) -> Path:
    """The raw image for this checkout, built or cached: a few minutes on a cached base."""
    name = f"cityunit-{version()}-arm64.img"
    with stage("image", image_key()) as (folder, ready):
        disk = folder / name
        if ready:
            return disk
        base_tree = base(log)
        with tempfile.TemporaryDirectory(prefix="work-", dir=folder) as work_dir:
            work = Path(work_dir)
            tree = work / "root"
            log.run("cp", "-a", base_tree, tree)
            firmware(tree, work, log)
            shutil.copy(tree / "opt/cityunit-image/manifest.txt", folder / "manifest.txt")
            assemble(tree, work, disk, log)
        return disk


def firmware(tree: Path, work: Path, log: Log) -> None:
    """The unit installed in the tree by its installer (firmware.sh), the image's own
    files (rootfs/), and the overlay."""
    log.run("cp", "-a", f"{HERE / 'rootfs'}/.", tree)
    source = tree / "usr/src/cityunit"
    for path in tracked(*FIRMWARE_INPUTS):
        target = source / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    wheelhouse(tree / "opt/cityunit-image/wheels", log)
    overlays = tree / "boot/firmware/overlays"
    overlays.mkdir(parents=True, exist_ok=True)
    log.run("dtc", "-@", "-q", "-I", "dts", "-O", "dtb", "-o", overlays / "cityunit.dtbo",
            HERE / "cityunit-overlay.dts")  # fmt: skip
    run_in(tree, HERE / "firmware.sh", log)


def assemble(tree: Path, work: Path, disk: Path, log: Log) -> None:
    """The card: the boot files in a FAT made without mounting it (mtools), the rest in
    an ext4 (mke2fs -d), both placed in a 2 GiB disk behind an MBR partition table."""
    boot_fs, root_fs = work / "boot.img", work / "root.img"
    start, size = BOOT
    log.run("mkfs.vfat", "-F", "32", "-n", "CITYUNIT", "-C", boot_fs, str(size // 1024))
    firmware_dir = tree / "boot/firmware"
    mtools = {**os.environ, "MTOOLS_SKIP_CHECK": "1"}
    log.run("mcopy", "-s", "-p", "-m", "-i", boot_fs, *sorted(firmware_dir.iterdir()), "::",
            env=mtools)  # fmt: skip
    for entry in firmware_dir.iterdir():
        shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    root_start = start + size
    log.run("mke2fs", "-q", "-t", "ext4", "-L", "cityroot", "-d", tree, root_fs,
            f"{(SIZE - root_start) // 1024}k")  # fmt: skip
    with open(disk, "wb") as f:
        f.truncate(SIZE)
    table = (
        f"label: dos\nstart={start // 512}, size={size // 512}, type=c, bootable\n"
        f"start={root_start // 512}, type=83\n"
    )
    log.run("sfdisk", "--quiet", disk, input=table.encode())
    for fs, at in ((boot_fs, start), (root_fs, root_start)):
        log.run("dd", f"if={fs}", f"of={disk}", "bs=1M", f"seek={at // MIB}",
                "conv=notrunc,sparse", "status=none")  # fmt: skip


def publish(disk: Path, out: Path, log: Log) -> Path:
    """The image compressed for an imager (.img.xz) with its sha256, in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    xz = out / (disk.name + ".xz")
    with open(xz, "wb") as f:
        log.out.flush()
        subprocess.run(["xz", "-T0", "-6", "-c", str(disk)], stdout=f, check=True)
    digest = hashlib.sha256()
    with open(xz, "rb") as f:
        while chunk := f.read(MIB):
            digest.update(chunk)
    (out / (xz.name + ".sha256")).write_text(f"{digest.hexdigest()}  {xz.name}\n")
    shutil.copy(disk.parent / "manifest.txt", out / (disk.name + ".manifest.txt"))
    return xz


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where the .img.xz goes")
    args = parser.parse_args(argv)
    why = missing_tools()
    if why:
        print(f"image: {why}", file=sys.stderr)
        return 1
    cache_root().mkdir(parents=True, exist_ok=True)
    log_path = cache_root() / "build.log"
    print(f"image: building (log: {log_path})", file=sys.stderr)
    with open(log_path, "w") as out:
        try:
            xz = publish(image(Log(out)), args.out, Log(out))
        except subprocess.CalledProcessError as e:
            print(f"image: failed: {e} (the log's end: {log_path})", file=sys.stderr)
            return 1
    print(xz)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
