"""The Spark job of `ktool scan`, in phases (each a Spark job in one job group, one progress bar):

1. check: one task per segment, largest first: `tasks.check_segment` (validate's per-segment checks)
   returns the segment's report and the entry boundaries it may be split at; collected to the driver.
2. batches: one task per byte range [start, end) of a segment (a segment larger than `split_bytes`
   is cut into several, always at an entry boundary found in phase 1): every entry decoded, its
   records decompressed and decoded, one `batches` row per entry, handed to Spark as Arrow batches
   (`mapInArrow`). The per-segment totals (batches, records, offsets, codecs, timestamps) are a Spark
   aggregation over those rows.
3. records (`--records`): the same ranges decoded again, one row per record. Decoding twice costs less
   than caching every record in Spark between two writes.
4. offsets (`--offsets-topic`): one task per `__consumer_offsets` partition, its segments in order
   (a replay is sequential by nature): every commit, and which one the broker would load.

Then, on the driver: the partition-level checks (`plan.assemble_validation`, so the findings are
`ktool validate`'s), and the small `segments` and `findings` tables.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from kafka_tools.errors import InputError, UsageError
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.plan import (
    CommittedOffset,
    ScanOptions,
    ScanPlan,
    ScanResult,
    SegmentTotals,
    TableWritten,
    finding_row,
    finish,
    offsets_replay_segments,
    pack,
)
from kafka_tools.pipeline.session import job_progress
from kafka_tools.pipeline.tasks import OffsetsSegment, SegmentCheck, split_ranges

FORMATS = ("parquet", "json")


def run_scan(
    spark, plan: ScanPlan, options: ScanOptions, progress: Callable[[int, int], None] | None = None
) -> ScanResult:
    """Scan `plan` with `spark`; write the tables under `options.out` if set."""
    if options.fmt not in FORMATS:
        raise UsageError(f"--format {options.fmt}: expected one of {', '.join(FORMATS)}")
    if options.out:
        check_out_dir(options)
    sc = spark.sparkContext
    t0 = time.perf_counter()
    written: list[TableWritten] = []
    if plan.remote:
        from kafka_tools.pipeline.remote import RemoteFiles

        source = RemoteFiles(spark, plan, options)
    else:
        source = LocalFiles(spark, plan, options)
    with job_progress(sc, progress), executor_errors():
        checks = source.check()
        source.plan_ranges(checks)
        batches = source.table("batches")
        if options.out:
            batches = batches.persist()
            written.append(write(batches, options, "batches"))
        totals = segment_totals(batches)
        if options.out:
            batches.unpersist()
            written[-1].rows = sum(t.batches for t in totals.values())
        if options.records and options.out:
            written.append(write(source.table("records"), options, "records"))
            written[-1].rows = sum(t.records for t in totals.values())
        committed = None
        if options.offsets_topic:
            offsets = source.offsets(offsets_replay_segments(plan, checks))
            if options.out:
                offsets = offsets.persist()
                written.append(write(offsets, options, "offsets"))
            committed = committed_from(offsets)
            if options.out:
                written[-1].rows = offsets.count()
                offsets.unpersist()
        source.close()
        result = finish(plan, checks, totals, committed)
        if options.out:
            rows = [tuple(r[c] for c in tables.names(tables.SEGMENTS)) for r in result.segments]
            written.append(write(small_table(spark, rows, tables.SEGMENTS), options, "segments", len(rows)))
            findings = [finding_row(f) for f in result.validation.all_findings()]
            rows = [tuple(r[c] for c in tables.names(tables.FINDINGS)) for r in findings]
            written.append(write(small_table(spark, rows, tables.FINDINGS), options, "findings", len(rows)))
    result.tables = written
    result.master = sc.master
    result.tasks = source.tasks
    result.seconds = time.perf_counter() - t0
    return result


# -- phases, over files every executor opens by path ------------------------------------------------


class LocalFiles:
    """Segments on this machine's filesystem (or one mounted at the same path on every worker): the
    tasks open them by path, decode byte ranges of them, and hand Arrow batches to Spark."""

    def __init__(self, spark, plan: ScanPlan, options: ScanOptions) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        self.plan = plan
        self.options = options
        self.specs = self.sc.broadcast(plan.segments)
        self.units = None
        self.tasks = 0

    def check(self) -> list[SegmentCheck]:
        """Phase 1: every segment's checks (small segments packed together)."""
        segments = self.plan.segments
        if not segments:
            return []
        # A check runs at CRC speed, far faster than decoding: pack them into about two tasks a core.
        target = max(self.options.task_bytes, self.plan.bytes // (2 * self.sc.defaultParallelism) + 1)
        units = pack([(i, s.size) for i, s in enumerate(segments)], target)
        specs, split_bytes = self.specs, self.options.split_bytes

        def check(unit: list[int]):
            from kafka_tools.pipeline.tasks import check_segment

            return [(i, check_segment(specs.value[i], split_bytes)) for i in unit]

        self.tasks += len(units)
        done = dict(self.sc.parallelize(units, len(units)).flatMap(check).collect())
        return [done[i] for i in range(len(segments))]

    def plan_ranges(self, checks: list[SegmentCheck]) -> None:
        """The byte ranges to decode (split at the entry boundaries phase 1 found), packed into tasks."""
        sizes = []
        for i, check in enumerate(checks):
            for start, end in split_ranges(check.split_starts):
                stop = self.plan.segments[i].size if end is None else end
                sizes.append(((i, start, end), stop - start))
        self.units = self.sc.broadcast(pack(sizes, self.options.task_bytes))

    def table(self, table: str):
        """The `batches` or `records` rows of every byte range; a task decodes one unit of ranges."""
        columns = tables.BATCHES if table == "batches" else tables.RECORDS
        n = len(self.units.value)
        self.tasks += n
        if n == 0:
            return self.spark.createDataFrame([], tables.spark_ddl(columns))
        specs, units = self.specs, self.units

        def decode(id_batches):
            from kafka_tools.pipeline import tables as t
            from kafka_tools.pipeline import tasks

            chunks = tasks.batch_chunks if table == "batches" else tasks.record_chunks
            for ids in id_batches:
                for task in ids.column(0).to_pylist():
                    for segment, start, end in units.value[task]:
                        spec = specs.value[segment]
                        for cols in chunks(spec, start, end):
                            yield t.arrow_batch(columns, cols, constants=spec.where)

        return self.spark.range(0, n, 1, n).mapInArrow(decode, tables.spark_ddl(columns))

    def offsets(self, replay: dict[int, list[OffsetsSegment]]):
        """Every offset commit of every `__consumer_offsets` partition; a partition is replayed whole by
        one task (a replay is sequential), small partitions packed together."""
        columns = tables.OFFSETS
        sizes = [((n, segs), sum(s.spec.size for s in segs)) for n, segs in sorted(replay.items())]
        units = self.sc.broadcast(pack(sizes, self.options.task_bytes))
        n = len(units.value)
        self.tasks += n
        if n == 0:
            return self.spark.createDataFrame([], tables.spark_ddl(columns))

        def replay_task(id_batches):
            from kafka_tools.pipeline import tables as t
            from kafka_tools.pipeline import tasks

            for ids in id_batches:
                for task in ids.column(0).to_pylist():
                    for number, segments in units.value[task]:
                        cols = tasks.replay_offsets(number, segments)
                        for part in tasks.chunked(cols):
                            yield t.arrow_batch(columns, part)

        return self.spark.range(0, n, 1, n).mapInArrow(replay_task, tables.spark_ddl(columns))

    def close(self) -> None:
        self.specs.destroy()
        if self.units is not None:
            self.units.destroy()


def segment_totals(batches) -> dict[str, SegmentTotals]:
    from pyspark.sql import functions as F

    rows = (
        batches.groupBy("file")
        .agg(
            F.count("*").alias("batches"),
            F.sum("records").alias("records"),
            F.min("base_offset").alias("first"),
            F.max("last_offset").alias("last"),
            F.collect_set("codec").alias("codecs"),
            F.collect_set("magic").alias("magic"),
            F.min("min_timestamp").alias("min_ts"),
            F.max("max_timestamp").alias("max_ts"),
        )
        .collect()
    )
    return {
        r["file"]: SegmentTotals(
            r["batches"],
            r["records"] or 0,
            r["first"],
            r["last"],
            set(r["codecs"]),
            set(r["magic"]),
            r["min_ts"],
            r["max_ts"],
        )
        for r in rows
    }


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
        )
        for r in rows
    ]
    return sorted(out, key=lambda c: (c.group, c.topic, c.partition))


def small_table(spark, rows: list[tuple], columns):
    return spark.createDataFrame(rows, tables.spark_ddl(columns))


# -- output --------------------------------------------------------------------------------------


def table_path(out: str, name: str) -> str:
    return out.rstrip("/") + "/" + name


def _local_dir(out: str) -> str | None:
    parts = urlsplit(out)
    if parts.scheme in ("", "file"):
        return parts.path if parts.scheme else out
    return None


def check_out_dir(options: ScanOptions) -> None:
    """Refuse, before any work, to write over tables of an earlier scan (unless --overwrite)."""
    local = _local_dir(options.out or "")
    if local is None or options.overwrite:
        return
    names = ["segments", "batches", "findings"]
    names += ["records"] if options.records else []
    names += ["offsets"] if options.offsets_topic else []
    existing = [n for n in names if os.path.exists(os.path.join(local, n))]
    if existing:
        raise UsageError(
            f"{options.out} already holds {', '.join(existing)}: choose another --out or add --overwrite"
        )


def write(df, options: ScanOptions, name: str, rows: int | None = None) -> TableWritten:
    path = table_path(options.out or "", name)
    mode = "overwrite" if options.overwrite else "errorifexists"
    try:
        df.write.format(options.fmt).mode(mode).save(path)
    except Exception as exc:
        text = str(exc)
        if "PATH_ALREADY_EXISTS" in text or "already exists" in text:
            raise UsageError(f"{path} already exists: choose another --out or add --overwrite") from None
        raise
    return TableWritten(name, path, options.fmt, rows)


class executor_errors:
    """A file an executor cannot read is an environment problem (exit 3), said in one line; anything
    else is a bug and keeps its traceback."""

    def __enter__(self):
        return self

    def __exit__(self, kind, exc, tb) -> bool:
        if exc is None or isinstance(exc, (InputError, UsageError)):
            return False
        text = str(exc)
        for name in ("PermissionError", "FileNotFoundError", "IsADirectoryError", "OSError"):
            at = text.rfind(f"{name}:")
            if at >= 0:
                line = text[at:].splitlines()[0]
                raise InputError(f"an executor could not read its input: {line}") from None
        return False
