"""The main stage of `ktool scan`: one task's work on one byte range of a segment (its `batches`
rows, its segment's validation report for the first range, its totals), apart from tasks.py's plain
walks because it may hand the range to the C walk of batch_columns.py, which builds on those walks."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kafka_tools.pipeline.shipped import decoder_name
from kafka_tools.pipeline.tasks import SegmentSpec, SegmentTotals, batch_chunks, check_segment


def range_chunks(
    spec: SegmentSpec,
    start: int,
    end: int | None,
    sink: Callable[[tuple], None],
    batches: bool = True,
    arrow: bool = False,
    records=None,
) -> Iterator:
    """The main stage's work on one byte range: the `batches` columns of its entries (none yielded if
    `batches` is False: no table to write), and `sink((file, start, report, totals, decoder))` once the
    range is done: its SegmentTotals and, for a segment's first range, the segment's validation report (the
    task that decodes a segment's first range checks the whole segment). With `arrow`, the rows come
    as Arrow batches (`batch_columns.batch_batches`, built in C), else as column lists; and `records`,
    a per-range `arrow_files.TableFile`, is given the range's `records` table in the same walk
    (`batch_columns.range_batches`: a plain batch's records read once for both tables)."""
    report = check_segment(spec, deep=records is not None) if start == 0 else None
    totals = SegmentTotals()
    if arrow:
        from kafka_tools.pipeline.batch_columns import range_batches

        for table, batch in range_batches(spec, start, end, with_records=records is not None):
            if table == "records":
                records.add(batch, spec.where)
                continue
            totals.add_arrow(batch)
            if batches:
                yield batch
        sink((spec.file, start, report, totals, decoder_name()))
        return
    assert records is None, "the records table in the same walk needs the Arrow batches"
    for cols in batch_chunks(spec, start, end):
        totals.add_columns(cols)
        if batches:
            yield cols
    sink((spec.file, start, report, totals, decoder_name()))


# -- decoding ------------------------------------------------------------------------------------
