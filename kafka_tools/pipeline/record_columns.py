"""The `records` table as Arrow batches built in C: no Python object a record.

The entries of a byte range are walked as `tasks.iter_entries` walks them (plain magic 0/1 messages in
runs, walked in C; runs of uncompressed v2 batches framed and read in C too, `add_v2_run`, without a
RecordBatch object each); each entry's records go into the C extension's RecordColumns builder
(format/csrc/arrow_records.c) through the one record reader of its generation — a v2 records section
(decompressed first when the batch is compressed), a message run or a wrapper's inner set — and the
builder's columns reach pyarrow through the Arrow C data interface, at most `max_rows` rows or
`max_bytes` of keys, values and headers a batch (a batch's records stay together).

Anything the C readers do not take (0.7 messages, a wrapper whose inner set is irregular, a plain
message the run walk stopped at) is decoded by the Python decoders and handed over as Record tuples.
An entry whose records cannot be decoded adds no row, as in `tasks.record_chunks`, the pure-Python
reference this is tested equal to, row for row.
"""

from __future__ import annotations

import mmap
from collections.abc import Callable, Iterator

from kafka_tools.format import accel
from kafka_tools.format.compression import DecompressionError, decompress
from kafka_tools.format.kafka07 import iter_kafka07_entries
from kafka_tools.format.mapping import safe_to_map
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import MessageRun, RunBounds, iter_log_entries, looks_like_text
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.tasks import CHUNK_BYTES, CHUNK_ROWS, SegmentSpec, mapped_file, record_chunks

_WINDOW = 16 * 1024 * 1024  # mapped bytes walked before the pages behind are dropped


class Exported:
    """The builder's capsules, as pyarrow takes them (`pa.record_batch` of an `__arrow_c_array__`)."""

    __slots__ = ("capsules",)

    def __init__(self, capsules: tuple) -> None:
        self.capsules = capsules

    def __arrow_c_array__(self, requested_schema=None) -> tuple:
        return self.capsules


def available() -> bool:
    """Whether the C builder runs (the extension is built and its C paths are on)."""
    return accel.fast("record_columns") is not None


def record_batches(
    spec: SegmentSpec,
    start: int = 0,
    end: int | None = None,
    max_rows: int = CHUNK_ROWS,
    max_bytes: int = CHUNK_BYTES,
    admit: Callable[[object], bool] | None = None,
    where: bool = True,
) -> Iterator:
    """The `records` table's rows of the entries that start in [start, end), as pyarrow RecordBatches
    of the table's schema (file, topic and partition on every row), none empty; built in C when the
    extension is on, else from `tasks.record_chunks` (the reference). In C, the kernel bench/scan.py
    times. `admit`: only the entries it admits (C only; see `fill`). `where=False`: file and topic
    left empty in C, for a writer that puts them back itself (arrow_files.TableFile(per_range=True):
    the path copied into every row is ~10% of the kernel)."""
    if not available():
        assert admit is None, "admit needs the C builder"
        for cols in record_chunks(spec, start, end):
            yield tables.arrow_batch(tables.RECORDS, cols, constants=spec.where)
        return
    import pyarrow as pa

    where = (spec.file, spec.topic, spec.partition) if where else ("", "", spec.partition)
    builder = accel.C.record_columns()
    walk = fill(builder, spec, start, end, admit)
    if admit is None and hasattr(builder, "add_v2_run") and spec.size and not spec.kafka07:
        walk = _fill_runs(builder, spec, start, end, max_rows, max_bytes)
    for _ in walk:
        if builder.rows >= max_rows or builder.nbytes >= max_bytes:
            yield pa.record_batch(Exported(builder.finish(*where)))
    if builder.rows:
        yield pa.record_batch(Exported(builder.finish(*where)))


def fill(builder, spec: SegmentSpec, start: int, end: int | None, admit=None) -> Iterator[None]:
    """Add each entry's records to `builder`; yield after each entry (where a batch may end).

    `admit(entry)`, when given, is asked first about every entry (a MessageRun stands for its plain
    messages): False steps over it from its header, nothing decompressed or decoded (a question's hop).
    """
    if spec.size and looks_like_text(spec.path):
        return
    if spec.kafka07:
        for entry in iter_kafka07_entries(spec.path, spec.base_offset, start=start, end=end):
            if not isinstance(entry, Problem) and (admit is None or admit(entry)):
                _add_decoded(builder, entry)
                yield
        return
    for entry in iter_log_entries(spec.path, start=start, end=end, runs=RunBounds(keep_data=True)):
        if isinstance(entry, Problem) or (admit is not None and not admit(entry)):
            continue  # a Problem: the checks report it
        if _add(builder, entry):
            yield


def _add(builder, entry) -> bool:
    """Add one entry's records (none when they cannot be decoded); False for an entry of no kind here."""
    kind = type(entry)
    if kind is RecordBatch:
        args = entry.payload_args()
        if entry.is_compressed:
            try:
                args = (decompress(entry.codec, entry.payload), *args[1:])
            except DecompressionError:
                return True
        try:
            builder.add_v2(*args, entry.position)
        except RecordDecodeError:
            pass
    elif kind is MessageRun:
        builder.add_messages(entry.data, entry.position, False, 0, None)
    elif kind is LegacyMessage:
        inner = entry.plain_inner_set()
        if inner is None:
            _add_decoded(builder, entry)
        else:
            data, _, shift, log_append = inner
            builder.add_messages(data, entry.position, True, shift, log_append)
    else:
        return False
    return True


def _fill_runs(builder, spec: SegmentSpec, start: int, end: int | None, max_rows: int, max_bytes: int):
    """`fill` with the runs of uncompressed v2 batches walked in C (`add_v2_run`: no RecordBatch object
    a batch), the segment mapped; any other entry through the Python walk, which hands back to C after
    the next uncompressed v2 batch. Yields where a batch may end."""
    if looks_like_text(spec.path) or not safe_to_map(spec.path):
        yield from fill(builder, spec, start, end)
        return
    with mapped_file(spec.path) as mapped:
        if mapped is None:
            return
        limit = len(mapped) if end is None else min(len(mapped), end)
        position = start
        dropped = position - position % mmap.PAGESIZE
        while position < limit:
            stop = builder.add_v2_run(mapped, position, limit, max_rows, max_bytes)
            if stop == position and builder.rows < max_rows and builder.nbytes < max_bytes:
                stop = yield from _python_entries(builder, spec, position, limit)
            position = stop
            yield
            upto = position - position % mmap.PAGESIZE
            if upto - dropped >= _WINDOW:  # the pages behind: dropped (peak RSS bounded)
                mapped.madvise(mmap.MADV_DONTNEED, dropped, upto - dropped)
                dropped = upto


def _python_entries(builder, spec: SegmentSpec, position: int, limit: int):
    """The Python walk from `position`: entries up to and including the next uncompressed v2 batch;
    returns where C goes on (`limit` when the walk ends first)."""
    for entry in iter_log_entries(spec.path, start=position, end=limit, runs=RunBounds(keep_data=True)):
        if isinstance(entry, Problem):
            continue
        if _add(builder, entry):
            yield
        if type(entry) is RecordBatch and not entry.is_compressed:
            return entry.position + entry.entry_size
    return limit


def _add_decoded(builder, entry) -> None:
    """An entry decoded by its Python decoder (records() as dump-log decodes it), unless it cannot be."""
    try:
        records = entry.records()
    except RecordDecodeError:
        return
    builder.add_records(records, entry.position)
