"""The Debian side of cityunit's builds, written once: what the card image (build.py),
the virtual Pi's guest (tests/vm/guest_image.py) and the emulated Pi's QEMU (tests/image)
take from Debian's packages and the Python package index, and where each is kept.

Every build is cached under one root, CITYUNIT_CACHE (else /var/cache/cityunit), in a
folder that `cache()` makes before anything is written in it: a machine that never built
anything is the case every tier starts from. A stage is built by one process at a time
(a lock beside it), so the suite can build the card image in the background while the
virtual Pi's tests run, and the image tier waits for it.
"""

from __future__ import annotations

import codecs
import contextlib
import fcntl
import hashlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
INSTALLER = ROOT / "systemd" / "install.py"
# Raspberry Pi OS's device groups (its 99-com.rules), which Debian lacks: the card and
# the virtual Pi install this one file.
UDEV_RULES = HERE / "rootfs/etc/udev/rules.d/99-cityunit.rules"
# python3-lgpio, which Raspberry Pi OS has and Debian lacks, made in a chroot of either.
LGPIO = HERE / "lgpio.sh"


@dataclass(frozen=True)
class Release:
    """A Debian release, as the Raspberry Pi OS of the same name is built on it: what
    wheels are chosen for (its Python and C library)."""

    suite: str
    python: str  # its python3, as pip's --python-version
    glibc_minor: int  # its glibc is 2.N: the newest manylinux wheel it runs

    def mirrors(self, components: str = "main") -> tuple[str, ...]:
        return (
            f"deb http://deb.debian.org/debian {self.suite} {components}",
            f"deb http://deb.debian.org/debian {self.suite}-updates {components}",
            f"deb http://deb.debian.org/debian-security {self.suite}-security {components}",
        )


# Raspberry Pi OS Bookworm's Debian and Trixie's (the imager's first, and the card's).
RELEASES = {r.suite: r for r in (Release("bookworm", "3.11", 36), Release("trixie", "3.13", 41))}


def cache(name: str) -> Path:
    """The cache folder of one kind of build (image, vm, qemu, wheels), made here before
    anything is written in it."""
    folder = _cache_path(name)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _cache_path(name: str) -> Path:
    """The one place a cache's path is named: looked at (`built`) without being made."""
    return Path(os.environ.get("CITYUNIT_CACHE") or "/var/cache/cityunit") / name


def digest(*values: object, files: Sequence[Path] = ()) -> str:
    """A short key of a build's inputs: values, and files by their path, bytes and mode."""
    sha = hashlib.sha256(repr(values).encode())
    for path in files:
        sha.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
        sha.update(b"x" if os.access(path, os.X_OK) else b"-")
    return sha.hexdigest()[:16]


def built(kind: str, name: str, key: str) -> Path:
    """Where a stage of these inputs is kept: built when it holds `ready`."""
    return _cache_path(kind) / f"{name}-{key}"


@contextlib.contextmanager
def stage(kind: str, name: str, key: str) -> Iterator[tuple[Path, Log | None]]:
    """A cached build's folder, and the log to build it with (None: it is built, and
    only read: no lock, nothing written, as any user may). One process builds it at a
    time (the others wait, then find it built); a failed build leaves its log
    (KIND/NAME.log) and nothing else; older builds of that name go once it is built."""
    folder = built(kind, name, key)
    if (folder / "ready").exists():
        yield folder, None
        return
    root = cache(kind)
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / "ready").exists():  # built by the process that held the lock
            yield folder, None
            return
        remove(folder)  # what a killed build left
        folder.mkdir()
        try:
            with open(root / f"{name}.log", "w") as out:
                yield folder, Log(out)
        except BaseException:
            remove(folder)
            raise
        (folder / "ready").write_text(key + "\n")
        for old in root.glob(f"{name}-*"):
            if old != folder:
                remove(old)


def remove(tree: Path) -> None:
    """A build's folder gone, with whatever a killed build left mounted in it unmounted
    first, and never a file of another file system (a chroot's /dev is the host's)."""
    where = os.path.realpath(tree) + "/"
    with open("/proc/self/mounts", "rb") as mounts:  # a path's spaces are octal escapes
        points = [os.fsdecode(codecs.escape_decode(line.split()[1])[0]) for line in mounts]
    for point in sorted((p for p in points if p.startswith(where)), reverse=True):
        subprocess.run(["umount", "--recursive", "--lazy", point], check=False)
    subprocess.run(["rm", "-rf", "--one-file-system", "--", str(tree)], check=False)


def missing(*programs: str) -> str | None:
    """Why this machine cannot run one of `programs`, or None."""
    for program in programs:
        if shutil.which(program) is None:
            return f"no {program} (python3 bootstrap.py test installs it, as root with apt-get)"
    return None


def cannot_build(*programs: str) -> str | None:
    """Why this machine cannot build a Debian tree with `programs` too, or None."""
    if os.geteuid() != 0:
        return "building it needs root (mmdebstrap in root mode, a chroot)"
    return missing("mmdebstrap", "mke2fs", *programs)


def installer_packages() -> tuple[str, ...]:
    """What systemd/install.py asks apt for, less python3-lgpio (lgpio.sh makes it)."""
    spec = importlib.util.spec_from_file_location("cityunit_installer", INSTALLER)
    assert spec and spec.loader
    installer = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(installer)
    return tuple(name for name in installer.APT if name != "python3-lgpio")


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


class BuildFailed(Exception):
    """A build's command failed: which, and the log that says why."""


class Log:
    """A build's commands and their output, in one file."""

    def __init__(self, out: TextIO) -> None:
        self.out = out

    def run(self, *command: str | Path, **kw: object) -> None:
        print("+", *command, file=self.out, flush=True)
        try:
            subprocess.run([str(c) for c in command], check=True, stdout=self.out,
                           stderr=self.out, **kw)  # type: ignore[call-overload]  # fmt: skip
        except subprocess.CalledProcessError as e:
            raise BuildFailed(f"{command[0]} failed ({e.returncode}): see {self.out.name}") from e


def _wheels(release: Release, machine: str) -> tuple[list[str], list[str]]:
    """What a wheelhouse holds (the project's dependencies and what builds it) and the
    platform tags its wheels may have, for `release` on `machine` (x86_64, aarch64)."""
    project = pyproject()
    wanted = [*project["project"]["dependencies"], *project["build-system"]["requires"]]
    # pip takes each tag as given: the legacy aliases too, or wheels tagged only so are missed
    tags = [f"manylinux_2_{n}" for n in range(5, release.glibc_minor + 1)]
    tags += ["manylinux1", "manylinux2010", "manylinux2014"]
    return wanted, [f"--platform={tag}_{machine}" for tag in tags]


def wheelhouse_key(release: Release, machine: str) -> str:
    """The key of a wheelhouse's inputs: part of the key of each image it goes into."""
    return digest(release, machine, PIP_DOWNLOAD[3:], *_wheels(release, machine))


def wheelhouse(release: Release, machine: str, into: Path) -> None:
    """What the installer's pip will ask for, offline in a tree of `release` on `machine`:
    wheels for that Python. Downloaded once for these inputs, then copied from the cache."""
    key = wheelhouse_key(release, machine)
    with stage("wheels", f"{release.suite}-{machine}", key) as (folder, building):
        if building:
            wanted, platforms = _wheels(release, machine)
            building.run(*PIP_DOWNLOAD, "-d", folder / "wheels", "--only-binary=:all:",
                         f"--python-version={release.python}", *platforms, *wanted)  # fmt: skip
        shutil.copytree(folder / "wheels", into, dirs_exist_ok=True)


def lgpio_source(into: Path, log: Log) -> None:
    """lgpio's source, for lgpio.sh: the index has its wheels for some Pythons only."""
    pi = pyproject()["project"]["optional-dependencies"]["pi"]
    log.run(*PIP_DOWNLOAD, "-d", into, "--no-binary=:all:", "--no-deps", *pi)


PIP_DOWNLOAD = (sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "download")
