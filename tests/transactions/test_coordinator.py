"""The coordinator's state replayed from __transaction_state files built byte by byte: newest record
per transactional id, tombstones, value v0 and v1 with KIP-890's tagged fields, the partition an id
hashes to (Java's String.hashCode), and the transitions TransactionMetadata allows."""

from __future__ import annotations

import struct

from kafka_tools.format.java_hash import java_string_hash, partition_for
from kafka_tools.log.files.discover import read_log_dir
from kafka_tools.transactions.coordinator import replay_coordinator
from tests.transactions.files import T0, Log, log_dir, txn_value


def _replay(d, partitions=50):
    return replay_coordinator(read_log_dir(d).partitions, partitions)


def test_java_string_hash_and_partition_for_match_the_jvm() -> None:
    # values the JVM gives: "hello".hashCode() == 99162322; "polygenelubricants" hashes to
    # Integer.MIN_VALUE, whose Utils.abs is 0 (Math.abs would stay negative)
    assert java_string_hash("hello") == 99162322
    assert partition_for("hello", 50) == 22
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert partition_for("polygenelubricants", 50) == 0
    assert java_string_hash("é€") == 0xE9 * 31 + 0x20AC  # UTF-16 code units, not UTF-8 bytes


def test_newest_record_per_id_wins_and_a_tombstone_removes_it(tmp_path) -> None:
    d = log_dir(tmp_path)
    log = Log()
    log.state("a", txn_value(1000, 0, "Empty", None))
    log.state("a", txn_value(1000, 0, "Ongoing", {"t": [0, 1]}, update=T0 + 5))
    log.state("gone", txn_value(1001, 3, "Empty", None))
    log.state("gone", None)
    log.write(d, f"__transaction_state-{partition_for('a', 50)}")
    state = _replay(d)
    assert list(state.transactions) == ["a"]
    a = state.transactions["a"]
    assert (a.producer_id, a.producer_epoch, a.state) == (1000, 0, "Ongoing")
    assert a.partitions == [("t", 0), ("t", 1)]
    assert (a.update_ms, a.timeout_ms, a.offset, a.value_version) == (T0 + 5, 60000, 1, 0)
    # "gone" was written where "a" hashes, not where it hashes itself: said
    assert [p.kind for p in state.problems] == (
        [] if partition_for("gone", 50) == partition_for("a", 50) else ["wrong-partition"] * 2
    )


def test_value_v1_tagged_fields_are_read(tmp_path) -> None:
    d = log_dir(tmp_path)
    log = Log()
    tagged = {0: struct.pack(">q", 77), 1: struct.pack(">q", 78), 2: struct.pack(">h", 2)}
    log.state("tv2", txn_value(79, 4, "PrepareCommit", {"x": [3]}, version=1, tagged=tagged))
    log.write(d, f"__transaction_state-{partition_for('tv2', 50)}")
    t = _replay(d).transactions["tv2"]
    assert (t.previous_producer_id, t.next_producer_id, t.client_version, t.value_version) == (77, 78, 2, 1)
    assert (t.state, t.partitions, t.producer_id) == ("PrepareCommit", [("x", 3)], 79)


def test_an_id_in_the_wrong_partition_is_said(tmp_path) -> None:
    d = log_dir(tmp_path)
    log = Log()
    log.state("hello", txn_value(5, 0, "Empty", None))
    log.write(d, "__transaction_state-21")
    problems = _replay(d).problems
    assert [(p.kind, p.coordinator_partition, p.transactional_id) for p in problems] == [
        ("wrong-partition", 21, "hello")
    ]
    assert "partition 22 of 50" in problems[0].message


def test_illegal_transition_is_found_unless_the_cleaner_merged_the_history(tmp_path) -> None:
    d = log_dir(tmp_path)
    log = Log()
    log.state("hello", txn_value(5, 0, "Ongoing", {"t": [0]}))
    log.state("hello", txn_value(5, 0, "CompleteCommit", None))  # PrepareCommit never written
    log.state("hello", txn_value(5, 0, "Empty", None))
    log.write(d, "__transaction_state-22")
    problems = _replay(d).problems
    assert [(p.kind, p.offset) for p in problems] == [("illegal-transition", 1)]
    assert "Ongoing (offset 0) -> CompleteCommit" in problems[0].message
    (d / "cleaner-offset-checkpoint").write_text("0\n1\n__transaction_state 22 2\n")
    assert _replay(d).problems == []
