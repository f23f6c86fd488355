"""find-hanging's judgement on log dirs built byte by byte: an open transaction past the timeout is
hanging when the coordinator does not know its producer, does not list the partition, or is complete;
younger ones, and ones the coordinator still owns, are not; coordinators stuck preparing are found."""

from __future__ import annotations

from kafka_tools.format.java_hash import partition_for
from kafka_tools.log.files.discover import read_log_dir
from kafka_tools.transactions.audit import audit
from tests.transactions.files import COMMIT, T0, Log, log_dir, txn_value

MIN = 60_000


def _dir(tmp_path, status="Ongoing", listed=(0,), pid=1000, update=T0):
    d = log_dir(tmp_path)
    data = Log()
    data.append(2)
    data.txn(pid, 3, 0, n=4, ts=T0)
    data.append(1, ts=T0 + MIN)
    data.write(d, "orders-0")
    coord = Log()
    parts = {"orders": list(listed)} if listed else None
    coord.state("app-1", txn_value(1000, 3, status, parts, start=T0, update=update))
    coord.write(d, f"__transaction_state-{partition_for('app-1', 50)}")
    return d


def _kinds(d, **kw):
    return [(f.kind, f.topic, f.partition, f.producer_id, f.offset) for f in _audit(d, **kw).findings]


def _audit(d, **kw):
    return audit(read_log_dir(d).partitions, **kw)


def test_an_open_transaction_the_coordinator_owns_is_not_hanging(tmp_path) -> None:
    d = _dir(tmp_path)
    a = _audit(d, now_ms=T0 + 60 * MIN)
    assert a.findings == []
    (s,) = a.partitions
    assert s.last_stable_offset == 2 and s.log_end_offset == 7


def test_an_unknown_producer_is_hanging_once_past_the_timeout(tmp_path) -> None:
    d = _dir(tmp_path, pid=2000)
    assert _kinds(d, now_ms=T0 + 15 * MIN) == []  # not older than 15 minutes: it may still end
    (f,) = _audit(d, now_ms=T0 + 16 * MIN).findings
    assert (f.kind, f.topic, f.partition, f.producer_id, f.producer_epoch, f.offset) == (
        "hanging",
        "orders",
        0,
        2000,
        3,
        2,
    )
    assert (f.age_ms, f.records_behind, f.transactional_id) == (16 * MIN, 5, None)
    assert f.abort_command.endswith("abort --topic orders --partition 0 --start-offset 2")
    assert _kinds(d, now_ms=T0 + 16 * MIN, max_timeout_ms=20 * MIN) == []


def test_the_clock_is_the_newest_timestamp_in_the_data(tmp_path) -> None:
    d = _dir(tmp_path, pid=2000)
    # the newest record is 1 minute after the transaction: not hanging by the data's own clock
    assert _kinds(d) == []
    assert _kinds(d, max_timeout_ms=MIN // 2) == [("hanging", "orders", 0, 2000, 2)]


def test_a_partition_the_coordinator_does_not_list_is_hanging(tmp_path) -> None:
    d = _dir(tmp_path, listed=(1,))
    (f,) = _audit(d, now_ms=T0 + 60 * MIN).findings
    assert (f.kind, f.transactional_id) == ("hanging", "app-1") and "does not list orders-0" in f.message


def test_a_complete_coordinator_state_is_hanging(tmp_path) -> None:
    d = _dir(tmp_path, status="CompleteCommit", listed=())
    assert _kinds(d, now_ms=T0 + 60 * MIN) == [("hanging", "orders", 0, 1000, 2)]


def test_a_coordinator_stuck_preparing_names_the_partition_without_its_marker(tmp_path) -> None:
    d = _dir(tmp_path, status="PrepareCommit")
    (f,) = _audit(d, now_ms=T0 + 60 * MIN).findings
    assert (f.kind, f.topic, f.partition, f.producer_id, f.offset) == (
        "stuck-preparing",
        "orders",
        0,
        1000,
        2,
    )
    # aborting would drop a committed transaction: no abort command, the coordinator must finish it
    assert f.abort_command is None and "do not abort" in f.message
    assert _kinds(d, now_ms=T0 + 10 * MIN) == []


def test_a_coordinator_stuck_preparing_an_abort_gets_the_abort_command(tmp_path) -> None:
    d = _dir(tmp_path, status="PrepareAbort")
    (f,) = _audit(d, now_ms=T0 + 60 * MIN).findings
    assert f.kind == "stuck-preparing" and f.abort_command.endswith("--partition 0 --start-offset 2")


def test_the_marker_clears_it(tmp_path) -> None:
    d = _dir(tmp_path, pid=2000)
    log = Log()
    log.append(2)
    log.txn(2000, 3, 0, n=4)
    log.append(1, ts=T0 + MIN)
    log.end(2000, 3, COMMIT, 0)
    log.write(d, "orders-0")
    assert _kinds(d, now_ms=T0 + 60 * MIN) == []


def test_a_snapshot_that_disagrees_with_its_own_log_is_found(tmp_path) -> None:
    from tests.transactions.files import snapshot

    d = log_dir(tmp_path)
    log = Log()
    log.txn(7, 2, 0, n=5)
    log.end(7, 2, COMMIT, 1)
    log.append(1)
    part = log.write(d, "orders-0")
    agreeing = snapshot([(7, 2, 4, 4, 4, T0, 1, -1)])  # pid epoch seq offset delta ts coord txn
    (part / "00000000000000000006.snapshot").write_bytes(agreeing)
    assert _kinds(d, check_snapshots=True) == []
    # the snapshot says the transaction is still open: the log before it has its COMMIT marker
    (part / "00000000000000000006.snapshot").write_bytes(snapshot([(7, 2, 4, 4, 4, T0, 1, 0)]))
    assert _kinds(d) == []  # find-hanging alone trusts the snapshot (the transaction is young)
    (f,) = _audit(d, check_snapshots=True).findings
    assert (f.kind, f.producer_id, f.offset) == ("snapshot-disagrees", 7, 6)
    assert "transaction from 0" in f.message and "transaction from -1" in f.message


def test_a_marker_of_a_new_epoch_clears_the_batch_history_the_snapshot_then_lacks(tmp_path) -> None:
    """ProducerStateEntry.maybeUpdateProducerEpoch: the coordinator's timeout-abort and a transaction
    version 2 commit write their marker with the next epoch, and the producer's last sequence and last
    offset go with the old one (Kafka's snapshot then says -1, -1); a marker of the same epoch keeps
    them."""
    from tests.transactions.files import ABORT, snapshot

    d = log_dir(tmp_path)
    log = Log()
    log.txn(7, 2, 0, n=5)
    log.end(7, 3, ABORT, 1)  # the coordinator's abort, epoch bumped
    log.txn(8, 0, 0, n=2)
    log.end(8, 0, COMMIT, 1)  # transaction version 1: the same epoch
    log.append(1)
    part = log.write(d, "orders-0")
    entries = [(7, 3, -1, -1, 0, T0, 1, -1), (8, 0, 1, 7, 1, T0, 1, -1)]  # as Kafka writes them
    (part / "00000000000000000009.snapshot").write_bytes(snapshot(entries))
    assert _kinds(d, check_snapshots=True) == []
    stale = [(7, 3, 4, 4, 4, T0, 1, -1), (8, 0, 1, 7, 1, T0, 1, -1)]  # the old epoch's history kept
    (part / "00000000000000000009.snapshot").write_bytes(snapshot(stale))
    assert [f.producer_id for f in _audit(d, check_snapshots=True).findings] == [7]
