"""What pins a partition, as `kafka-transactions.sh find-hanging` judges it live, from the files: an
open transaction older than the maximum transaction timeout whose producer the coordinator does not
know, whose coordinator state does not list the partition, or is complete — and what find-hanging
cannot see: coordinators stuck preparing, and the anomalies the producer-state replay met."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from kafka_tools.format.internal_topics import TRANSACTION_STATE
from kafka_tools.log.checks.findings import Finding, Severity
from kafka_tools.log.files.dirs import Partition
from kafka_tools.transactions.coordinator import (
    COMPLETE,
    DEFAULT_TRANSACTION_PARTITIONS,
    PREPARING,
    CoordinatorState,
    TransactionMetadata,
    replay_coordinator,
)
from kafka_tools.transactions.producers import (
    OpenTransaction,
    PartitionProducers,
    replay_partition,
    snapshot_disagreements,
)

DEFAULT_MAX_TRANSACTION_TIMEOUT_MS = 15 * 60 * 1000  # transaction.max.timeout.ms, find-hanging's default


@dataclass(slots=True)
class Audit:
    """The coordinator's state, every partition's producer state, and the findings."""

    coordinator: CoordinatorState
    partitions: list[PartitionProducers]
    now_ms: int
    max_timeout_ms: int
    findings: list[Finding] = field(default_factory=list)
    clock_source: str = "the newest timestamp in the data"  # what now_ms came from


def abort_command(topic: str, partition: int, first_offset: int) -> str:
    """The command that clears the transaction on a live cluster (Kafka's TransactionsCommand abort)."""
    return (
        "kafka-transactions.sh --bootstrap-server BROKER:PORT abort "
        f"--topic {topic} --partition {partition} --start-offset {first_offset}"
    )


def audit(
    partitions: Iterable[Partition],
    now_ms: int | None = None,
    max_timeout_ms: int = DEFAULT_MAX_TRANSACTION_TIMEOUT_MS,
    transaction_partitions: int | None = DEFAULT_TRANSACTION_PARTITIONS,
    from_start: bool = False,
    check_snapshots: bool = False,
    clock_ms: int = -1,
) -> Audit:
    """Replay the coordinator and every partition, then judge them; the clock is the newest timestamp in
    the data, or `clock_ms` (the copy's files' own clock) when newer, unless `now_ms` is given (a copy's
    age is not today's). `check_snapshots` also replays each partition from its start to its snapshot
    and says where they disagree."""
    parts = list(partitions)
    coordinator = replay_coordinator(parts, transaction_partitions)
    # the KRaft log has no producers; __transaction_state is the coordinator's own
    data = [p for p in parts if p.topic not in (TRANSACTION_STATE, "__cluster_metadata")]
    states = [replay_partition(p, from_start) for p in data]
    if check_snapshots:
        for part, s in zip(data, states, strict=True):
            s.anomalies += snapshot_disagreements(part, s)
    newest = max([coordinator.newest_timestamp, *(s.newest_timestamp for s in states)], default=-1)
    result = Audit(coordinator, states, max(newest, clock_ms) if now_ms is None else now_ms, max_timeout_ms)
    result.findings = judge(result)
    return result


def judge(a: Audit) -> list[Finding]:
    """Every finding of an audit, in partition then offset order."""
    known = a.coordinator.by_producer_id()
    out: list[Finding] = []
    for s in a.partitions:
        for txn in s.open_transactions:
            why = _hanging(a, s, txn, known.get(txn.producer_id))
            if why is not None:
                out.append(_row(a, s, txn, known.get(txn.producer_id), "hanging", why))
        for an in s.anomalies:
            if an.info:
                continue
            meta = known.get(an.producer_id)
            out.append(_producer_row(a, s, an, meta, an.kind, an.message, an.offset, an.timestamp))
        out += [
            _finding(
                kind=d.kind,
                message=d.message,
                topic=s.topic,
                partition=s.partition,
                offset=-1 if d.offset is None else d.offset,
                file=str(d.file),
                position=d.position,
            )
            for d in s.damage
        ]
    out += _stuck_preparing(a)
    out += [
        _finding(
            kind=p.kind,
            message=p.message,
            topic=TRANSACTION_STATE,
            partition=p.coordinator_partition,
            offset=p.offset,
            transactional_id=p.transactional_id,
            file=p.file,
            position=p.position,
        )
        for p in a.coordinator.problems
    ]
    return out


def _hanging(
    a: Audit, s: PartitionProducers, txn: OpenTransaction, meta: TransactionMetadata | None
) -> str | None:
    """Why find-hanging would call it hanging (None: it would not)."""
    if a.now_ms - txn.last_timestamp <= a.max_timeout_ms:
        return None  # younger than any timeout: the coordinator may still end it
    if not a.coordinator.partitions_read:
        return None  # without the coordinator's files nothing says who knows the producer
    if meta is None:
        return (f"open since offset {txn.first_offset} and the coordinator knows no transactional id "
                f"with producer id {txn.producer_id}")  # fmt: skip
    if meta.state in COMPLETE:
        return f"the coordinator's {meta.transactional_id!r} is {meta.state}: it will write no marker here"
    if (s.topic, s.partition) not in meta.partitions:
        return (f"the coordinator's {meta.transactional_id!r} ({meta.state}) does not list "
                f"{s.topic}-{s.partition}: it will write no marker here")  # fmt: skip
    return None


def _row(a, s, txn: OpenTransaction, meta, kind: str, why: str) -> Finding:
    return _producer_row(
        a, s, txn, meta, kind, why, txn.first_offset, txn.last_timestamp,
        records_behind=s.log_end_offset - txn.first_offset,
        abort_command=abort_command(s.topic, s.partition, txn.first_offset),
    )  # fmt: skip


def _producer_row(
    a: Audit, s: PartitionProducers, who, meta, kind: str, message: str, offset: int, timestamp: int,
    **extra: object,
) -> Finding:  # fmt: skip
    """A row about one producer (`who`: its open transaction or an anomaly of its batches) in `s`."""
    return _finding(
        kind=kind,
        message=message,
        topic=s.topic,
        partition=s.partition,
        producer_id=who.producer_id,
        producer_epoch=who.producer_epoch,
        coordinator_epoch=who.coordinator_epoch,
        offset=offset,
        last_timestamp=timestamp,
        age_ms=max(0, a.now_ms - timestamp),
        transactional_id=meta.transactional_id if meta else None,
        **extra,
    )


def _finding(**fields: object) -> Finding:
    """A row of find-hanging (every one an error: it pins a partition or is damage), with the
    producer fields a row about no producer has as -1 and 0, as `--json` has always said."""
    defaults = {"producer_id": -1, "producer_epoch": -1, "coordinator_epoch": -1, "offset": -1,
                "last_timestamp": -1, "age_ms": 0, "records_behind": 0}  # fmt: skip
    return Finding(severity=Severity.ERROR, **{**defaults, **fields})  # type: ignore[arg-type]


def _stuck_preparing(a: Audit) -> list[Finding]:
    """Coordinators in PrepareCommit/PrepareAbort past the timeout, with the partitions read that still
    hold the producer's open transaction (the markers that never came)."""
    by_name = {(s.topic, s.partition): s for s in a.partitions}
    out = []
    for meta in a.coordinator.transactions.values():
        if meta.state not in PREPARING or a.now_ms - meta.update_ms <= a.max_timeout_ms:
            continue
        for tp in meta.partitions:
            s = by_name.get(tp)
            state = s.producers.get(meta.producer_id) if s else None
            if state is None or state.open is None:
                continue
            why = (f"the coordinator's {meta.transactional_id!r} is stuck in {meta.state} since "
                   f"{meta.update_ms}: the marker for {tp[0]}-{tp[1]} was never written")  # fmt: skip
            row = _row(a, s, state.open, meta, "stuck-preparing", why)
            if meta.state == "PrepareCommit":
                # an ABORT marker would drop what the coordinator committed: it must write the COMMIT
                row.abort_command = None
                leader = f"__transaction_state-{meta.coordinator_partition}"
                row.message += f"; do not abort: restart the leader of {leader}, its coordinator writes it"
            out.append(row)
    return out
