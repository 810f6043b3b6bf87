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


class Value:
    """Equal, and hashed alike, to a record of its own kind with the same fields (its
    __slots__), never to another kind's; immutable by its fields' `Final` (mypy), and
    without a __dict__ for anything else."""

    __slots__: tuple[str, ...] = ()
    _key: Callable[[Value], tuple[object, ...]] = attrgetter("__class__", "__class__")

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        cls._key = attrgetter("__class__", *cls.__slots__)  # (a tuple: two names at least)

    def __eq__(self, other: object) -> bool:
        key = type(self)._key
        return type(other) is type(self) and key(self) == key(other)

    def __hash__(self) -> int:
        return hash(type(self)._key(self))

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({fields})"
