"""A segment's walk as an audit that replays every record needs it, for logs of many small batches
(`__remote_log_metadata`: one record a batch, as the broker's RLMM producer sends each event alone).

The Python walk makes a RecordBatch a batch and parses its header in Python; at a million batches
that is most of an audit's time. Here the ordinary v2 batches (framed, magic 2, uncompressed,
CRC-32C matching: `scan_batches`, the C walk `validate` uses) come as Spans of bytes whose records
the caller reads with one header unpack and the C record decoder a batch; every other entry comes
from the one Python walk (`walk_entries`) as before, through `until_recovery_cut`. So every batch's
checksum is still checked, and what is yielded is what `until_recovery_cut(iter_log_entries(path))`
yields, a run of checked batches standing for the RecordBatches it holds.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import NamedTuple

from kafka_tools.format import accel, batch_runs
from kafka_tools.format.mapping import safe_to_map
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import (
    BATCH_HEADER,
    CONTROL_MASK,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    RecordBatch,
)
from kafka_tools.format.record_reader import Record, RecordDecodeError
from kafka_tools.format.segment import (
    INT64_MAX,
    INT64_MIN,
    WINDOW,
    Entry,
    SegmentWindow,
    until_recovery_cut,
    walk_entries,
)


class Span(NamedTuple):
    """Ordinary v2 batches at `buf[start:end]`, each CRC-checked and uncompressed; `shift` turns an
    index of `buf` into a file position. Valid until the walk moves on."""

    buf: object
    start: int
    end: int
    shift: int


def kept_spans(path: str | os.PathLike) -> Iterator[Span | Entry | Problem]:
    """The items `until_recovery_cut(iter_log_entries(path))` yields, runs of ordinary v2 batches
    as Spans (the C walk, when the extension is built; without it, the Python walk alone)."""
    scan = batch_runs.scanner()
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        win = SegmentWindow(f, size, use_mmap=safe_to_map(path))
        size = win.size
        position = 0
        while position < size:
            if scan is not None and size - position >= RECORD_BATCH_OVERHEAD:
                i = win.ensure(position, RECORD_BATCH_OVERHEAD)
                shift = position - i
                stop = min(size, position + WINDOW) - shift
                j, count, *_ = scan(win.buf, i, stop, size - shift, None, INT64_MIN, INT64_MAX, (), shift)
                if count:
                    yield Span(win.buf, i, j, shift)
                    position = j + shift
                    continue
            # the Python walk from here, until a batch the C walk may take up again
            for item in until_recovery_cut(walk_entries(win, position, size)):
                yield item
                if scan is not None and type(item) is RecordBatch:
                    position = item.position + item.entry_size
                    break
            else:
                return


def span_records(span: Span, unreadable: Callable[[int, RecordDecodeError], None]) -> Iterator[Record]:
    """The records of a Span's batches but control batches', in order, decoded in C: one header
    unpack a batch (a million one-record batches make this an audit's loop). A batch whose records
    section cannot be decoded gives the records before the damage, then `unreadable(its position,
    the error)` (RecordBatch.payload_error's words for an uncompressed batch), then the next batch."""
    buf, i, end, shift = span
    view = memoryview(buf)
    unpack = BATCH_HEADER.unpack_from
    records = accel.fast("iter_records")
    assert records is not None  # a Span comes only from the C walk
    while i < end:
        base, length, _, _, _, attributes, _, base_ts, max_ts, _, _, base_seq, count = unpack(buf, i)
        nxt = i + LOG_OVERHEAD + length
        if not attributes & CONTROL_MASK:
            log_append = max_ts if attributes & TIMESTAMP_TYPE_MASK else None
            try:
                yield from records(
                    view[i + RECORD_BATCH_OVERHEAD : nxt], count, base, base_ts, log_append, base_seq
                )
            except RecordDecodeError as exc:
                unreadable(i + shift, exc)
        i = nxt
