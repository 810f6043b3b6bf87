"""`cityunit bench --slow N`: the figures as a CPU N times slower gives them, closer to a
Pi Zero 2 W's (about 20x slower for this code: docs/performance.md).

The honest means the kernel offers: CFS bandwidth control. The bench's process, and the
simulators it starts, are held to 1/N of one core in a control group of their own (cgroup
v2's `cpu.max`, or v1's `cpu.cfs_quota_us`), which needs root and a cpu controller; where
there is none, `Refused` says why and nothing is measured.

What it cannot show: a quota hands CPU out in bursts, PERIOD_US / N of each period and
then nothing until the next one, so work shorter than a burst runs at full speed and
anything longer waits up to a period; a slow CPU is slow all the time. Caches, memory
and the bus are this machine's.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

PERIOD_US = 20_000  # the quota's period: 1 ms of CPU each 20 ms at N = 20
MOUNTS = Path("/proc/self/mounts")


class Refused(Exception):
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
    raise Refused("no cgroup cpu controller is mounted (CFS bandwidth control)")


def _own_group(version: int) -> str:
    """This process's control group in that hierarchy, as /proc/self/cgroup says it."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        number, controllers, path = line.split(":", 2)
        if (version == 2 and number == "0") or (version == 1 and "cpu" in controllers.split(",")):
            return path.lstrip("/")
    raise Refused("/proc/self/cgroup names no cpu group for this process")


@contextlib.contextmanager
def slowed(n: float) -> Iterator[str]:
    """This process (and what it starts from now on) held to 1/n of one core until the
    block ends, in a control group made for it and removed after; yields what was done,
    in words. Refused where it cannot be done."""
    if not n >= 1:
        raise Refused(f"--slow takes a number of times slower, 1 or more, not {n}")
    if os.geteuid() != 0:
        raise Refused("a CPU quota needs root (sudo)")
    root, version = _cpu_hierarchy()
    home = root / _own_group(version)
    if version == 2 and "cpu" not in (home.parent / "cgroup.subtree_control").read_text():
        raise Refused(f"cgroup v2: the cpu controller is not enabled below {home.parent}")
    group = (home.parent if version == 2 else home) / f"cityunit-slow-{os.getpid()}"
    quota = max(1_000, round(PERIOD_US / n))  # the kernel's least quota is 1 ms
    try:
        group.mkdir()
        if version == 2:
            (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        else:
            (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
        (group / "cgroup.procs").write_text(str(os.getpid()))
    except OSError as e:
        with contextlib.suppress(OSError):
            group.rmdir()
        raise Refused(f"cannot make the control group {group}: {e.strerror or e}") from None
    try:
        yield (
            f"held to {quota / PERIOD_US:.3g} of one core ({quota} us each {PERIOD_US} us,"
            f" cgroup v{version}: {group})"
        )
    finally:
        (home / "cgroup.procs").write_text(str(os.getpid()))
        group.rmdir()
