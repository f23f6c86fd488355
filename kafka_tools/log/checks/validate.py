"""The service behind `ktool validate`: every check the broker's recovery makes, and more, over files,
partitions and whole log dirs, reported as findings with file, byte position, offset and expectation.

Validity follows Kafka's LogSegment.recover: an entry is valid when its size is at least the minimum for
its format, it lies inside the file, its CRC matches and its offsets fit the segment. The first invalid
entry is where the broker would cut the segment (`recovery_point`); whether valid data follows that
point decides if truncation repairs the segment (a tail) or would lose data (corruption in the middle).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_tools.errors import InputError, os_error
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of
from kafka_tools.format.shared_methods import SharedMethods
from kafka_tools.log.checks.findings import (
    IN_FLIGHT,
    UNREADABLE,
    Finding,
    PartitionReport,
    SegmentReport,
    Severity,
    Summary,
    ValidateOptions,
)
from kafka_tools.log.checks.in_flight import in_flight, settle_active_segment
from kafka_tools.log.checks.partition_checks import (
    dump_checks,
    leader_epoch_findings,
    past_log_end_finding,
    validate_partition,
)
from kafka_tools.log.checks.segment_checks import scan_segment
from kafka_tools.log.files.dirs import LogDir, Segment, is_newest_live_segment
from kafka_tools.log.files.discover import Discovery

if TYPE_CHECKING:
    from kafka_tools.format import checkpoints


CheckpointRead = dict[Path, "checkpoints.Checkpoint | checkpoints.CheckpointError"]


def read_log_dir_checkpoints(ld: LogDir) -> CheckpointRead:
    """The log dir's offset checkpoints, read before its segments: a running broker writes both, and a
    checkpoint read after the segments may name offsets appended after they were read."""
    from kafka_tools.format import checkpoints

    out: CheckpointRead = {}
    for path in ld.checkpoints:
        try:
            out[path] = checkpoints.read_offset_checkpoint(path)
        except checkpoints.CheckpointError as exc:
            out[path] = exc
        except FileNotFoundError:
            continue  # replaced between listing and reading (the broker writes a new one and renames it)
    return out


def check_log_dir_checkpoints(
    ld: LogDir, reports: dict[str, PartitionReport], read: CheckpointRead | None = None
) -> list[Finding]:
    """Checkpoints that name offsets past a partition's log end, or partitions that do not exist."""
    from kafka_tools.format import checkpoints

    out: list[Finding] = []
    read = read_log_dir_checkpoints(ld) if read is None else read
    for path, cp in read.items():
        if isinstance(cp, checkpoints.CheckpointError):
            out.append(
                Finding(
                    file=str(path),
                    kind="checkpoint-malformed",
                    severity=Severity.ERROR,
                    message=f"line {cp.line}: {cp}",
                )
            )
            continue
        for e in cp.entries:
            rep = reports.get(f"{e.topic}-{e.partition}")
            if rep is None:
                continue
            end = rep.log_end_offset
            if end is not None and e.offset > end and path.name != "cleaner-offset-checkpoint":
                f = past_log_end_finding(path, f"{e.topic}-{e.partition}: {e.offset} is", e.offset, end)
                out.append(in_flight(f, "written by the running broker after") if ld.live else f)
    return out


def check_log_dir_files(ld: LogDir) -> list[Finding]:
    """meta.properties and KRaft's bootstrap.checkpoint, checked as `ktool dump-log` checks them."""
    return [f for path in ld.side_files for f in dump_checks(path)]


def compacted_partitions(ld: LogDir) -> set[str]:
    from kafka_tools.format import checkpoints

    path = ld.path / "cleaner-offset-checkpoint"
    if not path.is_file():
        return set()
    try:
        return {f"{e.topic}-{e.partition}" for e in checkpoints.read_offset_checkpoint(path).entries}
    except checkpoints.CheckpointError:
        return set()


# -- everything ---------------------------------------------------------------------------------


@dataclass(init=False, repr=False, eq=False)
class Validation(SharedMethods):
    """Everything `ktool validate` found, by partition, by file named alone, and beside them."""

    partitions: list[PartitionReport] = field(default_factory=list)
    files: list[SegmentReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # not tied to one partition (checkpoints, files)

    def __init__(
        self,
        partitions: list[PartitionReport] | None = None,
        files: list[SegmentReport] | None = None,
        findings: list[Finding] | None = None,
    ) -> None:
        self.partitions = [] if partitions is None else partitions
        self.files = [] if files is None else files
        self.findings = [] if findings is None else findings

    def all_findings(self) -> Iterator[Finding]:
        for p in self.partitions:
            yield from p.all_findings()
        for s in self.files:
            yield from s.findings
        yield from self.findings

    def summary(self) -> Summary:
        s = Summary(partitions=len(self.partitions))
        segments = [seg for p in self.partitions for seg in p.segments] + self.files
        s.segments = len(segments)
        s.files = len(self.files)
        s.bytes = sum(seg.size for seg in segments)
        s.entries = sum(seg.entries for seg in segments)
        s.records = sum(seg.records for seg in segments)
        s.tail_bytes = sum(seg.tail_bytes for seg in segments)
        s.needs_force = sum(p.advice == "truncate --force" for p in self.partitions)
        s.refused = sum(p.advice == "refused" for p in self.partitions)
        for f in self.all_findings():
            if f.kind == UNREADABLE:
                s.unreadable += 1  # exit 3, said apart: not corruption, and nothing truncate can do
                continue
            if f.severity == Severity.ERROR:
                s.errors += 1
                if not f.repairable:
                    s.all_repairable = False
            elif f.severity == Severity.WARNING:
                s.warnings += 1
            elif f.kind == IN_FLIGHT:
                s.in_flight += 1
            else:
                s.infos += 1
        if s.errors == 0:
            s.all_repairable = True
        return s


def validate_found(
    found: Discovery, options: ValidateOptions, progress, scans, read: dict[Path, CheckpointRead]
) -> Validation:
    result = Validation()
    for ld in found.log_dirs:
        compacted = compacted_partitions(ld)
        reports = {}
        for part in ld.partitions:
            rep = validate_partition(part, options, part.name in compacted, progress, scans)
            reports[part.name] = rep
            result.partitions.append(rep)
        result.findings += check_log_dir_checkpoints(ld, reports, read.get(ld.path)) + check_log_dir_files(ld)
    for part in found.partitions:
        result.partitions.append(validate_partition(part, options, False, progress, scans))
    for path in found.files:
        result_for_file(path, options, result, progress, scans, found.kind(path))
    return result


_DUMP_CHECKED = frozenset(
    {
        FileKind.TXN_INDEX,
        FileKind.PARTITION_METADATA,
        FileKind.META_PROPERTIES,
        FileKind.QUORUM_STATE,
        FileKind.METADATA_SNAPSHOT,
    }
)


def result_for_file(
    path: Path,
    options: ValidateOptions,
    result: Validation,
    progress=None,
    scans=None,
    kind: FileKind | None = None,
) -> None:
    """`kind`: the file's, when the caller has decided it (Discovery.kind)."""
    kind = kind_of(path) if kind is None else kind
    try:
        if kind in (FileKind.LOG, FileKind.KAFKA07):
            if scans is not None and path in scans:
                report = scans.pop(path).result()
            else:
                report = scan_segment(path, options, progress(path) if progress else None, kind=kind)
            if is_newest_live_segment(path):  # named alone: the segment a running broker appends to
                settle_active_segment(Segment(report.base_offset, path), report)
            result.files.append(report)
        else:
            _side_file_result(path, kind, options, result)
    except PermissionError as exc:
        raise os_error(path, exc) from None


def _side_file_result(path: Path, kind: FileKind, options: ValidateOptions, result: Validation) -> None:
    """A file beside the segments, named alone. (The index and checkpoint modules are imported here,
    not for the segment files most runs name.)"""
    from kafka_tools.format import checkpoints
    from kafka_tools.log.checks.index_checks import (
        check_offset_index,
        check_snapshot,
        check_time_index,
        index_positions,
    )

    try:
        if kind == FileKind.PRODUCER_SNAPSHOT:
            result.findings += check_snapshot(path)
        elif kind in (FileKind.OFFSET_INDEX, FileKind.TIME_INDEX) and not path.with_suffix(".log").is_file():
            result.findings += dump_checks(path, kind)  # no segment to check it against: its own structure
        elif kind in _DUMP_CHECKED:
            result.findings += dump_checks(path, kind)
        elif kind in (FileKind.OFFSET_INDEX, FileKind.TIME_INDEX):
            log = path.with_suffix(".log")
            seg = Segment(base_offset_of(path) or 0, log)
            wanted = index_positions(path, seg.base_offset) if kind == FileKind.OFFSET_INDEX else ()
            report = (
                scan_segment(log, options, index_positions=wanted)
                if log.is_file()
                else SegmentReport(log, seg.base_offset, 0)
            )
            if kind == FileKind.OFFSET_INDEX:
                seg.offset_index = path
                result.findings += check_offset_index(seg, report) if log.is_file() else []
            else:
                seg.time_index = path
                result.findings += check_time_index(seg, report)
        elif kind == FileKind.OFFSET_CHECKPOINT:
            checkpoints.read_offset_checkpoint(path)
        elif kind == FileKind.LEADER_EPOCH_CHECKPOINT:
            result.findings += leader_epoch_findings(path, None)
        else:
            raise InputError(
                f"{path}: not a file ktool validates (a .log, .kafka, index, snapshot or checkpoint)"
            )
    except checkpoints.CheckpointError as exc:
        result.findings.append(
            Finding(
                file=str(path),
                kind="checkpoint-malformed",
                severity=Severity.ERROR,
                message=f"line {exc.line}: {exc}",
            )
        )
