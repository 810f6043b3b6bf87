"""cityunit: the MONOPOLY CITY electronic unit, rebuilt on a Raspberry Pi."""

# The one place the version is written (pyproject.toml reads it): no metadata lookup at
# start-up, which would cost a Pi Zero a tenth of a second.
__version__ = "0.1.0"

# The stop signals the `cityunit` command catches first thing (__main__.py), before it has
# read its command line; the commands that do not run a unit give them back (cli.py).
# SIGTERM, SIGHUP and SIGINT by their POSIX numbers: `signal` (with enum) is 18 M
# instructions, and the service's first stage (service/first_light.py) imports this.
EARLY = (15, 1, 2)
