"""The config's last good copy, for a unit that must play whatever its card says
(`cityunit run --or-last-good`, as the service runs it): a file with mistakes is refused,
each mistake logged and the first on the screen, and the unit plays with the last file
that was good, kept beside the game, else with the defaults."""

from __future__ import annotations

import contextlib
import logging
import re
import textwrap
from pathlib import Path

from cityunit import files, store
from cityunit.config import MAX_BYTES, Config, ConfigError, load
from cityunit.screens import RefusedScreen

log = logging.getLogger("cityunit")
COPY = "config.last-good.toml"
WIDTH = 21  # characters a line of the screen holds


def keep(config: Config, path: Path | None, state_dir: Path | None) -> None:
    """A good file's bytes kept in `state_dir` (written only when they changed: no write
    at each boot), unless the copy would not read back as good."""
    if path is None or state_dir is None:
        return
    copy = state_dir / COPY
    try:
        raw = files.read(path, MAX_BYTES)
        with contextlib.suppress(OSError):
            if copy.read_bytes() == raw:
                return
        store.save_atomic(copy, raw)
        load(copy)  # the file changed between its read and this one: not kept
    except (OSError, files.Refused, ConfigError) as e:
        log.warning("config's last good copy not kept in %s: %s", state_dir, e)
        with contextlib.suppress(OSError):
            copy.unlink()


def instead(mistakes: list[str], state_dir: Path | None) -> tuple[Config, RefusedScreen]:
    """What the unit plays with when its file is refused, and the screen that says so."""
    config = None
    copy = None if state_dir is None else state_dir / COPY
    if copy is not None and copy.exists():
        try:
            config = load(copy)
        except ConfigError as e:  # kept by another version of the firmware
            log.error("the config's last good copy is refused too: %s", " | ".join(e.lines))
    log.error(
        "config refused; the unit plays with %s",
        "its last good copy" if config else "the built-in defaults",
    )
    first = mistakes[0] if mistakes else "?"
    more = max(0, len(mistakes) - 1)
    return config or Config(), RefusedScreen(where(first), more, config is not None)


def where(mistake: str) -> str:
    """Where a mistake is, in a few words: its key, or its line in the file."""
    line = re.search(r"\(at line (\d+)", mistake)
    if line:
        return f"line {line[1]}"
    parts = mistake.split(": ")
    key = parts[1] if len(parts) > 2 else ""
    if re.fullmatch(r"[\w.\-]+", key):
        return key
    return textwrap.shorten(parts[-1], WIDTH, placeholder="…")
