"""The `cityunit` command and `python -m cityunit`: SIGTERM, SIGHUP and SIGINT are caught
before anything else is imported, so none lands in a window where it would kill the
process or print a traceback (gpiozero, luma and Pillow take a Pi Zero one to two
seconds to import). What came early is handed to the command: `run` and `sim` stop
cleanly at once (`run` ignores an early SIGHUP, the file is about to be read), any other
command ends as the signal would, a Ctrl-C with 130 and no traceback. What is left
before this module runs is docs/architecture.md's."""

import signal

from cityunit import EARLY


def main() -> int:
    caught: list[int] = []
    for sig in EARLY:
        signal.signal(sig, lambda signum, frame: caught.append(signum))
    from cityunit.cli import main as command

    try:
        return command(early=caught)
    except KeyboardInterrupt:  # a command that does not serve, stopped by a Ctrl-C
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
