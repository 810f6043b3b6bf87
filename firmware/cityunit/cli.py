"""`cityunit`: one command for the unit and its tools."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import random
import signal
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from cityunit import __version__

if TYPE_CHECKING:
    from gpiozero.pins import Factory

    from cityunit.board import Board
    from cityunit.clock import Clock
    from cityunit.config import Config
    from cityunit.doctor import Doctor
    from cityunit.inbox import Inbox
    from cityunit.notify import Notifier
    from cityunit_sim.board import SimBoard

log = logging.getLogger("cityunit")


def _config(path: Path | None, system_default: bool) -> Config | None:
    """The config, or None after printing each mistake on its own line."""
    from cityunit.config import Config, ConfigError, load

    try:
        return load(path) if path is not None or system_default else Config()
    except ConfigError as e:
        for line in e.lines:
            print(line, file=sys.stderr)
        return None


@contextlib.contextmanager
def _serving(clock: Clock, early: list[int], also: tuple[int, ...] = ()) -> Iterator[Inbox]:
    """The loop's inbox, with SIGTERM, SIGINT and `also` stopping it: in place before
    anything else starts, and a stop signal caught earlier (`early`) stopping it at once,
    so a signal during start-up still ends in a clean stop, the game saved."""
    from cityunit.inbox import Inbox, Stop, stop_on_signals

    def stop() -> None:
        inbox.put(Stop(clock.now_ms()))

    with Inbox() as inbox, stop_on_signals(stop, inbox, also, early):
        yield inbox


def _run(args: argparse.Namespace) -> int:
    from cityunit.clock import MonotonicClock
    from cityunit.inbox import reload_on_hangup

    clock = MonotonicClock()
    with _serving(clock, args.early) as inbox, reload_on_hangup(inbox):
        if args.off:
            return _leave_off(args.config)
        config = _config(args.config, system_default=True)
        if config is None:
            return 2
        if args.check:
            print(f"{config.source}: OK")
            return 0
        return _serve_unit(args, config, clock, inbox)


def _leave_off(path: Path | None) -> int:
    """What a killed unit could not do (SIGKILL, the watchdog): the kernel keeps a hardware
    PWM channel playing after its process is gone, and the pins and the glass keep their
    last state. Opening the parts sets every output off; closing gives them back. The
    service's last safety net: a config with mistakes still gives the pins it can."""
    from cityunit.board import configured_panel
    from cityunit.config import salvage
    from cityunit.display import Display
    from cityunit.parts import Parts, pin_factory, pwm_root

    config, mistakes = salvage(path)
    for line in mistakes:
        print(line, file=sys.stderr)
    if mistakes:
        print("cityunit run --off: the outputs are set off on the pins the file gives where it"
              " can be read, the defaults' elsewhere", file=sys.stderr)  # fmt: skip
    with Parts(config, lambda name, level: None, pin_factory(), pwm_root(), inputs=False):
        panel = configured_panel(config)
        if panel is not None:
            Display(panel).close()  # started if it answers, blanked
    return 0


def _state_dir(config: Config) -> Path | None:
    """Where the game is kept: the config's, else systemd's StateDirectory; made if missing."""
    state = config.system.state_dir or os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    if not state:
        log.info("no state directory (state.dir, or the service's): a restart starts afresh")
        return None
    try:
        Path(state).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        log.error("state directory %s: %s; a restart will start afresh", state, e.strerror)
        return None
    return Path(state)


def _serve_unit(args: argparse.Namespace, config: Config, clock: Clock, inbox: Inbox) -> int:
    from gpiozero.exc import BadPinFactory, GPIOPinInUse

    from cityunit.store import Busy

    try:
        board, notifier = _board(args, config, clock, inbox)
    except Busy as e:
        print(f"cityunit run: {e}", file=sys.stderr)
        return 2
    except BadPinFactory:
        print(
            "cityunit run: no GPIO here (gpiozero found no pin factory): on a desktop use "
            "`cityunit sim`; on a Pi, `sudo apt install python3-lgpio`", file=sys.stderr,
        )  # fmt: skip
        return 2
    except GPIOPinInUse as e:
        print(f"cityunit run: {e}: is the service running? (sudo systemctl stop cityunit)",
              file=sys.stderr)  # fmt: skip
        return 2
    with board:
        _serial_console(board, config)
        board.runtime.on_reload = partial(_reload, board, args.config)
        pwm = ", ".join(board.parts.hardware_pwm) or "none: software PWM"
        log.info("cityunit %s running (%s); PWM hardware for %s", __version__, config.source, pwm)
        board.runtime.run(ready=notifier.ready)
        notifier.stopping()
    return 0


def _board(
    args: argparse.Namespace, config: Config, clock: Clock, inbox: Inbox
) -> tuple[Board, Notifier]:
    """The unit on its pins, and systemd's notifier; the warnings opening the pins gives
    (gpiozero's factory fallbacks) logged one line each."""
    from gpiozero.exc import PinFactoryFallback

    from cityunit.board import Board
    from cityunit.notify import Notifier
    from cityunit.parts import pin_factory, pwm_root

    notifier = Notifier()
    heartbeat = None if notifier.watchdog_ms is None else (notifier.watchdog_ms, notifier.watchdog)
    with warnings.catch_warnings(record=True) as fallbacks:  # only while the pins open
        warnings.simplefilter("always", PinFactoryFallback)
        board = Board(
            config, clock, pin_factory=pin_factory(), pwm_root=pwm_root(), seed=args.seed,
            state_dir=_state_dir(config), inbox=inbox, heartbeat=heartbeat,
            status=notifier.status,
        )  # fmt: skip
    for warning in fallbacks:
        log.info("%s: %s", warning.category.__name__, warning.message)
    return board, notifier


_RELOADING = threading.Lock()  # one file read at a time, in the order the signals came


def _reload(board: Board, path: Path | None) -> None:
    """`systemctl reload cityunit` (on the loop): the file is read and checked on a thread
    of its own, since a 64 KiB file takes a Pi Zero a second and the LED and the clock must
    not wait; what it gives is applied on the loop, in its turn. A bad file changes nothing."""

    def read() -> None:
        with _RELOADING:
            config = _reread(path)
        if config is not None:
            board.runtime.call(partial(_apply, board, config))

    threading.Thread(target=read, name="config-reload", daemon=True).start()


def _reread(path: Path | None) -> Config | None:
    """The file read again, or None after a log line saying why the unit keeps its config."""
    from cityunit.config import ConfigError, load

    try:
        return load(path)
    except ConfigError as e:
        log.error("config not reloaded, the unit keeps the one it has: %s", " | ".join(e.lines))
    except Exception as e:  # a file the checks missed must not stop a game in play
        log.error("config not reloaded, the unit keeps the one it has: reading it failed "
                  "(%s: %s), a bug to report with the file", type(e).__name__, e)  # fmt: skip
    return None


def _apply(board: Board, config: Config) -> None:
    waiting = board.reload(config)
    log.info("config reloaded from %s", config.source)
    if waiting:
        log.warning("%s apply at the next restart (systemctl restart cityunit)", ", ".join(waiting))


def _serial_console(board: Board, config: Config) -> None:
    """The console on the configured serial port; the unit plays without it if it fails."""
    if not config.system.console_port:
        return
    from cityunit.link import open_serial

    try:
        link = open_serial(config.system.console_port, config.system.console_baudrate)
    except Exception as e:
        log.error("console: cannot open %s: %s", config.system.console_port, e)
        return
    log.info("console on %s", config.system.console_port)
    board.serve(link)


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


def _sim(args: argparse.Namespace) -> int:
    """Options that do not apply to the mode are refused, each with its reason: silently
    ignored, they look like a bug (a --record that writes nothing)."""
    import math

    from cityunit.clock import MonotonicClock, VirtualClock
    from cityunit_sim import has_display
    from cityunit_sim.clock import HandClock

    mode = _sim_mode(args)
    virtual = args.clock == "virtual" or args.demo
    shown = mode != "headless"
    folder = None if args.record is None else args.record.resolve().parent
    refusals = (
        (args.speed is not None and not 0 < args.speed < math.inf, "--speed must be above 0"),
        (args.speed is not None and virtual,
         "--speed runs the real clock faster; the virtual clock moves only when told"),
        (virtual and shown and not args.demo, "--clock virtual needs --headless (or --demo)"),
        (args.console is not None and shown,
         f"--console speaks the protocol with --headless only, not in the {mode}"),
        (args.record is not None and mode != "window",
         f"--record saves the window (--window or --demo), not the {mode}"),
        (folder is not None and not os.access(folder, os.W_OK),
         f"--record: cannot write in {folder}"),
        (mode == "window" and not args.demo and not has_display()
         and not os.environ.get("SDL_VIDEODRIVER"),
         "no display: use --terminal (or --headless)"),
    )  # fmt: skip
    for refused, why in refusals:
        if refused:
            print(f"cityunit sim: {why}", file=sys.stderr)
            return 2
    if mode == "window":
        try:
            import pygame  # noqa: F401
        except ImportError:
            print("cityunit sim: install the sim extra: pip install -e '.[sim]'", file=sys.stderr)
            return 2
    speed = 1.0 if args.speed is None else args.speed
    # Hands keep real time in the window and the terminal; the protocol's is the unit's.
    clock: Clock = (
        VirtualClock() if virtual else HandClock(speed) if shown else MonotonicClock(speed)
    )
    # SIGHUP too: a terminal closing (an SSH session ending) stops it cleanly, game kept.
    with _serving(clock, args.early, also=(signal.SIGHUP,)) as inbox:
        config = _config(args.config, system_default=False)
        if config is None:
            return 2
        return _simulate(args, config, clock, inbox, mode)


def _simulate(
    args: argparse.Namespace, config: Config, clock: Clock, inbox: Inbox, mode: str
) -> int:
    from cityunit.store import Busy
    from cityunit_sim.board import SimBoard

    seed = args.seed if args.seed is not None else random.randrange(2**32)
    if args.demo and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # record without a screen
    speed = 1.0 if args.speed is None else args.speed
    state_dir = _state_dir(config) if config.system.state_dir else None
    try:
        board = SimBoard(
            config, clock, seed, state_dir=state_dir, inbox=inbox, observed=mode != "headless"
        )
    except Busy as e:
        print(f"cityunit sim: {e}", file=sys.stderr)
        return 2
    with board:
        log.info("cityunit %s simulator (%s): %s clock, seed %d", __version__, mode,
                 "virtual" if clock.virtual else "real", seed)  # fmt: skip
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

            return Terminal(board, speed).run()
        return _headless(board, args.console or "stdio")


def _headless(board: SimBoard, console: str) -> int:
    from cityunit.link import FdLink, PtyLink
    from cityunit.notify import Notifier

    runtime = board.runtime
    if console == "stdio":
        board.serve(FdLink(0, 1), simulator=True, on_end=runtime.stop)
        if sys.stdin.isatty():
            print(
                "type HELP, EVENTS ON, SWITCH ON, PRESS AUCTION ...; Ctrl-D quits", file=sys.stderr
            )
    elif console == "pty":
        link = PtyLink()
        board.serve(link, simulator=True)
        print(link.path, flush=True)
    runtime.run(ready=Notifier().ready)  # under systemd or a bench: the first frame is up
    return 0


def _bench(args: argparse.Namespace) -> int:
    if args.device:
        from cityunit.bench.device import report

        config = _config(args.config, system_default=True)
        if config is None:
            return 2
        print(report(config))
        return 0
    from cityunit.bench import main as bench

    return bench(args.json, args.quick)


def _doctor(args: argparse.Namespace) -> int:
    from cityunit.doctor import Doctor, report
    from cityunit.parts import pin_factory

    factory = pin_factory()
    doctor = Doctor(args.config, pin_factory=factory, wiring_test=args.interactive)
    code = doctor.run()
    print(f"cityunit {__version__} doctor")
    print(report(doctor))
    if args.interactive:
        return _wiring_test(args, doctor, factory)
    print(
        "all is well" if code == 0 else "fix the FAIL lines above, then run `cityunit doctor` again"
    )
    return code


def _wiring_test(args: argparse.Namespace, doctor: Doctor, factory: Factory | None) -> int:
    import time

    from luma.core.error import Error as LumaError

    from cityunit.config import load
    from cityunit.doctor import FAIL, WiringTest, report
    from cityunit.oled import LumaPanel
    from cityunit.parts import Parts

    if any(f.level == FAIL and f.what in ("config", "GPIO", "pins") for f in doctor.findings):
        print("fix those first: the wiring test needs a valid config and free GPIO pins")
        return 1
    if any(f.what == "pins" and "service" in f.detail for f in doctor.findings):
        print("the service holds the pins: `sudo systemctl stop cityunit`, then run this again")
        return 1
    config = load(args.config)
    panel = None
    if config.parts.display != "none":
        panel = LumaPanel(config.parts)
        try:
            panel.start()
        except (OSError, LumaError) as e:  # the rest of the test is still worth doing
            print(f"(no display to test: {e})")
            panel.close()
            panel = None
    with Parts(config, lambda name, level: None, factory) as parts:
        test = WiringTest(config, parts, ask=input, display=panel, pause=time.sleep)
        code = test.run()
    if panel is not None:
        panel.close()
    doctor.findings = test.findings
    print(report(doctor))
    print("every wire is right" if code == 0 else "fix each FAIL above, then run this again")
    return code


def _console(args: argparse.Namespace) -> int:
    from cityunit.prompt import interact

    return interact(args.port, args.baudrate, args.json)


Commands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
CONFIG_HELP = "TOML file (default: /etc/cityunit/config.toml if present)"


def _add_run(sub: Commands) -> None:
    run = sub.add_parser("run", help="run the unit on its GPIO parts (the Pi service)")
    run.add_argument("--config", type=Path, help=CONFIG_HELP)
    run.add_argument("--check", action="store_true", help="only check the config, then exit")
    run.add_argument("--seed", type=int, help="seed the random source (auction lengths, permits)")
    run.add_argument(
        "--off", action="store_true",
        help="only leave the LED off, the buzzer silent and the screen blank, then exit "
        "(the service runs it after every stop, a killed unit's included)",
    )  # fmt: skip
    run.set_defaults(func=_run)


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
        "--speed", type=float,
        help="run the clock N times faster (not while a button is held or the menu is open)",
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
        help="where to speak the console protocol, headless (default: stdio)",
    )  # fmt: skip
    sim.add_argument("--seed", type=int, help="seed the random source (default: random, logged)")
    sim.add_argument("--config", type=Path, help="TOML file (default: built-in defaults)")
    sim.set_defaults(func=_sim)


def _add_tools(sub: Commands) -> None:
    bench = sub.add_parser("bench", help="measure latency, timing, rendering, CPU, memory, speed")
    bench.add_argument("--json", action="store_true", help="one JSON object")
    bench.add_argument("--quick", action="store_true", help="fewer samples (about 15 s)")
    bench.add_argument(
        "--device", action="store_true",
        help="on a Pi (service stopped): time the real bus and pins, print a report to paste",
    )  # fmt: skip
    bench.add_argument("--config", type=Path, help=CONFIG_HELP + "; with --device")
    bench.set_defaults(func=_bench)

    doctor = sub.add_parser(
        "doctor", help="check the config, I2C, the display, GPIO and the service"
    )
    doctor.add_argument("--config", type=Path, help=CONFIG_HELP)
    doctor.add_argument(
        "--interactive", action="store_true",
        help="then test each wire: press each button, see and hear each output",
    )  # fmt: skip
    doctor.set_defaults(func=_doctor)

    console = sub.add_parser("console", help="talk to a unit's console (serial port, pty or URL)")
    console.add_argument("port", help="e.g. /dev/ttyACM0, /dev/pts/5, socket://host:port")
    console.add_argument("--baudrate", type=int, default=115200)
    console.add_argument(
        "--json", action="store_true", help="raw protocol lines in and out, for scripts"
    )
    console.set_defaults(func=_console)


def main(argv: list[str] | None = None, early: list[int] | None = None) -> int:
    """The command line; `early`, from cityunit/__main__.py, holds the stop signals caught
    before this was imported (None: the caller left the signals alone)."""
    parser = argparse.ArgumentParser(
        prog="cityunit", description="The MONOPOLY CITY electronic unit, on a Raspberry Pi."
    )
    parser.add_argument("--version", action="version", version=f"cityunit {__version__}")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="log every LED and tone change"
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in (_add_run, _add_sim, _add_tools):
        add(sub)
    for parser_of in sub.choices.values():  # -v before or after the command, alike
        parser_of.add_argument(
            "-v", "--verbose", action="store_true", default=argparse.SUPPRESS,
            help="log every LED and tone change",
        )  # fmt: skip
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    command: Callable[[argparse.Namespace], int] = args.func
    args.early = [] if early is None else early
    if early is not None and command not in (_run, _sim):  # the others keep the defaults
        for sig in (signal.SIGTERM, signal.SIGHUP):  # those __main__ catches, as they were
            signal.signal(sig, signal.SIG_DFL)
        if early:
            signal.raise_signal(early[0])
    return command(args)
