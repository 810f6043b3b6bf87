"""The virtual Pi's disk image: Debian bookworm or trixie (a Raspberry Pi OS release's
Debian) for amd64, built from Debian's packages and the Python package index only, with
test devices in place of the Pi's (tests/vm/guest), to be booted under QEMU by
virtual_pi.py.

    python3 tests/vm/guest_image.py [trixie]     build it (or say where the built one is)

Needs root (mmdebstrap in root mode, a chroot), mmdebstrap and e2fsprogs. Each release's
image is cached outside the checkout (in CITYUNIT_CACHE's vm/: hardware/image/recipe.py,
the Debian side it shares with the card image), under a key made of everything it is
built from here: a change to the firmware does not rebuild it (the tests copy the
checkout in), a change to tests/vm/guest, lgpio.sh, the udev rules or pyproject.toml
does. Debian's archive is not pinned by date (snapshot.debian.org is out of reach from
these machines): the kernel and packages are the mirror's on the day of the build, listed
in the image's /opt/vpi/manifest.txt and in manifest.txt beside it.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
GUEST = HERE / "guest"
sys.path.insert(0, str(ROOT / "hardware" / "image"))

import recipe  # noqa: E402
from recipe import RELEASES, Release  # noqa: E402


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
    """A digest of every input of the release's image: this builder, the scripts and
    files that go in, the wheels, lgpio, and the installer's package list."""
    files = [Path(__file__), *(f for f in sorted(GUEST.rglob("*")) if f.is_file())]
    files += [recipe.LGPIO, recipe.UDEV_RULES]
    pi = recipe.pyproject()["project"]["optional-dependencies"]["pi"]
    wheels = recipe.wheelhouse_key(release, "x86_64")
    return recipe.digest(
        release, PACKAGES, SIZE, recipe.installer_packages(), wheels, pi, files=files
    )


def image_for(release: Release) -> Image:
    """Where the release's image for this checkout is, built or not."""
    return Image(recipe.built("vm", release.suite, key(release)))


def build(release: Release) -> Image:
    """The release's image for this checkout's inputs: the cached one, or built now
    (~4 min here)."""
    if not image_for(release).ready and (why := recipe.cannot_build("ssh-keygen")):
        raise RuntimeError(why)
    with recipe.stage("vm", release.suite, key(release)) as (folder, building):
        image = Image(folder)
        if building:
            with tempfile.TemporaryDirectory(prefix="work-", dir=folder) as work:
                _build(release, image, Path(work), building)
        return image


def _build(release: Release, image: Image, work: Path, log: recipe.Log) -> None:
    wheels = work / "wheels"
    recipe.wheelhouse(release, "x86_64", wheels)
    recipe.lgpio_source(wheels, log)
    (work / "apt-packages").write_text(" ".join(recipe.installer_packages()) + "\n")
    log.run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "vpi", "-f", image.key)
    tree = work / "root"
    log.run(
        "mmdebstrap", "--mode=root", "--variant=apt", "--format=directory",
        "--include=" + ",".join(PACKAGES),
        '--customize-hook=mkdir -p "$1/usr/src/vpi" "$1/opt/vpi/wheels"',
        f"--customize-hook=sync-in {GUEST / 'rootfs'} /",
        f"--customize-hook=copy-in {recipe.UDEV_RULES} /etc/udev/rules.d",
        f"--customize-hook=sync-in {GUEST} /usr/src/vpi",
        f"--customize-hook=copy-in {recipe.LGPIO} /usr/src/vpi",
        f"--customize-hook=sync-in {wheels} /opt/vpi/wheels",
        f"--customize-hook=copy-in {image.key}.pub /tmp",
        f"--customize-hook=copy-in {work / 'apt-packages'} /usr/src/vpi",
        '--customize-hook=chroot "$1" sh /usr/src/vpi/build.sh',
        release.suite, tree, *release.mirrors(),
    )  # fmt: skip
    kver = next((tree / "lib/modules").iterdir()).name
    shutil.copy(tree / "boot" / f"vmlinuz-{kver}", image.kernel)
    shutil.copy(tree / "boot" / f"initrd.img-{kver}", image.initrd)
    shutil.copy(tree / "opt/vpi/manifest.txt", image.folder / "manifest.txt")
    log.run("mke2fs", "-q", "-t", "ext4", "-L", "vpi-root", "-d", tree, image.disk, SIZE)
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
    except (RuntimeError, recipe.BuildFailed) as e:
        print(f"vm image: {e}", file=sys.stderr)
        return 1
    print(image.folder)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
