"""Segments on a Hadoop filesystem (`hdfs://`, `s3a://`, `abfs://`, `gs://`…), read through Spark.

The driver lists them with Hadoop's FileSystem API inside the JVM, so any filesystem Spark is set up
for works (core-site.xml, `--conf spark.hadoop.…`). The executors get each segment whole from
Spark's `binaryFile` source (one row per file, no byte ranges: a segment is at most 2 GiB), handed
to Python as an Arrow buffer, write it to a local temporary file and run the same task functions as
for local paths; their rows reach Spark as Arrow batches (`mapInArrow`), the `records` and question
tables built in C (pipeline/record_columns.py), at most `tasks.CHUNK_ROWS` rows or `CHUNK_BYTES` a
batch. An executor's Python holds the bytes of one Spark input split (small segments up to
`spark.sql.files.maxPartitionBytes` together, or one larger segment) until they are on its disk,
then only the batches it builds: never a Python object per record. (Not smaller Arrow input batches:
with `spark.sql.execution.arrow.maxBytesPerBatch` set, the JVM's sized batches ran out of a 1 GiB
heap on one 128 MiB segment, where whole splits did not: bench/README.md, `scan_remote.py`.)

What differs from local paths: each segment is checked as `ktool validate FILE` checks a segment given
on its own. The checks that need the files beside it (its `.index`/`.timeindex`, the continuity of a
partition's segments, producer snapshots, checkpoints) are made for local paths only. Every table
reads the files again (the records table is a stage of its own), and the `offsets` replay, grouped by
partition, still reaches Spark as pickled rows (a small table).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

from kafka_tools.errors import InputError
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of, partition_of
from kafka_tools.log.files.discover import Discovery
from kafka_tools.pipeline import tables
from kafka_tools.pipeline.offsets_replay import OffsetsSegment
from kafka_tools.pipeline.plan import ScanOptions, ScanPlan
from kafka_tools.pipeline.sources import SegmentSource
from kafka_tools.pipeline.tasks import SegmentSpec, with_path


def is_remote(path: str) -> bool:
    """A URI of a filesystem other than the local one (a Windows drive letter is not a scheme)."""
    scheme = urlsplit(str(path)).scheme
    return len(scheme) > 1 and scheme != "file"


def local_path(path: str) -> str:
    """`file:///x` -> `/x`; anything else unchanged."""
    parts = urlsplit(str(path))
    return parts.path if parts.scheme == "file" else str(path)


def _normal(uri: str) -> str:
    """One spelling per file, as Hadoop's Path prints it (`file:///x` and `file:/x` alike)."""
    return uri.replace("file:///", "file:/", 1).rstrip("/")


def plan_remote(spark, uris: list[str]) -> ScanPlan:
    """Every `.log`/`.kafka` file under `uris`, listed by the JVM's Hadoop FileSystem."""
    from py4j.protocol import Py4JJavaError

    sc = spark.sparkContext
    jvm = sc._jvm
    conf = sc._jsc.hadoopConfiguration()
    found: dict[str, int] = {}
    for uri in uris:
        path = jvm.org.apache.hadoop.fs.Path(uri)
        try:
            fs = path.getFileSystem(conf)
            status = fs.getFileStatus(path)
            if status.isFile():
                found[_normal(status.getPath().toString())] = status.getLen()
                continue
            files = fs.listFiles(path, True)
            while files.hasNext():
                st = files.next()
                found[_normal(st.getPath().toString())] = st.getLen()
        except Py4JJavaError as exc:
            message = str(exc.java_exception.getMessage() or exc.java_exception.toString())
            raise InputError(f"{uri}: {message.splitlines()[0]}") from None
    plan = ScanPlan([str(u) for u in uris], Discovery(), remote=True)
    for uri in sorted(found):
        parent, _, name = uri.rpartition("/")
        kind = kind_of(name)
        if kind not in (FileKind.LOG, FileKind.KAFKA07):
            continue
        where = partition_of(f"{parent.rpartition('/')[2]}/{name}")
        plan.files.append((uri, len(plan.segments)))
        plan.segments.append(
            SegmentSpec(
                file=uri,
                path=uri,
                topic=where[0] if where else None,
                partition=where[1] if where else None,
                base_offset=base_offset_of(name) or 0,
                size=found[uri],
                kafka07=kind == FileKind.KAFKA07,
                in_partition=False,
            )
        )
    if not plan.segments:
        raise InputError(f"no segment files (.log, .kafka) under {', '.join(map(str, uris))}")
    return plan


@contextmanager
def local_copy(specs: list[SegmentSpec], contents: list) -> Iterator[list[SegmentSpec]]:
    """The segments (`contents`: bytes or Arrow buffers) written to a temporary directory (each under
    its partition directory's name, as the decoder expects, in a folder of its own: two log dirs may
    hold the same partition), the specs pointing there; removed afterwards. Nothing of `contents` is
    kept: emptied by the caller, their memory is free."""
    directory = tempfile.mkdtemp(prefix="ktool-scan-")
    try:
        local = []
        for i, spec in enumerate(specs):
            parent, _, name = spec.file.rpartition("/")
            folder = os.path.join(directory, str(i), parent.rpartition("/")[2] or "segments")
            os.makedirs(folder)
            path = os.path.join(folder, name)
            with open(path, "wb") as f:
                f.write(contents[i])
            local.append(with_path(spec, path))
        if len(local) != len(contents):
            raise ValueError(f"{len(specs)} segments, {len(contents)} contents")
        yield local
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def _rows(columns, chunks) -> Iterator[tuple]:
    """Column lists as row tuples (the offsets table's replay, grouped by partition on the way)."""
    names = tables.names(columns)
    for cols in chunks:
        yield from zip(*(cols[n] for n in names), strict=True)


class RemoteFiles(SegmentSource):
    """The stages of `job.run_scan` over segments Spark reads, one whole file a row (`_contents`)."""

    arrow_batches = True  # the task functions' Arrow batches (record_columns, question_columns) go to Spark

    def __init__(self, spark, plan: ScanPlan, options: ScanOptions, ranges: list) -> None:
        self.spark = spark
        self.sc = spark.sparkContext
        self.plan = plan
        self.options = options
        self.specs = self.sc.broadcast(plan.segments)
        self.lookup = self.sc.broadcast({_normal(s.file): i for i, s in enumerate(plan.segments)})
        self.tasks = 0

    def _files(self, indexes: list[int]):
        uris = ",".join(self.plan.segments[i].file for i in indexes)
        rdd = self.sc.binaryFiles(uris, minPartitions=max(1, len(indexes)))
        self.tasks += rdd.getNumPartitions()
        return rdd

    def _stage(self, columns, produce, records_to=None):
        """`produce` over every segment, its rows as Arrow batches (`mapInArrow`): the records and
        question tables come from the C builder as on local paths, no Python object a record."""
        assert records_to is None  # tasks_write is False: the records table is a stage of its own
        if not self.plan.segments:
            return self.spark.createDataFrame([], tables.spark_ddl(columns))
        specs, lookup, scanned = self.specs, self.lookup, self.scanned

        def run(file_batches):
            from kafka_tools.pipeline import tables as t
            from kafka_tools.pipeline.remote import _normal, local_copy

            for files in file_batches:  # one input split's segments (or one larger segment)
                named = [specs.value[lookup.value[_normal(uri)]] for uri in files.column(0).to_pylist()]
                contents = [files.column(1)[i].as_buffer() for i in range(files.num_rows)]
                del files
                with local_copy(named, contents) as local:
                    contents.clear()  # on disk now: while they are decoded, only their batches in memory
                    for spec in local:
                        for cols in produce(spec, 0, None):
                            if isinstance(cols, dict):  # column lists; else an Arrow batch made in C
                                cols = t.arrow_batch(columns, cols, constants=spec.where)
                            yield cols
                        if scanned is not None:
                            scanned.add(spec.size)

        frame = self._contents(list(range(len(self.plan.segments))))
        return frame.mapInArrow(run, tables.spark_ddl(columns))

    def _contents(self, indexes: list[int]):
        """(path, content) of the segments `indexes`, one row a file, read by Spark's `binaryFile`
        source: a file goes to Python as one Arrow buffer, not pickled. Spark packs small files into
        tasks of about `spark.sql.files.maxPartitionBytes` (spread over the cores), a larger file is a
        task of its own; `recursiveFileLookup` keeps Spark from reading `key=value` directory names
        as columns. The source leaves out empty files: theirs are rows made here (an empty segment
        is still checked)."""
        from pyspark.sql import functions as F  # noqa: N812 (pyspark's usual name)

        files = [self.plan.segments[i].file for i in indexes if self.plan.segments[i].size]
        empty = [self.plan.segments[i].file for i in indexes if not self.plan.segments[i].size]
        frame = None
        if files:
            reader = self.spark.read.format("binaryFile").option("recursiveFileLookup", "true")
            frame = reader.load(files).select("path", "content")
        if empty:  # made in the JVM: one row per name, no Python rows
            names = F.explode(F.array(*(F.lit(name) for name in empty))).alias("path")
            rows = self.spark.range(1).select(names, F.lit(bytearray()).alias("content"))
            frame = rows if frame is None else frame.unionByName(rows)
        self.tasks += frame.rdd.getNumPartitions()
        return frame

    def offsets(self, replay: dict[tuple[str, int], list[OffsetsSegment]]):
        columns = tables.OFFSETS
        place = {}  # segment index -> ((directory, partition), its place in it, recovered bytes)
        for log, segs in replay.items():
            for order, seg in enumerate(segs):
                place[self.lookup.value[_normal(seg.spec.file)]] = (log, order, seg.recovered_bytes)
        if not place:
            return self.spark.createDataFrame([], tables.spark_ddl(columns))
        specs, lookup, where = self.specs, self.lookup, self.sc.broadcast(place)

        def key(item):
            from kafka_tools.pipeline.remote import _normal

            i = lookup.value[_normal(item[0])]
            log, order, recovered = where.value[i]
            return log, (order, i, recovered, item[1])

        def replay_partition(group):
            from kafka_tools.pipeline import offsets_replay
            from kafka_tools.pipeline.remote import _rows, local_copy

            (_, number), items = group
            items = sorted(items, key=lambda item: item[0])
            with local_copy([specs.value[i] for _, i, _, _ in items], [d for *_, d in items]) as local:
                segs = [
                    offsets_replay.OffsetsSegment(s, r) for s, (_, _, r, _) in zip(local, items, strict=True)
                ]
                yield from _rows(columns, [offsets_replay.replay_offsets(number, segs)])

        rdd = self._files(sorted(place)).map(key).groupByKey().flatMap(replay_partition)
        return self.spark.createDataFrame(rdd, tables.spark_ddl(columns))

    def close(self) -> None:
        self.specs.destroy()
        self.lookup.destroy()
