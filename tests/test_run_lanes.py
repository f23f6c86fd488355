"""tests/run.sh's lanes: every test runs in exactly one of them, whatever its markers, and a test on a
Kafka 3.9/4.x release is marked `modern` by its fixtures, and one on 4.x `kafka4` as well (the lane split
depends on both)."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import pytest
from _pytest.mark.expression import Expression

from tests import conftest
from tests.independent import ROOT

MARKERS = (
    "server", "modern", "kafka4", "own_cluster", "spark", "spark_cluster", "property", "slow", "sanitizer"
)  # fmt: skip


def _lanes() -> dict[str, str]:
    """Each lane's name and marker expression, as tests/run.sh starts them."""
    text = (ROOT / "tests" / "run.sh").read_text()
    return dict(re.findall(r'^\s*lane (\w+) "([^"]+)" "\$@"', text, re.M))


def test_every_combination_of_markers_runs_in_exactly_one_lane() -> None:
    lanes = {name: Expression.compile(expr) for name, expr in _lanes().items()}
    assert len(lanes) == 5, lanes
    for n in range(len(MARKERS) + 1):
        for marks in map(set, itertools.combinations(MARKERS, n)):
            if "modern" in marks and "server" not in marks or "kafka4" in marks and "modern" not in marks:
                continue  # conftest gives `modern` only with `server`, `kafka4` only with `modern`
            if (
                "spark_cluster" in marks
                and "spark" not in marks
                or "own_cluster" in marks
                and "server" not in marks
            ):
                continue  # `spark_cluster` is marked beside `spark`, `own_cluster` on a server test
            runs = [name for name, expr in lanes.items() if expr.evaluate(marks.__contains__)]
            assert len(runs) == 1, (sorted(marks), runs)


@dataclass
class _Callspec:
    params: dict[str, str]


@dataclass
class _Item:
    """What conftest's marking reads of a collected test."""

    fixturenames: tuple[str, ...]
    marks: set[str] = field(default_factory=set)
    callspec: _Callspec | None = None

    def add_marker(self, mark) -> None:
        self.marks.add(mark.name)

    def get_closest_marker(self, name: str):
        return name if name in self.marks else None


@pytest.mark.parametrize(
    "fixtures, release, want",
    [
        (("modern_kafka", "kafka_release"), "4.4.0", {"server", "modern", "kafka4"}),
        (("modern_kafka", "kafka_release"), "3.9.2", {"server", "modern"}),
        (("kafka4_split", "kafka4_release"), None, {"server", "modern", "kafka4"}),
        (("kafka39_zk", "kafka39_release", "zookeeper_server", "kafka09_home"), None, {"server", "modern"}),
        (("zk_root", "zookeeper_server", "kafka09_home"), None, {"server"}),
        (("spark",), None, {"spark"}),
        (("tmp_path",), None, set()),
    ],
)
def test_modern_and_kafka4_are_given_by_the_release_fixtures(monkeypatch, fixtures, release, want) -> None:
    monkeypatch.setenv("KTOOL_EXHAUSTIVE", "1")  # nothing deselected: the items are fakes
    item = _Item(fixtures, callspec=_Callspec({"kafka_release": release}) if release else None)
    conftest.pytest_collection_modifyitems(None, [item])
    assert item.marks == want


@dataclass
class _Stoppable:
    stopped: int = 0

    def stop(self) -> None:
        self.stopped += 1


@dataclass
class _Run:
    """A collected test as tests/support/cluster_lifetimes.py reads it, with its session."""

    name: str
    fixturenames: tuple[str, ...]
    callspec: _Callspec | None = None
    funcargs: dict = field(default_factory=dict)
    session: object = None


def test_the_modern_tests_run_release_by_release_and_a_shared_cluster_stops_after_its_last_test() -> None:
    from tests.support import cluster_lifetimes

    def run(name, *fixtures, release=None):
        return _Run(name, fixtures, _Callspec({"kafka_release": release}) if release else None)

    items = [
        run("spark", "spark"),
        run("topics-3.9", "kafka_split", "kafka_release", release="3.9.2"),
        run("split-4", "kafka4_split", "kafka4_release"),
        run("topics-4", "kafka_split", "kafka_release", release="4.4.0"),
        run("zk-3.9", "kafka39_zk", "kafka39_release"),
        run("offline", "tmp_path"),
        run("plain-4", "modern_kafka", "kafka_release", release="4.4.0"),
    ]
    cluster_lifetimes.pytest_collection_modifyitems(items)
    # by release; in each, the modules on the one-controller-three-brokers cluster last, together
    assert [i.name for i in items] == [
        "plain-4",
        "split-4",
        "topics-4",
        "zk-3.9",
        "topics-3.9",
        "spark",
        "offline",
    ]

    split4, split39, plain4 = _Stoppable(), _Stoppable(), _Stoppable()
    session = type("Session", (), {"items": items, "stash": {}})()
    values = {"split-4": {"kafka4_split": split4}, "topics-4": {"kafka_split": split4},
              "plain-4": {"modern_kafka": plain4}, "topics-3.9": {"kafka_split": split39}}  # fmt: skip
    stopped_after = {}
    for item in items:
        item.session, item.funcargs = session, values.get(item.name, {})
        hook = cluster_lifetimes.pytest_runtest_teardown(item, None)
        next(hook)
        try:
            next(hook)
        except StopIteration:
            pass
        stopped_after[item.name] = (split4.stopped, split39.stopped, plain4.stopped)
    # kafka4_split and kafka_split's 4.x cluster are one: stopped once, after the last of them
    assert stopped_after["plain-4"] == (0, 0, 1)
    assert stopped_after["split-4"] == (0, 0, 1)
    assert stopped_after["topics-4"] == (1, 0, 1)
    assert stopped_after["zk-3.9"] == (1, 0, 1)
    assert stopped_after["topics-3.9"] == (1, 1, 1) == stopped_after["offline"]
