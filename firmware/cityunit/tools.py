"""`cityunit bench`, `doctor` and `console`: the tools around a unit."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from cityunit import __version__
from cityunit.startup import read_config

if TYPE_CHECKING:
    from gpiozero.pins import Factory

    from cityunit.doctor import Doctor


def bench(args: argparse.Namespace) -> int:
    """The desktop figures, or with --device the Pi's own report; 2 for a bad config."""
    if args.device and args.slow is not None:
        print("cityunit bench: --slow slows the desktop figures; a Pi is as slow as it is",
              file=sys.stderr)  # fmt: skip
        return 2
    if args.device:
        import platform

        from cityunit.bench.device import report
        from cityunit.header import raspberry_pi

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
    from cityunit.bench import main as figures

    return figures(args.json, args.quick, args.slow)


def doctor(args: argparse.Namespace) -> int:
    """The checks' report, 1 if any FAILed; with --interactive, the wiring test after
    it, and then the exit code is the wiring test's."""
    from cityunit.doctor import Doctor, report
    from cityunit.parts import pin_factory

    factory = pin_factory()
    found = Doctor(args.config, pin_factory=factory, wiring_test=args.interactive)
    code = found.run()
    print(f"cityunit {__version__} doctor")
    print(report(found))
    if any(f.what == "board" for f in found.findings):
        return code  # off a Pi: nothing here to fix, and no wiring to test
    if args.interactive:
        return _wiring_test(args, found, factory)
    print(
        "all is well" if code == 0 else "fix the FAIL lines above, then run `cityunit doctor` again"
    )
    return code


def _wiring_test(args: argparse.Namespace, found: Doctor, factory: Factory | None) -> int:
    import time

    from luma.core.error import Error as LumaError

    from cityunit.board import configured_panel, loose_parts
    from cityunit.config import load
    from cityunit.doctor import FAIL, report
    from cityunit.wiring import WiringTest

    if any(f.level == FAIL and f.what in ("config", "GPIO", "pins") for f in found.findings):
        print("fix those first: the wiring test needs a valid config and free GPIO pins")
        return 1
    if any(f.what == "pins" and "service" in f.detail for f in found.findings):
        print("the service holds the pins: `sudo systemctl stop cityunit`, then run this again")
        return 1
    config = load(args.config)
    panel = configured_panel(config)
    if panel is not None:
        try:
            panel.start()
        except (OSError, LumaError) as e:  # the rest of the test is still worth doing
            print(f"(no display to test: {e})")
            panel.close()
            panel = None
    with loose_parts(config, factory) as parts:
        test = WiringTest(config, parts, ask=input, display=panel, pause=time.sleep)
        code = test.run()
    if panel is not None:
        panel.close()
    found.findings = test.findings
    print(report(found))
    print("every wire is right" if code == 0 else "fix each FAIL above, then run this again")
    return code


def console(args: argparse.Namespace) -> int:
    """A person's prompt on a unit's console, at a serial port, a pty or a URL."""
    from cityunit.prompt import interact

    return interact(args.port, args.baudrate, args.json)
