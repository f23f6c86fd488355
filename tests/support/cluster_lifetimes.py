"""The session's shared Kafka clusters live only while tests use them: a pytest plugin (tests/conftest.py
loads it).

An idle test cluster is not free: a KRaft node spends about 1.3 s of CPU a minute doing nothing, one
controller and three brokers 4.6 s (measured on 4.4.0, issue 51). Session fixtures end with the session, so
the 4.x one-controller-three-brokers cluster ran idle through every 3.9 test and every Spark test after
its users. Two things here:

* the modern tests run release by release: every test on Kafka 4.x first (``kafka_release``'s 4.x
  parameter or a 4.x-only fixture), then every one on 3.9, then the rest, each group in pytest's own
  order (a stable sort after pytest's, which already groups ``kafka_release``'s parameters), but for the
  modules on the one-controller-three-brokers cluster, which come last in their group, together;
* after a test's teardown, each shared cluster it used that no later test uses is stopped (the fixture's
  own teardown at the session's end then finds it stopped: ``ModernCluster.stop`` is idempotent).

"Uses" is read from each test's fixture closure, so a shared cluster must never be asked for by
``request.getfixturevalue``, where no closure shows it.
"""

from __future__ import annotations

import pytest

from tests.support.modern import KAFKA_4

# the session fixtures that hold a started cluster, and those of them that start one per release
SHARED = frozenset(
    {"modern_kafka", "maintained_kafka", "kafka_split", "kafka4_split", "kafka39_zk", "secured_kafka"}
)
PER_RELEASE = frozenset({"modern_kafka", "maintained_kafka", "kafka_split"})
KAFKA4_ONLY = frozenset({"kafka4_release"})
KAFKA39_ONLY = frozenset({"kafka39_release"})


def release_group(item) -> int:
    """0: a test on Kafka 4.x; 1: one on 3.9; 2: any other."""
    used = set(getattr(item, "fixturenames", ()))
    release = str(getattr(getattr(item, "callspec", None), "params", {}).get("kafka_release", ""))
    if used & KAFKA4_ONLY or release.startswith("4."):
        return 0
    if used & KAFKA39_ONLY or release.startswith("3."):
        return 1
    return 2


def _instance(item, name: str) -> tuple[str, str | None]:
    """Which started cluster `name` is for this test: one per release for the per-release fixtures;
    ``kafka4_split`` is ``kafka_split``'s 4.x cluster."""
    if name == "kafka4_split":
        return "kafka_split", KAFKA_4.version
    if name not in PER_RELEASE:
        return name, None
    return name, str(item.callspec.params.get("kafka_release"))


def _last_users(items) -> dict[tuple[str, str | None], int]:
    last: dict[tuple[str, str | None], int] = {}
    for index, item in enumerate(items):
        for name in SHARED.intersection(getattr(item, "fixturenames", ())):
            last[_instance(item, name)] = index
    return last


SPLIT = frozenset({"kafka_split", "kafka4_split"})  # four nodes: 4.6 s of CPU a minute idle


def _module(item) -> str:
    return getattr(item, "nodeid", getattr(item, "name", "")).split("::")[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items) -> None:
    """Release by release; in each release, the modules that use the one-controller-three-brokers
    cluster last, together (a module's tests stay together: its module fixtures start once)."""
    on_split = {_module(item) for item in items if SPLIT.intersection(getattr(item, "fixturenames", ()))}
    items[:] = sorted(items, key=lambda item: (release_group(item), _module(item) in on_split))


_LAST = pytest.StashKey[dict]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    yield
    used = SHARED.intersection(getattr(item, "fixturenames", ()))
    if not used:
        return
    session = item.session
    if _LAST not in session.stash:
        session.stash[_LAST] = {
            "last": _last_users(session.items),
            "index": {id(it): n for n, it in enumerate(session.items)},
        }
    known = session.stash[_LAST]
    here = known["index"].get(id(item))
    for name in used:
        if here is not None and known["last"].get(_instance(item, name)) == here:
            cluster = (item.funcargs or {}).get(name)
            if cluster is not None and hasattr(cluster, "stop"):
                cluster.stop()
