"""The per-partition rules of migrate-offsets, without servers: what moves, what is refused, and why."""

from __future__ import annotations

from kafka_tools.consumers.migration import (
    FILE,
    KAFKA,
    REFUSED_RANGE,
    REFUSED_REWIND,
    UNCHANGED,
    WRITE,
    ZK,
    MigrationOptions,
    PartitionMove,
    _decide,
)


def decide(zk=None, kafka=None, start=0, end=100, given=None, **opts) -> PartitionMove:
    m = PartitionMove("g", "orders", 0, zk, kafka, None, WRITE, log_start=start, log_end=end)
    _decide(m, MigrationOptions(**opts), given)
    return m


def test_zookeeper_offset_goes_to_kafka() -> None:
    m = decide(zk=40)
    assert (m.status, m.offset) == (WRITE, 40)


def test_already_in_place_is_unchanged() -> None:
    assert decide(zk=40, kafka=40).status == UNCHANGED


def test_no_rewind_without_permission() -> None:
    m = decide(zk=40, kafka=55)
    assert m.status == REFUSED_REWIND and "kafka is ahead (55 > 40)" in m.reason
    assert decide(zk=40, kafka=55, allow_rewind=True).status == WRITE


def test_out_of_range_refused_unless_forced() -> None:
    m = decide(zk=140)
    assert m.status == REFUSED_RANGE and "outside the log 0..100" in m.reason
    assert decide(zk=140, force=True).status == WRITE
    assert decide(zk=3, start=10).status == REFUSED_RANGE


def test_dual_commit_takes_the_larger_offset_for_both() -> None:
    m = decide(zk=40, kafka=55, dual_commit=True)
    assert (m.status, m.offset) == (WRITE, 55)
    assert decide(zk=55, kafka=55, dual_commit=True).status == UNCHANGED


def test_rollback_direction() -> None:
    m = decide(zk=None, kafka=70, source=KAFKA, target=ZK)
    assert (m.status, m.offset) == (WRITE, 70)


def test_import_from_a_file() -> None:
    m = decide(zk=10, given=30, source=FILE, target=ZK)
    assert (m.status, m.offset) == (WRITE, 30)
    assert decide(zk=50, given=30, source=FILE, target=ZK).status == REFUSED_REWIND
