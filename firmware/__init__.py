"""cityunit: the MONOPOLY CITY electronic unit, rebuilt on a Raspberry Pi."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("cityunit")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"
