"""A partition's verdict from its segments' reports: offsets continuing from segment to segment,
what a cut would delete, leader epochs, side files, and the repair advice taken from truncate's plan."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_tools.errors import InputError, os_reason
from kafka_tools.format.kinds import FileKind, kind_of
from kafka_tools.format.plural import plural
from kafka_tools.log.checks.findings import (
    Finding,
    PartitionReport,
    SegmentReport,
    Severity,
    ValidateOptions,
    unreadable_finding,
)
from kafka_tools.log.checks.in_flight import (
    in_flight,
    index_without_segment,
    removed_file,
    removed_segment,
    settle_newest,
    transient_file,
)
from kafka_tools.log.checks.segment_checks import check_segment, scan_segment
from kafka_tools.log.files.dirs import Partition, Segment
from kafka_tools.log.files.discover import Discovery

if TYPE_CHECKING:
    from kafka_tools.log.checks.recovery import RecoveryPlan


def validate_partition(
    part: Partition, options: ValidateOptions, compacted: bool = False, progress=None, scans=None
) -> PartitionReport:
    """`scans`: segments already being checked (`scan_ahead`), by log path; the rest are checked here."""
    reports = []
    unreadable = list(part.unreadable)
    removed = []
    after_removed: set[int] = set()  # segments read after one that was gone: no continuity across it
    for seg in part.segments:
        try:
            if scans is not None and seg.log in scans:
                seg_report = scans.pop(seg.log).result()
            else:
                seg_report = check_segment(seg, options, progress(seg.log) if progress else None)
        except FileNotFoundError:
            # Listed, then gone: the broker's retention or cleaner removed it meanwhile. What is left
            # is the partition as it is now, not a file that cannot be read.
            removed.append(removed_segment(seg))
            after_removed.add(-1)
            continue
        except OSError as exc:
            unreadable.append((seg.log, os_reason(exc)))
            continue
        if -1 in after_removed:
            after_removed.discard(-1)
            after_removed.add(seg.base_offset)
        reports.append(seg_report)
    settle_newest(part, reports)
    report = assemble_partition(part, reports, compacted, frozenset(after_removed))
    report.findings += removed
    report.findings += [unreadable_finding(path, why) for path, why in unreadable]
    return report


def assemble_partition(
    part: Partition, segments: list[SegmentReport], compacted: bool, after_gone: frozenset[int] = frozenset()
) -> PartitionReport:
    """The partition-level checks over its segments' reports (in offset order): continuity between
    segments, later segments lost to a cut, snapshots, leader epochs, stray files. `after_gone`: base
    offsets of segments whose predecessor the broker removed while it was read (no gap to report)."""
    report = PartitionReport(part)
    previous: SegmentReport | None = None
    for seg_report in segments:
        report.segments.append(seg_report)
        if previous is not None and seg_report.base_offset not in after_gone:
            report.findings += _continuity(part, previous, seg_report, compacted or previous.has_gaps)
        previous = seg_report if seg_report.next_offset is not None else previous
    _later_segments_after_cut(report)
    if part.snapshots:
        from kafka_tools.log.checks.index_checks import check_snapshot

        for snap in part.snapshots:
            try:
                report.findings += check_snapshot(snap)
            except FileNotFoundError:
                if not part.live:
                    raise
                # A running broker deletes the producer snapshots of segments it rolled past or removed
                report.findings.append(removed_file(snap))
    for path in side_files(part):
        found = dump_checks(path)
        if part.live and not path.exists():  # e.g. the .txnindex of a segment the cleaner replaced
            found = [removed_file(path)]
        report.findings += found
    if part.leader_epoch_checkpoint is not None:
        epochs = leader_epoch_findings(part.leader_epoch_checkpoint, report.log_end_offset)
        if part.live:
            why = "an epoch begun at the log end being written"
            epochs = [in_flight(f, why) if _ahead(f) else f for f in epochs]
        report.findings += epochs
    moving = set(part.transient) | set(_orphan_indexes(part)) if part.live else set()
    report.findings += [transient_file(f) for f in part.transient if f in moving]
    report.findings += [index_without_segment(f) for f in part.orphans if f in moving]
    for f in part.transient:
        if f in moving:
            continue
        report.findings.append(
            Finding(
                file=str(f),
                kind="transient-file",
                severity=Severity.WARNING,
                message="left by an interrupted log cleaning, segment swap or deletion",
                position=None,
            )
        )
    for f in part.orphans:
        if f in moving:
            continue
        report.findings.append(
            Finding(
                file=str(f),
                kind="orphan-file",
                severity=Severity.WARNING,
                message="not part of any segment (an index without its log, or an unknown file)",
            )
        )
    advise_repair(report)
    return report


def advise_repair(report: PartitionReport) -> None:
    """Mark each error with what `ktool truncate` would do about it, from the plan truncate itself runs
    (recovery.plan_from_report): repairable only when truncate repairs it without --force."""
    from kafka_tools.log.checks.recovery import plan_from_report

    part = report.partition
    for attempt in range(3):
        try:
            plan = plan_from_report(report)
            break
        except FileNotFoundError:
            if not part.live or attempt == 2:
                raise
            # the plan reads the producer snapshots, which a running broker removes as it rolls
            part.snapshots = [s for s in part.snapshots if s.exists()]
    report.advice = plan.advice
    left = {id(f) for f in plan.unrepairable}
    for f in report.all_findings():
        if f.severity == Severity.ERROR:
            f.repairable = report.advice == "truncate" and id(f) not in left


def side_files(part: Partition) -> list[Path]:
    """The partition's files validate has no checks of its own for: `.txnindex`, partition.metadata,
    KRaft's quorum-state and metadata snapshots, and index files whose segment is missing (on a live
    partition those are a segment being renamed or created: in flight, not checked)."""
    txn = [seg.txn_index for seg in part.segments if seg.txn_index is not None]
    indexes = [] if part.live else _orphan_indexes(part)
    return txn + part.other + part.metadata_snapshots + indexes


def _orphan_indexes(part: Partition) -> list[Path]:
    return [f for f in part.orphans if kind_of(f) in (FileKind.OFFSET_INDEX, FileKind.TIME_INDEX)]


def _ahead(f: Finding) -> bool:
    return f.kind == "checkpoint-past-log-end"


def dump_checks(path: Path, kind: FileKind | None = None) -> list[Finding]:
    """What `ktool dump-log` finds wrong in a file, as errors: one set of checks behind both commands.
    (A side file is checked without the dump's event machinery, which a log dir's start-up need not
    import.)"""
    from kafka_tools.log.files.side_files import side_file_problems

    kind = kind_of(path) if kind is None else kind
    try:
        if kind == FileKind.METADATA_SNAPSHOT:
            from kafka_tools.log.checks.kraft_snapshots import check_metadata_snapshot

            return check_metadata_snapshot(path)  # the dump's checks, then the snapshot's shape
        if kind in (FileKind.LOG, FileKind.KAFKA07):
            from kafka_tools.log.reads.dump import dump_file
            from kafka_tools.log.reads.dump_events import DumpOptions, ProblemEvent

            problems = [e.problem for e in dump_file(path, DumpOptions()) if isinstance(e, ProblemEvent)]
        else:
            problems = side_file_problems(path, kind)
    except InputError as exc:
        return [unreadable_finding(path, str(exc).removeprefix(f"{path}: "))]
    return [
        Finding(
            file=str(path),
            kind=p.kind.value,
            severity=Severity.ERROR,
            message=p.message,
            position=p.position,
            offset=p.offset,
            repairable=False,
        )
        for p in problems
    ]


def _continuity(part: Partition, prev: SegmentReport, seg: SegmentReport, compacted: bool) -> list[Finding]:
    assert prev.next_offset is not None
    expected = prev.next_offset
    if seg.base_offset == expected or seg.first_offset is None and seg.base_offset >= expected:
        return []
    name = str(seg.path)
    if seg.base_offset < expected:
        return [
            Finding(
                file=name,
                kind="segments-overlap",
                severity=Severity.ERROR,
                message=f"segment starts at {seg.base_offset} but {prev.path.name} ends at offset "
                f"{prev.last_offset}",
                position=0,
                offset=seg.base_offset,
                expected=expected,
                actual=seg.base_offset,
                repairable=False,
            )
        ]
    gap = seg.base_offset - expected
    if compacted:
        return [
            Finding(
                file=name,
                kind="offset-gap",
                severity=Severity.INFO,
                message=f"{plural(gap, 'offset')} missing before this segment: expected in a compacted topic",
                position=0,
                offset=seg.base_offset,
                expected=expected,
                actual=seg.base_offset,
            )
        ]
    return [
        Finding(
            file=name,
            kind="offset-gap",
            severity=Severity.WARNING,
            message=f"{plural(gap, 'offset')} missing before this segment (after {prev.path.name}); "
            "only a compacted "
            f"topic should have gaps",
            position=0,
            offset=seg.base_offset,
            expected=expected,
            actual=seg.base_offset,
        )
    ]


def _later_segments_after_cut(report: PartitionReport) -> None:
    """A cut in one segment makes the broker delete every later one: data there is lost, not a tail."""
    for i, seg in enumerate(report.segments):
        if seg.tail_bytes and i + 1 < len(report.segments):
            later = report.segments[i + 1 :]
            entries = sum(s.entries for s in later)
            report.findings.append(
                Finding(
                    file=str(seg.path),
                    kind="later-segments-after-damage",
                    severity=Severity.ERROR if entries else Severity.WARNING,
                    message="truncating this segment makes the broker delete "
                    f"{plural(len(later), 'later segment')} "
                    f"holding {plural(entries, 'valid entry', 'valid entries')}",
                    position=seg.recovery_point,
                    repairable=entries == 0,
                )
            )
            if entries:
                for f in seg.findings:
                    if f.repairable:
                        f.repairable = False
            return


def leader_epoch_findings(path: Path, log_end: int | None) -> list[Finding]:
    from kafka_tools.format import checkpoints

    try:
        cp = checkpoints.read_leader_epoch_checkpoint(path)
    except checkpoints.CheckpointError as exc:
        return [
            Finding(
                file=str(path),
                kind="checkpoint-malformed",
                severity=Severity.ERROR,
                message=f"line {exc.line}: {exc}",
            )
        ]
    out = []
    for before, after in zip(cp.entries, cp.entries[1:], strict=False):
        if after.epoch <= before.epoch or after.start_offset < before.start_offset:
            out.append(
                Finding(
                    file=str(path),
                    kind="leader-epochs-not-increasing",
                    severity=Severity.ERROR,
                    message=f"epoch {after.epoch}@{after.start_offset} after "
                    f"{before.epoch}@{before.start_offset}",
                )
            )
    if log_end is not None and cp.entries and cp.entries[-1].start_offset > log_end:
        e = cp.entries[-1]
        out.append(
            past_log_end_finding(
                path, f"epoch {e.epoch} starts at {e.start_offset},", e.start_offset, log_end
            )
        )
    return out


def past_log_end_finding(path: Path, what: str, offset: int, log_end: int) -> Finding:
    """A checkpoint naming an offset the log does not reach (`what`: the entry, the start of the message)."""
    return Finding(
        file=str(path),
        kind="checkpoint-past-log-end",
        severity=Severity.WARNING,
        message=f"{what} past the log end offset {log_end}",
        offset=offset,
        expected=f"<= {log_end}",
        actual=offset,
    )


def segment_calls(found: Discovery, options: ValidateOptions) -> tuple[list[Path], list[tuple]]:
    """Every segment file of `found` in file order, and how each is checked: (check_segment, its
    Segment, options) for a partition's, (scan_segment, its path, options) for a file named alone."""
    keys: list[Path] = []  # each call's segment, which callers look its report up by
    calls: list[tuple] = []
    parts = [p for ld in found.log_dirs for p in ld.partitions] + list(found.partitions)
    for part in parts:
        for seg in part.segments:
            keys.append(seg.log)
            calls.append((check_segment, seg, options))
    for path in found.files:
        kind = found.kind(path)
        if kind in (FileKind.LOG, FileKind.KAFKA07):
            keys.append(path)
            calls.append((partial(scan_segment, kind=kind), path, options))
    return keys, calls


def plan_partition(
    part: Partition, start: Segment | None = None, index_interval: int | None = None
) -> RecoveryPlan:
    """The broker's recovery from segment `start` (default: the first) to the end of the partition
    (`index_interval`: the broker's log.index.interval.bytes, recovery's default when None)."""
    from kafka_tools.log.checks.recovery import plan_from_report  # truncate's: not validate's start-up

    report = validate_partition(part, ValidateOptions())
    if index_interval is None:
        return plan_from_report(report, start)
    return plan_from_report(report, start, index_interval)
