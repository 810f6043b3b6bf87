"""`cityunit sim`: the simulator's launcher, the window, the terminal or headless."""

from __future__ import annotations

import argparse
import logging
import os
import random
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from cityunit import __version__
from cityunit.service.startup import read_config, serving, state_dir

if TYPE_CHECKING:
    from cityunit.config import Config
    from cityunit.loop.clock import Clock
    from cityunit.loop.inbox import Inbox
    from cityunit_sim.board import SimBoard

log = logging.getLogger("cityunit")


def _sim_mode(args: argparse.Namespace) -> str:
    """headless, terminal or window: what was asked for, else what this machine can show.

    An option only one mode has asks for it: --console or --clock virtual the protocol
    (headless), --record the window."""
    from cityunit_sim import has_display

    if args.headless:
        return "headless"
    if args.terminal:
        return "terminal"
    if args.window or args.demo:
        return "window"
    if args.console is not None or args.clock == "virtual":
        return "headless"
    if args.record is not None or has_display():
        return "window"
    if sys.stdin.isatty() and sys.stdout.isatty():
        return "terminal"
    return "headless"


def sim(args: argparse.Namespace) -> int:
    """Options that do not apply to the mode are refused, each with its reason: silently
    ignored, they look like a bug (a --record that writes nothing)."""

    from cityunit.loop.clock import MonotonicClock, VirtualClock
    from cityunit_sim.clock import HandClock

    mode = _sim_mode(args)
    if mode == "window" and not _has_pygame():
        instead = _without_pygame(args)
        if instead is None:
            return 2
        mode = instead
    virtual = args.clock == "virtual" or args.demo
    shown = mode != "headless"
    refused = _refusal(args, mode, virtual)
    if refused is not None:
        print(f"cityunit sim: {refused}", file=sys.stderr)
        return 2
    speed = 1.0 if args.speed is None else args.speed
    # Hands keep real time in the window and the terminal; the protocol's is the unit's.
    clock: Clock = (
        VirtualClock() if virtual else HandClock(speed) if shown else MonotonicClock(speed)
    )
    # SIGHUP too: a terminal closing (an SSH session ending) stops it cleanly, game kept.
    with serving(clock, args.early, also=(signal.SIGHUP,)) as inbox:
        config = read_config(args.config, system_default=False)
        if config is None:
            return 2
        return _simulate(args, config, clock, inbox, mode)


def _refusal(args: argparse.Namespace, mode: str, virtual: bool) -> str | None:
    """Why these options cannot run in `mode`, if they cannot: the first reason."""
    from cityunit_sim import has_display

    shown = mode != "headless"
    folder = None if args.record is None else args.record.resolve().parent
    refusals = (
        (args.speed is not None and virtual,
         "--speed runs the real clock faster; the virtual clock moves only when told"),
        (virtual and shown and not args.demo, "--clock virtual needs --headless (or --demo)"),
        (args.console == "stdio" and shown,
         f"--console stdio is the headless simulator's; beside the {mode}, --console pty"),
        (args.record is not None and mode != "window",
         f"--record saves the window (--window or --demo), not the {mode}"
         + " simulator" * (mode == "headless")),
        (folder is not None and not os.access(folder, os.W_OK),
         f"--record: cannot write in {folder}"),
        (mode == "window" and not args.demo and not has_display()
         and not os.environ.get("SDL_VIDEODRIVER"),
         "no display: `--demo --record FILE` records the demo without one"
         if args.record is not None else "no display: use --terminal (or --headless)"),
        (mode == "terminal" and not (sys.stdin.isatty() and sys.stdout.isatty()),
         "--terminal needs a terminal to draw in; piped, --headless speaks the protocol"),
    )  # fmt: skip
    return next((why for refused, why in refusals if refused), None)


def _simulate(
    args: argparse.Namespace, config: Config, clock: Clock, inbox: Inbox, mode: str
) -> int:
    from cityunit.loop.store import Busy
    from cityunit_sim.board import SimBoard

    seed = args.seed if args.seed is not None else random.randrange(2**32)
    if args.demo and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # record without a screen
    speed = 1.0 if args.speed is None else args.speed
    kept = state_dir(config) if config.system.state_dir else None
    try:
        board = SimBoard(
            config, clock, seed, state_dir=kept, inbox=inbox,
            observed=mode != "headless" or args.web is not None,
        )  # fmt: skip
    except Busy as e:
        print(f"cityunit sim: {e}", file=sys.stderr)
        return 2
    with board:
        log.info("cityunit %s simulator (%s): %s clock, seed %d", __version__, mode,
                 "virtual" if clock.virtual else "real", seed)  # fmt: skip
        if args.web is not None and not _serve_page(board, args.web):
            return 2
        beside = _pty(board) if mode != "headless" and args.console == "pty" else None
        if mode == "window":
            import pygame

            from cityunit_sim.window import Window, run_demo

            try:
                window = Window(board, speed, args.record)
            except pygame.error as e:  # SDL_VIDEODRIVER names a screen that is not there
                print(f"cityunit sim: no window ({e}): use --terminal", file=sys.stderr)
                return 2
            return run_demo(window) if args.demo else window.run()
        if mode == "terminal":
            from cityunit_sim.terminal import Terminal

            return Terminal(board, speed, console=beside).run()
        web = args.web is not None
        return _headless(board, args.console or ("none" if web else "stdio"), web)


def _serve_page(board: SimBoard, port: int) -> bool:
    """The unit as a page: its address and QR code on stderr, for a phone on the table;
    False, having said why, where it cannot be served."""
    from cityunit.web.http import listening
    from cityunit_sim.board import SimHands

    try:
        page = board.serve_page(listening(port), None, SimHands(board), lambda: board.oled_image)
    except OSError as e:
        print(f"cityunit sim: --web: cannot listen on port {port}: {e.strerror or e}",
              file=sys.stderr)  # fmt: skip
        return False
    print(f"the unit's page: {page.link.address}  (to play from it: {page.link.link})",
          file=sys.stderr)  # fmt: skip
    if sys.stderr.isatty():
        import segno

        segno.make(page.link.link, error="l", micro=False).terminal(out=sys.stderr, compact=True)
    return True


def _headless(board: SimBoard, console: str, web: bool = False) -> int:
    from cityunit.console.links import FdLink
    from cityunit.parts.notify import Notifier

    runtime = board.runtime
    if console == "stdio":
        board.serve(FdLink(0, 1), board.controls, on_end=runtime.stop)
        if sys.stdin.isatty():
            print(
                "type HELP, EVENTS ON, SWITCH ON, PRESS AUCTION ...; Ctrl-D quits", file=sys.stderr
            )
    elif console == "pty":
        _pty(board)
    elif web and sys.stdin.isatty():
        print("the page is served until Ctrl-C", file=sys.stderr)
    runtime.run(ready=Notifier().ready)  # under systemd or a bench: the first frame is up
    return 0


def _pty(board: SimBoard) -> str:
    """The console protocol on a pty of its own, its path printed (the first line on
    stdout): for a script, headless or beside the window or the terminal that a person
    watches."""
    from cityunit.console.links import PtyLink

    link = PtyLink()
    board.serve(link, board.controls)
    print(link.path, flush=True)
    log.info("the console protocol on %s", link.path)
    return link.path


def _has_pygame() -> bool:
    try:
        import pygame  # noqa: F401
    except ImportError:
        return False
    return True


def _without_pygame(args: argparse.Namespace) -> str | None:
    """The window needs the sim extra (pygame): where it is missing, the terminal instead
    if the window was not asked for by name and there is a terminal; else None, after a
    line saying how to install the extra, for the way cityunit was installed."""
    import cityunit

    checkout = Path(cityunit.__file__).resolve().parents[2] / "pyproject.toml"
    how = (
        "pip install -e '.[sim]' in the checkout (python3 bootstrap.py sim does it)"
        if checkout.exists()
        else "pip install 'cityunit[sim]'"
    )
    asked = args.window or args.demo or args.record is not None
    if not asked and sys.stdin.isatty() and sys.stdout.isatty():
        print(f"cityunit sim: no window without pygame ({how}): in the terminal", file=sys.stderr)
        return "terminal"
    print(f"cityunit sim: the window needs pygame: {how}", file=sys.stderr)
    return None
