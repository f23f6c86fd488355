"""The scan's work in this one process, range after range, without Spark.

The same task functions the executors run, on the same byte ranges, and the same tables, written with
pyarrow (`arrow_files`) instead of Spark. `ktool scan` runs it without `--master` on an input below
`plan.IN_PROCESS_BYTES` (a JVM costs more than it saves there); it is also the benchmark's single-process
baseline and the reference the tests hold the Spark job to.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from kafka_tools.errors import UsageError
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.arrow_files import TableFile, write_rows
from kafka_tools.pipeline.batch_columns import range_batches
from kafka_tools.pipeline.offsets_replay import replay_offsets
from kafka_tools.pipeline.output import Staging, check_formats, local_dir, prepare_out_dir
from kafka_tools.pipeline.plan import IN_PROCESS, ScanOptions, ScanPlan, offsets_replay_segments
from kafka_tools.pipeline.results import ScanResult, TableWritten, committed_offsets, finding_row, finish
from kafka_tools.pipeline.shipped import decoder_name
from kafka_tools.pipeline.tasks import SegmentTotals, check_segment, chunked

Progress = Callable[[int, int, int, int], None]


def scan_in_process(plan: ScanPlan, options: ScanOptions, progress: Progress | None = None) -> ScanResult:
    """`job.run_scan` in this process: the same result, and under `options.out` the same tables."""
    check_formats(options)
    if options.out and local_dir(options.out) is None:
        raise UsageError(f"--out {options.out}: a scan without Spark writes local tables only")
    replaced = prepare_out_dir(options) if options.out else []
    t0 = time.perf_counter()
    with Staging(None, options.out) as staging:
        result, written = _scan(plan, options, local_dir(staging.path) if staging.path else None, progress)
        written = staging.publish(written)
    result.tables = written
    result.replaced = replaced
    result.seconds = time.perf_counter() - t0
    return result


def _scan(plan: ScanPlan, options: ScanOptions, out: str | None, progress: Progress | None):
    ranges = plan.ranges(options.split_bytes)
    passes = 1 + bool(out and options.records) + bool(out and options.cluster_metadata)
    total_bytes = plan.bytes * passes
    done = [0, 0]  # ranges, bytes

    def tick(spec, start: int, end: int | None) -> None:
        done[0] += 1
        done[1] += (spec.size if end is None else end) - start
        if progress is not None:
            progress(done[0], len(ranges) * passes, done[1], total_bytes)

    written: list[TableWritten] = []
    reports: list = [None] * len(plan.segments)
    totals: dict[str, SegmentTotals] = {}
    batches = None
    if out:
        batches = TableFile(out, "batches", options.fmt, compression=options.compression, per_range=True)
    # The records table in the same walk over the ranges, its batches encoded on a second core if
    # there is one while the next range is checked and decoded.
    records = None
    if out and options.records:
        records = TableFile(
            out,
            "records",
            options.fmt,
            background=spare_core(),
            compression=options.compression,
            per_range=True,
        )
    for i, start, end in ranges:
        spec = plan.segments[i]
        if start == 0:
            reports[i] = check_segment(spec)
        t = totals.setdefault(spec.file, SegmentTotals())
        # both tables in one walk: a plain batch's records read once for both
        for table, batch in range_batches(spec, start, end, with_records=records is not None):
            if table == "records":
                records.add(batch, spec.where)
                continue
            t.add_arrow(batch)
            if batches is not None:
                batches.add(batch, spec.where)
        tick(spec, start, end)
        if records is not None:
            tick(spec, start, end)
    if batches is not None:
        written.append(batches.close())
    if records is not None:
        written.append(records.close())
    if out and options.cluster_metadata:
        from kafka_tools.pipeline.metadata_records import metadata_chunks

        written.append(_table(plan, ranges, out, options, "metadata", metadata_chunks, tick))
    tasks = len(ranges)
    committed = None
    if options.offsets_topic:
        committed = []
        offsets = TableFile(out, "offsets", options.fmt, compression=options.compression) if out else None
        for (_, number), segs in offsets_replay_segments(plan, reports).items():
            tasks += 1
            cols = replay_offsets(number, segs)
            committed += committed_offsets(cols)
            if offsets is not None:
                for part in chunked(cols):
                    offsets.add(tables.arrow_batch(tables.OFFSETS, part))
        committed.sort(key=lambda c: (c.group, c.topic, c.partition, c.file))
        if offsets is not None:
            written.append(offsets.close())
    result = finish(plan, reports, totals, ranges, committed)
    if out:
        findings = [finding_row(f) for f in result.validation.all_findings()]
        written.append(write_rows(out, "segments", options, result.segments))
        written.append(write_rows(out, "findings", options, findings))
    result.master = IN_PROCESS
    result.decoders = [decoder_name()]
    result.tasks = tasks
    return result, written


def spare_core() -> bool:
    """Whether this process may run on more than one core (a writer thread then costs no decode time)."""
    try:
        return len(os.sched_getaffinity(0)) > 1
    except AttributeError:  # not Linux
        return (os.cpu_count() or 1) > 1


def _table(plan: ScanPlan, ranges, out: str, options: ScanOptions, name: str, chunks, tick) -> TableWritten:
    """A table of rows decoded range by range (records, metadata), one Arrow batch a chunk."""
    table = TableFile(out, name, options.fmt, compression=options.compression, per_range=True)
    columns = tables.TABLES[name]
    for i, start, end in ranges:
        spec = plan.segments[i]
        for cols in chunks(spec, start, end):
            if isinstance(cols, dict):  # column lists; else an Arrow batch (the records table, made in C)
                cols = tables.arrow_batch(columns, cols, constants=spec.where)
            table.add(cols, spec.where)
        tick(spec, start, end)
    return table.close()


def answer_in_process(plan: ScanPlan, question, options: ScanOptions, limit: int | None = None):
    """`job.run_questions` in this one process: `ktool scan --key …` on a small input, the benchmark's
    baseline and the tests' reference."""
    from kafka_tools.pipeline.question_columns import match_batches
    from kafka_tools.pipeline.questions import Answer, fold, match_order

    t0 = time.perf_counter()
    asked = plan.only_topics(question.topics)
    answer = Answer(question, segments=len(asked.segments), bytes=asked.bytes, master=IN_PROCESS)
    answer.segments_skipped_by_topic = len(plan.segments) - len(asked.segments)
    items: list[tuple] = []
    found = []
    ranges = asked.ranges(options.split_bytes)
    for i, start, end in ranges:
        found += match_batches(asked.segments[i], start, end, question, sink=items.append)
    fold(answer, items)
    matches = sorted(first_matches(found, limit), key=match_order)
    if limit is not None and len(matches) > limit:
        matches, answer.truncated = matches[:limit], True
    answer.matches = matches
    answer.tasks = len(ranges)
    answer.seconds = time.perf_counter() - t0
    return answer


def first_matches(batches: list, limit: int | None) -> list[dict]:
    """The rows of the `matches` batches, only the first `limit` + 1 in the answer's order when there is
    a limit: sorted as Arrow (nulls first, stable, as `questions.match_order`), a Python dict made only
    for the rows kept."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if not batches:
        return []
    table = pa.Table.from_batches(batches)
    if limit is not None and table.num_rows > limit + 1:
        # nulls first: each nullable key led by whether it is known (False sorts first)
        keys = pa.table(
            {
                "topic_known": pc.is_valid(table["topic"]),
                "topic": table["topic"],
                "partition_known": pc.is_valid(table["partition"]),
                "partition": table["partition"],
                "offset": table["offset"],
                "file": table["file"],
            }
        )
        order = pc.sort_indices(keys, sort_keys=[(name, "ascending") for name in keys.column_names])
        table = table.take(order[: limit + 1])
    return table.to_pylist()
