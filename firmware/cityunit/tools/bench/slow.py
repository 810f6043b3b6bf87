"""`cityunit bench --slow N`: the figures as a CPU N times slower gives them, closer to a
Pi Zero 2 W's (about 20x slower for this code: docs/performance.md).

The honest means the kernel offers: CFS bandwidth control. The bench's process, and the
simulators it starts, are held to 1/N of one core in a control group of their own (cgroup
v2's `cpu.max`, or v1's `cpu.cfs_quota_us`), which needs root and a cpu controller; where
there is none, `NoQuota` says why and nothing is measured.

What it cannot show: a quota hands CPU out in bursts, 1/N of each period (PERIOD_US,
longer past N = 20) and then nothing until the next one, so work shorter than a burst
runs at full speed and anything longer waits up to a period; a slow CPU is slow all the
time. Caches, memory and the bus are this machine's.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

PERIOD_US = 20_000  # the quota's period: 1 ms of CPU each 20 ms at N = 20
MOUNTS = Path("/proc/self/mounts")


class NoQuota(Exception):
    """Why this machine cannot hold the bench to a share of a core."""


def _cpu_hierarchy(mounts: Path = MOUNTS) -> tuple[Path, int]:
    """Where the cpu controller is mounted, and its cgroup version (1 or 2)."""
    v2 = None
    for line in mounts.read_text().splitlines():
        _, where, kind, options, *_ = line.split()
        if kind == "cgroup" and "cpu" in options.split(","):
            return Path(where), 1
        if kind == "cgroup2" and v2 is None:
            v2 = Path(where)
    if v2 is not None and "cpu" in (v2 / "cgroup.controllers").read_text().split():
        return v2, 2
    raise NoQuota("no cgroup cpu controller is mounted (CFS bandwidth control)")


def _own_group(version: int) -> str:
    """This process's control group in that hierarchy, as /proc/self/cgroup says it."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        if (version == 2 and number == "0") or (version == 1 and "cpu" in controllers.split(",")):
            return path.lstrip("/")
    raise NoQuota("/proc/self/cgroup names no cpu group for this process")


@contextlib.contextmanager
def slowed(n: float) -> Iterator[str]:
    """This process (and what it starts from now on) held to 1/n of one core until the
    block ends, in a control group made for it and removed after; yields what was done,
    in words. NoQuota where it cannot be done."""
    if not 1 <= n <= 1_000:  # (not a NaN either)
        raise NoQuota(f"--slow takes a number of times slower, from 1 to 1000, not {n}")
    if os.geteuid() != 0:
        raise NoQuota("a CPU quota needs root (sudo)")
    try:
        root, version = _cpu_hierarchy()
        home = root / _own_group(version)
        # v2: processes only in leaves, so a sibling (under the root: the root itself)
        parent = home if version == 1 or home == root else home.parent
        if version == 2 and "cpu" not in (parent / "cgroup.subtree_control").read_text().split():
            raise NoQuota(f"cgroup v2: the cpu controller is not enabled below {parent}")
        _clear_old(parent)
        group = parent / f"cityunit-slow-{os.getpid()}"
        # the kernel's least quota is 1 ms: past 20x, a longer period (up to 1 s)
        period = max(PERIOD_US, min(1_000_000, round(1_000 * n)))
        quota = round(period / n)
        group.mkdir()
    except OSError as e:
        raise NoQuota(f"cannot make a control group: {e.strerror or e}") from None
    try:
        if version == 2:
            (group / "cpu.max").write_text(f"{quota} {period}")
        else:
            (group / "cpu.cfs_period_us").write_text(str(period))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as e:
        _remove(group, home)
        raise NoQuota(f"cannot set the quota in {group}: {e.strerror or e}") from None
    try:
        yield (
            f"held to {quota / period:.3g} of one core ({quota} us each {period} us,"
            f" cgroup v{version}: {group})"
        )
    finally:
        _remove(group, home)


def _remove(group: Path, home: Path) -> None:
    """Every process left in `group` (this one, a simulator a failed figure left) back
    home, and the group gone; what cannot be done is said, never raised over the
    block's own error."""
    try:
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (home / "cgroup.procs").write_text(pid)
        group.rmdir()
    except OSError as e:
        print(f"cityunit bench --slow: {group} left behind: {e.strerror or e}", file=sys.stderr)


def _clear_old(parent: Path) -> None:
    """Groups an earlier bench left (killed inside its block): gone once empty."""
    for old in parent.glob("cityunit-slow-*"):
        with contextlib.suppress(OSError):
            if not (old / "cgroup.procs").read_text().split():
                old.rmdir()
