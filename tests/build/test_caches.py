"""A machine that never ran the suite: each QEMU tier's set-up path, from a cache root
that does not exist, with the programs it runs (mmdebstrap, chroot, mke2fs, pip...)
stood in for. Every cache is made before anything is written in it, each stage keeps
its log, a built stage is not built again, and a failed one leaves its log alone."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "vm"))
sys.path.insert(0, str(ROOT / "tests" / "image"))

import emulated_pi  # noqa: E402
import guest_image  # noqa: E402
from emulated_pi import image_build, recipe  # noqa: E402

KERNEL = "6.12.0-test"


class Programs:
    """What a build runs, stood in for at recipe.Log.run: each leaves the files that the
    build's next step reads (cp is the real one)."""

    def __init__(self) -> None:
        self.ran: list[str] = []
        self.failing: str | None = None

    def run(self, log: recipe.Log, *command: str | Path) -> None:
        words = [str(c) for c in command]
        print("+", *words, file=log.out, flush=True)
        program = Path(words[0]).name
        self.ran.append(program)
        if program == self.failing:
            raise recipe.BuildFailed(f"{program} failed (1): see {log.out.name}")
        if program == "cp":
            subprocess.run(words, check=True)
        elif program == "mmdebstrap":
            suite = next(i for i, w in enumerate(words) if w in recipe.RELEASES)
            self.debian(Path(words[suite + 1]))
        elif "pip" in words:
            folder = Path(words[words.index("-d") + 1])
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "lgpio-0.2.2.0.tar.gz").write_bytes(b"")
        elif program in ("mkfs.vfat", "mke2fs"):
            Path(next(w for w in words if w.endswith(".img"))).write_bytes(b"")

    @staticmethod
    def debian(tree: Path) -> None:
        for folder in (f"lib/modules/{KERNEL}", "boot/firmware", "tmp"):
            (tree / folder).mkdir(parents=True)
        for name in (f"boot/vmlinuz-{KERNEL}", f"boot/initrd.img-{KERNEL}",
                     "opt/vpi/manifest.txt", "opt/cityunit-image/manifest.txt"):  # fmt: skip
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text("")


@pytest.fixture
def programs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Programs]:
    """A cache root two folders short of existing, and the builds' programs stood in for
    (nothing mounted, nothing run as root)."""
    monkeypatch.setenv("CITYUNIT_CACHE", str(tmp_path / "never" / "made"))
    stand_in = Programs()
    monkeypatch.setattr(recipe.Log, "run", lambda log, *command, **kw: stand_in.run(log, *command))
    monkeypatch.setattr(recipe, "cannot_build", lambda *programs: None)
    monkeypatch.setattr(image_build, "chroot", lambda tree: contextlib.nullcontext())
    yield stand_in


def test_the_card_image_builds_from_no_cache_at_all(programs: Programs, tmp_path: Path) -> None:
    assert not image_build.ready()
    disk = image_build.image()
    cache = tmp_path / "never" / "made"
    assert disk.is_file() and disk.parent.parent == cache / "image"
    assert image_build.ready()
    for stage in ("debian", "base", "image"):
        assert (cache / "image" / f"{stage}.log").read_text().startswith("+ ")
    assert (cache / "wheels" / "trixie-aarch64.log").exists()
    assert programs.ran.count("mmdebstrap") == 1
    ran = len(programs.ran)
    assert image_build.image() == disk and len(programs.ran) == ran  # built once


def test_a_failed_stage_leaves_its_log_and_nothing_half_built(
    programs: Programs, tmp_path: Path
) -> None:
    programs.failing = "mke2fs"
    with pytest.raises(recipe.BuildFailed, match=r"image\.log"):
        image_build.image()
    image = tmp_path / "never" / "made" / "image"
    assert "+ mke2fs" in (image / "image.log").read_text()
    assert not list(image.glob("image-*"))  # the failed stage's folder is gone
    assert list(image.glob("base-*/ready"))  # the stages before it are kept
    programs.failing = None
    assert image_build.image().is_file()


@pytest.mark.parametrize("suite", sorted(recipe.RELEASES))
def test_the_virtual_pis_guest_builds_from_no_cache_at_all(
    programs: Programs, tmp_path: Path, suite: str
) -> None:
    release = recipe.RELEASES[suite]
    assert not guest_image.image_for(release).ready
    image = guest_image.build(release)
    assert image.ready and image.folder.parent == tmp_path / "never" / "made" / "vm"
    assert image.kernel.exists() and image.initrd.exists()
    assert "+ mmdebstrap" in (image.folder.parent / f"{suite}.log").read_text()


def test_the_emulated_pis_qemu_builds_from_no_cache_at_all(
    programs: Programs, tmp_path: Path
) -> None:
    root = emulated_pi.qemu_root()
    assert root.is_dir() and root.parent.parent == tmp_path / "never" / "made" / "qemu"
    assert emulated_pi.tool("dtc")[-1] == f"{root}/usr/bin/dtc"
    assert programs.ran == ["mmdebstrap"]  # the second call found it built


def test_the_cache_root_is_named_in_one_place() -> None:
    """Every tier's cache is recipe.cache()'s: no other file names a cache folder."""
    named = [
        path.relative_to(ROOT)
        for path in (*ROOT.glob("tests/**/*.py"), *ROOT.glob("hardware/**/*.py"))
        if "/var/cache/cityunit" in path.read_text() and path.name != "test_caches.py"
    ]
    assert named == [Path("hardware/image/recipe.py")]
