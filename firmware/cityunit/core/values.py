"""`Value`: what a frozen dataclass gives a record, for a sixtieth of its cost at import.

A frozen dataclass generates its methods' source and compiles it when its module is
imported: 3.5 M instructions a class, and `dataclasses` brings `inspect` and `ast` (30 M).
The unit imports some twenty records on its way to the first frame, where a Pi Zero runs
about a million instructions in 2 ms. A record here writes its `__init__` and names its
fields in `__slots__` (0.06 M); this base compares, hashes and shows them.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter
from typing import Any, Self


class Value:
    """Equal, and hashed alike, to a record of its own kind with the same fields (the
    names it annotates, in their order, less ClassVars and _private ones: __match_args__),
    never to another kind's; immutable by those annotations' `Final` (mypy), and with no
    __dict__ where each class names its __slots__."""

    __slots__: tuple[str, ...] = ()
    __match_args__: tuple[str, ...] = ()  # the fields, in order (as a dataclass's)
    _key: Callable[[Value], object] = attrgetter("__class__")

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        own = "__annotations__"  # a kind's own, as strings: not evaluated (no inspect needed)
        named = [pair for kind in reversed(cls.__mro__) for pair in vars(kind).get(own, {}).items()]
        fields = tuple(
            name for name, kind in named
            if not name.startswith("_") and not str(kind).startswith("ClassVar")
        )  # fmt: skip
        setattr(cls, "__match_args__", fields)  # noqa: B010 (mypy: set by the class statement only)
        cls._key = attrgetter("__class__", *fields)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        key = type(self)._key
        return bool(key(self) == key(other))

    def __hash__(self) -> int:
        return hash(type(self)._key(self))

    def replace(self, **changes: Any) -> Self:
        """A copy with `changes` (dataclasses.replace's): where the kind's __init__ takes
        its fields by their names."""
        return type(self)(**{n: getattr(self, n) for n in self.__match_args__} | changes)

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__match_args__)
        return f"{type(self).__name__}({fields})"
