"""`repr` and `==` written once for ktool's dataclasses, instead of compiled for each class at import.

Python 3.11's `@dataclass` writes the source of `__init__`, `__repr__` and `__eq__` for each class and
compiles it with `exec` when the module is imported: about 2.6 M instructions a class, 1.1 M of them
for `__repr__` and `__eq__`. A small command defines 20-35 dataclasses before it reads a byte, so
those two methods alone were 10-15 % of its start-up. A dataclass declared
`@dataclass(repr=False, eq=False)` that inherits `SharedMethods` gets the same `repr` and `==` the
decorator would generate (fields with `repr=False` or `compare=False` left out, NotImplemented for
another class, unhashable like any dataclass with `eq` and not frozen), from these two functions.
A frozen one inherits `FrozenSharedMethods`, which adds the hash `@dataclass` would generate (of the
same fields `==` compares) and is frozen itself: `__setattr__` and `__delattr__` raise
`FrozenInstanceError` as a frozen dataclass's do, so the class is declared
`@dataclass(init=False, repr=False, eq=False)`, not `frozen=True`, whose two methods `@dataclass`
compiles for each class (1.2 M instructions a class, callgrind, 20 classes of three fields: `retention`
defined 11 on its way). Its `__init__` sets the fields with `object.__setattr__`, as a frozen
dataclass's does; pickle and copy go through `__getstate__`/`__setstate__` (a slots class too).

The generated `__init__` is compiled the same way, about 1 M instructions a class (a frozen one's
`__setattr__` and `__delattr__` as much again): the dataclasses a small command defines on its way
(`validate` of a log dir: 31) declare `init=False` and write the `__init__` `@dataclass` would
have written, compiled once into the module's bytecode. A `default_factory` field's parameter
defaults to None, which makes a new value. tests/format/test_shared_methods.py checks each such
`__init__` against its fields.

Kept because the start-up budget needs it (bench/HISTORY.md, "Start-up: what is left over the budget"):
without these bases and `__init__`s, every class a command defines on its way gets `@dataclass`'s
generated methods, measured (callgrind, 2026-12-02) at +54 M instructions for `validate FILE`, +46 M
`dump-log FILE`, +73 M `read`, +70 M `truncate --dry-run`, +78 M `validate LOGDIR`, +101 M `retention`,
+38 M `offsets-at`, against a target of about 120 M over `python -c pass` (0.06 s) that Click alone
fills to 66 M; a lazy import does not help a class the command itself uses.
"""

from __future__ import annotations

import reprlib
from dataclasses import Field, FrozenInstanceError, fields


class SharedMethods:
    """Base of a non-frozen `@dataclass(repr=False, eq=False)`: its `repr` and `==` by its fields."""

    __slots__ = ()

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in fields(self) if f.repr)
        return f"{type(self).__qualname__}({shown})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return _compared(self) == _compared(other)

    __hash__ = None  # type: ignore[assignment]  # as a dataclass with eq=True that is not frozen


class FrozenSharedMethods(SharedMethods):
    """Base of a frozen `@dataclass(frozen=True, repr=False, eq=False)`: `SharedMethods` and its hash."""

    __slots__ = ()

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, f.name) for f in fields(self) if _hashed(f)))

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __getstate__(self) -> tuple:
        return tuple(getattr(self, f.name) for f in fields(self))

    def __setstate__(self, state: tuple) -> None:
        for f, value in zip(fields(self), state, strict=True):
            object.__setattr__(self, f.name, value)


def _hashed(f: Field) -> bool:
    return f.compare if f.hash is None else f.hash


def _compared(obj: object) -> tuple:
    return tuple(getattr(obj, f.name) for f in fields(obj) if f.compare)
