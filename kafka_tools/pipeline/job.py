"""The Spark job of `ktool scan` (every Spark job in one job group: one progress bar).

1. On the driver: the byte ranges. A segment larger than `split_bytes` is cut where an entry begins
   (`tasks.range_starts` hops from entry head to entry head, reading 17 bytes an entry); small ones
   are whole. Ranges are packed into even tasks of at least `split_bytes`, about two per core
   (`ScanOptions.task_bytes`: a Python task costs ~0.1 s of CPU before it does any work), small
   segments together, the largest tasks first.
2. The main stage, one Spark task per pack of ranges: every entry of a range decoded (its records
   decompressed and decoded, as `dump-log --deep-iteration` does), one `batches` row per entry; the
   task that decodes a segment's first range also runs `ktool validate`'s per-segment checks on the
   whole segment. Rows reach Spark as Arrow batches (`mapInArrow`) and are written by the same task
   (`--out`; else Spark's `noop` sink); under a local master with a local --out the task writes
   them into its part file with pyarrow and hands Spark none (no Spark write job). What the driver
   needs besides rows goes back through an accumulator: per range its totals (batches, records,
   offsets, codecs, timestamps), per segment its validation report. One Spark job, no cache, no shuffle.
3. `--records`: the same ranges decoded again, one row per record, written as they come (decoding
   twice costs less than caching every record between two writes); the rows are Arrow columns built
   in C by the record readers (pipeline/record_columns.py), no Python object a record. Under a local
   master with a local --out, the main stage's tasks write them themselves with pyarrow, each range's
   records right after its batches (no second stage); else a stage of their own through Spark's writer.
4. `--cluster-metadata`: the `__cluster_metadata` and `__remote_log_metadata` ranges decoded again, one
   row per record (pipeline/metadata_records.py); the ranges of other topics yield nothing.
5. `--offsets-topic`: each `__consumer_offsets` partition replayed whole by one task, its segments in
   order (a replay is sequential), up to the first byte the broker's recovery would cut.

Then, on the driver: the partition-level checks (`plan.assemble_validation`, so the findings are
`ktool validate`'s), and the small `segments` and `findings` tables (under a local master with a local
--out written here with pyarrow, as the in-process scan writes them; else a Spark job each).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from kafka_tools.errors import InputError, UsageError
from kafka_tools.log.checks.findings import SegmentReport
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.monitor import Progress, job_progress, master_watch
from kafka_tools.pipeline.offsets_replay import OffsetsSegment
from kafka_tools.pipeline.output import (
    Staging,
    check_formats,
    local_dir,
    prepare_out_dir,
    table_write_error,
    write,
    write_small_tables,
)
from kafka_tools.pipeline.plan import ScanOptions, ScanPlan, offsets_replay_segments, pack
from kafka_tools.pipeline.results import CommittedOffset, ScanResult, TableWritten, finding_row, finish
from kafka_tools.pipeline.sources import SegmentSource
from kafka_tools.pipeline.tasks import SegmentTotals

Range = tuple[int, int, "int | None"]  # segment index, start, end (None: the end of the file)


def run_scan(spark, plan: ScanPlan, options: ScanOptions, progress: Progress | None = None) -> ScanResult:
    """Scan `plan` with `spark`; write the tables under `options.out` if set."""
    check_formats(options)
    prepared = prepare_out_dir(options, spark)
    sc = spark.sparkContext
    t0 = time.perf_counter()
    ranges = plan.ranges(options.split_bytes)
    if plan.remote:
        from kafka_tools.pipeline.remote import RemoteFiles

        source = RemoteFiles(spark, plan, options, ranges)
    else:
        source = LocalFiles(spark, plan, options, ranges)
    staging = Staging(spark, options.out, options.overwrite)
    staged = replace(options, out=staging.path) if staging.path else options
    passes = 2 if options.records and options.out else 1  # --records decodes the ranges again
    with (
        job_progress(sc, progress, plan.bytes * passes) as counts,
        master_watch(sc, sc.master, counts.group),
        executor_errors(),
        staging,
    ):
        source.scanned = counts.scanned
        result, written = _run(spark, plan, staged, source, ranges)
        written = staging.publish(written)
    result.tables = written
    result.replaced = staging.replaced
    result.said = prepared.said
    result.master = sc.master
    result.tasks = source.tasks
    result.retried = counts.failed
    result.seconds = time.perf_counter() - t0
    return result


def _run(spark, plan: ScanPlan, options: ScanOptions, source, ranges: list[Range]):
    """The scan's Spark jobs; the tables go under `options.out` (the staging directory)."""
    sc = spark.sparkContext
    written: list[TableWritten] = []
    meta = sc.accumulator([], ListParam())
    here = local_dir(options.out) if options.out and sc.master.startswith("local") else None
    # Under a local master the main stage's tasks write the batches table and the records table
    # themselves, in the same walk over their ranges (one Spark stage, not two: bench/README.md, "scan
    # --out at the decoder's speed"; no Spark write job: "local[2] against local[1]: the serial part").
    tasks_here = here is not None and source.tasks_write
    records_here = bool(options.records and tasks_here)
    for name in [name for name, mine in (("batches", tasks_here), ("records", records_here)) if mine]:
        try:  # made here, never by a task: a task outliving an abandoned scan cannot make it again
            os.makedirs(os.path.join(here, name), exist_ok=True)
        except OSError as exc:
            raise table_write_error(name, os.path.join(here, name), exc) from None
    # No row for Spark (the tasks write the tables, or there is none to write): a plain RDD job
    rowless = source.tasks_write and (tasks_here or not options.out)
    main = source.main(
        meta,
        batches=bool(options.out),
        records_to=(here, options) if records_here else None,
        batches_to=(here, options) if tasks_here else None,
        rowless=rowless,
    )
    if rowless:
        main.count()  # an RDD (or an empty DataFrame): the tasks hand back no row
    elif options.out:
        written.append(write(main, options, "batches"))
    else:
        main.write.format("noop").mode("overwrite").save()  # run the stage, keep nothing
    decoders: set[str] = set()
    reports, totals = collect_meta(meta.value, plan, decoders)
    if options.out:
        rows = sum(t.batches for t in totals.values())
        if tasks_here:
            assert here is not None
            written.append(source.tasks_wrote("batches", here, options, rows))
        else:
            written[-1].rows = rows
    if options.records and options.out:
        rows = sum(t.records for t in totals.values())
        if records_here:
            assert here is not None
            written.append(source.tasks_wrote("records", here, options, rows))
        else:
            written.append(write(source.table("records"), options, "records", rows))
    if options.cluster_metadata and options.out:
        metadata = source.table("metadata").persist()
        written.append(write(metadata, options, "metadata"))
        written[-1].rows = metadata.count()
        metadata.unpersist()
    committed = None
    if options.offsets_topic:
        offsets = source.offsets(offsets_replay_segments(plan, reports))
        if options.out:
            offsets = offsets.persist()
            written.append(write(offsets, options, "offsets"))
        committed = committed_from(offsets)
        if options.out:
            written[-1].rows = offsets.count()
            offsets.unpersist()
    source.close()
    result = finish(plan, reports, totals, ranges, committed)
    if here is not None:  # a local master and --out: pyarrow here, not a Spark job a table (~0.7 s)
        written += write_driver_tables(here, options, result)
    elif options.out:
        written += write_small_tables(spark, options, result)
    result.decoders = sorted(decoders)
    return result, written


def write_driver_tables(out: str, options: ScanOptions, result: ScanResult) -> list[TableWritten]:
    """The small tables the driver builds (segments, findings), written by this process with pyarrow
    into `out` (a local directory), as the in-process scan writes them: under a local master two Spark
    jobs for a few hundred rows cost ~0.7 s of a scan's wall time that no second core shortens
    (bench/README.md, "local[2] against local[1]: the serial part")."""
    from kafka_tools.pipeline.arrow_files import write_rows

    findings = [finding_row(f) for f in result.validation.all_findings()]
    return [
        write_rows(out, "segments", options, result.segments),
        write_rows(out, "findings", options, findings),
    ]


def run_questions(
    spark, plan: ScanPlan, question, options: ScanOptions, limit: int | None = None, progress=None
):
    """The records `question` matches in `plan`'s segments (its topic filter applied first), at most
    `limit` of them, sorted by topic, partition, offset; with the counts of what was decoded."""
    from functools import partial

    from kafka_tools.pipeline.question_columns import match_batches
    from kafka_tools.pipeline.questions import Answer, fold, match_chunks, match_order

    sc = spark.sparkContext
    t0 = time.perf_counter()
    asked = plan.only_topics(question.topics)
    answer = Answer(question, segments=len(asked.segments), bytes=asked.bytes, master=sc.master)
    answer.segments_skipped_by_topic = len(plan.segments) - len(asked.segments)
    ranges = asked.ranges(options.split_bytes)
    if asked.remote:
        from kafka_tools.pipeline.remote import RemoteFiles

        source = RemoteFiles(spark, asked, options, ranges)
    else:
        source = LocalFiles(spark, asked, options, ranges)
    with (
        job_progress(sc, progress, asked.bytes) as counts,
        master_watch(sc, sc.master, counts.group),
        executor_errors(),
    ):
        source.scanned = counts.scanned
        meta = sc.accumulator([], ListParam())

        def sink(item: tuple) -> None:
            meta.add([item])

        matches = match_batches if source.arrow_batches else match_chunks  # Arrow from C, or lists
        df = source._stage(tables.MATCHES, partial(matches, question=question, sink=sink))
        if limit is not None:  # the first `limit` + 1: Spark's top-K per task (one pass, no sort job)
            df = df.orderBy("topic", "partition", "offset", "file").limit(limit + 1)
        # Every match otherwise, sorted here (a Spark sort would first sample its input: a second
        # pass); as Arrow, not pickled rows.
        rows = df.toArrow().to_pylist()
        source.close()
    fold(answer, meta.value)
    matches = sorted(rows, key=match_order)
    if limit is not None and len(matches) > limit:
        matches, answer.truncated = matches[:limit], True
    answer.matches = matches
    answer.tasks = source.tasks
    answer.seconds = time.perf_counter() - t0
    return answer


def run_sql(spark, result: ScanResult, query: str, limit: int | None = None) -> tuple[list[str], list[tuple]]:
    """`query` over the tables `result` wrote, each a temporary view named after it; (columns, rows)."""
    for t in result.tables:
        spark.read.format(t.fmt).load(t.path).createOrReplaceTempView(t.name)
    try:
        df = spark.sql(query)
        rows = df.limit(limit).collect() if limit is not None else df.collect()
    except Exception as exc:
        if type(exc).__module__.startswith(("py4j", "pyspark")):
            raise UsageError(f"--sql: {_sql_error(exc)}") from None
        raise
    return df.columns, [tuple(r) for r in rows]


def _sql_error(exc: BaseException) -> str:
    """The first line of Spark's message, without the query excerpt it appends."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class ListParam:
    """An accumulator of lists (a pyspark AccumulatorParam by its two methods): how the main stage's
    tasks hand the driver what is not a table row."""

    def zero(self, value: list) -> list:
        return []

    def addInPlace(self, a: list, b: list) -> list:  # noqa: N802 (pyspark's name)
        a.extend(b)
        return a


def collect_meta(
    items: list[tuple], plan: ScanPlan, decoders: set[str] | None = None
) -> tuple[list[SegmentReport], dict[str, SegmentTotals]]:
    """The per-segment validation reports and decoded totals the main stage's tasks sent back, once
    per byte range (a task Spark ran twice sent its range twice: the first copy counts); the record
    decoders the tasks ran go into `decoders`."""
    index = {spec.file: i for i, spec in enumerate(plan.segments)}
    reports: list = [None] * len(plan.segments)
    totals: dict[str, SegmentTotals] = {}
    seen = set()
    for file, start, report, range_totals, decoder in items:
        if decoders is not None:
            decoders.add(decoder)
        if (file, start) in seen:
            continue
        seen.add((file, start))
        if report is not None:
            reports[index[file]] = report
        totals.setdefault(file, SegmentTotals()).merge(range_totals)
    missing = [plan.segments[i].file for i, r in enumerate(reports) if r is None]
    if missing:  # a bug, not the data: every segment has a first range
        raise RuntimeError(f"no check came back for {missing[:3]}")
    return reports, totals


# -- the tasks, over files every executor opens by path ---------------------------------------------


class LocalFiles(SegmentSource):
    """Segments on this machine's filesystem (or one mounted at the same path on every worker): the
    tasks open them by path, decode byte ranges of them, and hand Arrow batches to Spark (the records
    table's made in C: pipeline/record_columns.py)."""

    arrow_batches = True
    tasks_write = True  # under a local master, the tasks write a local --out's records table themselves

    def __init__(self, spark, plan: ScanPlan, options: ScanOptions, ranges: list[Range]) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        self.specs = self.sc.broadcast(plan.segments)
        sizes = [(r, (plan.segments[r[0]].size if r[2] is None else r[2]) - r[1]) for r in ranges]
        self.task_bytes = options.task_bytes(plan.bytes, self.sc.defaultParallelism)
        self.units = self.sc.broadcast(pack(sizes, self.task_bytes))
        self.options = options
        self.tasks = 0

    def _stage(self, columns, produce, records_to=None, batches_to=None, rowless: bool = False):
        n = len(self.units.value)
        self.tasks += n
        if n == 0:
            return self.spark.createDataFrame([], tables.spark_ddl(columns))
        specs, units, scanned = self.specs, self.units, self.scanned
        # (directory, format, codec) of the tables the tasks write their parts of: records, batches
        parts_of = {
            name: (to[0], to[1].fmt, to[1].compression)
            for name, to in (("records", records_to), ("batches", batches_to))
            if to is not None
        }

        def work(task: int):
            from kafka_tools.pipeline import tables as t

            parts = {}  # its part of each table it writes (arrow_files.TableFile)
            if parts_of:
                from kafka_tools.pipeline.arrow_files import TableFile

                for name, (out, fmt, compression) in parts_of.items():
                    parts[name] = TableFile(
                        out, name, fmt, part=task, compression=compression, per_range=True
                    )
            part, rows_to = parts.get("records"), parts.get("batches")
            for segment, start, end in units.value[task]:
                spec = specs.value[segment]
                # with a part: the range's records go to it in the same walk (range_task.range_chunks)
                chunks = (
                    produce(spec, start, end) if part is None else produce(spec, start, end, records=part)
                )
                for cols in chunks:
                    if isinstance(cols, dict):  # column lists; else an Arrow batch made in C
                        cols = t.arrow_batch(columns, cols, constants=spec.where)
                    if rows_to is not None:
                        rows_to.add(cols, spec.where)
                    else:
                        yield cols
                size = (spec.size if end is None else end) - start
                if part is not None:
                    size *= 2  # the records pass of the progress bar's bytes
                if scanned is not None:
                    scanned.add(size)
            for table in parts.values():
                table.close()

        if rowless:
            # No row to hand Spark: a plain RDD job, without the SQL plan a mapInArrow stage costs the
            # driver before its first task starts (~0.2 s, serial: bench/README.md, "local[2] against
            # local[1]: the serial part").
            return self.sc.parallelize(range(n), n).mapPartitions(
                lambda tasks: (b for k in tasks for b in work(k))
            )

        def run(id_batches):
            for ids in id_batches:
                for task in ids.column(0).to_pylist():
                    yield from work(task)

        return self.spark.range(0, n, 1, n).mapInArrow(run, tables.spark_ddl(columns))

    def tasks_wrote(self, name: str, out: str, options: ScanOptions, rows: int) -> TableWritten:
        """The `records` or `batches` table the main stage's tasks wrote (`main(records_to=…,
        batches_to=…)`), each its part file with pyarrow (arrow_files.TableFile) into `out` (this
        machine's directory: a local master), now complete: `_SUCCESS` added (an empty table's part
        too, as Spark's writer leaves one). The batches the C builder makes go straight to the file:
        through the JVM (Arrow to Spark rows to parquet-mr) records cost 6x their decode
        (bench/README.md, "records into Arrow in C"), and the batches table a Spark write job of its own."""
        from kafka_tools.pipeline.arrow_files import TableFile

        assert name in ("records", "batches")
        if not self.units.value:  # no segment: no task wrote a part
            TableFile(out, name, options.fmt, compression=options.compression).close()
        try:
            open(os.path.join(out, name, "_SUCCESS"), "wb").close()
        except OSError as exc:
            raise table_write_error(name, os.path.join(out, name), exc) from None
        return TableWritten(name, os.path.join(out, name), options.fmt, rows)

    def offsets(self, replay: dict[tuple[str, int], list[OffsetsSegment]]):
        """Every offset commit of every `__consumer_offsets` partition; a partition is replayed whole by
        one task (a replay is sequential), small partitions packed together."""
        columns = tables.OFFSETS
        sizes = [((key, segs), sum(s.spec.size for s in segs)) for key, segs in sorted(replay.items())]
        units = self.sc.broadcast(pack(sizes, self.task_bytes))
        n = len(units.value)
        self.tasks += n
        if n == 0:
            return self.spark.createDataFrame([], tables.spark_ddl(columns))

        def replay_task(id_batches):
            from kafka_tools.pipeline import offsets_replay, tasks
            from kafka_tools.pipeline import tables as t

            for ids in id_batches:
                for task in ids.column(0).to_pylist():
                    for (_, number), segments in units.value[task]:
                        for part in tasks.chunked(offsets_replay.replay_offsets(number, segments)):
                            yield t.arrow_batch(columns, part)

        return self.spark.range(0, n, 1, n).mapInArrow(replay_task, tables.spark_ddl(columns))

    def close(self) -> None:
        self.specs.destroy()
        self.units.destroy()


def committed_from(offsets) -> list[CommittedOffset]:
    rows = offsets.filter("loaded").collect()
    out = [
        CommittedOffset(
            r["group"],
            r["topic"],
            r["partition"],
            r["offset"],
            r["metadata"],
            r["commit_timestamp"],
            r["expire_timestamp"],
            r["leader_epoch"],
            r["log_partition"],
            r["log_offset"],
            r["file"],
        )
        for r in rows
    ]
    return sorted(out, key=lambda c: (c.group, c.topic, c.partition, c.file))


@contextmanager
def executor_errors() -> Iterator[None]:
    """A file an executor cannot read is an environment problem (exit 3), said in one line; anything
    else is a bug and keeps its traceback."""
    try:
        yield
    except (InputError, UsageError):
        raise
    except Exception as exc:
        text = str(exc)
        missing = re.search(r"ModuleNotFoundError: No module named '([\w.]+)'", text)
        if missing:
            raise InputError(
                f"an executor's Python has no module {missing.group(1)!r}: install ktool's dependencies "
                f"on every worker ({WORKER_NEEDS}), or point spark.pyspark.python at a Python that has them"
            ) from None
        for name in ("PermissionError", "FileNotFoundError", "IsADirectoryError", "OSError"):
            at = text.rfind(f"{name}:")
            if at >= 0:
                line = text[at:].splitlines()[0]
                hint = ""
                if name == "FileNotFoundError":
                    hint = " (every worker must see the segments at the driver's path, or give URIs)"
                raise InputError(f"an executor could not read its input: {line}{hint}") from None
        raise


WORKER_NEEDS = "crc32c, lz4, python-snappy, zstandard, pyarrow"
