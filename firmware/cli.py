"""`cityunit`: one command for the unit and its tools."""

from __future__ import annotations

import argparse
import logging
import random
import sys
from pathlib import Path

from cityunit import __version__


def _run(args: argparse.Namespace) -> int:
    from cityunit.clock import MonotonicClock
    from cityunit.config import ConfigError, load

    try:
        config = load(args.config)
    except ConfigError as e:
        for line in e.lines:
            print(line, file=sys.stderr)
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
    logging.getLogger("cityunit").info("cityunit %s running (%s)", __version__, config.source)
    runtime.run()
    return 0


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

    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    return args.func(args)
