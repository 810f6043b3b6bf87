"""cityunit: the MONOPOLY CITY electronic unit, rebuilt on a Raspberry Pi."""

# The one place the version is written (pyproject.toml reads it): no metadata lookup at
# start-up, which would cost a Pi Zero a tenth of a second.
__version__ = "0.1.0"
