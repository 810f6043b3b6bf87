"""`cityunit`: one command for the unit and its tools; this module is only the command
line. The programs are elsewhere: the service (`service.py`), the simulator's launcher
(`cityunit_sim/launch.py`) and the tools (`tools.py`), each imported when its command runs,
so one command never pays for another's imports."""

from __future__ import annotations

import argparse
import importlib
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypeAlias

from cityunit import EARLY, __version__

# Each command's program, imported only when it runs.
PROGRAMS = {
    "run": "cityunit.service.run:run", "sim": "cityunit_sim.launch:sim",
    "bench": "cityunit.tools.commands:bench", "doctor": "cityunit.tools.commands:doctor",
    "console": "cityunit.tools.commands:console",
}  # fmt: skip
SERVING = ("run", "sim")  # the commands that take the early signals over (startup.serving)

Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
CONFIG_HELP = "TOML file (default: /etc/cityunit/config.toml if present)"


def within(kind: type[int] | type[float], lo: float, hi: float) -> Callable[[str], float]:
    """An option's number, refused with its range outside [lo, hi] (NaN too): every
    number the command line takes has one (tests/system/test_sim_cli.py holds that)."""

    def number(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{text} is not between {lo:g} and {hi:g}")
        return value

    number.__name__ = kind.__name__  # argparse names the type in its messages
    return number


SEED = within(int, 0, 2**64 - 1)


def _add_run(sub: Commands) -> None:
    run = sub.add_parser("run", help="run the unit on its GPIO parts (the Pi service)")
    run.add_argument("--config", type=Path, help=CONFIG_HELP)
    only = run.add_mutually_exclusive_group()  # each does one thing instead of playing
    only.add_argument("--check", action="store_true", help="only check the config, then exit")
    run.add_argument("--seed", type=SEED, help="seed the random source (auction lengths, permits)")
    run.add_argument(
        "--or-last-good", action="store_true",
        help="a config with mistakes: play with the last good one (kept in systemd's"
        " StateDirectory) or the defaults, the first mistake on the screen (the service's"
        " way); with --off, the pins of the config the unit played with",
    )  # fmt: skip
    only.add_argument(
        "--keepsake", type=Path, metavar="FILE",
        help="only write to FILE the first light of a unit not started yet, for the config,"
        " then exit (the installer's and the image's: the first start lights at once too)",
    )  # fmt: skip
    only.add_argument(
        "--off", action="store_true",
        help="only leave the LED off, the buzzer silent and the screen blank, then exit "
        "(the service runs it after every stop, a killed unit's included)",
    )  # fmt: skip


def _add_sim(sub: Commands) -> None:
    sim = sub.add_parser("sim", help="the simulator: the real firmware on mock pins")
    shown = sim.add_mutually_exclusive_group()
    shown.add_argument("--headless", action="store_true", help="no window: the console protocol")
    shown.add_argument("--terminal", action="store_true", help="in this terminal (SSH, tmux)")
    shown.add_argument(
        "--window", action="store_true", help="a window (the default with a display)"
    )
    shown.add_argument(
        "--demo", action="store_true",
        help="play a scripted auction and two permits in the window, on the virtual clock",
    )  # fmt: skip
    sim.add_argument(
        "--speed", type=within(float, 0.01, 1000), metavar="N",
        help="run the clock N times faster, up to 1000 (not while a button is held or the"
        " menu is open)",
    )  # fmt: skip
    sim.add_argument(
        "--record", type=Path, help="save what the window shows: FILE.gif, or a folder of PNGs"
    )
    sim.add_argument(
        "--clock", choices=("real", "virtual"), default="real",
        help="virtual: time moves only with ADVANCE (default: real)",
    )  # fmt: skip
    sim.add_argument(
        "--console", choices=("stdio", "pty", "none"),
        help="where to speak the console protocol (headless default: stdio); pty also beside"
        " the window or the terminal",
    )  # fmt: skip
    sim.add_argument(
        "--web", nargs="?", const=8080, type=within(int, 1024, 65535), metavar="PORT",
        help="also serve the unit as a page for a phone or tablet on this network (its"
        " buttons, switch, screen, light and sound), on PORT (default 8080)",
    )  # fmt: skip
    sim.add_argument("--seed", type=SEED, help="seed the random source (default: random, logged)")
    sim.add_argument("--config", type=Path, help="TOML file (default: built-in defaults)")


def _add_tools(sub: Commands) -> None:
    bench = sub.add_parser("bench", help="measure latency, timing, rendering, CPU, memory, speed")
    bench.add_argument("--json", action="store_true", help="one JSON object")
    bench.add_argument("--quick", action="store_true", help="fewer samples (about 15 s)")
    bench.add_argument(
        "--device", action="store_true",
        help="on a Pi (service stopped): time the real bus and pins, print a report to paste",
    )  # fmt: skip
    bench.add_argument("--config", type=Path, help=CONFIG_HELP + "; with --device")
    bench.add_argument(
        "--instructions", action="store_true",
        help="start-up, a tap and an hour counted in instructions (callgrind), in a checkout",
    )  # fmt: skip
    bench.add_argument(
        "--against", metavar="REV",
        help="with --instructions: also count git revision REV, side by side",
    )  # fmt: skip
    bench.add_argument(
        "--slow", type=within(float, 1, 1000), metavar="N",
        help="as a CPU N times slower: held to 1/N of a core by a CPU quota (root; 20 is"
        " about a Pi Zero 2 W)",
    )  # fmt: skip

    doctor = sub.add_parser(
        "doctor", help="check the config, I2C, the display, GPIO and the service"
    )
    doctor.add_argument("--config", type=Path, help=CONFIG_HELP)
    steps = doctor.add_mutually_exclusive_group()
    steps.add_argument(
        "--step", type=int, choices=range(1, 7), metavar="N",
        help="the build guide's step N (1-6): check only what it has wired so far, then test"
        " its parts by hand (press, flip, look, listen)",
    )  # fmt: skip
    steps.add_argument(
        "--interactive", action="store_true",
        help="then test each wire: press each button, see and hear each output (= --step 6)",
    )  # fmt: skip

    console = sub.add_parser("console", help="talk to a unit's console (serial port, pty or URL)")
    console.add_argument("port", help="e.g. /dev/ttyACM0, /dev/pts/5, socket://host:port")
    console.add_argument(
        "--baudrate",
        type=within(int, 50, 4_000_000),
        default=115200,
        help="a serial port's speed (default 115200, the unit's); a pty or URL ignores it",
    )
    console.add_argument(
        "--json", action="store_true", help="raw protocol lines in and out, for scripts"
    )


def main(argv: list[str] | None = None, early: list[int] | None = None) -> int:
    """The command line; `early`, from cityunit/__main__.py, holds the stop signals caught
    before this was imported (None: the caller left the signals alone)."""
    words = sys.argv[1:] if argv is None else argv
    named = next((word for word in words if not word.startswith("-")), None)
    asked = named is None or any(w in ("-h", "--help") for w in words[: words.index(named)])
    top = parser(None if asked else named)  # `cityunit -h run`: the whole list
    args, extra = top.parse_known_args(argv)
    if extra:  # said by the command's own parser, with its usage, not the top one's
        commands = next(a for a in top._actions if isinstance(a, argparse._SubParsersAction))
        commands.choices[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if args.command in SERVING:
        from cityunit.service.startup import defer_unused

        defer_unused()
    module, _, name = PROGRAMS[args.command].partition(":")
    command: Callable[[argparse.Namespace], int] = getattr(importlib.import_module(module), name)
    args.early = [] if early is None else early
    if early is not None and args.command not in SERVING:  # the others keep the defaults
        for sig in EARLY:  # as they were before __main__ caught them
            default = signal.default_int_handler if sig == signal.SIGINT else signal.SIG_DFL
            signal.signal(sig, default)
        if early:
            signal.raise_signal(early[0])
    return command(args)


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command and its options; only `command`'s where it is one (its run needs no
    other: the service's start, 6 M instructions the less), every one to say what is
    not."""
    parser = argparse.ArgumentParser(
        prog="cityunit", description="The MONOPOLY CITY electronic unit, on a Raspberry Pi."
    )
    parser.add_argument("--version", action="version", version=f"cityunit {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log every LED and tone change"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    adders = {"run": _add_run, "sim": _add_sim, "bench": _add_tools, "doctor": _add_tools,
              "console": _add_tools}  # fmt: skip
    for add in {adders[command]} if command in adders else dict.fromkeys(adders.values()):
        add(sub)
    for parser_of in sub.choices.values():  # -v before or after the command, alike
        parser_of.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
            help="log every LED and tone change",
        )  # fmt: skip
    return parser
