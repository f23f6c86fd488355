"""What a scan returns: per-partition summaries, committed offsets, the tables written, and the rows
of the small tables, assembled on the driver from what the tasks sent back."""

from __future__ import annotations

from dataclasses import dataclass, field

from kafka_tools.log.checks.findings import Finding, SegmentReport, Severity, Summary, status_of
from kafka_tools.log.checks.validate import (
    Validation,
)
from kafka_tools.log.files.discover import printable_path
from kafka_tools.pipeline.plan import ScanPlan, assemble_validation
from kafka_tools.pipeline.tasks import SegmentTotals

# -- the result --------------------------------------------------------------------------------------


@dataclass
class PartitionSummary:
    """One topic-partition (or a file given on its own): the summary table's row."""

    name: str
    path: str  # the partition directory (the file, for a file given on its own)
    topic: str | None
    partition: int | None
    segments: int = 0
    bytes: int = 0
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    log_end_offset: int | None = None
    tail_bytes: int = 0
    codecs: list[str] = field(default_factory=list)
    errors: int = 0
    warnings: int = 0
    status: str = "clean"  # clean | tail | CORRUPT, as `ktool validate` says


@dataclass
class CommittedOffset:
    """The offset the group coordinator would load for (group, topic, partition)."""

    group: str
    topic: str
    partition: int
    offset: int
    metadata: str | None
    commit_timestamp: int | None
    expire_timestamp: int | None
    leader_epoch: int | None
    log_partition: int
    log_offset: int
    file: str = ""  # the __consumer_offsets segment it was read from (which copy, with several log dirs)


@dataclass
class TableWritten:
    name: str
    path: str
    fmt: str
    rows: int | None = None


@dataclass
class ScanResult:
    validation: Validation
    summary: Summary
    partitions: list[PartitionSummary]
    segments: list[dict]  # rows of the `segments` table
    committed: list[CommittedOffset] | None = None  # None: --offsets-topic not asked for
    tables: list[TableWritten] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)  # earlier tables --overwrite removed
    said: list[str] = field(default_factory=list)  # what was done with a killed scan's leftovers
    master: str = ""
    tasks: int = 0
    retried: int = 0  # task attempts that failed (a lost executor's) and Spark ran again
    decoders: list[str] = field(default_factory=list)  # the record decoders the tasks ran (C, Python)
    startup_seconds: float | None = None
    seconds: float = 0.0

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions)


def segment_rows(
    plan: ScanPlan, reports: list[SegmentReport], totals: dict[str, SegmentTotals], ranges: list[tuple]
) -> list[dict]:
    cuts: dict[int, int] = {}
    for i, _, _ in ranges:
        cuts[i] = cuts.get(i, 0) + 1
    rows = []
    for i, (spec, rep) in enumerate(zip(plan.segments, reports, strict=True)):
        t = totals.get(spec.file) or SegmentTotals()
        rows.append(
            {
                **spec.where,
                "kind": "kafka07" if spec.kafka07 else "log",
                "base_offset": spec.base_offset,
                "first_offset": t.first_offset,
                "last_offset": t.last_offset,
                "batches": t.batches,
                "records": t.records,
                "bytes": rep.size,
                "valid_bytes": rep.recovery_point,
                "first_invalid_position": rep.recovery_point if rep.recovery_point < rep.size else None,
                "codecs": sorted(t.codecs),
                "magic": sorted(t.magic),
                "min_timestamp": t.min_timestamp,
                "max_timestamp": t.max_timestamp,
                "errors": sum(1 for f in rep.findings if f.severity == Severity.ERROR),
                "warnings": sum(1 for f in rep.findings if f.severity == Severity.WARNING),
                "ranges": cuts.get(i, 0),
            }
        )
    return rows


def partition_summaries(
    plan: ScanPlan, reports: list[SegmentReport], validation: Validation, rows: list[dict]
) -> list[PartitionSummary]:
    """A summary per partition directory; segment files given on their own are grouped by the
    topic-partition their directory names (or stand alone)."""
    by_file = {row["file"]: row for row in rows}
    out = []
    for rep in validation.partitions:
        part = rep.partition
        name, path, topic = (printable_path(x) for x in (part.name, part.path, part.topic))
        s = PartitionSummary(name, path, topic, part.partition)
        _fill(s, [by_file[printable_path(seg.log)] for seg in part.segments], rep.all_findings())
        s.log_end_offset = rep.log_end_offset
        s.tail_bytes = sum(seg.tail_bytes for seg in rep.segments)
        out.append(s)
    groups: dict[object, list[int]] = {}
    for _, index in plan.files:
        if index is not None:
            spec = plan.segments[index]
            folder = spec.file.rpartition("/")[0]
            key = (folder, spec.topic, spec.partition) if spec.topic is not None else spec.file
            groups.setdefault(key, []).append(index)
    for key, indexes in groups.items():
        indexes.sort(key=lambda i: plan.segments[i].base_offset)
        first = plan.segments[indexes[0]]
        group = [reports[i] for i in indexes]
        if isinstance(key, tuple):
            s = PartitionSummary(f"{first.topic}-{first.partition}", key[0], first.topic, first.partition)
        else:
            s = PartitionSummary(first.file, first.file, None, None)
        _fill(s, [rows[i] for i in indexes], [f for r in group for f in r.findings])
        ends = [r.next_offset for r in group if r.next_offset is not None]
        s.log_end_offset = ends[-1] if ends else None
        s.tail_bytes = sum(r.tail_bytes for r in group)
        out.append(s)
    return out


def _fill(s: PartitionSummary, rows: list[dict], findings: list[Finding]) -> None:
    s.segments = len(rows)
    s.bytes = sum(r["bytes"] for r in rows)
    s.batches = sum(r["batches"] for r in rows)
    s.records = sum(r["records"] for r in rows)
    firsts = [r["first_offset"] for r in rows if r["first_offset"] is not None]
    lasts = [r["last_offset"] for r in rows if r["last_offset"] is not None]
    s.first_offset = min(firsts) if firsts else None
    s.last_offset = max(lasts) if lasts else None
    s.codecs = sorted({c for r in rows for c in r["codecs"]})
    s.status, s.errors = status_of(findings)
    s.warnings = sum(1 for f in findings if f.severity == Severity.WARNING)


def finding_row(f: Finding) -> dict:
    """A `findings` table row: expected/actual as text (they are numbers or words)."""
    row = f.fields()
    for name in ("expected", "actual"):
        row[name] = None if row[name] is None else str(row[name])
    return row


def committed_offsets(cols: dict[str, list]) -> list[CommittedOffset]:
    """The rows of `offsets` columns marked `loaded`, sorted by group, topic, partition."""
    out = [
        CommittedOffset(
            cols["group"][i],
            cols["topic"][i],
            cols["partition"][i],
            cols["offset"][i],
            cols["metadata"][i],
            cols["commit_timestamp"][i],
            cols["expire_timestamp"][i],
            cols["leader_epoch"][i],
            cols["log_partition"][i],
            cols["log_offset"][i],
            cols["file"][i],
        )
        for i, loaded in enumerate(cols["loaded"])
        if loaded
    ]
    return sorted(out, key=lambda c: (c.group, c.topic, c.partition, c.file))


def finish(
    plan: ScanPlan,
    reports: list[SegmentReport],
    totals: dict[str, SegmentTotals],
    ranges: list[tuple[int, int, int | None]],
    committed: list[CommittedOffset] | None,
) -> ScanResult:
    validation = assemble_validation(plan, reports)
    rows = segment_rows(plan, reports, totals, ranges)
    return ScanResult(
        validation=validation,
        summary=validation.summary(),
        partitions=partition_summaries(plan, reports, validation, rows),
        segments=rows,
        committed=committed,
    )
