"""A span's `__remote_log_metadata` records as flat events, many batches a call: what the tiered
audit's replay needs of a log a 3.9.2 broker wrote one record a batch (a million batches: a Python
step a batch, a record object and nested dicts a value were the audit's cost).

Each record of a non-control batch of `buf[at:end]` (a Span of format/batch_spans.py) is one event:

- `(offset, topic_id, partition, topic, segment_id, state, event_ms, broker_id)`: a value that
  decodes as RemoteLogSegmentMetadataUpdateRecord v0 (apiKey 1), its fields as
  `decode_remote_log_metadata` gives them;
- `(offset, topic_id, partition, topic, segment_id, state, event_ms, broker_id, start_offset,
  end_offset, size, {leader_epoch: offset})`: a RemoteLogSegmentMetadataRecord v0 (apiKey 0), the same;
- `(offset, value)`: any other value (bytes, or None): the caller decodes it;
- `(position, next, None)`: a batch whose records section cannot be read, none of its records: the
  caller reads that batch the ordinary way (the records before the damage, then the error).

`span_events_py` is the reference; `span_events` runs csrc/remote_events.c when it is built (tests
compare the two on fixtures and fuzzed inputs).
"""

from __future__ import annotations

from kafka_tools.format import accel
from kafka_tools.format.kraft.decoder import MetadataDecodeError
from kafka_tools.format.record_batch import (
    BATCH_HEADER,
    CONTROL_MASK,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
)
from kafka_tools.format.record_reader import RecordDecodeError, decode_records_py
from kafka_tools.format.remote_log_metadata import decode_remote_log_metadata_py

Event = tuple  # one of the three shapes above

SEGMENT, UPDATE = 0, 1  # RemoteLogSegmentMetadataRecord's and RemoteLogSegmentMetadataUpdateRecord's apiKeys
SPAN_EVENTS = 4096  # events a call (about): its list stays small, memory flat and in cache


def span_events_py(buf, at: int, end: int, limit: int) -> tuple[list[Event], int]:
    """The events of the batches from `buf[at]`, none past `end`, batch after batch while fewer than
    `limit` events were made; and where it stopped. A batch cut short or running past `end` raises
    ValueError (a span holds framed batches only)."""
    end = min(end, len(buf))
    if at < 0 or at > len(buf):
        at = len(buf)
    out: list[Event] = []
    unpack = BATCH_HEADER.unpack_from
    while at < end and len(out) < limit:
        if end - at < RECORD_BATCH_OVERHEAD:
            raise ValueError(f"a span's batch at {at} is not framed")
        base, length, _, _, _, attributes, _, base_ts, max_ts, _, _, base_seq, count = unpack(buf, at)
        if length < MIN_BATCH_LENGTH or length > end - at - LOG_OVERHEAD:
            raise ValueError(f"a span's batch at {at} is not framed")
        nxt = at + LOG_OVERHEAD + length
        if not attributes & CONTROL_MASK:
            log_append = max_ts if attributes & TIMESTAMP_TYPE_MASK else None
            section = bytes(buf[at + RECORD_BATCH_OVERHEAD : nxt])
            try:
                records = decode_records_py(section, count, base, base_ts, log_append, base_seq)
            except RecordDecodeError:
                out.append((at, nxt, None))
            else:
                out.extend(_event(r.offset, r.value) for r in records)
        at = nxt
    return out, at


def _event(offset: int, value: bytes | None) -> Event:
    if value is None:
        return (offset, None)
    try:
        record = decode_remote_log_metadata_py(value)
    except MetadataDecodeError:
        return (offset, value)
    if record.api_key not in (SEGMENT, UPDATE) or not record.known:
        return (offset, value)
    f = record.fields
    segment = f["remoteLogSegmentId"]
    tip = segment["topicIdPartition"]
    head = (
        offset,
        tip["id"],
        tip["partition"],
        tip["name"],
        segment["id"],
        f["remoteLogSegmentState"],
        f["eventTimestampMs"],
        f["brokerId"],
    )
    if record.api_key == UPDATE:
        return head
    epochs = {e["leaderEpoch"]: e["offset"] for e in f["segmentLeaderEpochs"]}
    return (*head, f["startOffset"], f["endOffset"], f["segmentSizeInBytes"], epochs)


def span_events(buf, at: int, end: int, limit: int = SPAN_EVENTS) -> tuple[list[Event], int]:
    """`span_events_py`, in C when the extension is built (KTOOL_PURE_PYTHON=1: the reference)."""
    fn = accel.fast("remote_span_events")
    return (fn or span_events_py)(buf, at, end, limit)
