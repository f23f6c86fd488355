"""What the tasks of `ktool scan` do, as plain Python over local files.

Nothing here imports pyspark: the same functions run inside a Spark executor, in one process (the
benchmark's baseline, the tests' references) and on a temporary local copy of a segment read from
HDFS or S3. The work:

- `range_starts` (on the driver): where a large segment may be cut into byte ranges, always at an
  entry boundary, found by hopping from one log header to the next as the decoder's walk does;
- `check_segment`: the checks `ktool validate` makes on one segment (CRCs, framing, offsets, the
  `.index`/`.timeindex` beside it), done by the task that decodes the segment's first range;
- `batch_chunks` / `record_chunks`: decode the entries that start in bytes [start, end) of a segment,
  every batch decompressed and every record decoded (what `dump-log --deep-iteration` does), as
  column lists for the `batches` and `records` tables;
- `replay_offsets`: walk one `__consumer_offsets` partition in offset order and mark the commit the
  group coordinator would load for each (group, topic, partition).
"""

from __future__ import annotations

import errno
import mmap
import operator
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from itertools import islice
from pathlib import Path

from kafka_tools.format import accel
from kafka_tools.format.compression import DecompressionError, codec_label, decompress
from kafka_tools.format.entry_headers import FrameFault, iter_headers
from kafka_tools.format.kafka07 import Kafka07Message, iter_kafka07_entries
from kafka_tools.format.mapping import map_file
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import iter_log_entries, looks_like_text
from kafka_tools.log.checks.findings import SegmentReport, ValidateOptions
from kafka_tools.log.checks.index_checks import read_indexes
from kafka_tools.log.checks.segment_checks import check_segment_in_partition, scan_segment
from kafka_tools.log.files.dirs import Segment
from kafka_tools.pipeline.tables import BATCHES

CHUNK_ROWS = 65536  # rows per Arrow batch handed to Spark: bounded memory whatever the segment size
CHUNK_BYTES = 64 * 1024 * 1024  # and key + value bytes per `records` batch (large values: fewer rows)
MAX_HOPS = 4_000_000  # header hops per segment on the driver before it stops looking for more cuts
_TIMESTAMP = operator.itemgetter(1)  # Record.timestamp


@dataclass(frozen=True)
class SegmentSpec:
    """One segment file as the driver found it. `file` is the name every row and finding carries (as
    the user wrote the path, like `ktool validate`); `path` is where a task opens it."""

    file: str
    path: str
    topic: str | None
    partition: int | None
    base_offset: int
    size: int
    kafka07: bool = False
    in_partition: bool = True  # False: a file given on its own (no index or partition checks)
    offset_index: tuple[str, str] | None = None  # (name, path)
    time_index: tuple[str, str] | None = None

    @property
    def where(self) -> dict:
        return {"file": self.file, "topic": self.topic, "partition": self.partition}


@dataclass
class SegmentTotals:
    """What decoding a segment's entries found: the `segments` table's decoded columns."""

    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    codecs: set[str] = field(default_factory=set)
    magic: set[int] = field(default_factory=set)
    min_timestamp: int | None = None
    max_timestamp: int | None = None

    def merge(self, other: SegmentTotals) -> None:
        """Fold in the totals of another range of the same segment."""
        self.batches += other.batches
        self.records += other.records
        for name, pick in (
            ("first_offset", min),
            ("last_offset", max),
            ("min_timestamp", min),
            ("max_timestamp", max),
        ):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, theirs if mine is None else mine if theirs is None else pick(mine, theirs))
        self.codecs |= other.codecs
        self.magic |= other.magic

    def add_columns(self, cols: dict[str, list]) -> None:
        """Fold in a chunk of `batches` columns (as `tasks.batch_chunks` yields them)."""
        if not cols["position"]:
            return
        self.batches += len(cols["position"])
        self.records += sum(n for n in cols["records"] if n is not None)
        self.first_offset = _min(self.first_offset, min(cols["base_offset"]))
        self.last_offset = _max(self.last_offset, max(cols["last_offset"]))
        self.codecs.update(cols["codec"])
        self.magic.update(cols["magic"])
        present = [t for t in cols["min_timestamp"] if t is not None]
        if present:
            self.min_timestamp = _min(self.min_timestamp, min(present))
        present = [t for t in cols["max_timestamp"] if t is not None]
        if present:
            self.max_timestamp = _max(self.max_timestamp, max(present))

    def add_arrow(self, batch) -> None:
        """Fold in a `batches` Arrow batch (as `batch_columns.batch_batches` yields them)."""
        import pyarrow.compute as pc

        if not batch.num_rows:
            return
        self.batches += batch.num_rows
        self.records += pc.sum(batch.column("records")).as_py() or 0
        self.first_offset = _min(self.first_offset, pc.min(batch.column("base_offset")).as_py())
        self.last_offset = _max(self.last_offset, pc.max(batch.column("last_offset")).as_py())
        self.codecs.update(pc.unique(batch.column("codec")).to_pylist())
        self.magic.update(pc.unique(batch.column("magic")).to_pylist())
        low = pc.min(batch.column("min_timestamp")).as_py()
        if low is not None:
            self.min_timestamp = _min(self.min_timestamp, low)
        high = pc.max(batch.column("max_timestamp")).as_py()
        if high is not None:
            self.max_timestamp = _max(self.max_timestamp, high)


def _min(a: int | None, b: int) -> int:
    return b if a is None else min(a, b)


def _max(a: int | None, b: int) -> int:
    return b if a is None else max(a, b)


# -- splitting -----------------------------------------------------------------------------------


def range_starts(spec: SegmentSpec, split_bytes: int, max_hops: int = MAX_HOPS) -> list[int]:
    """Starts of byte ranges of about `split_bytes` (the first is 0): positions where an entry begins.

    Found by reading only each entry's 17-byte head (offset, size, magic) and stepping over it, the
    framing `walk_entries` follows, so a range's walk meets exactly the entries a whole-file walk
    meets there. The hop stops wherever that walk would stop, and at anything unusual (an unknown
    magic) or after `max_hops` entries (tiny batches): the last range then runs to the end of the
    file, and its task walks the rest, damage included, as a whole-file walk would.
    """
    starts = [0]
    # A cut needs `split_bytes` before it and `split_bytes // 8` after it: a smaller file is one range,
    # known without the hop (which reads the whole file: ~0.03 s a 128 MiB segment).
    if spec.kafka07 or spec.size < split_bytes + split_bytes // 8:
        return starts
    size = spec.size
    with open(spec.path, "rb") as f:
        for header in islice(iter_headers(f.fileno()), max_hops):
            if type(header) is FrameFault:
                break
            # A well-framed entry begins here: a range may start at it.
            pos = header.position
            if pos - starts[-1] >= split_bytes and size - pos >= split_bytes // 8:
                starts.append(pos)
    return starts


def split_ranges(starts: list[int]) -> list[tuple[int, int | None]]:
    """[start, end) ranges from range starts; the last runs to the end of the file (None)."""
    return [(s, starts[i + 1] if i + 1 < len(starts) else None) for i, s in enumerate(starts)]


# -- checking ------------------------------------------------------------------------------------


def check_segment(spec: SegmentSpec, deep: bool = False) -> SegmentReport:
    """Exactly the per-segment part of `ktool validate` (scan_segment, then the index checks and the
    base-offset check `validate_partition` adds), findings named as the user named the files. `deep`
    (a scan that decodes records): `validate --deep`'s, so a record the decoder cannot read is a
    finding in the table, the summary and the exit code, not a row silently missing."""
    path = Path(spec.path)
    seg = Segment(spec.base_offset, path)
    if spec.in_partition and spec.offset_index is not None:
        seg.offset_index = Path(spec.offset_index[1])
    if spec.in_partition and spec.time_index is not None:
        seg.time_index = Path(spec.time_index[1])
    indexes = read_indexes(seg)  # before the segment, as validate reads them (a broker may append)
    report = scan_segment(path, ValidateOptions(deep=deep), index_positions=indexes.positions)
    if spec.in_partition:
        check_segment_in_partition(seg, report, indexes)
    report.entry_positions = {}  # one entry per batch: too big to send back, and used up
    _rename(spec, report)
    return report


def _rename(spec: SegmentSpec, report: SegmentReport) -> None:
    names = {spec.path: spec.file}
    for index in (spec.offset_index, spec.time_index):
        if index is not None:
            names[index[1]] = index[0]
    report.path = Path(spec.file)
    for f in report.findings:
        f.file = names.get(f.file, f.file)


@contextmanager
def mapped_file(path: str) -> Iterator[mmap.mmap | None]:
    """A segment mapped read-only for the C walks, or None when it is empty (mmap refuses length 0).
    The caller has already asked `safe_to_map`."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            yield None
            return
        held = map_file(f.fileno(), path, size)  # SIGBUS-guarded, held against ktool's writers
        if held is None:
            raise OSError(errno.EBUSY, "being repaired by ktool, or cannot be mapped: scan it again", path)
    try:
        yield held.map
    finally:
        held.close()


def iter_entries(spec: SegmentSpec, start: int = 0, end: int | None = None) -> Iterator:
    """The entries that start in [start, end), as `dump-log` walks them (Problems skipped: the checks
    report those; a text file is no segment and has none)."""
    if spec.size and looks_like_text(spec.path):
        return
    if spec.kafka07:
        walk = iter_kafka07_entries(spec.path, spec.base_offset, start=start, end=end)
    else:
        walk = iter_log_entries(spec.path, start=start, end=end)
    for item in walk:
        if not isinstance(item, Problem):
            yield item


def _new(columns: list[tuple[str, str]], skip: tuple[str, ...] = ("file", "topic", "partition")) -> dict:
    return {name: [] for name, _ in columns if name not in skip}


def batch_chunks(spec: SegmentSpec, start: int = 0, end: int | None = None) -> Iterator[dict[str, list]]:
    """Column lists for the `batches` table (without file/topic/partition), CHUNK_ROWS at a time."""
    cols = _new(BATCHES)
    row = [cols[name] for name, _ in BATCHES[3:]]
    for entry in iter_entries(spec, start, end):
        values = batch_row(entry)
        for column, value in zip(row, values, strict=True):
            column.append(value)
        if len(cols["position"]) >= CHUNK_ROWS:
            yield cols
            cols = _new(BATCHES)
            row = [cols[name] for name, _ in BATCHES[3:]]
    if cols["position"]:
        yield cols


def batch_row(entry) -> tuple:
    """One entry as a `batches` row (position … decode_error), its records decoded to count them."""
    stats = _v2_stats(entry) if type(entry) is RecordBatch else None
    if stats is not None:
        records: list = []
        decoded, min_ts = stats
        error = None
    else:
        try:
            records = entry.records()
            decoded = len(records)
            error = None
        except RecordDecodeError as exc:
            records, decoded, error = [], None, str(exc)
        min_ts = min(map(_TIMESTAMP, records)) if records else None
    if type(entry) is RecordBatch:
        return (
            entry.position,
            entry.base_offset,
            entry.last_offset,
            entry.records_count,
            decoded,
            entry.entry_size,
            2,
            codec_label(entry.codec),
            entry.crc,
            entry.computed_crc,
            entry.is_valid,
            entry.timestamp_type.label,
            min_ts,
            entry.max_timestamp,
            entry.partition_leader_epoch,
            entry.producer_id,
            entry.producer_epoch,
            entry.base_sequence,
            entry.is_transactional,
            entry.is_control,
            error,
        )
    if isinstance(entry, LegacyMessage):
        ts_type = entry.timestamp_type.label
        max_ts = max(map(_TIMESTAMP, records)) if records else entry.timestamp
        if min_ts is None:
            min_ts = entry.timestamp
    else:
        assert isinstance(entry, Kafka07Message)
        ts_type, max_ts, min_ts = "NoTimestampType", -1, -1
    return (
        entry.position,
        records[0].offset if records else entry.offset,
        entry.last_offset,
        decoded,
        decoded,
        entry.entry_size,
        entry.magic,
        codec_label(entry.codec),
        entry.crc,
        entry.computed_crc,
        entry.is_valid,
        ts_type,
        min_ts,
        max_ts,
        None,
        None,
        None,
        None,
        False,
        False,
        error,
    )


def _v2_stats(batch: RecordBatch) -> tuple[int, int | None] | None:
    """(records, smallest timestamp) of a v2 batch as `records()` would count them, read in C without a
    Record each; None when the C paths are off or the records cannot be read (then `records()` runs
    and says why, in its own words)."""
    stats = accel.fast("record_stats")
    if stats is None:
        return None
    args = batch.payload_args()
    try:
        if batch.is_compressed:
            args = (decompress(batch.codec, batch.payload), *args[1:])
        return stats(*args)
    except (RecordDecodeError, DecompressionError):
        return None


def record_chunks(spec: SegmentSpec, start: int = 0, end: int | None = None) -> Iterator[dict[str, list]]:
    """Column lists for the `records` table (without file/topic/partition), about CHUNK_ROWS rows or
    CHUNK_BYTES of keys and values at a time, whichever comes first (a batch's records stay together).

    Records of entries that cannot be decoded are left out (the batch row carries the reason).
    """
    cols: dict[str, list] = {}
    rows = nbytes = 0
    for entry in iter_entries(spec, start, end):
        try:
            records = entry.records()
        except RecordDecodeError:
            continue
        if not records:
            continue
        if not cols:
            cols = {
                "batch_position": [],
                "offset": [],
                "timestamp": [],
                "key": [],
                "value": [],
                "headers": [],
            }
        offsets, timestamps, keys, values, headers = list(zip(*records, strict=False))[:5]
        cols["batch_position"] += [entry.position] * len(records)
        cols["offset"] += offsets
        cols["timestamp"] += timestamps
        cols["key"] += keys
        cols["value"] += values
        cols["headers"] += headers
        rows += len(records)
        nbytes += sum(map(len, filter(None, keys))) + sum(map(len, filter(None, values)))
        if rows >= CHUNK_ROWS or nbytes >= CHUNK_BYTES:
            yield cols
            cols, rows, nbytes = {}, 0, 0
    if cols:
        yield cols


def chunked(cols: dict[str, list], rows: int = CHUNK_ROWS) -> Iterator[dict[str, list]]:
    """Column lists in slices of at most `rows` rows."""
    n = len(next(iter(cols.values()))) if cols else 0
    for lo in range(0, n, rows):
        yield {k: v[lo : lo + rows] for k, v in cols.items()}


def with_path(spec: SegmentSpec, path: str) -> SegmentSpec:
    """The same segment read from another place (a local copy of a remote file)."""
    return replace(spec, path=path)
