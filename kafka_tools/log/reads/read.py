"""The service behind `ktool read`: the records of a partition directory from an offset or a time, as
a consumer fetching from the broker would get them, located without decoding what comes before.

`log/reads/locate.py` finds the segment and the position; this module decodes the batch holding the offset,
drops what lies below it (inside compressed wrappers and v2 batches too), and goes on batch by batch and
segment by segment until `count` records are shown or the log ends. Events are `dump-log`'s
(`EntryEvent`), so its renderers print them; warnings and notes come as `ReadNote`s.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_tools.errors import FindingsError
from kafka_tools.format.checksums import crc_finding
from kafka_tools.format.index import IndexGap, entry_bytes, time_index_pairs
from kafka_tools.format.shared_methods import FrozenSharedMethods
from kafka_tools.log.files.views import PartitionLog, ReadNote, SegmentFiles, open_partition, segment_for
from kafka_tools.log.reads.locate import (
    DEFAULT_CHUNK,
    Frame,
    SegmentGone,
    SegmentReader,
    UntrustedIndex,
    frames_from,
    log_end_offset,
)

if TYPE_CHECKING:
    from kafka_tools.format.record_reader import RecordDecodeError

INTERNAL_TOPICS = {"__consumer_offsets": "offsets", "__transaction_state": "transactions"}  # as dump-log


@dataclass(init=False, slots=True, repr=False, eq=False)
class ReadStart(FrozenSharedMethods):
    """Where to start: `offset` (value N), `timestamp` (value T, epoch ms), `earliest`, `latest` or
    `max-timestamp` (the first record with the largest timestamp)."""

    kind: str
    value: int | None = None

    def __init__(self, kind: str, value: int | None = None) -> None:
        object.__setattr__(self, "kind", kind)
        object.__setattr__(self, "value", value)


def read_partition(
    path: str, start: ReadStart, count: int | None = None, chunk: int = DEFAULT_CHUNK
) -> Iterator:
    """EntryEvents (records from the start, at most `count`) and ReadNotes, in output order. Raises
    FindingsError (exit 1) for a start out of range, with the valid range, and for damaged data."""
    part = open_partition(path)
    if start.kind == "max-timestamp":
        largest = yield from largest_timestamp(part, chunk)
        if largest is None:
            raise FindingsError(f"{path}: no record carries a timestamp")
        start = ReadStart("timestamp", largest)
    if start.kind == "timestamp":
        offset = yield from offset_for_time(part, start.value, chunk)
        if offset is None:
            end = log_end_offset(part, chunk)
            raise FindingsError(
                f"{path}: no record has a timestamp at or after {start.value} (log end offset {end})"
            )
    elif start.kind == "earliest":
        offset = part.log_start_offset
    elif start.kind == "latest":
        end = log_end_offset(part, chunk)
        yield from _notes(part)
        if end <= part.log_start_offset:
            raise FindingsError(f"{path}: the partition is empty (log start = log end = {end})")
        count = count or 1
        if part.kafka07:  # offsets are byte positions: the starts of the last messages
            offset = _last_kafka07_starts(part, count, chunk)
        else:
            offset = max(part.log_start_offset, end - count)
    else:
        offset = start.value
    if offset < part.log_start_offset:
        raise _out_of_range(part, offset, chunk)
    if part.kafka07:
        yield from _read_kafka07(part, offset, count, chunk)
    else:
        yield from _read(part, offset, count, chunk, exact=start.kind == "offset")


def _notes(part: PartitionLog) -> Iterator[ReadNote]:
    while part.warnings:
        yield ReadNote(part.warnings.pop(0))


def _out_of_range(part: PartitionLog, offset: int, chunk: int, end: int | None = None) -> FindingsError:
    if end is None:
        end = log_end_offset(part, chunk)
    start = part.log_start_offset
    if end <= start:
        return FindingsError(
            f"{part.path}: offset {offset} is out of range: the partition is empty (log end {end})"
        )
    return FindingsError(
        f"{part.path}: offset {offset} is out of range: valid offsets are {start} to {end - 1} "
        f"(log start offset {start}, log end offset {end})"
    )


def _read(part: PartitionLog, offset: int, count: int | None, chunk: int, exact: bool) -> Iterator:
    from kafka_tools.log.reads.dump_events import EntryEvent

    remaining = count
    shown_any = False
    last_seen: int | None = None
    internal = INTERNAL_TOPICS.get(part.topic)
    first = segment_for(part, offset)
    for k in range(first, len(part.segments)):
        seg = part.segments[k]
        try:
            reader = SegmentReader(seg.log, chunk, in_flight=_in_flight(part, k))
        except SegmentGone:
            if shown_any:
                raise
            # Retention removed it since the listing: what it held is below the log start now.
            raise _out_of_range(_relisted(part), offset, chunk) from None
        with reader:
            frames = frames_from(seg, offset, reader, part.warnings) if k == first else reader.frames(0)
            for frame in frames:
                yield from _notes(part)
                last_seen = frame.last_offset
                if frame.last_offset < offset:
                    continue
                event, problem, damage = _decode(seg, frame, offset, remaining, EntryEvent)
                if internal is not None and event is not None:
                    _decode_internal(internal, event)
                if problem is not None:
                    yield ReadNote(problem, problem=True)
                shown = _shown(event)
                if not shown:
                    if damage is not None:
                        raise damage
                    continue
                if not shown_any and exact and shown[0] != offset:
                    yield ReadNote(
                        f"{part.path}: offset {offset} is not in the log (removed by compaction, or a gap "
                        f"between segments); reading from offset {shown[0]}, the next one"
                    )
                shown_any = True
                yield event
                if damage is not None:  # after the records before it, as a consumer meets it
                    raise damage
                if remaining is not None:
                    remaining -= len(shown)
                    if remaining <= 0:
                        return
        yield from _notes(part)
    if not shown_any:
        end = None if last_seen is None else last_seen + 1
        if end is not None and part.segments:
            end = max(end, part.segments[-1].base_offset)
        raise _out_of_range(part, offset, chunk, end)


def _in_flight(part: PartitionLog, k: int) -> bool:
    """Segment k is the one a running broker appends to (its last entry may be half written)."""
    return part.live and k == len(part.segments) - 1


def _relisted(part: PartitionLog) -> PartitionLog:
    """The partition listed again, after the broker changed it (its warnings kept)."""
    fresh = open_partition(part.path)
    fresh.warnings[:0] = part.warnings
    return fresh


def _decode_internal(mode: str, event) -> None:
    """`__consumer_offsets` / `__transaction_state` records decoded by their schemas, as dump-log does."""
    from kafka_tools.log.reads.internal_records import decode_internal

    if event.records is not None:
        shown = event.records
    elif event.inner is not None:
        shown = event.inner
    else:
        shown = [event.entry]
    event.decoded = [decode_internal(mode, r.key, r.value) for r in shown]


def _shown(event) -> list[int]:
    """Offsets of the records an event shows."""
    if event is None:
        return []
    if event.records is not None:
        return [r.offset for r in event.records]
    if event.inner is not None:
        return [m.offset for m in event.inner]
    return [event.entry.offset]


def _decode(seg: SegmentFiles, frame: Frame, offset: int, remaining: int | None, make) -> tuple:
    """(the EntryEvent of a frame holding records at or above `offset` (at most `remaining`), a
    problem line when its CRC does not match, the FindingsError to raise after the event when a v2
    batch's records are damaged: the records before the damage are read one by one, as a consumer
    reads them, and shown first)."""
    from kafka_tools.format.message_set import parse_message
    from kafka_tools.format.record_batch import parse_batch_header, records_until_damage
    from kafka_tools.format.record_reader import RecordDecodeError

    try:
        if frame.magic == 2:
            entry = parse_batch_header(frame.buf, frame.at, frame.position)
            if entry.is_control:  # transaction markers: a consumer never sees them
                return None, _crc_problem(seg, entry), None
            records, damage = records_until_damage(entry, offset, remaining)
            event = make(seg.log, entry, records=records)
            return event, _crc_problem(seg, entry), damage and _undecodable(seg, damage)
        entry = parse_message(frame.buf, frame.at, frame.position, frame.at + frame.entry_size)
        if entry.is_compressed:
            inner = [m for m in entry.inner_messages() if m.offset >= offset][:remaining]
            return make(seg.log, entry, inner=inner), _crc_problem(seg, entry), None
        return make(seg.log, entry), _crc_problem(seg, entry), None
    except RecordDecodeError as exc:
        raise _undecodable(seg, exc) from None


def _undecodable(seg: SegmentFiles, exc: RecordDecodeError) -> FindingsError:
    return FindingsError(f"{seg.log}: position {exc.position}: records undecodable: {exc}")


def _crc_problem(seg: SegmentFiles, entry) -> str | None:
    if entry.is_valid:
        return None
    return f"{seg.log}: position {entry.position} (offset {entry.last_offset}): crc-mismatch: " + crc_finding(
        entry.crc, entry.computed_crc
    )


def _read_kafka07(part: PartitionLog, offset: int, count: int | None, chunk: int) -> Iterator:
    """0.7: an offset is a byte position (the segment's base plus the message's position in it); one
    that is not where a message starts is an error naming the valid offsets around it."""
    from kafka_tools.format.kafka07 import parse_kafka07
    from kafka_tools.format.record_reader import RecordDecodeError
    from kafka_tools.log.reads.dump_events import EntryEvent

    remaining = count
    started = False
    first = segment_for(part, offset)
    end = part.segments[first].base_offset if part.segments else 0
    for k in range(first, len(part.segments)):
        seg = part.segments[k]
        with SegmentReader(seg.log, chunk) as reader:
            before = None
            for frame in reader.kafka07_frames(0):
                at = seg.base_offset + frame.position
                end = at + frame.entry_size
                if not started:
                    if at < offset:
                        before = at
                        continue
                    if at > offset:
                        raise _not_a_boundary(part, offset, before, at)
                    started = True
                message = parse_kafka07(frame.buf, frame.at, frame.position, seg.base_offset)
                try:
                    inner = message.inner_messages() if message.is_compressed else None
                except RecordDecodeError as exc:
                    raise FindingsError(
                        f"{seg.log}: position {exc.position}: records undecodable: {exc}"
                    ) from None
                if not message.is_valid:
                    yield ReadNote(
                        f"{seg.log}: position {frame.position} (offset {at}): crc-mismatch: "
                        + crc_finding(message.crc, message.computed_crc),
                        problem=True,
                    )
                if inner is not None and remaining is not None:
                    inner = inner[:remaining]
                yield EntryEvent(seg.log, message, inner=inner)
                if remaining is not None:
                    remaining -= len(inner) if inner is not None else 1
                    if remaining <= 0:
                        return
            if not started and before is not None and k == len(part.segments) - 1 and end != offset:
                raise _not_a_boundary(part, offset, before, None if offset < end else end)
    if not started:
        raise _out_of_range(part, offset, chunk, end)


def _last_kafka07_starts(part: PartitionLog, count: int, chunk: int) -> int:
    """The offset of the `count`-th message from the end of the last non-empty 0.7 segment."""
    for seg in reversed(part.segments):
        with SegmentReader(seg.log, chunk) as reader:
            starts = [seg.base_offset + f.position for f in reader.kafka07_frames(0)]
        if starts:
            return starts[-min(count, len(starts))]
    return part.log_start_offset


def _not_a_boundary(part: PartitionLog, offset: int, before: int | None, after: int | None) -> FindingsError:
    near = " and ".join(str(o) for o in (before, after) if o is not None)
    return FindingsError(
        f"{part.path}: offset {offset} is not where a message starts (Kafka 0.7 offsets are byte "
        f"positions); the nearest valid offsets are {near}"
    )


class NoTimestamps(FindingsError):
    """Message format v0 (Kafka before 0.10) carries no timestamp: no record can be found by time."""


def offset_for_time(part: PartitionLog, timestamp: int, chunk: int = DEFAULT_CHUNK):
    """The offset of the first record whose timestamp is at or after `timestamp` (the broker's
    ListOffsets), None when there is none: the first segment whose largest timestamp reaches it, its
    `.timeindex` for where to start, then the batches. Magic 0 and 0.7 have no timestamps: an error.
    A generator: it yields ReadNotes and returns the offset."""
    if part.kafka07:
        raise FindingsError(f"{part.path}: Kafka 0.7 messages carry no timestamp: use --offset")
    log_start = part.log_start_offset  # ListOffsets never answers below it
    for k in range(segment_for(part, log_start), len(part.segments)):
        seg = part.segments[k]
        start = max(_time_index_start(seg, timestamp, part.warnings), log_start)
        yield from _notes(part)
        try:
            reader = SegmentReader(seg.log, chunk, in_flight=_in_flight(part, k))
        except SegmentGone as gone:
            yield ReadNote(f"{gone}; its records are below the log start now: skipped")
            continue
        with reader:
            for frame in frames_from(seg, start, reader, part.warnings):
                found = _first_at_or_after(seg, frame, timestamp, log_start)
                if found is not None:
                    yield from _notes(part)
                    return found
        yield from _notes(part)
    return None


def largest_timestamp(part: PartitionLog, chunk: int = DEFAULT_CHUNK):
    """The largest record timestamp of the partition, None when no record carries one: what ListOffsets'
    MAX_TIMESTAMP (-3) asks for the offset of. Every batch header is read; no record is decoded. A
    generator: it yields ReadNotes and returns the timestamp."""
    if part.kafka07:
        raise FindingsError(f"{part.path}: Kafka 0.7 messages carry no timestamp: use --offset")
    largest = None
    for seg in part.segments:
        with SegmentReader(seg.log, chunk) as reader:
            for frame in frames_from(seg, seg.base_offset, reader, part.warnings):
                ts = _frame_timestamp(seg, frame)
                if ts is not None and ts >= 0 and (largest is None or ts > largest):
                    largest = ts
        yield from _notes(part)
    return largest


def _frame_timestamp(seg: SegmentFiles, frame: Frame) -> int | None:
    """The largest timestamp of one entry (a v1 wrapper carries its inner messages' largest)."""
    from kafka_tools.format.message_set import parse_message
    from kafka_tools.format.record_batch import parse_batch_header
    from kafka_tools.format.record_reader import RecordDecodeError

    try:
        if frame.magic == 0:
            raise NoTimestamps(
                f"{seg.log}: position {frame.position}: message format v0 has no timestamps: use --offset"
            )
        if frame.magic == 2:
            # Control batches count: the broker's segment max timestamp and ListOffsets take the
            # transaction markers' timestamps too (UnifiedLog.fetchOffsetByTimestamp, MAX_TIMESTAMP).
            return parse_batch_header(frame.buf, frame.at, frame.position).max_timestamp
        return parse_message(frame.buf, frame.at, frame.position, frame.at + frame.entry_size).timestamp
    except RecordDecodeError as exc:
        raise FindingsError(f"{seg.log}: position {exc.position}: records undecodable: {exc}") from None


def _time_index_start(seg: SegmentFiles, timestamp: int, warnings: list[str]) -> int:
    """Where to look in a segment for `timestamp`: the offset of the last `.timeindex` entry below it
    (every record before that is older), the base offset when there is none or the index is not to be
    trusted (then the segment is scanned). When every entry is below it, the records after the last
    entry are still looked at, as the broker does (LogSegment.readLargestTimestamp): the entry for
    them is written only when the segment rolls or the broker stops cleanly, so a running broker's
    active segment holds newer records than its last entry says."""
    path = seg.time_index
    if path is None or not os.path.exists(path):
        return seg.base_offset
    try:
        entries = _time_entries(path)
    except (UntrustedIndex, OSError) as why:
        warnings.append(f"{path}: {why}: not used, scanning the segment")
        return seg.base_offset
    if not entries:
        return seg.base_offset
    if entries[-1][0] < timestamp:
        return seg.base_offset + entries[-1][1]  # only the tail after the last entry can hold it
    below = [rel for ts, rel in entries if ts < timestamp]
    return seg.base_offset + below[-1] if below else seg.base_offset


def _time_entries(path: str) -> list[tuple[int, int]]:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size % 12:
            raise UntrustedIndex(f"size {size} is not a multiple of 12")
        try:
            data = entry_bytes(f.fileno(), size, 12)  # a preallocated zero tail is not read
        except IndexGap:
            raise UntrustedIndex("entries not increasing") from None
    entries = time_index_pairs(data)
    while len(entries) > 1 and entries[-1] == (0, 0):
        entries.pop()  # the preallocated tail
    if entries and entries[0] == (0, 0) and len(entries) == 1:
        return []
    for (t1, o1), (t2, o2) in zip(entries, entries[1:], strict=False):
        if t2 < t1 or o2 <= o1:
            raise UntrustedIndex("entries not increasing")
    return entries


def _first_at_or_after(seg: SegmentFiles, frame: Frame, timestamp: int, log_start: int = 0) -> int | None:
    """The offset of the frame's first record at or above `log_start` whose timestamp is at or after
    `timestamp`, None when there is none."""
    if frame.last_offset < log_start:
        return None
    from kafka_tools.format.message_set import parse_message
    from kafka_tools.format.record_batch import parse_batch_header
    from kafka_tools.format.record_reader import RecordDecodeError

    try:
        if frame.magic == 0:
            raise NoTimestamps(
                f"{seg.log}: position {frame.position}: message format v0 has no timestamps: use --offset"
            )
        if frame.magic == 2:
            batch = parse_batch_header(frame.buf, frame.at, frame.position)
            if batch.max_timestamp < timestamp:  # a control batch's marker counts (searchForTimestamp)
                return None
            wanted = (r.offset for r in batch.iter_records() if r.timestamp >= timestamp)
            return next((o for o in wanted if o >= log_start), None)
        message = parse_message(frame.buf, frame.at, frame.position, frame.at + frame.entry_size)
        if message.timestamp < timestamp and not message.is_compressed:
            return None
        if not message.is_compressed:
            return message.offset
        inner = message.inner_messages()
        return next((m.offset for m in inner if m.timestamp >= timestamp and m.offset >= log_start), None)
    except RecordDecodeError as exc:
        raise FindingsError(f"{seg.log}: position {exc.position}: records undecodable: {exc}") from None
