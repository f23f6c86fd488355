"""The driver's side of `ktool scan`, without Spark: what to scan, and what the results mean.

`plan_scan` lists the segments (the same discovery `ktool validate` uses). After the executors have
checked every segment, `assemble_validation` puts their reports together with the partition-level
checks exactly as `validate_paths` does, so the findings are `ktool validate`'s. `finish` adds the
decoded counts and the committed offsets and makes the `ScanResult` the renderers print.
"""

from __future__ import annotations

import heapq
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafka_tools.errors import InputError, os_error
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of, partition_of
from kafka_tools.log.checks.findings import SegmentReport, ValidateOptions
from kafka_tools.log.checks.in_flight import settle_newest
from kafka_tools.log.checks.partition_checks import assemble_partition
from kafka_tools.log.checks.validate import (
    CheckpointRead,
    Validation,
    check_log_dir_checkpoints,
    check_log_dir_files,
    compacted_partitions,
    read_log_dir_checkpoints,
    result_for_file,
)
from kafka_tools.log.files.dirs import Partition
from kafka_tools.log.files.discover import Discovery, discover, printable_path
from kafka_tools.pipeline.offsets_replay import OffsetsSegment
from kafka_tools.pipeline.tasks import SegmentSpec, range_starts, split_ranges

MiB = 1024 * 1024
# Without --master, local inputs up to this many segment bytes are scanned in this process
# (pipeline/local.py), not on Spark: measured (bench/README.md, "in-process or Spark"), Spark's start-up
# costs as much time as this process takes to decode about that much, and local[2] saves at most half.
IN_PROCESS_BYTES = 1024 * MiB
IN_PROCESS = "in-process"  # the `master` of a result scanned without Spark
CONSUMER_OFFSETS = "__consumer_offsets"
_SEGMENT_KINDS = (FileKind.LOG, FileKind.KAFKA07)
_OTHER_KINDS = (
    FileKind.PRODUCER_SNAPSHOT,
    FileKind.OFFSET_INDEX,
    FileKind.TIME_INDEX,
    FileKind.OFFSET_CHECKPOINT,
    FileKind.LEADER_EPOCH_CHECKPOINT,
)


@dataclass
class ScanOptions:
    out: str | None = None  # directory (any Hadoop filesystem URI) for the tables; None: write none
    fmt: str = "parquet"  # parquet | json
    compression: str = "snappy"  # parquet's codec: output.CODECS
    records: bool = False  # also the `records` table
    offsets_topic: bool = False  # also replay __consumer_offsets: the `offsets` table, committed offsets
    cluster_metadata: bool = False  # also the `metadata` table: __cluster_metadata records decoded
    split_bytes: int = 128 * MiB  # segments larger than this are decoded in several byte ranges
    pack_bytes: int | None = None  # bytes per task (None: see task_bytes)
    waves: int = 2  # tasks per core the ranges are packed into, at least
    overwrite: bool = False

    def task_bytes(self, total: int, cores: int) -> int:
        """How many bytes of ranges one task decodes: `split_bytes`, or more when the input would make
        more than `waves` tasks a core (a Python task costs ~0.1 s of CPU before it does anything:
        fewer, larger tasks, as long as every core gets a few)."""
        if self.pack_bytes:
            return self.pack_bytes
        return max(self.split_bytes, -(-total // (self.waves * max(cores, 1))))


@dataclass
class ScanPlan:
    paths: list[str]
    discovery: Discovery
    segments: list[SegmentSpec] = field(default_factory=list)
    partitions: list[tuple[Partition, list[int]]] = field(default_factory=list)  # segment indexes
    files: list[tuple[Path | str, int | None]] = field(default_factory=list)  # given alone; segment index
    remote: bool = False  # segments on a Hadoop filesystem (hdfs://, s3a://…): read through Spark
    # The log dirs' offset checkpoints, read when planned: before any segment, as validate reads them
    # (a running broker writes both; read after the segments they may name offsets appended since).
    checkpoints: dict[Path, CheckpointRead] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return sum(s.size for s in self.segments)

    def ranges(self, split_bytes: int) -> list[tuple[int, int, int | None]]:
        """(segment index, start, end) of every byte range to decode: segments larger than
        `split_bytes` are cut at entry boundaries (`tasks.range_starts`; on the driver, reading only
        entry heads), a remote segment is read whole. End None: to the end of the file."""
        out = []
        for i, spec in enumerate(self.segments):
            try:
                starts = [0] if self.remote else range_starts(spec, split_bytes)
            except OSError as exc:
                raise os_error(spec.file, exc) from None
            out += [(i, start, end) for start, end in split_ranges(starts)]
        return out

    def only_topics(self, topics: tuple[str, ...] | list[str]) -> ScanPlan:
        """The same plan with only the segments of `topics` (all of them when empty): for questions,
        which need no partition-level checks."""
        if not topics:
            return self
        keep = [s for s in self.segments if s.topic in set(topics)]
        return replace(self, segments=keep, partitions=[], files=[])

    def offsets_partitions(self) -> dict[tuple[str, int], list[int]]:
        """(directory, number) of every `__consumer_offsets` partition -> its segment indexes in offset
        order. Keyed by directory too: copies of one partition from several brokers' log dirs are
        separate logs, each replayed on its own."""
        out: dict[tuple[str, int], list[int]] = {}
        for i, spec in enumerate(self.segments):
            if spec.topic == CONSUMER_OFFSETS and spec.partition is not None and not spec.kafka07:
                out.setdefault((spec.file.rpartition("/")[0], spec.partition), []).append(i)
        for indexes in out.values():
            indexes.sort(key=lambda i: self.segments[i].base_offset)
        return out


def plan_scan(paths: list[str | os.PathLike]) -> ScanPlan:
    """Every segment under `paths`, found as `ktool validate` finds them; unreadable paths fail here,
    before anything is started."""
    found = discover(paths)
    plan = ScanPlan([str(p) for p in paths], found)
    plan.checkpoints = {ld.path: read_log_dir_checkpoints(ld) for ld in found.log_dirs}
    for ld_part in found.all_partitions():
        ld_part.check_readable()
        indexes = []
        for seg in ld_part.segments:
            indexes.append(len(plan.segments))
            plan.segments.append(_spec(seg.log, ld_part, seg.offset_index, seg.time_index))
        plan.partitions.append((ld_part, indexes))
    for path in found.files:
        kind = kind_of(path)
        if kind in _SEGMENT_KINDS:
            plan.files.append((path, len(plan.segments)))
            plan.segments.append(_spec(path, None, None, None))
        elif kind in _OTHER_KINDS:
            plan.files.append((path, None))
        else:
            raise InputError(
                f"{path}: not a file ktool scans (a .log, .kafka, index, snapshot or checkpoint)"
            )
    return plan


def _spec(log: Path, part: Partition | None, index: Path | None, time_index: Path | None) -> SegmentSpec:
    where = (part.topic, part.partition) if part is not None else partition_of(log)
    try:
        size = log.stat().st_size
    except OSError as exc:
        raise os_error(log, exc) from None
    return SegmentSpec(
        file=printable_path(log),
        path=os.path.abspath(log),
        topic=printable_path(where[0]) if where else None,
        partition=where[1] if where else None,
        base_offset=base_offset_of(log) or 0,
        size=size,
        kafka07=kind_of(log) == FileKind.KAFKA07,
        in_partition=part is not None,
        offset_index=(printable_path(index), os.path.abspath(index)) if index is not None else None,
        time_index=(printable_path(time_index), os.path.abspath(time_index))
        if time_index is not None
        else None,
    )


def pack(sizes: list[tuple[object, int]], target: int) -> list[list]:
    """Items in tasks of about `target` bytes: as many tasks as the total needs, each item (largest
    first) given to the task with the least so far, so the tasks come out even; a big item stands
    alone, small ones go together (as Spark packs small files into one partition). Each item also
    counts 1/128 of the target, the price of opening a file, so a task never holds thousands of
    empty ones. Tasks come largest first."""
    if not sizes:
        return []
    cost = max(target // 128, 1)
    items = sorted(
        ((size + cost, n, item) for n, (item, size) in enumerate(sizes)), key=lambda s: (-s[0], s[1])
    )
    raw = sum(size for _, size in sizes)
    count = min(len(items), max(1, -(-raw // target), -(-len(items) * cost // target)))
    heap = [(0, t) for t in range(count)]
    tasks: list[list] = [[] for _ in range(count)]
    for size, _, item in items:
        load, t = heapq.heappop(heap)
        tasks[t].append(item)
        heapq.heappush(heap, (load + size, t))
    loads = dict((t, load) for load, t in heap)
    return [tasks[t] for t in sorted(range(count), key=lambda t: -loads[t])]


# -- validation, assembled as validate_paths assembles it -------------------------------------------


def assemble_validation(plan: ScanPlan, reports: list[SegmentReport]) -> Validation:
    """The `Validation` `validate_paths(plan.paths, ValidateOptions())` returns, built from the
    executors' per-segment reports plus the partition- and log-dir-level checks (cheap, on the driver).
    """
    result = Validation()
    by_part = {id(part): [reports[i] for i in indexes] for part, indexes in plan.partitions}
    in_log_dirs = set()
    for ld in plan.discovery.log_dirs:
        compacted = compacted_partitions(ld)
        by_name = {}
        for part in ld.partitions:
            in_log_dirs.add(id(part))
            settle_newest(part, by_part[id(part)])  # a running broker's newest segment: in flight
            rep = assemble_partition(part, by_part[id(part)], part.name in compacted)
            by_name[part.name] = rep
            result.partitions.append(rep)
        read = plan.checkpoints.get(ld.path)
        result.findings += check_log_dir_checkpoints(ld, by_name, read) + check_log_dir_files(ld)
    for part in plan.discovery.partitions:
        settle_newest(part, by_part[id(part)])
        result.partitions.append(assemble_partition(part, by_part[id(part)], False))
    for path, index in plan.files:
        if index is not None:
            result.files.append(reports[index])
        else:
            result_for_file(path, ValidateOptions(), result)
    return result


def offsets_replay_segments(
    plan: ScanPlan, reports: list[SegmentReport]
) -> dict[tuple[str, int], list[OffsetsSegment]]:
    """Per `__consumer_offsets` partition, its segments and how much of each the broker's recovery
    keeps: up to the first invalid byte of the partition, nothing of the segments after it."""
    out: dict[tuple[str, int], list[OffsetsSegment]] = {}
    for key, indexes in plan.offsets_partitions().items():
        cut = False
        segs = []
        for i in indexes:
            report = reports[i]
            segs.append(OffsetsSegment(plan.segments[i], None if cut else report.recovery_point))
            cut = cut or report.tail_bytes > 0
        out[key] = segs
    return out
