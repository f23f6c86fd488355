"""The transaction coordinator's state, replayed from `__transaction_state-*` as
TransactionStateManager loads it: per transactional id the newest TransactionLogValue (v0, or v1 with
its KIP-890 tagged fields), a tombstone removing the id; and the checks the files allow (the id in
the partition its hash names, legal status transitions where the cleaner has not merged history)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from kafka_tools.errors import os_error
from kafka_tools.format.internal_topics import TRANSACTION_STATE, decode_transaction_state
from kafka_tools.format.java_hash import partition_for
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import breaks_recovery, iter_log_entries, until_recovery_cut
from kafka_tools.log.files.dirs import Partition, Segment, checkpoint_offset
from kafka_tools.transactions.producers import Damage, is_torn_tail

# TransactionState's valid previous states (Kafka 3.x TransactionMetadata.scala, 4.x
# TransactionState.java; 4.x adds Empty/Complete* -> PrepareAbort for transaction version 2).
VALID_PREVIOUS: dict[str, frozenset[str]] = {
    "Empty": frozenset({"Empty", "CompleteCommit", "CompleteAbort"}),
    "Ongoing": frozenset({"Ongoing", "Empty", "CompleteCommit", "CompleteAbort"}),
    "PrepareCommit": frozenset({"Ongoing"}),
    "PrepareAbort": frozenset({"Ongoing", "PrepareEpochFence", "Empty", "CompleteCommit", "CompleteAbort"}),
    "CompleteCommit": frozenset({"PrepareCommit"}),
    "CompleteAbort": frozenset({"PrepareAbort"}),
    "Dead": frozenset({"Empty", "CompleteAbort", "CompleteCommit"}),
    "PrepareEpochFence": frozenset({"Ongoing"}),
}
COMPLETE = frozenset({"Empty", "CompleteCommit", "CompleteAbort", "Dead"})
PREPARING = frozenset({"PrepareCommit", "PrepareAbort"})
DEFAULT_TRANSACTION_PARTITIONS = 50  # transaction.state.log.num.partitions


@dataclass(slots=True)
class TransactionMetadata:
    """One transactional id as the coordinator's newest record says it."""

    transactional_id: str
    coordinator_partition: int
    offset: int  # of the record in its __transaction_state partition
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: str
    partitions: list[tuple[str, int]]
    start_ms: int
    update_ms: int
    previous_producer_id: int = -1
    next_producer_id: int = -1
    client_version: int = 0
    value_version: int = 0


@dataclass(slots=True)
class CoordinatorProblem:
    """Something the coordinator's files say that a healthy coordinator never writes."""

    kind: str  # wrong-partition | illegal-transition | undecodable | crc-mismatch (a Problem's kind)
    coordinator_partition: int
    offset: int
    transactional_id: str | None
    message: str
    file: str | None = None  # damage: the segment and the byte position in it
    position: int | None = None


@dataclass(slots=True)
class CoordinatorState:
    """Every transactional id of the `__transaction_state` partitions read, and what was wrong."""

    transactions: dict[str, TransactionMetadata] = field(default_factory=dict)
    problems: list[CoordinatorProblem] = field(default_factory=list)
    partitions_read: list[int] = field(default_factory=list)
    newest_timestamp: int = -1
    notes: list[str] = field(default_factory=list)  # for stderr: where a replay stopped

    def by_producer_id(self) -> dict[int, TransactionMetadata]:
        """ListTransactions' producer-id filter: the id whose current producer id it is."""
        return {t.producer_id: t for t in self.transactions.values()}


def _metadata(tid: str, part: int, offset: int, version: int | None, v: dict) -> TransactionMetadata:
    parts = [(p["topic"], n) for p in v.get("transactionPartitions") or () for n in p["partitionIds"]]
    return TransactionMetadata(
        tid, part, offset, v["producerId"], v["producerEpoch"], v["transactionTimeoutMs"],
        v["transactionStatusName"], sorted(parts), v["transactionStartTimestampMs"],
        v["transactionLastUpdateTimestampMs"], v.get("previousProducerId", -1),
        v.get("nextProducerId", -1), v.get("clientTransactionVersion", 0), version or 0,
    )  # fmt: skip


def _batches(part: Partition) -> Iterator[tuple[Segment, RecordBatch | Problem]]:
    """The partition's batches in offset order, each with its segment, up to where the broker's
    recovery would cut the log (every checksum checked); InputError (exit 3) for a file that cannot be
    read."""
    part.check_readable()
    for seg in part.segments:
        try:
            for entry in until_recovery_cut(iter_log_entries(seg.log)):
                if isinstance(entry, (RecordBatch, Problem)):
                    yield seg, entry
        except OSError as exc:
            raise os_error(seg.log, exc) from exc


def replay_coordinator(
    partitions: Iterable[Partition], transaction_partitions: int | None = DEFAULT_TRANSACTION_PARTITIONS
) -> CoordinatorState:
    """The coordinator's state from every `__transaction_state-N` among `partitions`, in offset order;
    `transaction_partitions` None (unknown): no id is judged by the partition it is in."""
    state = CoordinatorState()
    for part in sorted((p for p in partitions if p.topic == TRANSACTION_STATE), key=lambda p: p.partition):
        state.partitions_read.append(part.partition)
        _replay_partition(part, state, transaction_partitions)
    return state


def _replay_partition(part: Partition, state: CoordinatorState, transaction_partitions: int | None) -> None:
    n = part.partition
    cleaned = checkpoint_offset(part.log_dir, "cleaner-offset-checkpoint", part.topic, n, [], "") or 0
    previous: dict[str, tuple[str, int]] = {}  # id -> (state, offset) of its record before
    for seg, batch in _batches(part):
        if isinstance(batch, Problem):
            if not is_torn_tail(seg, batch, seg is part.segments[-1]):  # damage: a checksum that fails, say
                d = Damage.of(seg.log, batch)
                offset = -1 if d.offset is None else d.offset
                state.problems.append(
                    CoordinatorProblem(d.kind, n, offset, None, d.message, str(seg.log), d.position)
                )
            elif not part.live:  # a running broker's tail is in flight; a stopped one's recovery cuts it
                state.notes.append(
                    f"{seg.log}: position {batch.position}: {batch.message}; replayed up to there"
                )
            if breaks_recovery(batch):
                return
            continue
        if batch.is_control:
            continue
        state.newest_timestamp = max(state.newest_timestamp, batch.max_timestamp)
        try:
            records = batch.records()
        except RecordDecodeError as exc:
            state.problems.append(CoordinatorProblem("undecodable", n, batch.base_offset, None, str(exc)))
            continue
        for rec in records:
            _apply(state, n, rec.offset, decode_transaction_state(rec.key, rec.value), previous, cleaned,
                   transaction_partitions)  # fmt: skip


def _apply(state, n, offset, decoded, previous, cleaned, transaction_partitions) -> None:
    tid = (decoded.key or {}).get("transactionalId")
    if decoded.error or tid is None:
        state.problems.append(CoordinatorProblem("undecodable", n, offset, tid, decoded.error or "no key"))
        return
    expected = n if transaction_partitions is None else partition_for(tid, transaction_partitions)
    if expected != n:
        state.problems.append(CoordinatorProblem(
            "wrong-partition", n, offset, tid,
            f"transactional id {tid!r} hashes to partition {expected} of {transaction_partitions}, not {n}",
        ))  # fmt: skip
    if decoded.is_tombstone:
        state.transactions.pop(tid, None)
        previous.pop(tid, None)
        return
    meta = _metadata(tid, n, offset, decoded.value_version, decoded.value)
    before = previous.get(tid)
    # below the cleaner's checkpoint, records of one id were merged: their order says nothing
    if before is not None and before[1] >= cleaned and before[0] not in VALID_PREVIOUS.get(meta.state, ()):
        state.problems.append(CoordinatorProblem(
            "illegal-transition", n, offset, tid,
            f"{tid!r}: {before[0]} (offset {before[1]}) -> {meta.state}: not a transition the coordinator "
            "makes",
        ))  # fmt: skip
    previous[tid] = (meta.state, offset)
    state.transactions[tid] = meta
    state.newest_timestamp = max(state.newest_timestamp, meta.update_ms)
