"""`SharedMethods` gives a dataclass the `repr` and `==` that `@dataclass` would have generated."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from dataclasses import dataclass, field

import pytest

import kafka_tools
from kafka_tools.format.shared_methods import FrozenSharedMethods, SharedMethods


@dataclass
class Generated:
    """Doc."""

    name: str
    offsets: list[int] = field(default_factory=list)
    note: str = field(default="", repr=False)
    seen: int = field(default=0, compare=False)


@dataclass(repr=False, eq=False)
class Shared(SharedMethods):
    """Doc."""

    name: str
    offsets: list[int] = field(default_factory=list)
    note: str = field(default="", repr=False)
    seen: int = field(default=0, compare=False)


@dataclass(slots=True, repr=False, eq=False)
class SharedSlots(SharedMethods):
    """Doc."""

    name: str
    offsets: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class FrozenGenerated:
    """Doc."""

    topic: str
    partition: int
    note: str = field(default="", compare=False)


@dataclass(frozen=True, slots=True, repr=False, eq=False)
class FrozenShared(FrozenSharedMethods):
    """Doc."""

    topic: str
    partition: int
    note: str = field(default="", compare=False)


def test_repr_is_the_generated_one() -> None:
    args = ("p-0", [1, 2], "hidden", 7)
    assert repr(Shared(*args)) == repr(Generated(*args)).replace("Generated(", "Shared(")
    assert repr(SharedSlots("p-0", [3])) == "SharedSlots(name='p-0', offsets=[3])"


def test_equality_compares_the_compared_fields_of_the_same_class() -> None:
    assert Shared("a", [1], "x", 1) == Shared("a", [1], "x", 2)  # `seen` is compare=False
    assert Shared("a", [1], "x") != Shared("a", [1], "y")
    assert Shared("a", [1]) != Shared("a", [2])
    assert SharedSlots("a", [1]) == SharedSlots("a", [1])
    assert Shared("a") != SharedSlots("a")  # another class: never equal
    assert Shared("a").__eq__(Generated("a")) is NotImplemented
    assert [Shared("a"), Shared("b")] == [Shared("a"), Shared("b")]


def test_unhashable_like_a_dataclass_that_is_not_frozen() -> None:
    with pytest.raises(TypeError):
        hash(Generated("a"))
    with pytest.raises(TypeError):
        hash(Shared("a"))


def test_a_frozen_one_hashes_as_the_generated_one_and_stays_frozen() -> None:
    assert hash(FrozenShared("t", 1, "a")) == hash(FrozenGenerated("t", 1, "b"))  # note: not compared
    assert {FrozenShared("t", 1, "a"), FrozenShared("t", 1, "b")} == {FrozenShared("t", 1)}
    assert repr(FrozenShared("t", 1)) == "FrozenShared(topic='t', partition=1, note='')"
    with pytest.raises(dataclasses.FrozenInstanceError):
        FrozenShared("t", 1).partition = 2  # type: ignore[misc]


def test_a_cycle_is_shown_not_followed() -> None:
    a = Shared("a", [])
    a.offsets.append(a)  # type: ignore[arg-type]
    assert repr(a) == "Shared(name='a', offsets=[...], seen=0)"


def _package_classes() -> list[type]:
    found = []
    for info in pkgutil.walk_packages(kafka_tools.__path__, "kafka_tools."):
        if info.name.startswith(("kafka_tools.pipeline", "kafka_tools.cli", "kafka_tools.format.kraft")):
            continue  # Spark and Click: not needed to find the classes of the start-up path
        module = importlib.import_module(info.name)
        found += [
            c
            for c in vars(module).values()
            if isinstance(c, type)
            and c.__module__ == info.name
            and issubclass(c, SharedMethods)
            and c not in (SharedMethods, FrozenSharedMethods)
        ]
    return found


def test_every_user_leaves_repr_and_eq_to_the_shared_methods() -> None:
    """A class that inherits them but lets @dataclass generate its own pays the compile it was meant to
    save; a frozen one needs FrozenSharedMethods' hash, and one that is not must stay unhashable."""
    users = _package_classes()
    assert len(users) >= 38
    wrong = [
        c.__qualname__
        for c in users
        if not dataclasses.is_dataclass(c)
        or c.__dataclass_params__.repr
        or c.__dataclass_params__.eq
        or c.__dataclass_params__.frozen != issubclass(c, FrozenSharedMethods)
    ]
    assert wrong == []
