"""`cityunit run`: the unit on the Pi's pins, as its systemd service runs it."""

from __future__ import annotations

import argparse
import contextlib
import logging
import sys
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from cityunit import __version__
from cityunit.service.startup import read_config, serving, state_dir, systemd_state_dir

if TYPE_CHECKING:
    from cityunit.board import Board
    from cityunit.config import Config
    from cityunit.core.screens import Screen
    from cityunit.loop.clock import Clock
    from cityunit.loop.inbox import Inbox
    from cityunit.parts.notify import Notifier

log = logging.getLogger("cityunit")


def run(args: argparse.Namespace) -> int:
    """Serve until stopped; 2 when it cannot start (a bad config, no GPIO, the pins or the
    state directory another's). --off sets the outputs off; --check reads the config;
    --keepsake keeps the first light of a unit not started yet."""
    from cityunit.loop.clock import MonotonicClock
    from cityunit.loop.inbox import reload_on_hangup

    clock = MonotonicClock()
    with serving(clock, args.early) as inbox, reload_on_hangup(inbox):
        try:
            if args.off:
                return _leave_off(args.config, args.or_last_good)
            if args.keepsake is not None:
                return _keep_unstarted(args.config, args.keepsake)
            refused: Screen | None = None
            raw: bytes | None = None  # the file's bytes, as read good
            if args.or_last_good and not args.check:
                config: Config | None
                config, refused, raw = _config_or_last_good(args.config)
            else:
                config = read_config(args.config, system_default=True)
            if config is None:
                return 2
            if args.check:
                print(f"{config.source}: OK")
                return 0
            return _serve(args, config, clock, inbox, refused, raw)
        except _NoPins as e:
            print(f"cityunit run{' --off' * args.off}: {e}", file=sys.stderr)
            return 2


def _config_or_last_good(path: Path | None) -> tuple[Config, Screen | None, bytes | None]:
    """The config and its bytes, kept as the last good ones; or, with mistakes (each
    printed), the last good one or the defaults, the screen that says so, and no bytes.
    Kept in systemd's StateDirectory, whatever state.dir the file names (a refused file
    names none)."""
    from cityunit.config import ConfigError, file_to_read, load_raw
    from cityunit.service import fallback

    kept = systemd_state_dir()
    try:
        config, raw = load_raw(path)
    except ConfigError as e:
        for line in e.lines:
            print(line, file=sys.stderr)
        return *fallback.instead(e, str(file_to_read(path)), kept), None
    fallback.keep(raw, kept)
    return config, None, raw


def _keep_unstarted(path: Path | None, to: Path) -> int:
    """The first light of a unit not started yet, for the config file at `path` (the
    system's if none), written whole to `to`; 2 for a config with mistakes (each
    printed) or a file that cannot be written."""
    from cityunit.config import ConfigError, file_to_read
    from cityunit.loop.store import save_atomic
    from cityunit.service.keepsake import unstarted

    source = file_to_read(path)
    if source is None:
        print("cityunit run --keepsake: no config file here: nothing to keep", file=sys.stderr)
        return 2
    try:
        data = unstarted(source)
        if data is None:
            print(f"{source}: no display, or a state.dir that holds a game: no first light"
                  " of a unit not started yet to keep")  # fmt: skip
            return 0
        save_atomic(to, data)
    except ConfigError as e:
        for line in e.lines:
            print(line, file=sys.stderr)
        return 2
    except OSError as e:
        print(f"cityunit run --keepsake: {to}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"{to}: the first light of a unit not started yet, for {source}")
    return 0


def _keeper(or_last_good: bool) -> Callable[[bytes], None]:
    """Where a file read good goes, at start and at each reload: the last good copy, for
    --or-last-good (the service's way)."""
    from cityunit.service import fallback

    kept = systemd_state_dir() if or_last_good else None
    return partial(fallback.keep, state_dir=kept)


def _leave_off(path: Path | None, or_last_good: bool) -> int:
    """The service's last safety net (its ExecStopPost): a config with mistakes still
    gives the pins it can; with --or-last-good, the pins of the config the unit played
    with (its last good copy) where the file is refused."""
    from cityunit.board import leave_off
    from cityunit.config import Config, ConfigError, load_raw, salvage
    from cityunit.parts.gpio import pin_factory, pwm_root
    from cityunit.service.fallback import COPY

    kept = systemd_state_dir()
    config, mistakes = salvage(path)
    if mistakes and or_last_good:  # as fallback.instead chose: the copy, else the defaults
        config, mistakes = Config(), []
        with contextlib.suppress(ConfigError):
            config = Config() if kept is None else load_raw(kept / COPY, follow=False)[0]
    for line in mistakes:
        print(line, file=sys.stderr)
    if mistakes:
        print("cityunit run --off: the outputs are set off on the pins the file gives where it"
              " can be read, the defaults' elsewhere", file=sys.stderr)  # fmt: skip
    with _opening_pins():
        leave_off(config, pin_factory(), pwm_root())
    return 0


NO_GPIO = (
    "no GPIO here (gpiozero found no pin factory): on a desktop use `cityunit sim`; on a Pi,"
    " `sudo apt install python3-lgpio`"
)


class _NoPins(Exception):
    """The pins cannot be had here: said in one line, and the command exits 2."""


@contextlib.contextmanager
def _opening_pins() -> Iterator[None]:
    """Where the unit, or --off, opens its pins: gpiozero's factory fallbacks logged one
    line each, and pins that cannot be had a _NoPins saying why (the one place for both,
    so that no way in ends in a traceback)."""
    from gpiozero.exc import BadPinFactory, GPIOPinInUse, PinFactoryFallback

    with warnings.catch_warnings(record=True) as fallbacks:  # only while the pins open
        warnings.simplefilter("always", PinFactoryFallback)
        try:
            yield
        except BadPinFactory:
            raise _NoPins(NO_GPIO) from None
        except GPIOPinInUse as e:
            raise _NoPins(f"{e}: is the service running? (sudo systemctl stop cityunit)") from None
        finally:
            for warning in fallbacks:
                log.info("%s: %s", warning.category.__name__, warning.message)


def _serve(
    args: argparse.Namespace,
    config: Config,
    clock: Clock,
    inbox: Inbox,
    refused: Screen | None,
    raw: bytes | None,
) -> int:
    from cityunit.loop.store import Busy

    try:
        board, notifier = _board(args, config, clock, inbox, raw)
    except Busy as e:
        print(f"cityunit run: {e}", file=sys.stderr)
        return 2
    with board:
        board.serve_console()
        board.serve_web()
        board.reread_on_reload(args.config, _keeper(args.or_last_good))
        if refused is not None:
            board.runtime.call(lambda: board.unit.notice(refused, clock.now_ms()))
        pwm = ", ".join(board.parts.pwm_hardware) or "none (software PWM for the buzzer and LED)"
        log.info(
            "cityunit %s running with %s; pins through %s; PWM hardware for: %s",
            __version__, config.source, board.parts.factory_name, pwm,
        )  # fmt: skip
        board.runtime.run(ready=notifier.ready)
        notifier.stopping()
    return 0


def _board(
    args: argparse.Namespace, config: Config, clock: Clock, inbox: Inbox, raw: bytes | None
) -> tuple[Board, Notifier]:
    """The unit on its pins, taken over from the first stage (service/first_light.py), and
    systemd's notifier; the next start's first light kept for the config file as read
    (`raw`: its bytes; None, a fallback's or the defaults': none kept, and an older one
    removed: restoring the file would otherwise show that older game's screen)."""
    from cityunit.board import Board, configured_panel
    from cityunit.parts.gpio import pin_factory, pwm_root
    from cityunit.parts.notify import Notifier
    from cityunit.service.first_light import LIT

    notifier = Notifier()
    heartbeat = None if notifier.watchdog_ms is None else (notifier.watchdog_ms, notifier.watchdog)
    LIT.release()  # the first stage's lines, for gpiozero to claim
    if LIT.glass is not None:
        log.info("first light: the glass lit before the unit started, the switch read %s",
                 {None: "unread", True: "ON", False: "OFF"}[LIT.switch])  # fmt: skip
    with _opening_pins():
        board = Board(
            config, clock, pin_factory=pin_factory(), pwm_root=pwm_root(), seed=args.seed,
            state_dir=state_dir(config), inbox=inbox, heartbeat=heartbeat,
            status=notifier.status, panel=configured_panel(config, lit=LIT.glass),
        )  # fmt: skip
    if (kept := systemd_state_dir()) is not None and raw is not None:
        from cityunit.service.keepsake import Keeper  # the next start's first light

        keeper = Keeper(board, kept, (config.source, raw))
        board.runtime.on_save = board.attach(keeper).saved
    elif kept is not None:  # a fallback's run: what was kept is older than this game
        from cityunit.service.first_light import NAME

        with contextlib.suppress(OSError):
            (kept / NAME).unlink()
    return board, notifier
