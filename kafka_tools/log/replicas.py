"""The service behind `ktool replicas diff`: copies of one partition (one per broker) compared offline.

Per replica: the log start and end, the high watermark and recovery point from the log dir's
checkpoints, the leader-epoch history (`leader-epoch-checkpoint`, and the epochs stamped in v2
batches, found by bisection: epochs never decrease along a log).

Where two replicas diverge: entries are compared by what identifies their content without decoding it
(a v2 batch: base offset, last offset and CRC-32C, which covers everything after the CRC field; a v0/v1
message or compressed wrapper: its offset and CRC), located by a binary search over offsets through
`log/locate.py` (segment by file name, position by the `.index`), so only O(log n) batches are read.
A binary search is only sound on a prefix-then-different shape; when the two ends agree, logs with
leader epochs are probed at every epoch boundary (KIP-101/279 leave no healed divergence between
them), and logs without epochs (Kafka before 0.11 truncates a returning leader to its high watermark
and then copies the new leader's records, so the logs can differ in the middle and agree again
after) are compared entry by entry. `full=True` always compares entry by entry.

What each replica would lose if another became (or stayed) leader, as Kafka of that generation
truncates a follower: before leader epochs (0.8-0.10, or a replica without epochs) to its high
watermark (ReplicaManager.makeFollowers), then to the leader's log end when that is lower
(ReplicaFetcherThread.handleOffsetOutOfRange); with epochs by the OffsetsForLeaderEpoch rounds of
AbstractFetcherThread.getOffsetTruncationState over LeaderEpochFileCache.endOffsetFor (KIP-101,
KIP-279); a follower whose end is below the leader's log start starts over at it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import FindingsError, InputError, KtoolError, UsageError
from kafka_tools.format.checkpoints import (
    CheckpointError,
    EpochEntry,
    read_leader_epoch_checkpoint,
    read_offset_checkpoint,
    read_properties,
)
from kafka_tools.log.dirs import is_log_dir, is_partition_dir
from kafka_tools.log.locate import (
    Frame,
    PartitionLog,
    SegmentReader,
    frames_from,
    log_end_offset,
    open_partition,
    segment_for,
)

HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
PROBE_CHUNK = 64 * 1024  # a probe reads from an index entry (every 4 KiB by default) to one batch
COUNT_LIMIT = 256 << 20  # records of a range above this many bytes are not counted (bytes still are)
MAX_EPOCHS = 10_000
PROBE_CACHE = (
    4096  # entries remembered by probed offset  # epoch transitions looked for in the batches of one replica
)
UNDEFINED = -1
RULES = ("auto", "high-watermark", "leader-epoch")


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
class Replica:
    """One copy of the partition and the facts its files tell."""

    label: str
    path: str
    broker_id: int | None
    log_start: int
    log_end: int
    high_watermark: int | None
    recovery_point: int | None
    checkpoint_epochs: list[EpochEntry] | None  # None: no leader-epoch-checkpoint file
    batch_epochs: list[EpochEntry]  # (epoch, first offset) as stamped in the v2 batches
    magic: int | None  # of the last entry (None: empty log)
    segments: int
    in_flight: bool  # a broker holds the log dir's lock: its newest tail may still move
    warnings: list[str] = field(default_factory=list)

    @property
    def epochs(self) -> list[EpochEntry]:
        """The history the broker would load: the checkpoint, else the batches' (0.11+ recovery)."""
        if self.checkpoint_epochs:
            return self.checkpoint_epochs
        return self.batch_epochs

    @property
    def last_epoch(self) -> int | None:
        history = self.epochs
        return history[-1].epoch if history else None


@dataclass
class RangeStats:
    """What one replica holds in an offset range."""

    records: int | None  # None: not counted (over COUNT_LIMIT bytes)
    bytes: int


@dataclass
class DivergentRange:
    start: int
    end: int  # exclusive
    sides: tuple[RangeStats, RangeStats]  # what replica a and replica b hold there


@dataclass
class PairDiff:
    """Two replicas compared over the offsets both hold."""

    a: int
    b: int
    common_start: int
    common_end: int  # exclusive
    status: str  # identical, prefix, diverged, no-overlap
    method: str  # binary-search, epoch-probes, full-compare
    ranges: list[DivergentRange]
    entries_compared: int
    epochs_part_at: int | None = None  # where the two leader-epoch histories first disagree

    @property
    def first_difference(self) -> int | None:
        return self.ranges[0].start if self.ranges else None


@dataclass
class Truncation:
    """What `follower` does if `leader` leads: where it truncates and what that removes."""

    leader: int
    follower: int
    rule: str  # high-watermark, leader-epoch
    truncate_to: int
    start_over_at: int | None  # below the leader's log start: the whole log goes, fetching starts here
    lost_start: int
    lost_end: int  # exclusive: the follower's log end
    lost: RangeStats
    steps: list[str]
    divergent_after: list[DivergentRange]  # below the truncation point and still different: silent

    @property
    def lost_offsets(self) -> int:
        return max(self.lost_end - self.lost_start, 0)


@dataclass
class ReplicasReport:
    topic: str
    partition: int
    replicas: list[Replica]
    pairs: list[PairDiff]
    truncations: list[Truncation]
    ranking: list[int]  # replica indexes, the one KIP-966 would pick first
    new_epoch: int | None  # the epoch an election would start (used for the epoch rule)

    @property
    def status(self) -> str:
        statuses = {p.status for p in self.pairs}
        for s in ("diverged", "prefix", "no-overlap"):
            if s in statuses:
                return s
        return "identical"


# ----------------------------------------------------------------------------------------- inputs


def resolve_partition_dirs(paths: list[str], partition: str | None) -> list[str]:
    """Each path's copy of the partition: a partition dir as given, or a log dir's `partition` (or its
    only partition, when it holds one)."""
    if len(paths) < 2:
        raise UsageError("give two or more copies of the partition (one per broker)")
    out: list[str] = []
    for raw in paths:
        path = os.path.normpath(raw)
        if not os.path.exists(path):
            raise InputError(f"{raw}: no such file or directory")
        p = Path(path)
        if is_partition_dir(p):
            if partition is not None and p.name != partition:
                raise UsageError(f"{raw}: a copy of {p.name}, not of {partition}")
            out.append(path)
        elif is_log_dir(p):
            names = sorted(c.name for c in p.iterdir() if is_partition_dir(c))
            if partition is None:
                if len(names) != 1:
                    listed = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
                    raise UsageError(
                        f"{raw}: a log dir of {len(names)} partitions ({listed}): name one with --partition"
                    )
                partition = names[0]
            if partition not in names:
                raise InputError(f"{raw}: no partition {partition} in this log dir")
            out.append(os.path.join(path, partition))
        else:
            raise InputError(f"{raw}: not a partition directory (topic-N) nor a Kafka log dir")
    names = {os.path.basename(p) for p in out}
    if len(names) > 1:
        raise UsageError(f"not copies of one partition: {', '.join(sorted(names))}")
    return out


def _checkpoint_offset(
    log_dir: str, name: str, topic: str, partition: int, warnings: list[str]
) -> int | None:
    path = os.path.join(log_dir, name)
    if not os.path.isfile(path):
        return None
    try:
        entries = read_offset_checkpoint(path).entries
    except (CheckpointError, OSError) as exc:
        warnings.append(f"{path}: unreadable ({exc}); not used")
        return None
    return next((e.offset for e in entries if e.topic == topic and e.partition == partition), None)


def _broker_id(log_dir: str) -> int | None:
    path = os.path.join(log_dir, "meta.properties")
    try:
        value = read_properties(path).get("broker.id")
        return int(value) if value is not None else None
    except (OSError, CheckpointError, ValueError):
        return None


def _lock_held(log_dir: str) -> bool:
    from kafka_tools.format.segment import safe_to_map

    # safe_to_map says False exactly when a broker holds the log dir's lock (or it cannot tell)
    return os.path.exists(os.path.join(log_dir, ".lock")) and not safe_to_map(os.path.join(log_dir, "x", "y"))


# --------------------------------------------------------------------------------------- a replica


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
        from kafka_tools.format.record_batch import RecordDecodeError, parse_batch_header

        try:
            if frame.magic == 2:
                b = parse_batch_header(frame.buf, frame.at, frame.position)
                return Entry(
                    k, frame.position, frame.size, 2, b.base_offset, b.last_offset, b.crc,
                    b.computed_crc, b.partition_leader_epoch, b.records_count,
                )  # fmt: skip
            m = parse_message(frame.buf, frame.at, frame.position, frame.at + frame.size)
            count = None if m.is_compressed else 1
            return Entry(
                k, frame.position, frame.size, m.magic, None, m.offset, m.crc, m.computed_crc, None, count
            )
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

    def segment_size(self, k: int) -> int:
        try:
            return os.path.getsize(self.part.segments[k].log)
        except OSError as exc:
            raise ReplicaUnreadable(f"{self.part.segments[k].log}: {exc.strerror or exc}") from None


def read_replica(log: ReplicaLog) -> Replica:
    """The facts of one replica: offsets, checkpoints, epoch histories."""
    part = log.part
    log_dir = os.path.dirname(os.path.abspath(log.path))
    warnings = part.warnings
    log_end = log_end_offset(part, PROBE_CHUNK)
    log_start = min(part.log_start_offset, log_end)
    hw = _checkpoint_offset(log_dir, HIGH_WATERMARK_CHECKPOINT, part.topic, part.partition, warnings)
    rp = _checkpoint_offset(log_dir, RECOVERY_POINT_CHECKPOINT, part.topic, part.partition, warnings)
    checkpoint = None
    epoch_file = os.path.join(log.path, "leader-epoch-checkpoint")
    if os.path.isfile(epoch_file):
        try:
            entries = read_leader_epoch_checkpoint(epoch_file).entries
            # as the broker loads it: nothing at or past the log end, nothing below the log start but
            # the epoch holding it (LeaderEpochFileCache.truncateFromEnd / truncateFromStart)
            checkpoint = [e for e in entries if e.start_offset < log_end]
            below = [e for e in checkpoint if e.start_offset <= log_start]
            if len(below) > 1:
                checkpoint = [EpochEntry(below[-1].epoch, log_start)] + checkpoint[len(below) :]
        except (CheckpointError, OSError) as exc:
            warnings.append(f"{epoch_file}: unreadable ({exc}); the batches' epochs are used")
    last = log.entry_at(log_end - 1) if log_end > log_start else None
    batch_epochs = _batch_epochs(log, log_start, log_end, last)
    rep = Replica(
        log.label, log.path, _broker_id(log_dir), log_start, log_end, hw, rp, checkpoint, batch_epochs,
        None if last is None else last.magic, len(part.segments), _lock_held(log_dir), warnings,
    )  # fmt: skip
    if checkpoint and batch_epochs and _disagree(checkpoint, batch_epochs):
        warnings.append(
            f"{epoch_file}: says {_history_text(checkpoint)} but the batches say "
            f"{_history_text(batch_epochs)}; the broker uses the checkpoint"
        )
    if hw is not None and hw > log_end:
        warnings.append(
            f"{log_dir}/{HIGH_WATERMARK_CHECKPOINT}: high watermark {hw} is past the log end {log_end}"
        )
    return rep


def _disagree(checkpoint: list[EpochEntry], batches: list[EpochEntry]) -> bool:
    # A checkpoint may name an epoch with no batch yet (a leader elected at its log end): drop those.
    epochs = {e.epoch for e in batches}
    kept = [(e.epoch, e.start_offset) for e in checkpoint if e.epoch in epochs]
    return kept != [(e.epoch, e.start_offset) for e in batches if e.epoch in {c.epoch for c in checkpoint}]


def _history_text(history: list[EpochEntry]) -> str:
    return " ".join(f"{e.epoch}@{e.start_offset}" for e in history) or "-"


def _batch_epochs(log: ReplicaLog, start: int, end: int, last: Entry | None) -> list[EpochEntry]:
    """(epoch, first offset) of each epoch stamped in the v2 batches of [start, end): a bisection
    per epoch change, as epochs never decrease along a log."""
    if last is None or last.magic != 2 or last.epoch is None or last.epoch < 0:
        return []
    first = log.entry_at(start)
    lo = start
    if first is None:
        return []
    if first.magic != 2:  # an upgraded log: v0/v1 entries, then v2 from some offset on
        a, b = start, end - 1  # magic(a) < 2, magic(b) == 2
        while b - a > 1:
            mid = (a + b) // 2
            e = log.entry_at(mid)
            if e is not None and e.magic == 2:
                b = mid
            else:
                a = mid
        first = log.entry_at(b)
        lo = b
    history = [EpochEntry(first.epoch, max(first.first_offset, start))]
    while history[-1].epoch != last.epoch and len(history) < MAX_EPOCHS:
        current = history[-1].epoch
        a, b = lo, end - 1  # epoch(a) == current, epoch(b) > current
        while b - a > 1:
            mid = (a + b) // 2
            e = log.entry_at(mid)
            if e is not None and e.epoch is not None and e.epoch > current:
                b = mid
            else:
                a = mid
        e = log.entry_at(b)
        if e is None or e.epoch is None or e.epoch <= current:
            break  # epochs go down somewhere: no monotone history to find
        history.append(EpochEntry(e.epoch, e.first_offset))
        lo = e.last_offset
    return [e for e in history if e.epoch >= 0]


# ----------------------------------------------------------------------------------- comparison


def _range_stats(log: ReplicaLog, start: int, end: int) -> RangeStats:
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
    from kafka_tools.format.record_batch import RecordDecodeError, parse_batch_header

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
        m = parse_message(frame.buf, frame.at, frame.position, frame.at + frame.size)
        if not m.is_compressed:
            return 1 if start <= m.offset < end else 0
        return sum(1 for inner in m.inner_messages() if start <= inner.offset < end)
    except RecordDecodeError as exc:
        raise ReplicaUnreadable(
            f"{log.part.segments[entry.segment].log}: position {exc.position}: {exc}"
        ) from None


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


def compare_pair(
    logs: list[ReplicaLog], replicas: list[Replica], a: int, b: int, full: bool = False
) -> PairDiff:
    ra, rb = replicas[a], replicas[b]
    lo, hi = max(ra.log_start, rb.log_start), min(ra.log_end, rb.log_end)
    if lo >= hi:
        empty = ra.log_end <= ra.log_start or rb.log_end <= rb.log_start
        status = "prefix" if empty else "no-overlap"
        return PairDiff(a, b, lo, max(lo, hi), status, "none", [], 0)
    cmp = Comparison(logs[a], logs[b])
    ends_agree = cmp.equal_at(lo) and cmp.equal_at(hi - 1)
    if full:
        method, spans = "full-compare", cmp.ranges_by_scan(lo, hi)
    elif ra.epochs and rb.epochs:
        # every epoch boundary probed, bisection between probes that disagree: with leader epochs a
        # divergence starts at an epoch boundary and is cut by truncation (KIP-101/279), never healed
        boundaries = {e.start_offset for e in ra.epochs + rb.epochs + ra.batch_epochs + rb.batch_epochs}
        boundaries |= {x - 1 for x in boundaries}
        method = "epoch-probes" if ends_agree else "binary-search"
        spans = cmp.ranges_by_search(lo, hi, sorted(boundaries))
    elif not ends_agree:
        method, spans = "binary-search", cmp.ranges_by_search(lo, hi, [])
    else:  # no epochs and the ends agree: Kafka before 0.11 can leave a healed divergence inside
        method, spans = "full-compare", cmp.ranges_by_scan(lo, hi)
    read = cmp.entries  # to locate, not to count
    ranges = [
        DivergentRange(s, e, (_range_stats(logs[a], s, e), _range_stats(logs[b], s, e))) for s, e in spans
    ]
    if ranges:
        status = "diverged"
    elif ra.log_start == rb.log_start and ra.log_end == rb.log_end:
        status = "identical"
    else:
        status = "prefix"
    return PairDiff(a, b, lo, hi, status, method, ranges, read, epochs_part_at(ra, rb))


def epochs_part_at(ra: Replica, rb: Replica) -> int | None:
    """The first offset below both log ends where the two epoch histories say different things (an
    epoch starting at a different offset, or only on one side): where KIP-101/279 truncation cuts."""
    ha, hb = ra.epochs, rb.epochs
    if not ha or not hb:
        return None
    end = min(ra.log_end, rb.log_end)
    for ea, eb in zip(ha, hb, strict=False):
        if (ea.epoch, ea.start_offset) != (eb.epoch, eb.start_offset):
            at = min(ea.start_offset, eb.start_offset)
            return at if at < end else None
    longer = ha if len(ha) > len(hb) else hb
    shorter = min(len(ha), len(hb))
    if len(longer) > shorter and longer[shorter].start_offset < end:
        return longer[shorter].start_offset
    return None


# ------------------------------------------------------------------------------------ truncation


def end_offset_for(history: list[EpochEntry], requested: int, log_end: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor: (epoch, end offset) for `requested`, or (-1, -1)."""
    if requested == UNDEFINED or not history:
        return UNDEFINED, UNDEFINED
    if history[-1].epoch == requested:
        return requested, log_end
    higher = next((e for e in history if e.epoch > requested), None)
    if higher is None:
        return UNDEFINED, UNDEFINED
    floor = [e for e in history if e.epoch <= requested]
    if not floor:
        return requested, higher.start_offset
    return floor[-1].epoch, higher.start_offset


def epoch_truncation(
    follower: list[EpochEntry],
    follower_end: int,
    high_watermark: int,
    leader: list[EpochEntry],
    leader_end: int,
) -> tuple[int, list[str]]:
    """Where a follower truncates by OffsetsForLeaderEpoch rounds (AbstractFetcherThread
    .getOffsetTruncationState): each round asks the leader for the end of the follower's latest
    epoch; an epoch the follower does not know makes it truncate to its own end of the epoch below
    and ask again (KIP-279)."""
    cache = list(follower)
    end = follower_end
    steps: list[str] = []
    for _ in range(len(cache) + 2):
        if not cache:
            steps.append(f"no leader epoch left: truncate to the high watermark {min(high_watermark, end)}")
            return min(high_watermark, end), steps
        asked = cache[-1].epoch
        epoch, offset = end_offset_for(leader, asked, leader_end)
        if offset == UNDEFINED:
            steps.append(
                f"epoch {asked}: the leader knows no end for it: truncate to the high watermark "
                f"{min(high_watermark, end)}"
            )
            return min(high_watermark, end), steps
        own_epoch, own_end = end_offset_for(cache, epoch, end)
        if own_end == UNDEFINED:
            t = min(offset, end)
            steps.append(
                f"epoch {asked}: leader says epoch {epoch} ends at {offset}, unknown here: truncate to {t}"
            )
            return t, steps
        if own_epoch != epoch:
            t = min(own_end, end)
            steps.append(
                f"epoch {asked}: leader says epoch {epoch} ends at {offset}; not an epoch of this replica: "
                f"truncate to {t} (the end of its epoch {own_epoch}) and ask again"
            )
            end = t
            cache = [e for e in cache if e.start_offset < t]
            continue
        t = min(own_end, offset, end)
        steps.append(
            f"epoch {asked}: leader says epoch {epoch} ends at {offset}; here it ends at {own_end}: "
            f"truncate to {t}"
        )
        return t, steps
    return min(high_watermark, end), steps


def truncation(
    logs: list[ReplicaLog], replicas: list[Replica], pair: PairDiff | None, leader: int, follower: int,
    new_epoch: int, rule: str,
) -> Truncation:  # fmt: skip
    """What `follower` would do if `leader` were elected (or stayed leader)."""
    f, lead = replicas[follower], replicas[leader]
    hw = min(f.high_watermark or 0, f.log_end)
    use_epochs = rule == "leader-epoch" or (rule == "auto" and bool(f.epochs) and bool(lead.epochs))
    if use_epochs:
        # an election starts a new epoch at the new leader's log end (an unclean one too)
        history = list(lead.epochs) + [EpochEntry(new_epoch, lead.log_end)]
        t, steps = epoch_truncation(f.epochs, f.log_end, hw, history, lead.log_end)
        used = "leader-epoch"
    else:
        t = hw
        source = "checkpoint" if f.high_watermark is not None else "no checkpoint: 0"
        steps = [f"truncate to the high watermark {t} ({source})"]
        used = "high-watermark"
    if t > lead.log_end:
        steps.append(f"fetch at {t} is out of range: truncate to the leader's log end {lead.log_end}")
        t = lead.log_end
    start_over = None
    if t < lead.log_start:
        steps.append(
            f"{t} is below the leader's log start {lead.log_start}: the whole log goes, fetching starts there"
        )
        start_over = lead.log_start
    # Log.truncateTo cuts at the start of the entry holding t: a batch or wrapper goes whole
    cut = f.log_start if start_over is not None else max(_entry_start(logs[follower], t), f.log_start)
    if cut < t and start_over is None:
        steps.append(f"offset {t} is inside a batch: the whole batch goes, from offset {cut}")
    lost_start = cut
    t_kept = cut if start_over is None else t
    lost = _range_stats(logs[follower], lost_start, f.log_end)
    after: list[DivergentRange] = []
    if pair is not None and start_over is None:
        for r in pair.ranges:
            if r.start >= t_kept:
                continue
            end = min(r.end, t_kept)
            if end == r.end:
                after.append(r)
            else:
                fa, fb = (follower, leader) if pair.a == follower else (leader, follower)
                after.append(
                    DivergentRange(
                        r.start,
                        end,
                        (_range_stats(logs[fa], r.start, end), _range_stats(logs[fb], r.start, end)),
                    )
                )
    return Truncation(leader, follower, used, t, start_over, lost_start, f.log_end, lost, steps, after)


def _entry_start(log: ReplicaLog, offset: int) -> int:
    """The first offset of the entry holding `offset` (`offset` itself past the log's end)."""
    entry = log.entry_at(offset)
    if entry is None or entry.last_offset < offset:
        return offset
    if entry.first_offset is not None:
        return min(entry.first_offset, offset)
    from kafka_tools.format.message_set import parse_message
    from kafka_tools.format.record_batch import RecordDecodeError

    frame = next(log._reader(entry.segment).frames(entry.position))
    try:
        m = parse_message(frame.buf, frame.at, frame.position, frame.at + frame.size)
        inner = m.inner_messages() if m.is_compressed else [m]
    except RecordDecodeError as exc:
        raise ReplicaUnreadable(
            f"{log.part.segments[entry.segment].log}: position {exc.position}: {exc}"
        ) from None
    return min(inner[0].offset if inner else offset, offset)


def ranking(replicas: list[Replica]) -> list[int]:
    """KIP-966's choice for an unclean recovery: the highest last epoch, then the longest log."""
    return sorted(
        range(len(replicas)),
        key=lambda i: (
            -(replicas[i].last_epoch if replicas[i].last_epoch is not None else -1),
            -replicas[i].log_end,
            i,
        ),
    )


def diff_replicas(
    paths: list[str], partition: str | None = None, full: bool = False, rule: str = "auto"
) -> ReplicasReport:
    """Compare the copies of one partition named by `paths`; read-only."""
    if rule not in RULES:
        raise UsageError(f"unknown truncation rule {rule!r} (one of {', '.join(RULES)})")
    dirs = resolve_partition_dirs(paths, partition)
    logs = [ReplicaLog(d, p) for d, p in zip(dirs, paths, strict=True)]
    try:
        replicas = [read_replica(log) for log in logs]
        ids = [r.broker_id for r in replicas]
        if None not in ids and len(set(ids)) == len(ids):  # one per broker: name them so
            for r in replicas:
                r.label = f"broker {r.broker_id}"
        pairs = [
            compare_pair(logs, replicas, a, b, full)
            for a in range(len(logs))
            for b in range(a + 1, len(logs))
        ]
        by_pair = {(p.a, p.b): p for p in pairs}
        last = [r.last_epoch for r in replicas if r.last_epoch is not None]
        new_epoch = max(last) + 1 if last else None
        truncations = [
            truncation(logs, replicas, by_pair[min(ld, f), max(ld, f)], ld, f, new_epoch or 0, rule)
            for ld in range(len(logs))
            for f in range(len(logs))
            if ld != f
        ]
    finally:
        for log in logs:
            log.close()
    part = logs[0].part
    return ReplicasReport(
        part.topic, part.partition, replicas, pairs, truncations, ranking(replicas), new_epoch
    )


def lost_record_events(path: str, start: int, end: int) -> Iterator:
    """dump-log's EntryEvents of the records a replica holds in [start, end) (what a truncation there
    removes), read as `ktool read --offset start` reads them."""
    from kafka_tools.log.read import ReadNote, ReadStart, read_partition

    if end <= start:
        return
    try:
        for item in read_partition(path, ReadStart("offset", start)):
            if isinstance(item, ReadNote):
                continue  # the replica's own warnings were reported with its facts
            if not _trim(item, end):
                return
            yield item
    except FindingsError as exc:
        if "is out of range" in str(exc):
            return  # only control batches (transaction markers) there: no record a consumer sees
        raise ReplicaUnreadable(str(exc)) from None


def _trim(event, end: int) -> bool:
    """Keep only the records below `end`; False when none is left."""
    if event.records is not None:
        event.records = [r for r in event.records if r.offset < end]
        return bool(event.records)
    if event.inner is not None:
        event.inner = [m for m in event.inner if m.offset < end]
        return bool(event.inner)
    return event.entry.offset < end
