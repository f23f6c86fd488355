"""Each partition's producer state replayed as ProducerStateManager does, on segments and snapshots
built byte by byte: open transactions, the last stable offset, snapshots used (and refused), and the
anomalies a healthy leader never appends (cases after Kafka's ProducerStateManagerTest)."""

from __future__ import annotations

from kafka_tools.log.files.discover import read_log_dir
from kafka_tools.transactions.producers import replay_partition
from tests.transactions.files import ABORT, COMMIT, T0, Log, log_dir, snapshot


def _replay(d, name="t-0", from_start=False):
    (part,) = [p for p in read_log_dir(d).partitions if p.name == name]
    return replay_partition(part, from_start)


def test_committed_and_aborted_transactions_leave_the_partition_stable(tmp_path) -> None:
    d = log_dir(tmp_path)
    log = Log()
    log.txn(1, 0, 0, n=3)
    log.append(2)  # a plain producer between
    log.end(1, 0, COMMIT, 0)
    log.txn(1, 0, 3, n=2)
    log.end(1, 0, ABORT, 0)
    log.write(d, "t-0")
    s = _replay(d)
    assert s.open_transactions == []
    assert s.last_stable_offset == s.log_end_offset == 9
    assert [a.kind for a in s.anomalies] == []
    assert (s.producers[1].last_sequence, s.producers[1].coordinator_epoch) == (4, 0)


def test_first_unstable_offset_is_the_oldest_open_transaction(tmp_path) -> None:
    # ProducerStateManagerTest.testFirstUnstableOffset: two producers' transactions interleave; the
    # LSO is the first offset of the oldest still open, and moves when it ends
    d = log_dir(tmp_path)
    log = Log()
    log.append(1)
    first = log.txn(1, 0, 0, ts=T0 + 1)
    second = log.txn(2, 0, 0, n=2, ts=T0 + 2)
    log.txn(1, 0, 1, ts=T0 + 3)
    log.write(d, "t-0")
    s = _replay(d)
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in s.open_transactions] == [
        (1, first, 4),
        (2, second, 3),
    ]
    assert s.last_stable_offset == first == 1
    log.end(1, 0, COMMIT, 0)
    log.write(d, "t-0")
    s = _replay(d)
    assert s.last_stable_offset == second
    assert s.open_transactions[0].last_timestamp == T0 + 2


def test_replay_starts_at_the_newest_snapshot(tmp_path) -> None:
    d = log_dir(tmp_path)
    log = Log()
    log.txn(7, 2, 0, n=5)
    log.append(5)
    part = log.write(d, "t-0")
    # the snapshot at 10 says producer 7 has a transaction open since offset 0
    (part / "00000000000000000010.snapshot").write_bytes(snapshot([(7, 2, 4, 4, 4, T0, 3, 0)]))
    log.end(7, 2, COMMIT, 3)
    log.append(1)
    log.write(d, "t-0")
    s = _replay(d)
    assert s.snapshot_offset == 10 and s.batches_replayed == 2
    assert s.open_transactions == [] and s.last_stable_offset == 12
    # without the marker, the snapshot's open transaction pins the partition
    (part / "00000000000000000000.log").write_bytes(bytes(log.data[: _size_up_to(log.data, 10)]))
    s = _replay(d)
    assert s.snapshot_offset == 10 and s.batches_replayed == 0
    assert [(t.producer_id, t.first_offset, t.coordinator_epoch) for t in s.open_transactions] == [(7, 0, 3)]


def _size_up_to(data: bytearray, offset: int) -> int:
    import struct

    pos = 0
    while pos < len(data):
        base, size = struct.unpack_from(">qi", data, pos)
        if base >= offset:
            return pos
        pos += 12 + size
    return pos


def test_a_snapshot_with_a_bad_crc_is_not_used(tmp_path) -> None:
    d = log_dir(tmp_path)
    log = Log()
    log.txn(7, 2, 0, n=5)
    log.end(7, 2, ABORT, 1)
    part = log.write(d, "t-0")
    bad = bytearray(snapshot([(7, 2, 4, 4, 4, T0, 1, 0)]))
    bad[-1] ^= 1
    (part / "00000000000000000005.snapshot").write_bytes(bytes(bad))
    s = _replay(d)
    assert s.snapshot_offset is None and s.batches_replayed == 2
    assert s.open_transactions == [] and any("not used" in n for n in s.notes)


def test_anomalies_a_healthy_leader_never_appends(tmp_path) -> None:
    d = log_dir(tmp_path)
    log = Log()
    log.txn(1, 5, 0)
    log.append(1, pid=1, epoch=5, seq=1)  # non-transactional inside its own transaction
    log.end(1, 5, COMMIT, 4)
    log.end(1, 5, ABORT, 3)  # stale coordinator epoch, and no transaction open any more
    log.txn(1, 4, 0)  # epoch backwards
    log.write(d, "t-0")
    s = _replay(d)
    assert [(a.kind, a.offset, a.info) for a in s.anomalies] == [
        ("non-transactional-in-transaction", 1, False),
        ("stale-coordinator-epoch", 3, False),
        ("marker-without-transaction", 3, True),
        ("epoch-backwards", 4, False),
    ]


def test_a_torn_tail_stops_the_replay_with_a_note(tmp_path) -> None:
    d = log_dir(tmp_path)
    log = Log()
    log.txn(1, 0, 0)
    log.txn(1, 0, 1)
    part = log.write(d, "t-0")
    data = (part / "00000000000000000000.log").read_bytes()
    (part / "00000000000000000000.log").write_bytes(data[:-5])
    s = _replay(d)
    assert s.log_end_offset == 1 and s.last_stable_offset == 0
    assert len(s.notes) == 1 and "replayed up to there" in s.notes[0]


def test_a_marker_from_an_older_producer_epoch_is_said(tmp_path) -> None:
    # after ProducerStateManagerTest.testOldEpochForControlRecord: the broker fences a marker whose
    # producer epoch is below the producer's; one on disk came through an unclean election
    d = log_dir(tmp_path)
    log = Log()
    log.txn(1, 3, 0)
    log.end(1, 2, COMMIT, 0)
    log.write(d, "t-0")
    s = _replay(d)
    assert [(a.kind, a.offset, a.producer_epoch) for a in s.anomalies] == [("epoch-backwards", 1, 2)]
    assert s.producers[1].producer_epoch == 3 and s.open_transactions == []
