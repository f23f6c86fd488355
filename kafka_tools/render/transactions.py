"""`ktool transactions`' objects: the coordinator's transactions, each partition's last stable offset
and open transactions, and find-hanging's findings — as JSON objects (the contract's) and as tables
with the columns of `kafka-transactions.sh` (list, describe-producers, find-hanging)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from kafka_tools.log.checks.findings import Finding
from kafka_tools.render.tables import TextTable, make_console
from kafka_tools.transactions.audit import Audit
from kafka_tools.transactions.coordinator import TransactionMetadata
from kafka_tools.transactions.producers import OpenTransaction, PartitionProducers


def transaction_object(t: TransactionMetadata) -> dict:
    return {
        "type": "transaction",
        "transactionalId": t.transactional_id,
        "coordinatorPartition": t.coordinator_partition,
        "producerId": t.producer_id,
        "producerEpoch": t.producer_epoch,
        "state": t.state,
        "timeoutMs": t.timeout_ms,
        "partitions": [f"{topic}-{n}" for topic, n in t.partitions],
        "startTimeMs": t.start_ms,
        "lastUpdateTimeMs": t.update_ms,
        "previousProducerId": t.previous_producer_id,
        "nextProducerId": t.next_producer_id,
        "clientTransactionVersion": t.client_version,
    }


def _open_object(t: OpenTransaction) -> dict:
    return {
        "producerId": t.producer_id,
        "producerEpoch": t.producer_epoch,
        "coordinatorEpoch": t.coordinator_epoch,
        "firstOffset": t.first_offset,
        "lastOffset": t.last_offset,
        "lastTimestamp": t.last_timestamp,
    }


def partition_object(s: PartitionProducers) -> dict:
    return {
        "type": "partition",
        "topic": s.topic,
        "partition": s.partition,
        "logEndOffset": s.log_end_offset,
        "lastStableOffset": s.last_stable_offset,
        "recordsBehind": s.log_end_offset - s.last_stable_offset,
        "snapshotOffset": s.snapshot_offset,
        "openTransactions": [_open_object(t) for t in s.open_transactions],
    }


def finding_object(f: Finding) -> dict:
    return {
        "type": "finding",
        "kind": f.kind,
        "topic": f.topic,
        "partition": f.partition,
        "producerId": f.producer_id,
        "producerEpoch": f.producer_epoch,
        "coordinatorEpoch": f.coordinator_epoch,
        "firstOffset": f.offset,
        "lastTimestamp": f.last_timestamp,
        "ageMs": f.age_ms,
        "transactionalId": f.transactional_id,
        "recordsBehind": f.records_behind,
        "message": f.message,
        "abortCommand": f.abort_command,
        "file": f.file,
        "position": f.position,
    }


def _print(out: TextIO, colour: bool, headers: Sequence[str], rows: list[list[str]], right=()) -> None:
    table = TextTable(headers, colour, right=tuple(right))
    for row in rows:
        table.add_row(*row)
    make_console(out, colour).print(table)


def render_transactions(out: TextIO, colour: bool, items: Sequence[TransactionMetadata]) -> None:
    """kafka-transactions.sh list's columns (the coordinator is a partition of __transaction_state
    here, not a broker), and what describe adds."""
    headers = ("TransactionalId", "Coordinator", "ProducerId", "ProducerEpoch", "TransactionState",
               "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TopicPartitions")  # fmt: skip
    rows = [
        [
            t.transactional_id,
            f"__transaction_state-{t.coordinator_partition}",
            str(t.producer_id),
            str(t.producer_epoch),
            t.state,
            str(t.timeout_ms),
            str(t.start_ms),
            ",".join(f"{topic}-{n}" for topic, n in t.partitions),
        ]  # fmt: skip
        for t in items
    ]
    _print(out, colour, headers, rows, right=("ProducerId", "ProducerEpoch", "TransactionTimeoutMs"))


def render_partitions(out: TextIO, colour: bool, items: Sequence[PartitionProducers], now_ms: int) -> None:
    """Per partition its last stable offset; then describe-producers' columns for each open one."""
    headers = ("Topic", "Partition", "LogEndOffset", "LastStableOffset", "RecordsBehind", "OpenTransactions")
    rows = [
        [
            s.topic,
            str(s.partition),
            str(s.log_end_offset),
            str(s.last_stable_offset),
            str(s.log_end_offset - s.last_stable_offset),
            str(len(s.open_transactions)),
        ]  # fmt: skip
        for s in items
    ]
    _print(out, colour, headers, rows, right=headers[1:])
    opened = [(s, t) for s in items for t in s.open_transactions]
    if not opened:
        return
    out.write("\n")
    headers = ("Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
               "LastTimestamp", "Duration(min)")  # fmt: skip
    rows = [
        [s.topic, str(s.partition), str(t.producer_id), str(t.producer_epoch), str(t.coordinator_epoch),
         str(t.first_offset), str(t.last_timestamp), str(max(0, now_ms - t.last_timestamp) // 60000)]
        for s, t in opened
    ]  # fmt: skip
    _print(out, colour, headers, rows, right=headers[1:])


def render_findings(out: TextIO, colour: bool, items: Sequence[Finding]) -> None:
    """find-hanging's columns (and the kind, the transactional id, what is behind), then per finding
    why, and the command that clears it on a live cluster."""
    headers = ("Kind", "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
               "LastTimestamp", "Duration(min)", "TransactionalId", "RecordsBehind")  # fmt: skip
    rows = [
        [
            f.kind,
            f.topic,
            str(f.partition),
            str(f.producer_id),
            str(f.producer_epoch),
            str(f.coordinator_epoch),
            str(f.offset),
            str(f.last_timestamp),
            str(f.age_ms // 60000),
            f.transactional_id or "-",
            str(f.records_behind),
        ]  # fmt: skip
        for f in items
    ]
    _print(out, colour, headers, rows, right=headers[2:9] + ("RecordsBehind",))
    for f in items:
        out.write(f"\n# {f.topic}-{f.partition} at {f.offset}: {f.message}\n")
        if f.abort_command:
            out.write(f"{f.abort_command}\n")


def hanging_summary(result: Audit) -> str:
    """find-hanging's last line: what was read, the clock and what said it, and what was found."""
    from kafka_tools.format.plural import plural
    from kafka_tools.render.cluster import iso_time

    opened = sum(len(s.open_transactions) for s in result.partitions)
    read = (
        f"{plural(len(result.partitions), 'partition')} and "
        f"{plural(len(result.coordinator.partitions_read), '__transaction_state partition')} read, "
        f"{plural(opened, 'open transaction')}"
    )
    clock = f"clock {iso_time(result.now_ms) or result.now_ms} ({result.clock_source})"
    found = plural(len(result.findings), "finding") if result.findings else "no hanging transaction found"
    return f"{read}; {clock}: {found}"


def list_summary(ids: int, partitions_read: int) -> str:
    """list's last line: how many ids, from how many coordinator partitions; none read said as such."""
    from kafka_tools.format.plural import plural

    if not partitions_read:
        return "no __transaction_state partition among the log dirs: no transactional id read"
    read = plural(partitions_read, "__transaction_state partition")
    return f"{plural(ids, 'transactional id')} from {read} read"
