"""Replaying a `__consumer_offsets` partition as the group coordinator loads it: later commits replace
earlier ones, tombstones delete, transactional commits wait for their COMMIT marker or vanish with
ABORT; nothing past the first invalid byte."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_tools.format.internal_topics import decode_consumer_offsets
from kafka_tools.format.record_batch import ControlType, RecordBatch, control_record
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.pipeline.tables import OFFSETS
from kafka_tools.pipeline.tasks import SegmentSpec, _new, iter_entries

# -- __consumer_offsets --------------------------------------------------------------------------


@dataclass(frozen=True)
class OffsetsSegment:
    """A segment of a `__consumer_offsets` partition and how much of it the broker's recovery keeps:
    `recovered_bytes` (None: none of it, a segment after the partition's first damage)."""

    spec: SegmentSpec
    recovered_bytes: int | None


def replay_offsets(log_partition: int, segments: list[OffsetsSegment]) -> dict[str, list]:
    """Every offset commit of one `__consumer_offsets` partition in log order (column lists for the
    `offsets` table) with `loaded` set on the commit the group coordinator would load per key.

    As GroupMetadataManager.loadGroupsAndOffsets does: a later commit replaces an earlier one, a
    tombstone deletes it; commits in a transactional batch wait for their producer's COMMIT marker
    (and then replace the loaded one only if that was appended earlier) or vanish with its ABORT.
    Only what the broker's recovery keeps is replayed: nothing from the first invalid byte on.
    """
    cols = _new(OFFSETS, skip=())
    loaded: dict[tuple, tuple[int, int]] = {}  # key -> (row, base offset of its batch)
    pending: dict[int, dict[tuple, tuple[int, int]]] = {}  # producer id -> key -> (row, batch base)
    for seg in segments:
        for entry in iter_entries(seg.spec):
            recovered = seg.recovered_bytes is not None and entry.position < seg.recovered_bytes
            recovered = recovered and entry.is_valid
            transactional = type(entry) is RecordBatch and entry.is_transactional
            producer = entry.producer_id if type(entry) is RecordBatch else -1
            batch_base = entry.base_offset if type(entry) is RecordBatch else entry.offset
            try:
                records = entry.records()
            except RecordDecodeError:
                continue
            if type(entry) is RecordBatch and entry.is_control:
                if recovered and records:
                    _end_transaction(records[0], producer, pending, loaded)
                continue
            for record in records:
                row = _offset_row(
                    cols, seg.spec.file, log_partition, record, transactional, producer, recovered
                )
                if row is None or not recovered or cols["error"][row] is not None:
                    continue  # the broker's load fails on what cannot be decoded; ktool reports it
                key = (cols["group"][row], cols["topic"][row], cols["partition"][row])
                tombstone = cols["tombstone"][row]
                if transactional:
                    txn = pending.setdefault(producer, {})
                    if tombstone:
                        txn.pop(key, None)
                    else:
                        txn[key] = (row, batch_base)
                elif tombstone:
                    loaded.pop(key, None)
                else:
                    loaded[key] = (row, batch_base)
    cols["loaded"] = [False] * len(cols["file"])
    for row, _ in loaded.values():
        cols["loaded"][row] = True
    return cols


def _end_transaction(marker, producer: int, pending: dict, loaded: dict) -> None:
    try:
        control = control_record(marker)
    except RecordDecodeError:
        return
    offsets = pending.pop(producer, {})
    if control.type_id != ControlType.COMMIT:
        return
    for key, (row, base) in offsets.items():
        current = loaded.get(key)
        if current is None or current[1] < base:
            loaded[key] = (row, base)


def _offset_row(
    cols: dict[str, list],
    file: str,
    log_partition: int,
    record,
    transactional: bool,
    producer: int,
    recovered: bool,
) -> int | None:
    """Append an offset commit (or its tombstone) to the columns; None for any other record type."""
    decoded = decode_consumer_offsets(record.key, record.value)
    if decoded.record_type != "offset_commit":
        return None
    key = decoded.key or {}
    value = decoded.value or {}
    values = {
        "file": file,
        "log_partition": log_partition,
        "log_offset": record.offset,
        "group": key.get("group"),
        "topic": key.get("topic"),
        "partition": key.get("partition"),
        "offset": value.get("offset"),
        "leader_epoch": value.get("leaderEpoch"),
        "metadata": value.get("metadata"),
        "commit_timestamp": value.get("commitTimestamp"),
        "expire_timestamp": value.get("expireTimestamp"),
        "tombstone": decoded.is_tombstone,
        "transactional": transactional,
        "producer_id": producer,
        "recovered": recovered,
        "loaded": False,
        "error": decoded.error,
    }
    for name, value_ in values.items():
        cols[name].append(value_)
    return len(cols["file"]) - 1
