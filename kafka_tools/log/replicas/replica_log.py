"""One replica's partition as `replicas diff` reads it: entries (batches, messages, wrappers) found by
offset through `log/reads/locate.py` (segment by file name, position by the `.index`, batches stepped over
by their headers), each identified by what its CRC covers, so two replicas can be compared without
decoding records; the records and bytes a replica holds in an offset range; two replicas compared at
offsets (probes, bisection) or entry by entry."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kafka_tools.errors import FindingsError, KtoolError, os_error_line
from kafka_tools.log.files.views import PartitionLog, open_partition, segment_for
from kafka_tools.log.reads.locate import Frame, SegmentReader, frames_from

PROBE_CHUNK = 64 * 1024  # a probe reads from an index entry (every 4 KiB by default) to one batch
PROBE_CACHE = 4096  # entries remembered by probed offset
COUNT_LIMIT = 256 << 20  # records of a range above this many bytes are not counted (bytes still are)


class ReplicaUnreadable(KtoolError):
    """A replica cannot be read (exit 3): a missing dir, a damaged batch where a probe needs one."""


@dataclass(frozen=True, slots=True)
class Entry:
    """One batch (v2) or message/wrapper (v0/v1) as the comparison sees it."""

    segment: int
    position: int
    size: int
    magic: int
    first_offset: int | None  # v0/v1 wrappers: unknown without decompression
    last_offset: int
    crc: int
    computed_crc: int
    epoch: int | None  # v2: partitionLeaderEpoch
    records: int | None  # v2: the header's count; v0/v1: 1, None for a compressed wrapper

    @property
    def key(self) -> tuple:
        """Equal keys, equal content: the CRC covers the records (and, v0/v1, the inner offsets)."""
        return (self.magic, self.first_offset, self.last_offset, self.crc, self.computed_crc)


@dataclass
class RangeStats:
    """What one replica holds in an offset range."""

    records: int | None  # None: not counted (over COUNT_LIMIT bytes)
    bytes: int


class ReplicaLog:
    """One replica's partition, read through locate's segment list and index; entries are cached per
    probed offset so a binary search never reads a batch twice."""

    def __init__(self, path: str, label: str | None = None) -> None:
        try:
            self.part: PartitionLog = open_partition(path)
        except KtoolError as exc:
            raise ReplicaUnreadable(str(exc)) from None
        self.path = path
        self.label = label or path
        self._readers: dict[int, SegmentReader] = {}
        self._probed: dict[int, Entry | None] = {}

    def close(self) -> None:
        for r in self._readers.values():
            r.close()
        self._readers.clear()

    def _reader(self, k: int) -> SegmentReader:
        r = self._readers.get(k)
        if r is None:
            if len(self._readers) >= 8:
                old = next(iter(self._readers))
                self._readers.pop(old).close()
            try:
                r = SegmentReader(self.part.segments[k].log, PROBE_CHUNK)
            except KtoolError as exc:
                raise ReplicaUnreadable(str(exc)) from None
            self._readers[k] = r
        return r

    def _entry(self, k: int, frame: Frame) -> Entry:
        from kafka_tools.format.message_set import parse_message
        from kafka_tools.format.record_batch import parse_batch_header
        from kafka_tools.format.record_reader import RecordDecodeError

        try:
            if frame.magic == 2:
                b = parse_batch_header(frame.buf, frame.at, frame.position)
                return Entry(
                    k, frame.position, frame.entry_size, 2, b.base_offset, b.last_offset, b.crc,
                    b.computed_crc, b.partition_leader_epoch, b.records_count,
                )  # fmt: skip
            m = parse_message(frame.buf, frame.at, frame.position, frame.at + frame.entry_size)
            count = None if m.is_compressed else 1
            return Entry(
                k, frame.position, frame.entry_size, m.magic, None, m.offset, m.crc, m.computed_crc, None,
                count,
            )  # fmt: skip
        except RecordDecodeError as exc:
            seg = self.part.segments[k].log
            raise ReplicaUnreadable(f"{seg}: position {exc.position}: {exc}") from None

    def entry_at(self, offset: int) -> Entry | None:
        """The entry holding `offset`, or the first above it (a compacted gap); None past the end."""
        if offset in self._probed:
            return self._probed[offset]
        entry = self._entry_at(offset)
        if len(self._probed) >= PROBE_CACHE:
            self._probed.clear()
        self._probed[offset] = entry
        return entry

    def _entry_at(self, offset: int) -> Entry | None:
        if self.part.kafka07:
            raise ReplicaUnreadable(f"{self.path}: Kafka 0.7 logs have no replicas to compare")
        k = segment_for(self.part, offset)
        try:
            while k < len(self.part.segments):
                seg = self.part.segments[k]
                for frame in frames_from(seg, offset, self._reader(k), self.part.warnings):
                    if frame.last_offset >= offset:
                        return self._entry(k, frame)
                k += 1
        except FindingsError as exc:
            raise ReplicaUnreadable(str(exc)) from None
        return None

    def entries(self, start: int, end: int) -> Iterator[Entry]:
        """Entries holding offsets in [start, end), in order (each segment from its index entry)."""
        k = segment_for(self.part, start)
        first = True
        try:
            while k < len(self.part.segments):
                seg = self.part.segments[k]
                reader = self._reader(k)
                frames = frames_from(seg, start, reader, self.part.warnings) if first else reader.frames(0)
                first = False
                for frame in frames:
                    if frame.last_offset < start:
                        continue
                    entry = self._entry(k, frame)
                    if entry.first_offset is not None and entry.first_offset >= end:
                        return
                    yield entry
                    if entry.last_offset >= end - 1:
                        return
                k += 1
        except FindingsError as exc:
            raise ReplicaUnreadable(str(exc)) from None

    def check_crcs(self, in_flight: bool) -> None:
        """Every entry checked against its CRC (the walk `validate` makes), so that damage is never
        taken for divergence: the probes compare a few entries, and a byte flipped between two of
        them would read as "identical". The newest segment's tail of a replica a broker still
        writes (`in_flight`) may be half copied: it is left to the probes."""
        from kafka_tools.format.problems import ProblemKind
        from kafka_tools.log.checks.findings import ValidateOptions
        from kafka_tools.log.checks.segment_checks import scan_segment

        segments = self.part.segments[:-1] if in_flight else self.part.segments
        for seg in segments:
            try:
                report = scan_segment(Path(seg.log), ValidateOptions())
            except OSError as exc:
                raise ReplicaUnreadable(os_error_line(seg.log, exc)) from None
            bad = next((f for f in report.findings if f.kind == ProblemKind.CRC_MISMATCH.value), None)
            if bad is not None:
                at = "" if bad.offset is None else f", offset {bad.offset}"
                raise ReplicaUnreadable(
                    f"{self.label}: {bad.file}: position {bad.position}{at}: {bad.message}: damage, not "
                    "divergence (`ktool validate` names it; `ktool truncate` cuts it as the broker's "
                    "recovery would)"
                )

    def segment_size(self, k: int) -> int:
        try:
            return os.path.getsize(self.part.segments[k].log)
        except OSError as exc:
            raise ReplicaUnreadable(os_error_line(self.part.segments[k].log, exc)) from None


def range_stats(log: ReplicaLog, start: int, end: int) -> RangeStats:
    """Records and bytes a replica holds in [start, end): whole entries (truncation removes whole
    batches), the records inside them counted unless the range is over COUNT_LIMIT bytes."""
    if end <= start:
        return RangeStats(0, 0)
    first = log.entry_at(start)
    if first is None or (first.first_offset is not None and first.first_offset >= end):
        return RangeStats(0, 0)
    last = log.entry_at(end - 1)
    if last is None or (last.first_offset is not None and last.first_offset >= end):
        last = None
    size = _bytes_between(log, first, last)
    if size > COUNT_LIMIT:
        return RangeStats(None, size)
    records = 0
    for entry in log.entries(start, end):
        records += _records_in(log, entry, start, end)
    return RangeStats(records, size)


def _bytes_between(log: ReplicaLog, first: Entry, last: Entry | None) -> int:
    """Bytes from `first`'s start to the end of `last` (None: to the end of the log)."""
    if last is None:
        k_end = len(log.part.segments) - 1
        end_pos = log.segment_size(k_end)
    else:
        k_end, end_pos = last.segment, last.position + last.size
    if first.segment == k_end:
        return end_pos - first.position
    total = log.segment_size(first.segment) - first.position
    total += sum(log.segment_size(k) for k in range(first.segment + 1, k_end))
    return total + end_pos


def _records_in(log: ReplicaLog, entry: Entry, start: int, end: int) -> int:
    from kafka_tools.format.message_set import parse_message
    from kafka_tools.format.record_batch import parse_batch_header
    from kafka_tools.format.record_reader import RecordDecodeError

    if entry.records is not None:
        if entry.magic != 2:
            return 1 if start <= entry.last_offset < end else 0
        if start <= entry.first_offset and entry.last_offset < end:
            return entry.records
    reader = log._reader(entry.segment)
    frame = next(reader.frames(entry.position))
    try:
        if entry.magic == 2:
            batch = parse_batch_header(frame.buf, frame.at, frame.position)
            if start <= batch.base_offset and batch.last_offset < end:
                return batch.records_count
            return sum(1 for r in batch.records() if start <= r.offset < end)
        m = parse_message(frame.buf, frame.at, frame.position, frame.at + frame.entry_size)
        if not m.is_compressed:
            return 1 if start <= m.offset < end else 0
        return sum(1 for inner in m.inner_messages() if start <= inner.offset < end)
    except RecordDecodeError as exc:
        raise ReplicaUnreadable(
            f"{log.part.segments[entry.segment].log}: position {exc.position}: {exc}"
        ) from None


def entry_start(log: ReplicaLog, offset: int) -> int:
    """The first offset of the entry holding `offset` (`offset` itself past the log's end)."""
    entry = log.entry_at(offset)
    if entry is None or entry.last_offset < offset:
        return offset
    if entry.first_offset is not None:
        return min(entry.first_offset, offset)
    from kafka_tools.format.message_set import parse_message
    from kafka_tools.format.record_reader import RecordDecodeError

    frame = next(log._reader(entry.segment).frames(entry.position))
    try:
        m = parse_message(frame.buf, frame.at, frame.position, frame.at + frame.entry_size)
        inner = m.inner_messages() if m.is_compressed else [m]
    except RecordDecodeError as exc:
        raise ReplicaUnreadable(
            f"{log.part.segments[entry.segment].log}: position {exc.position}: {exc}"
        ) from None
    return min(inner[0].offset if inner else offset, offset)


class Comparison:
    """Two replicas' entries compared at offsets, each probe counted."""

    def __init__(self, a: ReplicaLog, b: ReplicaLog) -> None:
        self.a, self.b = a, b
        self.entries = 0  # entries looked at, both sides (a probe's may come from the cache)

    def equal_at(self, offset: int) -> bool:
        self.entries += 2
        ea, eb = self.a.entry_at(offset), self.b.entry_at(offset)
        if ea is None or eb is None:
            return ea is None and eb is None
        return ea.key == eb.key

    def first_change(self, same: int, other: int, want_equal: bool) -> int:
        """The smallest offset in (same, other] where equal_at turns to `want_equal` (it is
        `not want_equal` at `same` and `want_equal` at `other`): a binary search."""
        while other - same > 1:
            mid = (same + other) // 2
            if self.equal_at(mid) == want_equal:
                other = mid
            else:
                same = mid
        return other

    def ranges_by_search(self, lo: int, hi: int, probes: list[int]) -> list[tuple[int, int]]:
        """Differing ranges of [lo, hi) from equality at sorted probe offsets (lo and hi-1 among them),
        each edge found by a binary search between two probes that disagree."""
        points = sorted({p for p in probes if lo <= p < hi} | {lo, hi - 1})
        verdicts = [self.equal_at(p) for p in points]
        out: list[tuple[int, int]] = []
        start = None if verdicts[0] else lo
        steps = list(zip(points, verdicts, strict=True))
        for (p, v), (q, w) in zip(steps, steps[1:], strict=False):
            if v and not w:
                start = self.first_change(p, q, want_equal=False)
            elif not v and w:
                out.append((start, self.first_change(p, q, want_equal=True)))
                start = None
        if start is not None:
            out.append((start, hi))
        return out

    def _counted(self, entries: Iterator[Entry]) -> Iterator[Entry]:
        for entry in entries:
            self.entries += 1
            yield entry

    def ranges_by_scan(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """Differing ranges of [lo, hi), entry by entry (flat memory: two entry walks in step)."""
        ia, ib = self._counted(self.a.entries(lo, hi)), self._counted(self.b.entries(lo, hi))
        ea, eb = next(ia, None), next(ib, None)
        next_a = next_b = lo  # the offset after each side's previous entry
        out: list[tuple[int, int]] = []
        start: int | None = None
        while ea is not None and eb is not None:
            if ea.key == eb.key:
                if start is not None:
                    out.append((start, _first(ea, max(next_a, next_b))))
                    start = None
                next_a = next_b = ea.last_offset + 1
                ea, eb = next(ia, None), next(ib, None)
                continue
            if start is None:
                start = max(lo, min(_first(ea, next_a), _first(eb, next_b)))
            la, lb = ea.last_offset, eb.last_offset
            if la <= lb:
                next_a, ea = la + 1, next(ia, None)
            if lb <= la:
                next_b, eb = lb + 1, next(ib, None)
        if ea is not None or eb is not None:  # one side holds offsets the other has not (a gap)
            start = min(next_a, next_b) if start is None else start
        if start is not None:
            out.append((start, hi))
        return out


def _first(entry: Entry, after_previous: int) -> int:
    """An entry's first offset; a v0/v1 wrapper's is taken as the offset after the entry before it."""
    return entry.first_offset if entry.first_offset is not None else after_previous
