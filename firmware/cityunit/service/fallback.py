"""The config's last good copy, for a unit that must play whatever its card says
(`cityunit run --or-last-good`, as the service runs it): a file with mistakes is refused,
each mistake logged and the first on the screen, and the unit plays with the last file
that was good, kept in systemd's StateDirectory, else with the defaults."""

from __future__ import annotations

import contextlib
import logging
import re
import textwrap
from pathlib import Path

from cityunit import files
from cityunit.config import MAX_BYTES, Config, ConfigError, load_raw
from cityunit.core.screens import RefusedScreen
from cityunit.loop import store

log = logging.getLogger("cityunit")
COPY = "config.last-good.toml"
SHORT = 20  # characters of a reason shown on the screen's line (the renderer fits them)


def keep(raw: bytes | None, state_dir: Path | None) -> None:
    """The bytes of a file found good kept in `state_dir`, written only when they differ
    from the copy there (no write at each boot); a copy that is not a regular file (a
    planted link, a directory) is set aside first."""
    if raw is None or state_dir is None:
        return
    copy = state_dir / COPY
    with contextlib.suppress(files.Refused):
        if files.read(copy, MAX_BYTES, follow=False) == raw:
            return
    try:
        if copy.is_symlink() or (copy.exists() and not copy.is_file()):
            log.warning("%s: not a regular file; %s", copy, store.set_aside(copy))
        store.save_atomic(copy, raw)
    except OSError as e:
        log.warning("config's last good copy not kept in %s: %s", state_dir, e.strerror or e)


def instead(
    error: ConfigError, source: str, state_dir: Path | None
) -> tuple[Config, RefusedScreen]:
    """What the unit plays with when the file `source` is refused, and the screen that
    says so."""
    config = None
    if state_dir is not None:
        try:
            config, _ = load_raw(state_dir / COPY, follow=False)
        except ConfigError as e:  # none, or one this firmware refuses (older, or planted)
            if not any("No such file" in line for line in e.lines):
                log.error("the config's last good copy is refused too: %s", " | ".join(e.lines))
    log.error(
        "config refused; the unit plays with %s",
        "its last good copy" if config else "the built-in defaults",
    )
    key, line = where(error.lines[0], source)
    return config or Config(), RefusedScreen(key, error.count - 1, config is not None, line)


def where(mistake: str, source: str) -> tuple[str, int | None]:
    """Where a mistake of the file `source` is: its key, or its line in the file (then
    the key is ""), or, for a file refused whole, the reason, cut short."""
    line = re.search(r"\(at line (\d+)", mistake)
    if line:
        return "", int(line[1])
    said = mistake.removeprefix(f"{source}: ")
    key, _, _ = said.partition(": ")
    if re.fullmatch(r"[\w.\-]+", key) and key != said:
        return key, None
    return textwrap.shorten(said, SHORT, placeholder="…"), None
