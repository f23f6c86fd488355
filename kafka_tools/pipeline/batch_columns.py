"""The `batches` table as Arrow batches, its plain v2 entries walked in C: no Python object a batch.

`tasks.batch_chunks` builds a row per entry from a RecordBatch object and a tuple, a third of `scan
--out` once batches are small (bench/README.md, "which tables are still built from Python lists").
Here the C extension's `batch_columns` walks the runs of v2 batches it can take whole (uncompressed,
CRC-32C matching, records readable) and writes their rows into column buffers pyarrow takes as they
are; any other entry (compressed, damaged, magic 0/1, a frame fault) goes through `tasks.batch_row`,
the Python row, and the walk hands back to C after it. `batch_chunks` stays the reference this is
tested equal to, row for row (tests/pipeline/test_batch_columns.py).
"""

from __future__ import annotations

import mmap
from collections.abc import Iterator

from kafka_tools.format import accel
from kafka_tools.format.compression import codec_label
from kafka_tools.format.mapping import safe_to_map
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.segment import Problem, iter_log_entries, looks_like_text
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.tasks import CHUNK_ROWS, SegmentSpec, batch_chunks, batch_row, mapped_file

WINDOW = 16 * 1024 * 1024  # bytes walked a call; the pages behind are dropped (peak RSS bounded)

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
            yield from _walk(walk, mapped, spec, start, size if end is None else min(size, end), max_rows)


def _walk(walk, mapped: mmap.mmap, spec: SegmentSpec, position: int, limit: int, max_rows: int) -> Iterator:
    import pyarrow as pa

    schema = tables.arrow_schema(tables.BATCHES)
    held: list = []  # batches not yet yielded, fewer than max_rows rows in all
    rows = 0
    dropped = position - position % mmap.PAGESIZE
    while position < limit:
        n, stop, buffers, bits = walk(mapped, position, min(limit, position + WINDOW), max_rows - rows)
        if n:
            held.append(_from_buffers(pa, schema, spec, n, buffers, bits))
            rows += n
        if stop == position:  # C took nothing here: the Python walk takes the entries it cannot
            cols, stop = _python_rows(spec, position, limit, max_rows - rows)
            if cols["position"]:
                held.append(tables.arrow_batch(tables.BATCHES, cols, constants=spec.where))
                rows += len(cols["position"])
        position = stop
        if rows >= max_rows:
            yield _joined(pa, schema, held)
            held, rows = [], 0
        upto = position - position % mmap.PAGESIZE
        if upto - dropped >= WINDOW:
            mapped.madvise(mmap.MADV_DONTNEED, dropped, upto - dropped)
            dropped = upto
    if rows:
        yield _joined(pa, schema, held)


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
