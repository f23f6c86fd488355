"""The `.index` and `.timeindex` a cut segment gets: what the broker's `LogSegment.recover` writes for the
bytes it keeps, computed from the segment before anything is changed."""

from __future__ import annotations

from kafka_tools.format import index
from kafka_tools.format.kinds import FileKind, kind_of
from kafka_tools.format.problems import Problem
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.log.files.dirs import Segment


def build_indexes(seg: Segment, keep_bytes: int, interval: int) -> tuple[bytes, bytes]:
    """The `.index` and `.timeindex` bytes LogSegment.recover writes for the first `keep_bytes` of a
    segment: an entry after every `interval` bytes naming the batch's last offset (KAFKA-7487), the time
    index following the largest timestamp so far, plus its final entry as a closed segment has."""
    base = seg.base_offset
    offsets = bytearray()
    times = bytearray()
    valid = 0
    last_entry_at = 0
    max_ts, max_ts_offset = -1, base
    last_time = (-1, base)
    if kind_of(seg.log) == FileKind.KAFKA07:
        return b"", b""  # Kafka 0.7 kept no such indexes
    for entry in iter_log_entries(seg.log, end=keep_bytes):
        if isinstance(entry, Problem):
            break
        ts = getattr(entry, "max_timestamp", getattr(entry, "timestamp", -1))
        if ts > max_ts:
            max_ts, max_ts_offset = ts, entry.last_offset
        if valid - last_entry_at > interval:
            offsets += index.OFFSET_INDEX_ENTRY.pack(entry.last_offset - base, valid)
            if max_ts > last_time[0]:
                times += index.TIME_INDEX_ENTRY.pack(max_ts, max_ts_offset - base)
                last_time = (max_ts, max_ts_offset)
            last_entry_at = valid
        valid += entry.entry_size
    if max_ts > last_time[0]:
        times += index.TIME_INDEX_ENTRY.pack(max_ts, max_ts_offset - base)
    return bytes(offsets), bytes(times)
