#!/usr/bin/env python3
"""The cityunit SD-card image: Debian trixie for arm64 with the unit installed, for a Pi
Zero 2 W, 3 or 4. Flash it with any imager, edit cityunit.toml on the card, plug in.

    sudo python3 hardware/image/build.py [--out DIR]    (python3 bootstrap.py image)

Built from Debian's packages and the Python package index only, in three stages, each
cached outside the checkout (in CITYUNIT_CACHE's image/: recipe.py, the Debian side it
shares with the virtual Pi) under a key of its inputs, each with its log beside it:
Debian's packages (mmdebstrap, arm64 under qemu-user, over the boot files: boot/), the
base OS on them (base.sh) and the firmware on that (systemd/install.py run in its chroot, offline:
firmware.sh, rootfs/), so a firmware change costs minutes. Debian's
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
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import recipe  # noqa: E402
from recipe import Log  # noqa: E402

RELEASE = recipe.RELEASES["trixie"]
MIRRORS = RELEASE.mirrors("main non-free-firmware")
# What the unit and its boot need, the installer's packages (so that its apt step finds
# them installed, offline), the Wi-Fi a first-boot file may ask for, and what builds
# lgpio (gone again at the end of base.sh).
INSTALLER_PACKAGES = recipe.installer_packages()
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


# dpkg under qemu-user is the slow part: nothing written that a card never reads (the
# copyright files stay), no fsync per file (a failed build is thrown away whole), and the
# boot files (boot/) in place before the kernel, so that its initramfs is made once, the
# card's (conf.d/cityunit), and raspi-firmware's config.txt is the card's from the start.
DPKG = (
    "force-unsafe-io", "force-confold", "force-confdef", "path-exclude=/usr/share/man/*",
    "path-exclude=/usr/share/info/*", "path-exclude=/usr/share/locale/*",
    "path-exclude=/usr/share/lintian/*", "path-exclude=/usr/share/doc/*",
    "path-include=/usr/share/doc/*/copyright",
)  # fmt: skip


def debian_key() -> str:
    """Debian's packages as installed: the suite, the mirrors, the package list, dpkg's
    options and the boot files."""
    boot = tracked("hardware/image/boot")
    return recipe.digest(RELEASE.suite, MIRRORS, PACKAGES, DPKG, files=boot)


def base_key() -> str:
    """The base OS's inputs: Debian's, its script, lgpio."""
    files = [HERE / "base.sh", recipe.LGPIO]
    pi = recipe.pyproject()["project"]["optional-dependencies"]["pi"]
    return recipe.digest(debian_key(), pi, files=files)


def image_key() -> str:
    """The image's inputs: the base's, and everything of the firmware that goes in."""
    files = [Path(__file__), HERE / "firmware.sh", HERE / "cityunit-overlay.dts"]
    files += tracked("hardware/image/rootfs", *FIRMWARE_INPUTS)
    wheels = recipe.wheelhouse_key(RELEASE, "aarch64")
    return recipe.digest(base_key(), SIZE, BOOT, wheels, files=files)


def missing_tools() -> str | None:
    """Why this machine cannot build the image, or None."""
    why = recipe.cannot_build("mkfs.vfat", "mcopy", "sfdisk", "dtc", "xz", "git")
    if why is None and not arm64_programs():
        why = "building the image needs qemu-user-static with binfmt_misc (arm64 programs)"
    return why


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


def debian() -> Path:
    """Debian's packages installed for arm64 (mmdebstrap, qemu-user) over the boot files
    (boot/): the slow part, about 20 min on a core of this machine."""
    with recipe.stage("image", "debian", debian_key()) as (folder, building):
        tree = folder / "root"
        if building:
            building.run(
                "mmdebstrap", "--mode=root", "--arch=arm64", "--variant=apt",
                "--components=main,non-free-firmware", "--include=" + ",".join(PACKAGES),
                *(f"--dpkgopt={option}" for option in DPKG),
                f"--essential-hook=sync-in {HERE / 'boot'} /",
                RELEASE.suite, tree, *MIRRORS,
            )  # fmt: skip
        return tree


def base() -> Path:
    """The base OS: Debian's tree set up for a Pi (base.sh), python3-lgpio made, the
    build tools gone; built or cached."""
    with recipe.stage("image", "base", base_key()) as (folder, building):
        tree = folder / "root"
        if building:
            building.run("cp", "-a", debian(), tree)
            recipe.lgpio_source(tree / "opt/cityunit-image/wheels", building)
            (tree / "opt/cityunit-image/installer-packages").write_text(
                " ".join(INSTALLER_PACKAGES)
            )
            shutil.copy(recipe.LGPIO, tree / "tmp")
            run_in(tree, HERE / "base.sh", building)
            (tree / "tmp" / recipe.LGPIO.name).unlink()
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


def ready() -> bool:
    """Whether the raw image for this checkout is built (in the cache)."""
    return (recipe.built("image", "image", image_key()) / "ready").exists()


def image() -> Path:
    """The raw image for this checkout, built or cached: a few minutes on a cached base."""
    name = f"cityunit-{version()}-arm64.img"
    with recipe.stage("image", "image", image_key()) as (folder, building):
        disk = folder / name
        if building:
            base_tree = base()
            with tempfile.TemporaryDirectory(prefix="work-", dir=folder) as work_dir:
                work = Path(work_dir)
                tree = work / "root"
                building.run("cp", "-a", base_tree, tree)
                firmware(tree, building)
                shutil.copy(tree / "opt/cityunit-image/manifest.txt", folder / "manifest.txt")
                assemble(tree, work, disk, building)
        return disk


def firmware(tree: Path, log: Log) -> None:
    """The unit installed in the tree by its installer (firmware.sh), the image's own
    files (rootfs/), and the overlay."""
    log.run("cp", "-a", f"{HERE / 'rootfs'}/.", tree)
    source = tree / "usr/src/cityunit"
    for path in tracked(*FIRMWARE_INPUTS):
        target = source / path.relative_to(ROOT)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    recipe.wheelhouse(RELEASE, "aarch64", tree / "opt/cityunit-image/wheels")
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


def publish(disk: Path, out: Path) -> Path:
    """The image compressed for an imager (.img.xz) with its sha256, in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    xz = out / (disk.name + ".xz")
    with open(xz, "wb") as f:
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
    parser.add_argument("--raw", action="store_true",
                        help="only the raw image, in the cache: print its path")  # fmt: skip
    args = parser.parse_args(argv)
    # A stop is a Ctrl-C's clean-up (the stage in hand unmounted and removed), whatever
    # started this: a shell's background job inherits SIGINT ignored, and SIGTERM's
    # default would leave the stage's mounts behind.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    why = missing_tools()
    if why:
        print(f"image: {why}", file=sys.stderr)
        return 1
    logs = f"{recipe.cache('image')}/*.log, {recipe.cache('wheels')}/*.log"
    print(f"image: building (the logs: {logs})", file=sys.stderr)
    try:
        disk = image()
        print(disk if args.raw else publish(disk, args.out))
    except (recipe.BuildFailed, subprocess.CalledProcessError, OSError) as e:
        print(f"image: failed: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
