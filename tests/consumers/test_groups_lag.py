"""Lag as an operator reads it: log end minus the committed offset, clamped and explained when the
committed offset lies outside the log."""

from __future__ import annotations

from kafka_tools.consumers.groups import PartitionRow, _lag, storage_of


def row(zk=None, kafka=None, start=0, end=100) -> PartitionRow:
    r = PartitionRow("orders", 0, zk_offset=zk, kafka_offset=kafka, log_start=start, log_end=end)
    _lag(r)
    return r


def test_lag_is_log_end_minus_committed() -> None:
    assert row(zk=60).lag == 40
    assert row(kafka=100).lag == 0
    assert row(zk=60).note is None


def test_zookeeper_offset_wins_for_a_zookeeper_group() -> None:
    r = row(zk=70, kafka=50)
    assert r.committed == 70 and r.lag == 30


def test_committed_past_the_log_end_is_clamped_and_explained() -> None:
    r = row(zk=150)
    assert r.lag == 0
    assert "past the log end 100" in r.note


def test_committed_below_the_log_start_counts_from_the_start() -> None:
    r = row(zk=5, start=40)
    assert r.lag == 60
    assert "below the log start 40" in r.note and "reset" in r.note


def test_no_committed_offset_no_lag() -> None:
    r = row()
    assert r.lag is None


def test_storage_labels() -> None:
    assert storage_of(True, True) == "both"
    assert storage_of(True, False) == "zookeeper"
    assert storage_of(False, True) == "kafka"
    assert storage_of(False, False) == "none"
