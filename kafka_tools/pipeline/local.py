"""The scan's work in this one process, range after range, without Spark.

The same task functions the executors run, on the same byte ranges, and the same tables, written with
pyarrow (`arrow_files`) instead of Spark. `ktool scan` runs it without `--master` on an input below
`plan.IN_PROCESS_BYTES` (a JVM costs more than it saves there); it is also the benchmark's single-process
baseline and the reference the tests hold the Spark job to.

With `--out` on several cores the ranges are walked in lanes (`split_lanes`): threads over runs of
consecutive ranges, each writing its own part of the batches and records tables. pyarrow's writer,
three quarters of the work with snappy, releases the GIL, so the lanes' writers run side by side
(bench/README.md, "the writer beside the walk").
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from itertools import accumulate

from kafka_tools.errors import UsageError
from kafka_tools.format.compression import load_codecs
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.arrow_files import TableFile, TableParts, write_rows
from kafka_tools.pipeline.batch_columns import range_batches
from kafka_tools.pipeline.offsets_replay import replay_offsets
from kafka_tools.pipeline.output import Staging, check_formats, local_dir, prepare_out_dir
from kafka_tools.pipeline.plan import IN_PROCESS, ScanOptions, ScanPlan, offsets_replay_segments
from kafka_tools.pipeline.results import ScanResult, TableWritten, committed_offsets, finding_row, finish
from kafka_tools.pipeline.shipped import decoder_name
from kafka_tools.pipeline.tasks import SegmentTotals, check_segment, chunked

Progress = Callable[[int, int, int, int], None]
MAX_LANES = 4  # each a batch of up to 64 MiB in memory


def scan_in_process(plan: ScanPlan, options: ScanOptions, progress: Progress | None = None) -> ScanResult:
    """`job.run_scan` in this process: the same result, and under `options.out` the same tables."""
    check_formats(options)
    if options.out and local_dir(options.out) is None:
        raise UsageError(f"--out {options.out}: a scan without Spark writes local tables only")
    prepared = prepare_out_dir(options)
    t0 = time.perf_counter()
    with Staging(None, options.out, options.overwrite) as staging:
        result, written = _scan(plan, options, local_dir(staging.path) if staging.path else None, progress)
        written = staging.publish(written)
    result.tables = written
    result.replaced = staging.replaced
    result.said = prepared.said
    result.seconds = time.perf_counter() - t0
    return result


def _scan(plan: ScanPlan, options: ScanOptions, out: str | None, progress: Progress | None):
    ranges = plan.ranges(options.split_bytes)
    passes = 1 + bool(out and options.records) + bool(out and options.cluster_metadata)
    total_bytes = plan.bytes * passes
    done = [0, 0]  # ranges, bytes
    ticking = threading.Lock()

    def tick(spec, start: int, end: int | None) -> None:
        with ticking:  # lanes tick from their threads
            done[0] += 1
            done[1] += (spec.size if end is None else end) - start
            if progress is not None:
                progress(done[0], len(ranges) * passes, done[1], total_bytes)

    written: list[TableWritten] = []
    reports: list = [None] * len(plan.segments)
    lanes = split_lanes(plan, ranges, cores()) if out else [ranges]
    batches = records = None
    if out:
        _arrow_loaded()
        table = partial(TableParts, out, fmt=options.fmt, parts=len(lanes), compression=options.compression)
        batches = table(name="batches", per_range=True)
        # The records table: with one lane, its batches are encoded on a second core if there is one
        # while the next range is checked and decoded.
        if options.records:
            records = table(name="records", per_range=True, background=len(lanes) == 1 and cores() > 1)
    stop = threading.Event()

    def walk(lane: int) -> dict[str, SegmentTotals]:
        try:
            return _walk_lane(
                plan,
                lanes[lane],
                reports,
                batches.files[lane] if batches is not None else None,
                records.files[lane] if records is not None else None,
                tick,
                stop,
            )
        except BaseException:
            stop.set()  # the other lanes stop after their current range
            raise

    try:
        if len(lanes) == 1:
            lane_totals = [walk(0)]
        else:
            with ThreadPoolExecutor(len(lanes), thread_name_prefix="ktool-scan-lane") as pool:
                futures = [pool.submit(walk, lane) for lane in range(len(lanes))]
                try:
                    lane_totals = [f.result() for f in futures]
                finally:
                    stop.set()  # interrupted here: the lanes stop too
        if batches is not None:
            written.append(batches.close())
        if records is not None:
            written.append(records.close())
    except BaseException:
        for parts in (batches, records):
            if parts is not None:
                parts.abandon()  # every lane's file closed now (a full disk: not again at exit)
        raise
    totals: dict[str, SegmentTotals] = {}
    for part in lane_totals:
        for file, t in part.items():
            totals.setdefault(file, SegmentTotals()).merge(t)
    if out and options.cluster_metadata:
        from kafka_tools.pipeline.metadata_records import metadata_chunks

        written.append(_table(plan, ranges, out, options, "metadata", metadata_chunks, tick))
    tasks = len(ranges)
    committed = None
    if options.offsets_topic:
        committed = []
        offsets = TableFile(out, "offsets", options.fmt, compression=options.compression) if out else None
        try:
            for (_, number), segs in offsets_replay_segments(plan, reports).items():
                tasks += 1
                cols = replay_offsets(number, segs)
                committed += committed_offsets(cols)
                if offsets is not None:
                    for part in chunked(cols):
                        offsets.add(tables.arrow_batch(tables.OFFSETS, part))
            if offsets is not None:
                written.append(offsets.close())
        except BaseException:
            if offsets is not None:
                offsets.abandon()
            raise
        committed.sort(key=lambda c: (c.group, c.topic, c.partition, c.file))
    result = finish(plan, reports, totals, ranges, committed)
    if out:
        findings = [finding_row(f) for f in result.validation.all_findings()]
        written.append(write_rows(out, "segments", options, result.segments))
        written.append(write_rows(out, "findings", options, findings))
    result.master = IN_PROCESS
    result.decoders = [decoder_name()]
    result.tasks = tasks
    return result, written


def _walk_lane(plan, lane, reports, batches, records, tick, stop) -> dict[str, SegmentTotals]:
    """Check, decode and write a lane's ranges in order (its own part of the batches and records
    tables): the segments' totals it found. `reports[i]` is set for each segment starting in it."""
    totals: dict[str, SegmentTotals] = {}
    for i, start, end in lane:
        if stop.is_set():
            break
        spec = plan.segments[i]
        if start == 0:
            reports[i] = check_segment(spec, deep=records is not None)
        t = totals.setdefault(spec.file, SegmentTotals())
        # both tables in one walk: a plain batch's records read once for both
        for table, batch in range_batches(spec, start, end, with_records=records is not None):
            if stop.is_set():  # a signal or a failed lane: not the rest of a range of up to 128 MiB
                return totals
            if table == "records":
                records.add(batch, spec.where)
                continue
            t.add_arrow(batch)
            if batches is not None:
                batches.add(batch, spec.where)
        tick(spec, start, end)
        if records is not None:
            tick(spec, start, end)
    return totals


def _arrow_loaded() -> None:
    """What pyarrow imports on first use, imported now, in the main thread, before any lane starts:
    pandas, which pyarrow imports the first time it is given a Python value (`pa.scalar`, `pa.array`:
    0.3 s of imports idle, seconds under load), and pyarrow.compute (the first `cast`). A lane that
    imported them held the interpreter's import of them while a Ctrl-C waited for the lanes: a scan
    ended 3.6 s after its SIGINT (issue 51). Here a signal interrupts the import itself. The codecs'
    libraries too (each imported at its first compressed batch)."""
    import pyarrow as pa
    import pyarrow.compute  # noqa: F401

    pa.scalar(0, pa.int8())
    load_codecs()


def split_lanes(plan: ScanPlan, ranges: list[tuple], lanes: int) -> list[list[tuple]]:
    """`ranges` cut into at most `lanes` runs of consecutive ranges of about equal bytes (none empty),
    at most MAX_LANES. A lane is a thread that checks, decodes and writes its ranges: the walk holds the
    GIL, pyarrow's writer (three quarters of a lane's CPU with snappy) does not, so lanes on separate
    cores write side by side (bench/README.md, "the writer beside the walk")."""
    lanes = max(1, min(lanes, MAX_LANES, len(ranges)))
    sizes = [(plan.segments[i].size if end is None else end) - start for i, start, end in ranges]
    middles = list(accumulate(sizes, initial=0))[:-1]
    middles = [before + size / 2 for before, size in zip(middles, sizes, strict=True)]
    total = sum(sizes)
    cuts = [0]
    for k in range(1, lanes):
        # the ranges whose middle byte lies before the lane's share, at least one a lane
        at = sum(m < total * k / lanes for m in middles)
        cuts.append(min(max(at, cuts[-1] + 1), len(ranges) - (lanes - k)))
    cuts.append(len(ranges))
    return [ranges[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]


def cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _table(plan: ScanPlan, ranges, out: str, options: ScanOptions, name: str, chunks, tick) -> TableWritten:
    """A table of rows decoded range by range (records, metadata), one Arrow batch a chunk."""
    table = TableFile(out, name, options.fmt, compression=options.compression, per_range=True)
    columns = tables.TABLES[name]
    try:
        for i, start, end in ranges:
            spec = plan.segments[i]
            for cols in chunks(spec, start, end):
                if isinstance(cols, dict):  # column lists; else an Arrow batch (the records table, made in C)
                    cols = tables.arrow_batch(columns, cols, constants=spec.where)
                table.add(cols, spec.where)
            tick(spec, start, end)
        return table.close()
    except BaseException:
        table.abandon()
        raise


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
