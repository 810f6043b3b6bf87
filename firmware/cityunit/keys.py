"""One key of the config file checked against its declaration (core/rules.py's `Key`):
its value converted to the field's type, or the reason it cannot be, in words that echo
what the file says in one short line, whatever it holds."""

from __future__ import annotations

import re
import reprlib
import typing
from collections.abc import Mapping
from typing import Any

from cityunit.core.permit import Permit
from cityunit.core.rules import Key

MAX_WEIGHT = 1000  # random.choices turns the weights' sum into a float
BARE_KEY = re.compile(r"[A-Za-z0-9_-]{1,40}")


class _Brief(reprlib.Repr):
    """repr cut short, so an echoed value is one short line whatever the file holds."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel, self.maxlist, self.maxdict, self.maxstring = 2, 4, 4, 40

    def repr_int(self, x: int, level: int) -> str:
        # Past 4300 digits int -> str raises; a hex literal in TOML has no such limit.
        return repr(x) if x.bit_length() <= 64 else "a number too large to show"


def show(value: Any) -> str:
    """A value as a mistake's line echoes it: one short line, whatever it holds."""
    text = _Brief().repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def name(key: str) -> str:
    """A key as written, or quoted and escaped when it could break the line or the terminal."""
    return key if BARE_KEY.fullmatch(key) else show(key)


Checked = tuple[Any, str | None]  # the value as the field holds it, or why it cannot be


def check(value: Any, key: Key, kind: Any) -> Checked:
    """The value converted to the field's type, or a reason it cannot be."""
    value, why = _CHECKS[typing.get_origin(kind) or kind](value, key.check)
    # Paths and commands: a NUL is a ValueError in Popen and mkdir, not an OSError.
    texts = value if isinstance(value, list) else [value] if isinstance(value, str) else []
    if why is None and not all(text.isprintable() for text in texts):
        why = f"must not hold control characters, not {show(value)}"
    return (None, why) if why else (value, None)


def _check_bool(value: Any, meta: Mapping[str, Any]) -> Checked:
    if not isinstance(value, bool):
        return None, f"must be true or false, not {show(value)}"
    return value, None


def _check_int(value: Any, meta: Mapping[str, Any]) -> Checked:
    if isinstance(value, bool) or not isinstance(value, int):
        return None, f"must be a whole number, not {show(value)}"
    lo, hi = meta.get("lo"), meta.get("hi")
    if lo is not None and hi is not None and not lo <= value <= hi:
        return None, f"must be between {lo} and {hi}, not {show(value)}"
    if meta.get("choices") and value not in meta["choices"]:
        allowed = ", ".join(map(str, meta["choices"]))
        return None, f"must be one of {allowed}, not {show(value)}"
    return value, None


def _check_str(value: Any, meta: Mapping[str, Any]) -> Checked:
    if not isinstance(value, str):
        return None, f"must be a string, not {show(value)}"
    choices = meta.get("choices")
    if choices and value.lower() not in choices:
        return None, f"must be one of {', '.join(map(repr, choices))}, not {show(value)}"
    return (value.lower() if choices else value), None


def _check_list(value: Any, meta: Mapping[str, Any]) -> Checked:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None, f"must be a list of strings, not {show(value)}"
    return value, None


def _check_odds(value: Any, meta: Mapping[str, Any]) -> Checked:
    names = ", ".join(f'"{p.value}"' for p in Permit)
    if not isinstance(value, dict):
        return None, f"must be a table of weights for {names}"
    odds = {}
    for key, weight in value.items():
        permit = Permit.named(str(key))
        if permit is None:
            return None, f"unknown permit {show(key)}; permits are {names}"
        if isinstance(weight, bool) or not isinstance(weight, int) or not 0 <= weight <= MAX_WEIGHT:
            return None, (
                f"weight of {show(key)} must be a whole number between 0 and {MAX_WEIGHT},"
                f" not {show(weight)}"
            )
        odds[permit] = weight
    if sum(odds.values()) <= 0:
        return None, "at least one permit needs a weight above 0"
    return odds, None


_CHECKS = {bool: _check_bool, int: _check_int, str: _check_str,
           list: _check_list, dict: _check_odds}  # fmt: skip
