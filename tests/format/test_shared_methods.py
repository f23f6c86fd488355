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


@dataclass(init=False, slots=True, repr=False, eq=False)
class FrozenShared(FrozenSharedMethods):
    """Doc."""

    topic: str
    partition: int
    note: str = field(default="", compare=False)

    def __init__(self, topic: str, partition: int, note: str = "") -> None:
        object.__setattr__(self, "topic", topic)
        object.__setattr__(self, "partition", partition)
        object.__setattr__(self, "note", note)


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


def test_a_frozen_one_is_frozen_without_frozen_true() -> None:
    """FrozenSharedMethods refuses assignment and deletion as a frozen dataclass does, so its users
    leave out `frozen=True` (1.2 M instructions a class at import); `replace`, pickle and copy work,
    a slots class's too."""
    import copy
    import pickle

    one = FrozenShared("t", 1, "n")
    for change in (lambda: setattr(one, "topic", "u"), lambda: delattr(one, "note")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            change()
    for made in (dataclasses.replace(one, partition=2), pickle.loads(pickle.dumps(one)), copy.deepcopy(one)):
        assert type(made) is FrozenShared
        assert (made.topic, made.note) == ("t", "n") and made.partition in (1, 2)
    assert pickle.loads(pickle.dumps(one)) == one == copy.copy(one)
    assert not FrozenShared.__dataclass_params__.frozen


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
    save; a frozen one needs FrozenSharedMethods' hash, and one that is not must stay unhashable. No
    user declares `frozen=True`: FrozenSharedMethods is frozen itself, and @dataclass would compile
    the two methods it stands for."""
    users = _package_classes()
    assert len(users) >= 38
    wrong = [
        c.__qualname__
        for c in users
        if not dataclasses.is_dataclass(c)
        or c.__dataclass_params__.repr
        or c.__dataclass_params__.eq
        or c.__dataclass_params__.frozen
    ]
    assert wrong == []


# -- hand-written __init__ (init=False): what @dataclass would have generated ------------------------


def _hand_init_classes() -> list[type]:
    return [c for c in _package_classes() if not c.__dataclass_params__.init and "__init__" in vars(c)]


def test_the_start_up_path_compiles_no_init() -> None:
    """The dataclasses a small command defines write their __init__ by hand: @dataclass compiles the
    one it generates at every start (1 M instructions a class, 31 classes for `validate LOGDIR`)."""
    on_the_path = {
        "kafka_tools.log.files.dirs.Segment",
        "kafka_tools.log.checks.findings.Finding",
        "kafka_tools.format.record_batch.RecordBatch",
        "kafka_tools.format.index.OffsetIndexEntry",
    }
    hand = {f"{c.__module__}.{c.__qualname__}" for c in _hand_init_classes()}
    assert on_the_path <= hand
    assert len(hand) >= 30


@pytest.mark.parametrize("cls", _hand_init_classes(), ids=lambda c: c.__qualname__)
def test_a_hand_written_init_is_the_one_dataclass_would_generate(cls: type) -> None:
    """The same parameters in the same order, the same defaults; a default_factory field's parameter
    defaults to None and gets a new value of the factory's for each instance; every argument is
    stored in its field as given (a frozen class's too)."""
    import inspect

    fields = [f for f in dataclasses.fields(cls) if f.init]
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert [p.name for p in params] == [f.name for f in fields]
    # a kw_only dataclass (log/checks/findings.Finding) is built by keyword only
    assert all(
        p.kind == (p.KEYWORD_ONLY if f.kw_only else p.POSITIONAL_OR_KEYWORD)
        for p, f in zip(params, fields, strict=True)
    )
    for p, f in zip(params, fields, strict=True):
        if f.default is not dataclasses.MISSING:
            assert p.default == f.default or p.default is f.default, f.name
        elif f.default_factory is not dataclasses.MISSING:
            assert p.default is None, f.name
        else:
            assert p.default is p.empty, f.name
    given = {f.name: object() for f in fields}
    obj = cls(**given)
    assert all(getattr(obj, name) is value for name, value in given.items())
    required = {f.name: object() for f in fields if f.default is f.default_factory is dataclasses.MISSING}
    a, b = cls(**required), cls(**required)
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:
            assert getattr(a, f.name) == f.default_factory() and getattr(a, f.name) is not getattr(b, f.name)
        elif f.default is not dataclasses.MISSING:
            assert getattr(a, f.name) == f.default or getattr(a, f.name) is f.default
