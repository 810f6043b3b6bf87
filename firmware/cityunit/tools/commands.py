"""`cityunit bench`, `doctor` and `console`: the tools around a unit."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from cityunit import __version__
from cityunit.service.startup import read_config

if TYPE_CHECKING:
    from gpiozero.pins import Factory

    from cityunit.tools.doctor import Doctor


def bench(args: argparse.Namespace) -> int:
    """The desktop figures, or with --device the Pi's own report; 2 for a bad config."""
    if args.device and args.slow is not None:
        print("cityunit bench: --slow slows the desktop figures; a Pi is as slow as it is",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.against is not None and not args.instructions:
        print("cityunit bench: --against goes with --instructions", file=sys.stderr)
        return 2
    if args.instructions:
        from cityunit.tools.bench.instructions import main as counted

        return counted(args.json, args.against)
    if args.device:
        import platform

        from cityunit.header import raspberry_pi
        from cityunit.tools.bench.device import report

        if raspberry_pi() is None and os.environ.get("GPIOZERO_PIN_FACTORY") != "mock":
            machine = platform.machine()
            print(
                f"cityunit bench --device: this is not a Raspberry Pi ({machine}): it"
                " measures a unit's own parts; here, `cityunit bench`",
                file=sys.stderr,
            )
            return 1
        config = read_config(args.config, system_default=True)
        if config is None:
            return 2
        print(report(config))
        return 0
    from cityunit.tools.bench import main as figures

    return figures(args.json, args.quick, args.slow)


def doctor(args: argparse.Namespace) -> int:
    """The checks' report, 1 if any FAILed; with --step N, only what the build guide's
    step N has wired so far, then that step's part of the wiring test (--interactive:
    all of it), and the exit code is the worse of the two."""
    from cityunit.parts.gpio import pin_factory
    from cityunit.tools.doctor import Doctor, report
    from cityunit.tools.wiring import STEPS

    step = 6 if args.interactive else args.step
    factory = pin_factory()
    found = Doctor(args.config, pin_factory=factory, step=step)
    code = found.run()
    print(f"cityunit {__version__} doctor" + (f": step {step}, {STEPS[step][0]}" if step else ""))
    print(report(found))
    if any(f.what == "board" for f in found.findings):
        return code  # off a Pi: nothing here to fix, and no wiring to test
    if step and STEPS[step][1]:
        code = max(code, _wiring_test(args, found, factory, step))
    elif code == 0:
        print("all is well" + (f": go on to step {step + 1}" if step else ""))
    else:
        print("fix the FAIL lines above, then run this again")
    return code


def _wiring_test(
    args: argparse.Namespace, found: Doctor, factory: Factory | None, step: int
) -> int:
    import contextlib
    import time

    from luma.core.error import Error as LumaError

    from cityunit.board import configured_panel, loose_parts
    from cityunit.config import load
    from cityunit.tools.doctor import FAIL, report
    from cityunit.tools.wiring import STEPS, NotPaused, WiringTest, run_command, service_paused

    if any(f.level == FAIL and f.what in ("config", "GPIO", "pins") for f in found.findings):
        print("fix those first: the wiring test needs a valid config and free GPIO pins")
        return 1
    config, parts = load(args.config), STEPS[step][1]
    try:
        # the service starts again only once the pins and the panel are let go
        with service_paused(found.service_active, run_command), contextlib.ExitStack() as held:
            panel = configured_panel(config) if "OLED" in parts else None
            if panel is not None:
                held.callback(panel.close)
                try:
                    panel.start()
                except (OSError, LumaError) as e:  # the rest of the test is still worth doing
                    print(f"(no display to test: {e})")
                    panel = None
            parts_held = held.enter_context(loose_parts(config, factory))
            test = WiringTest(config, parts_held, ask=input, display=panel, pause=time.sleep)
            code = test.run(parts)
    except NotPaused:
        print("the service holds the pins and could not be stopped: `sudo systemctl stop"
              " cityunit`, run this again, then `sudo systemctl start cityunit`")  # fmt: skip
        return 1
    found.findings = test.findings
    print(report(found))
    if code:
        print("fix each FAIL above, then run this again")
    else:
        print("every wire is right" + (f": go on to step {step + 1}" if step < len(STEPS) else ""))
    return code


def console(args: argparse.Namespace) -> int:
    """A person's prompt on a unit's console, at a serial port, a pty or a URL."""
    from cityunit.console.prompt import interact

    return interact(args.port, args.baudrate, args.json)
