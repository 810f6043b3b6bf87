"""`cityunit`: one command for the unit and its tools."""

from __future__ import annotations

import argparse
import logging
import random
import sys
from pathlib import Path

from cityunit import __version__

log = logging.getLogger("cityunit")


def _config(path: Path | None, system_default: bool):
    """The config, or None after printing each mistake on its own line."""
    from cityunit.config import Config, ConfigError, load

    try:
        return load(path) if path is not None or system_default else Config()
    except ConfigError as e:
        for line in e.lines:
            print(line, file=sys.stderr)
        return None


def _run(args: argparse.Namespace) -> int:
    from cityunit.clock import MonotonicClock

    config = _config(args.config, system_default=True)
    if config is None:
        return 2
    if args.check:
        print(f"{config.source}: OK")
        return 0

    from cityunit.display import Display, luma_device
    from cityunit.parts import Parts, pin_factory
    from cityunit.runtime import Runtime, stop_on_signals

    factory = pin_factory()
    display = None
    if config.parts.display != "none":
        make = luma_device(config.parts)
        display = lambda fault: Display(make, fault)  # noqa: E731
    runtime = Runtime(
        config,
        MonotonicClock(),
        parts=lambda on_edge: Parts(config, on_edge, factory),
        display=display,
        rng=random.Random(args.seed),
    )
    stop_on_signals(runtime)
    served = None
    if config.system.console_port:
        from cityunit.link import Served, open_serial

        try:
            link = open_serial(config.system.console_port, config.system.console_baudrate)
        except Exception as e:  # the unit plays without its console
            log.error("console: cannot open %s: %s", config.system.console_port, e)
        else:
            served = Served(runtime, link, simulator=False)
            log.info("console on %s", config.system.console_port)
    log.info("cityunit %s running (%s)", __version__, config.source)
    runtime.run()
    if served is not None:
        served.flush()
    return 0


def _sim(args: argparse.Namespace) -> int:
    from cityunit.clock import MonotonicClock, VirtualClock
    from cityunit.link import FdLink, PtyLink, Served
    from cityunit.runtime import stop_on_signals
    from cityunit.sim.board import SimBoard

    config = _config(args.config, system_default=False)
    if config is None:
        return 2
    seed = args.seed if args.seed is not None else random.randrange(2**32)
    clock = VirtualClock() if args.clock == "virtual" else MonotonicClock()
    board = SimBoard(config, clock, seed)
    runtime = board.runtime
    stop_on_signals(runtime)
    log.info("cityunit %s simulator: %s clock, seed %d", __version__, args.clock, seed)
    served = None
    if args.console == "stdio":
        served = Served(runtime, FdLink(0, 1), simulator=True, on_end=runtime.stop)
        if sys.stdin.isatty():
            print(
                "type HELP, EVENTS ON, SWITCH ON, PRESS AUCTION ...; Ctrl-D quits", file=sys.stderr
            )
    elif args.console == "pty":
        link = PtyLink()
        served = Served(runtime, link, simulator=True)
        print(link.path, flush=True)
    runtime.run()
    if served is not None:
        served.flush()
    return 0


def _console(args: argparse.Namespace) -> int:
    from cityunit.client import interact

    return interact(args.port, args.baudrate, args.json)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="cityunit", description="The MONOPOLY CITY electronic unit, on a Raspberry Pi."
    )
    parser.add_argument("--version", action="version", version=f"cityunit {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log every LED and tone change"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="run the unit on its GPIO parts (the Pi service)")
    run.add_argument(
        "--config", type=Path, help="TOML file (default: /etc/cityunit/config.toml if present)"
    )
    run.add_argument("--check", action="store_true", help="only check the config, then exit")
    run.add_argument("--seed", type=int, help="seed the random source (auction lengths, permits)")
    run.set_defaults(func=_run)

    sim = sub.add_parser("sim", help="the simulator: the real firmware on mock pins")
    sim.add_argument("--headless", action="store_true", help="no window: the console only")
    sim.add_argument(
        "--clock",
        choices=("real", "virtual"),
        default="real",
        help="virtual: time moves only with ADVANCE (default: real)",
    )
    sim.add_argument(
        "--console",
        choices=("stdio", "pty", "none"),
        default="stdio",
        help="where to speak the console protocol (default: stdio)",
    )
    sim.add_argument("--seed", type=int, help="seed the random source (default: random, logged)")
    sim.add_argument("--config", type=Path, help="TOML file (default: built-in defaults)")
    sim.set_defaults(func=_sim)

    console = sub.add_parser("console", help="talk to a unit's console (serial port, pty or URL)")
    console.add_argument("port", help="e.g. /dev/ttyACM0, /dev/pts/5, socket://host:port")
    console.add_argument("--baudrate", type=int, default=115200)
    console.add_argument(
        "--json", action="store_true", help="raw protocol lines in and out, for scripts"
    )
    console.set_defaults(func=_console)

    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return args.func(args)
