"""What each command that runs a unit does first: read the config, catch the stop
signals, find where the game is kept. Only the standard library at import: `run` and `sim`
put their signal handlers in place before anything heavy is imported."""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import logging
import os
import sys
import threading
import types
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cityunit.config import Config
    from cityunit.loop.clock import Clock
    from cityunit.loop.inbox import Inbox

log = logging.getLogger("cityunit")

# What the libraries import at their own import and a unit never uses, with what of each
# they take by name then: gpiozero's entry-point look-up (importlib.metadata with email,
# zipfile and csv: only for a pin factory named by a string, and the unit hands gpiozero
# its factory), its averages of analog readings (statistics: the unit's inputs are
# digital) and its RGB LED's colours (colorzero); luma's LED-backlight fades, which
# take multiprocessing's Process at import (with pickle and socket); Pillow's EXIF names.
# 215 M instructions on the way to READY here for the first two, 20 M for the next two,
# and 10 M for multiprocessing.
UNUSED = {
    "importlib.metadata": ("entry_points",),
    "PIL.ExifTags": (),
    "statistics": ("mean", "median"),
    "colorzero": ("Color",),
    "multiprocessing": ("Process",),
}


class Deferred(types.ModuleType):
    """A module imported when something in it is first used, not when it is imported:
    this stand-in holds its place in sys.modules and in its package, with its spec (and
    its __path__, for a package's submodules) until then. `calls`: the functions taken
    from it by name at import (`from importlib.metadata import entry_points`), which
    import it when called. importlib.util.LazyLoader cannot: its module loads on the
    first attribute looked up, and `from ... import` looks one up."""

    _loading = threading.Lock()  # two threads' first uses: one imports, both get it

    def __init__(
        self,
        spec: importlib.machinery.ModuleSpec,
        parent: types.ModuleType | None,
        calls: tuple[str, ...],
    ) -> None:
        super().__init__(spec.name)
        self.__spec__ = spec
        if spec.submodule_search_locations:
            self.__path__ = list(spec.submodule_search_locations)
        for call in calls:
            setattr(self, call, self._later(call))
        if parent is not None:
            setattr(parent, spec.name.rpartition(".")[2], self)

    def _later(self, call: str) -> object:
        """`call`, importing the module when called. A staticmethod (callable since
        Python 3.10), so that a class keeping it as an attribute (luma's `self.Process`)
        gets it unbound."""

        def called(*args: object, **kwargs: object) -> object:
            return getattr(self.loaded(), call)(*args, **kwargs)

        called.__name__ = call
        return staticmethod(called)

    def loaded(self) -> types.ModuleType:
        """The module itself, imported now if it is not yet."""
        with self._loading:
            if sys.modules.get(self.__name__) is self:
                del sys.modules[self.__name__]
            return importlib.import_module(self.__name__)

    def __getattr__(self, name: str) -> object:
        if name.startswith("__"):  # the import system's questions (__file__, __loader__)
            raise AttributeError(name)
        return getattr(self.loaded(), name)


def defer_unused() -> None:
    """UNUSED's modules imported only if something uses them (nothing the unit does);
    one that is imported already, or not there at all, is left as it is. logging no
    longer asks multiprocessing each record's process name (`%(processName)s`, which
    the unit's lines do not show: the journal says the PID)."""
    logging.logMultiprocessing = False
    for name, calls in UNUSED.items():
        if name in sys.modules:
            continue
        package = name.rpartition(".")[0]
        try:
            parent = importlib.import_module(package) if package else None
        except ImportError:  # (no Pillow: the command says so itself, in its words)
            continue
        spec = importlib.machinery.PathFinder.find_spec(name, getattr(parent, "__path__", None))
        if spec is not None:
            sys.modules[name] = Deferred(spec, parent, calls)


def read_config(path: Path | None, system_default: bool) -> Config | None:
    """The config, or None after printing each mistake on its own line."""
    from cityunit.config import Config, ConfigError, load

    try:
        return load(path) if path is not None or system_default else Config()
    except ConfigError as e:
        for line in e.lines:
            print(line, file=sys.stderr)
        return None


@contextlib.contextmanager
def serving(clock: Clock, early: list[int], also: tuple[int, ...] = ()) -> Iterator[Inbox]:
    """The loop's inbox, with SIGTERM, SIGINT and `also` stopping it: in place before
    anything else starts, and a stop signal caught earlier (`early`) stopping it at once,
    so a signal during start-up still ends in a clean stop, the game saved."""
    from cityunit.loop.inbox import Inbox, Stop, stop_on_signals

    def stop() -> None:
        inbox.put(Stop(clock.now_ms()))

    with Inbox() as inbox, stop_on_signals(stop, inbox, also, early):
        yield inbox


def systemd_state_dir() -> Path | None:
    """The service's StateDirectory, as systemd hands it over (None: not run by it)."""
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    return Path(state) if state else None


def state_dir(config: Config) -> Path | None:
    """Where the game is kept: the config's, else systemd's StateDirectory; made if missing."""
    state = config.system.state_dir or str(systemd_state_dir() or "")
    if not state:
        log.info("no state directory (state.dir, or the service's): a restart starts afresh")
        return None
    try:
        Path(state).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        log.error("state directory %s: %s; a restart will start afresh", state, e.strerror)
        return None
    return Path(state)
