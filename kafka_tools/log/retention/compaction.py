"""`ktool retention --compaction`: what the log cleaner would do to a compacted partition, offline.

As LogCleanerManager / LogCleaner compute it:

* first dirty offset: the partition's entry in `cleaner-offset-checkpoint`, or the log start offset
  (also when the entry lies below the log start or past the log end);
* first uncleanable offset: the active segment's base offset (the active segment is never cleaned);
* clean bytes: the segments below the first dirty offset; dirty bytes: the segments from the one
  holding the first dirty offset up to the active one (`logSegments(from, to)`);
* dirty ratio = dirty / (clean + dirty); the log is cleaned when it is above min.cleanable.dirty.ratio.

A clean drops, in the segments below the active one: a record whose key has a later record in the dirty
section (the cleaner's offset map), the records of aborted transactions (`.txnindex`), and tombstones
and transaction markers past their delete horizon:

* a v2 batch carries its own (KIP-534, Kafka 3.1+; Cleaner.shouldRetainRecord): the first clean that
  keeps a tombstone or a marker stamps the batch with now + delete.retention.ms (`deleteHorizonMs`);
  a later clean drops its tombstones once that time has come (`--now` at or past it), and a marker
  once, besides, no batch of its transaction is left (CleanedTransactionMetadata) and it is not its
  producer's last batch in the log (kept for fencing while the producer is alive);
* a v0/v1 message set has none: a tombstone goes when its segment was last modified before the last
  clean segment's mtime minus delete.retention.ms.

Sizes after cleaning are estimated per batch (its bytes times the share of its records kept), since the
cleaner rewrites batches.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kafka_tools.format.index import read_txn_index
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.log.files.views import PartitionFiles
from kafka_tools.log.retention.config import TopicSettings

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"


@dataclass
class CompactionPreview:
    first_dirty_offset: int
    first_dirty_source: str
    first_uncleanable_offset: int
    clean_bytes: int
    dirty_bytes: int
    dirty_ratio: float
    min_ratio: float
    would_clean: bool
    records_examined: int = 0
    superseded: int = 0  # an older record of a key with a later record in the dirty section
    tombstones_expired: int = 0
    tombstones_kept: int = 0
    aborted: int = 0
    control_batches: int = 0
    markers_expired: int = 0  # transaction markers past their delete horizon, their transaction gone
    no_key: int = 0
    bytes_before: int = 0  # of the cleanable segments (all but the active one)
    bytes_after: int = 0  # estimated
    keys: int = 0  # distinct keys in the dirty section
    notes: list[str] = field(default_factory=list)

    @property
    def dropped(self) -> int:
        return self.superseded + self.tombstones_expired + self.aborted

    def as_dict(self) -> dict[str, object]:
        return {
            "firstDirtyOffset": self.first_dirty_offset,
            "firstDirtySource": self.first_dirty_source,
            "firstUncleanableOffset": self.first_uncleanable_offset,
            "cleanBytes": self.clean_bytes,
            "dirtyBytes": self.dirty_bytes,
            "dirtyRatio": round(self.dirty_ratio, 6),
            "minCleanableDirtyRatio": self.min_ratio,
            "wouldClean": self.would_clean,
            "recordsExamined": self.records_examined,
            "recordsDropped": self.dropped,
            "superseded": self.superseded,
            "tombstonesExpired": self.tombstones_expired,
            "tombstonesKept": self.tombstones_kept,
            "aborted": self.aborted,
            "controlBatches": self.control_batches,
            "markersExpired": self.markers_expired,
            "noKey": self.no_key,
            "distinctKeys": self.keys,
            "bytesBefore": self.bytes_before,
            "bytesAfterEstimate": self.bytes_after,
            "notes": self.notes,
        }


@dataclass
class _Entry:
    """One record as the cleaner judges it."""

    offset: int
    key: bytes | None
    tombstone: bool
    aborted: bool
    segment: int  # index of its segment


@dataclass
class _Batch:
    size: int
    records: list[_Entry]
    control: bool = False
    magic: int = 2
    producer_id: int = -1
    transactional: bool = False
    delete_horizon: int | None = None  # v2: KIP-534's deleteHorizonMs
    markers: int = 0  # a control batch's records


def preview_compaction(
    part: PartitionFiles,
    settings: TopicSettings,
    log_start: int | None,
    log_end: int,
    checkpoints,
    problems: list[str],
    warnings: list[str],
    now_ms: int | None = None,
) -> CompactionPreview:
    """The cleaner's view of one compacted partition as of `now_ms` (None: a broker before KIP-534,
    whose v2 tombstones and markers follow the segments' mtimes as v0/v1 ones do); unparseable
    checkpoints go to `problems`."""
    segments = part.segments
    stats = [os.stat(s.log) for s in segments]
    sizes = [st.st_size for st in stats]
    mtimes = [st.st_mtime_ns // 1_000_000 for st in stats]
    start = segments[0].base_offset if log_start is None else log_start
    checkpoint, present = checkpoints.offset(part, CLEANER_CHECKPOINT, problems)
    if checkpoint is None:
        first_dirty, source = (
            start,
            f"log start offset (no entry in {CLEANER_CHECKPOINT})"
            if present
            else (f"log start offset (no {CLEANER_CHECKPOINT})"),
        )
    elif checkpoint < start:
        first_dirty, source = start, f"log start offset ({CLEANER_CHECKPOINT} says {checkpoint}, below it)"
    elif checkpoint > log_end:
        first_dirty, source = (
            start,
            f"log start offset ({CLEANER_CHECKPOINT} says {checkpoint}, past the log end)",
        )
    else:
        first_dirty, source = checkpoint, CLEANER_CHECKPOINT
    uncleanable = max(first_dirty, segments[-1].base_offset)
    bases = [s.base_offset for s in segments]
    clean_bytes = sum(sz for b, sz in zip(bases, sizes, strict=True) if b < first_dirty)
    floor = max((b for b in bases if b <= first_dirty), default=None)
    lo = floor if floor is not None else -1
    dirty_bytes = sum(sz for b, sz in zip(bases, sizes, strict=True) if lo <= b < uncleanable)
    total = clean_bytes + dirty_bytes
    ratio = dirty_bytes / total if total else 0.0
    min_ratio = float(settings.min_cleanable_ratio.value)  # type: ignore[arg-type]
    prev = CompactionPreview(
        first_dirty,
        source,
        uncleanable,
        clean_bytes,
        dirty_bytes,
        ratio,
        min_ratio,
        total > 0 and ratio > min_ratio,
    )
    if settings.cleaner_enable is not None and not settings.cleaner_enable.value:
        prev.would_clean = False
        prev.notes.append(
            f"the log cleaner is off (log.cleaner.enable=false, {settings.cleaner_enable.source})"
        )
    cleanable = [i for i, b in enumerate(bases) if b < uncleanable]
    if not cleanable:
        prev.notes.append("only the active segment: nothing the cleaner may touch")
        return prev
    aborted = _aborted_ranges(part, cleanable, warnings)
    batches: list[_Batch] = []
    for i in cleanable:
        batches += _read_batches(part, i, aborted, prev, warnings)
    # The cleaner's offset map: the last offset of each key in the dirty section.
    latest: dict[bytes, int] = {}
    for batch in batches:
        for r in batch.records:
            if r.key is not None and first_dirty <= r.offset < uncleanable and not r.aborted:
                latest[r.key] = r.offset
    prev.keys = len(latest)
    clean_segments = [i for i in cleanable if bases[i] < first_dirty]
    horizon = mtimes[clean_segments[-1]] - int(settings.delete_retention_ms.value) if clean_segments else 0  # type: ignore[arg-type]
    expired_markers = (
        set()
        if now_ms is None
        else _expired_markers(batches, _last_batch_of_producers(part, batches), now_ms)
    )
    for n, batch in enumerate(batches):
        prev.bytes_before += batch.size
        if batch.control:
            prev.control_batches += 1
            if n in expired_markers:
                prev.markers_expired += batch.markers
            else:
                prev.bytes_after += batch.size
            continue
        kept = 0
        for r in batch.records:
            prev.records_examined += 1
            if r.aborted:
                prev.aborted += 1
            elif r.key is None:
                prev.no_key += 1
                kept += 1
            elif latest.get(r.key, -1) > r.offset:
                prev.superseded += 1
            elif r.tombstone and (
                (batch.delete_horizon is not None and now_ms >= batch.delete_horizon)
                if batch.magic >= 2 and now_ms is not None
                else not mtimes[r.segment] > horizon
            ):
                prev.tombstones_expired += 1
            else:
                prev.tombstones_kept += r.tombstone
                kept += 1
        if batch.records:
            prev.bytes_after += batch.size * kept // len(batch.records)
    if prev.no_key:
        prev.notes.append(f"{prev.no_key} records without a key (kept here; a cleaner rejects them)")
    if prev.control_batches:
        prev.notes.append(
            "transaction markers are kept until their delete horizon, their transaction gone "
            "(a producer's last one while it is alive: assumed here)"
        )
    if not prev.would_clean:
        prev.notes.append(
            f"dirty ratio {ratio:.3f} is not above min.cleanable.dirty.ratio {min_ratio}: "
            "the cleaner leaves it"
        )
    return prev


def _last_batch_of_producers(part: PartitionFiles, batches: list[_Batch]) -> set[int]:
    """Indexes into `batches` of each producer's last batch in the whole log (the active segment's
    batches, read by header, may come later): the cleaner keeps it for the producer's state."""
    last: dict[int, int] = {}
    for n, batch in enumerate(batches):
        if batch.producer_id >= 0:
            last[batch.producer_id] = n
    later = set()
    for entry in iter_log_entries(part.segments[-1].log):
        if isinstance(entry, RecordBatch) and entry.producer_id >= 0:
            later.add(entry.producer_id)
    return {n for pid, n in last.items() if pid not in later}


def _expired_markers(batches: list[_Batch], producers_last: set[int], now_ms: int) -> set[int]:
    """Indexes of the control batches a clean at `now_ms` drops: past their delete horizon, with no
    batch of their transaction left since the producer's marker before (CleanedTransactionMetadata:
    a marker goes only once the records it decided are gone), and not the producer's last batch."""
    open_data: set[int] = set()  # producers with a transactional batch since their last marker
    out = set()
    for n, batch in enumerate(batches):
        if not batch.transactional:
            continue
        if not batch.control:
            open_data.add(batch.producer_id)
            continue
        had_data = batch.producer_id in open_data
        open_data.discard(batch.producer_id)
        horizon = batch.delete_horizon
        if not had_data and horizon is not None and now_ms >= horizon and n not in producers_last:
            out.add(n)
    return out


def _aborted_ranges(
    part: PartitionFiles, cleanable: list[int], warnings: list[str]
) -> dict[int, list[tuple[int, int]]]:
    """producer id -> [(first, last offset)] of aborted transactions, from the `.txnindex` files."""
    out: dict[int, list[tuple[int, int]]] = {}
    for i in cleanable:
        path = part.segments[i].txn_index
        if path is None:
            continue
        try:
            entries, _tail = read_txn_index(path)
        except (OSError, ValueError) as exc:
            warnings.append(f"{path}: not read: {exc}")
            continue
        for e in entries:
            out.setdefault(e.producer_id, []).append((e.first_offset, e.last_offset))
    return out


def _read_batches(
    part: PartitionFiles, i: int, aborted, prev: CompactionPreview, warnings: list[str]
) -> list[_Batch]:
    seg = part.segments[i]
    out: list[_Batch] = []
    for entry in iter_log_entries(seg.log):
        if not hasattr(entry, "next_offset"):
            if getattr(entry, "is_fatal", False) and entry.kind.value != "zero-tail":
                warnings.append(
                    f"{seg.log}: byte {entry.position}: {entry.message} (the rest is not previewed)"
                )
            continue
        try:
            if isinstance(entry, RecordBatch):
                header = {
                    "producer_id": entry.producer_id,
                    "transactional": entry.is_transactional,
                    "delete_horizon": entry.delete_horizon_ms,
                }
                if entry.is_control:
                    out.append(_Batch(entry.size, [], True, markers=entry.count, **header))
                    continue
                ranges = aborted.get(entry.producer_id, ()) if entry.is_transactional else ()
                records = [
                    _Entry(r.offset, r.key, r.value is None, any(a <= r.offset <= b for a, b in ranges), i)
                    for r in entry.records()
                ]
                out.append(_Batch(entry.size, records, **header))
            else:
                inner = entry.inner_messages()
                records = [_Entry(m.offset, m.key, m.value is None, False, i) for m in inner]
                out.append(_Batch(entry.entry_size, records, magic=entry.magic))
        except RecordDecodeError as exc:
            warnings.append(f"{seg.log}: byte {exc.position}: {exc} (that batch is not previewed)")
    return out
