"""The `batches` table as Arrow batches, its plain v2 entries walked in C: no Python object a batch.

`tasks.batch_chunks` builds a row per entry from a RecordBatch object and a tuple, a third of `scan
--out` once batches are small (bench/README.md, "which tables are still built from Python lists").
Here the C extension's `batch_columns` walks the runs of v2 batches it can take whole (uncompressed,
CRC-32C matching, records readable) and writes their rows into column buffers pyarrow takes as they
are; any other entry (compressed, damaged, magic 0/1, a frame fault) goes through `tasks.batch_row`,
the Python row, and the walk hands back to C after it. `batch_chunks` stays the reference this is
tested equal to, row for row (tests/pipeline/test_batch_columns.py).

`range_batches` gives the records table's rows in the same walk (the in-process `scan --out
--records`): C adds each plain batch's records to a RecordColumns builder as it counts them, so the
segment is mapped once and the records read once for both tables; the entries C hands back go
through both Python walks (`tasks.batch_row` and `record_columns.fill`).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator

from kafka_tools.format import accel
from kafka_tools.format.compression import codec_label
from kafka_tools.format.mapping import safe_to_map
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.segment import iter_log_entries, looks_like_text
from kafka_tools.pipeline import record_columns, tables
from kafka_tools.pipeline.tasks import (
    CHUNK_BYTES,
    CHUNK_ROWS,
    SegmentSpec,
    batch_chunks,
    batch_row,
    mapped_file,
)

WINDOW = 16 * 1024 * 1024  # bytes walked a call; the pages behind are dropped (peak RSS bounded)
# rows a call at most: C sizes its buffers for the rows that could fit, never more than this many
# (a 16 MiB window could hold 275,000 batch headers: 26 MB of buffers a call, mostly never touched)
STEP_ROWS = 4096

# batch_columns' buffers, in its order: (column, Arrow type name)
_NUMBERS = (
    ("position", "int64"),
    ("base_offset", "int64"),
    ("last_offset", "int64"),
    ("count", "int32"),
    ("records", "int32"),
    ("size", "int32"),
    ("crc", "int64"),
    ("computed_crc", "int64"),
    ("timestamp_type", "int32"),  # 0 CreateTime, 1 LogAppendTime
    ("min_timestamp", "int64"),  # valid where the first bitmap says
    ("max_timestamp", "int64"),
    ("partition_leader_epoch", "int32"),
    ("producer_id", "int64"),
    ("producer_epoch", "int32"),
    ("base_sequence", "int32"),
)
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


def available() -> bool:
    return accel.fast("batch_columns") is not None


def batch_batches(
    spec: SegmentSpec, start: int = 0, end: int | None = None, max_rows: int = CHUNK_ROWS
) -> Iterator:
    """The `batches` table's rows of the entries that start in [start, end), as pyarrow RecordBatches
    of the table's schema (file, topic and partition on every row), at most `max_rows` rows each,
    none empty; the same rows as `tasks.batch_chunks`."""
    walk = accel.fast("batch_columns")
    if (
        walk is None
        or spec.kafka07
        or not spec.size
        or looks_like_text(spec.path)
        or not safe_to_map(spec.path)
    ):
        for cols in batch_chunks(spec, start, end):
            yield tables.arrow_batch(tables.BATCHES, cols, constants=spec.where)
        return
    with mapped_file(spec.path) as mapped:
        if mapped is not None:
            size = len(mapped)
            for _, batch in _walk(
                walk, mapped, spec, start, size if end is None else min(size, end), max_rows
            ):
                yield batch


def range_batches(
    spec: SegmentSpec,
    start: int = 0,
    end: int | None = None,
    max_rows: int = CHUNK_ROWS,
    max_record_rows: int = CHUNK_ROWS,
    max_record_bytes: int = CHUNK_BYTES,
    with_records: bool = True,
) -> Iterator[tuple[str, object]]:
    """The `batches` and `records` tables' rows of the entries that start in [start, end) in one walk:
    ("batches", RecordBatch) and ("records", RecordBatch) pairs, each table's in order, the same rows
    as `batch_batches` and `record_batches(where=False)` (the records' file and topic left empty).
    The v2 batches C takes whole are read once for both (one mapping, one pass over their records);
    any other entry goes through both Python walks. `with_records` False: the batches alone."""
    if not with_records:
        for batch in batch_batches(spec, start, end, max_rows):
            yield "batches", batch
        return
    walk = accel.fast("batch_columns")
    if (
        walk is None
        or not record_columns.available()
        or spec.kafka07
        or not spec.size
        or looks_like_text(spec.path)
        or not safe_to_map(spec.path)
    ):
        for batch in batch_batches(spec, start, end, max_rows):
            yield "batches", batch
        for batch in record_columns.record_batches(
            spec, start, end, max_record_rows, max_record_bytes, where=False
        ):
            yield "records", batch
        return
    records = _Records(spec, max_record_rows, max_record_bytes)
    with mapped_file(spec.path) as mapped:
        if mapped is not None:
            size = len(mapped)
            yield from _walk(
                walk, mapped, spec, start, size if end is None else min(size, end), max_rows, records
            )


class _Records:
    """The records table's builder carried through `_walk`: filled by C with the batches it takes, by
    record_columns' Python walk with the entries it does not; exported when full."""

    def __init__(self, spec: SegmentSpec, max_rows: int, max_bytes: int) -> None:
        self.builder = accel.C.record_columns()
        self.max_rows = max_rows
        self.max_bytes = max_bytes
        self.where = ("", "", spec.partition)  # file and topic: the writer's (TableFile(per_range=True))

    def full(self) -> bool:
        return self.builder.rows >= self.max_rows or self.builder.nbytes >= self.max_bytes

    def export(self):
        import pyarrow as pa

        return pa.record_batch(record_columns.Exported(self.builder.finish(*self.where)))

    def python_entries(self, spec: SegmentSpec, start: int, end: int) -> Iterator[tuple[str, object]]:
        """The records of the entries in [start, end) by record_columns' Python walk."""
        for _ in record_columns.fill(self.builder, spec, start, end):
            if self.full():
                yield "records", self.export()


def _walk(
    walk, mapped: mmap.mmap, spec: SegmentSpec, position: int, limit: int, max_rows: int, records=None
) -> Iterator[tuple[str, object]]:
    """("batches", RecordBatch) pairs of [position, limit), and with `records` (a _Records) the
    ("records", RecordBatch) pairs of the same entries, C adding both rows of a batch in one read."""
    import pyarrow as pa

    schema = tables.arrow_schema(tables.BATCHES)
    held: list = []  # batches not yet yielded, fewer than max_rows rows in all
    rows = 0
    dropped = position - position % mmap.PAGESIZE
    more = () if records is None else (records.builder, records.max_rows, records.max_bytes)
    while position < limit:
        room = min(max_rows - rows, STEP_ROWS)
        n, stop, buffers, bits = walk(mapped, position, min(limit, position + WINDOW), room, *more)
        if n:
            held.append(_from_buffers(pa, schema, spec, n, buffers, bits))
            rows += n
        if stop == position and (records is None or not records.full()):
            # C took nothing here: the Python walks take the entries it cannot
            cols, stop = _python_rows(spec, position, limit, max_rows - rows)
            if cols["position"]:
                held.append(tables.arrow_batch(tables.BATCHES, cols, constants=spec.where))
                rows += len(cols["position"])
            if records is not None:
                yield from records.python_entries(spec, position, stop)
        position = stop
        if records is not None and records.full():
            yield "records", records.export()
        if rows >= max_rows:
            yield "batches", _joined(pa, schema, held)
            held, rows = [], 0
        upto = position - position % mmap.PAGESIZE
        if upto - dropped >= WINDOW:
            mapped.madvise(mmap.MADV_DONTNEED, dropped, upto - dropped)
            dropped = upto
    if rows:
        yield "batches", _joined(pa, schema, held)
    if records is not None and records.builder.rows:
        yield "records", records.export()


def _python_rows(spec: SegmentSpec, position: int, limit: int, room: int) -> tuple[dict[str, list], int]:
    """At most `room` `batches` rows from the Python walk at `position`, up to and including the first
    batch C could have taken (then C goes on after it), or to the walk's end (`limit`); and where the
    walk stopped."""
    cols = {name: [] for name, _ in tables.BATCHES[3:]}
    row = list(cols.values())
    for entry in iter_log_entries(spec.path, start=position, end=limit):
        if isinstance(entry, Problem):
            continue  # the checks report it; a fatal one ends the walk
        for column, value in zip(row, batch_row(entry), strict=True):
            column.append(value)
        if type(entry) is RecordBatch and not entry.is_compressed and entry.is_valid:
            return cols, entry.position + entry.entry_size
        if len(cols["position"]) >= room:
            return cols, entry.position + entry.entry_size
    return cols, limit


def _from_buffers(pa, schema, spec: SegmentSpec, n: int, buffers: tuple, bits: tuple):
    """One RecordBatch of the table's schema from batch_columns' buffers (no copy of the numbers)."""
    min_known, transactional, control = (pa.py_buffer(b) for b in bits)
    numbers = {
        name: pa.Array.from_buffers(
            getattr(pa, kind)(), n, [min_known if name == "min_timestamp" else None, pa.py_buffer(buf)]
        )
        for (name, kind), buf in zip(_NUMBERS, buffers, strict=True)
    }
    numbers["timestamp_type"] = pa.DictionaryArray.from_arrays(
        numbers["timestamp_type"], pa.array(_TIMESTAMP_TYPES)
    ).cast(pa.string())
    numbers["is_transactional"] = pa.Array.from_buffers(pa.bool_(), n, [None, transactional])
    numbers["is_control"] = pa.Array.from_buffers(pa.bool_(), n, [None, control])
    constant = {
        **spec.where,
        "magic": 2,
        "codec": codec_label(0),
        "is_valid": True,
        "decode_error": None,
    }
    arrays = []
    for field in schema:
        if field.name in numbers:
            arrays.append(numbers[field.name])
        else:
            arrays.append(pa.repeat(pa.scalar(constant[field.name], field.type), n))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _joined(pa, schema, batches: list):
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(batches, schema=schema).combine_chunks().to_batches()[0]
