"""What the broker's log recovery would do to a partition, and doing it safely.

The broker (Log.recoverLog / LogSegment.recover) walks each segment, keeps the bytes up to the first
invalid entry, rebuilds that segment's indexes, and — when it cut anything — deletes every later
segment. `partition_checks.plan_partition` computes exactly that; `apply_plan` carries it out with
a backup of every byte it removes or rewrites, written and fsynced before anything changes, and a
manifest from which `undo` restores the old state exactly. A crash at any point leaves the old or the
new state of each file plus the complete backup.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import UsageError
from kafka_tools.format.kinds import FileKind, base_offset_of
from kafka_tools.format.plural import plural
from kafka_tools.format.shared_methods import SharedMethods
from kafka_tools.log.checks.findings import Finding, PartitionReport, SegmentReport, Severity
from kafka_tools.log.files.dirs import (
    Partition,
    Segment,
    read_partition,
)

DEFAULT_INDEX_INTERVAL = 4096


@dataclass(init=False, repr=False, eq=False)
class SegmentCut(SharedMethods):
    segment: Segment
    keep_bytes: int
    size: int
    valid_after: list[int]  # positions of valid entries in the part that is cut
    reason: str

    def __init__(
        self, segment: Segment, keep_bytes: int, size: int, valid_after: list[int], reason: str
    ) -> None:
        self.segment = segment
        self.keep_bytes = keep_bytes
        self.size = size
        self.valid_after = valid_after
        self.reason = reason

    @property
    def cut_bytes(self) -> int:
        return self.size - self.keep_bytes


@dataclass(init=False, repr=False, eq=False)
class RecoveryPlan(SharedMethods):
    partition: Partition
    cut: SegmentCut | None = None
    deleted_segments: list[Segment] = field(default_factory=list)
    lost_entries: int = 0  # valid entries the plan removes: after a hole, or in deleted segments
    rebuild_indexes: list[tuple[Segment, str]] = field(default_factory=list)  # (segment, why)
    deleted_snapshots: list[tuple[Path, str]] = field(default_factory=list)
    epoch_checkpoint_keep: int | None = None  # entries of leader-epoch-checkpoint to keep, when fewer
    new_log_end: int | None = None
    index_interval: int = DEFAULT_INDEX_INTERVAL
    notes: list[str] = field(default_factory=list)
    unrepairable: list[Finding] = field(default_factory=list)  # errors the plan leaves: truncate refuses

    def __init__(
        self,
        partition: Partition,
        cut: SegmentCut | None = None,
        deleted_segments: list[Segment] | None = None,
        lost_entries: int = 0,
        rebuild_indexes: list[tuple[Segment, str]] | None = None,
        deleted_snapshots: list[tuple[Path, str]] | None = None,
        epoch_checkpoint_keep: int | None = None,
        new_log_end: int | None = None,
        index_interval: int = DEFAULT_INDEX_INTERVAL,
        notes: list[str] | None = None,
        unrepairable: list[Finding] | None = None,
    ) -> None:
        self.partition = partition
        self.cut = cut
        self.deleted_segments = [] if deleted_segments is None else deleted_segments
        self.lost_entries = lost_entries
        self.rebuild_indexes = [] if rebuild_indexes is None else rebuild_indexes
        self.deleted_snapshots = [] if deleted_snapshots is None else deleted_snapshots
        self.epoch_checkpoint_keep = epoch_checkpoint_keep
        self.new_log_end = new_log_end
        self.index_interval = index_interval
        self.notes = [] if notes is None else notes
        self.unrepairable = [] if unrepairable is None else unrepairable

    @property
    def is_noop(self) -> bool:
        return (
            not self.unrepairable
            and self.cut is None
            and not self.deleted_segments
            and not self.rebuild_indexes
            and not self.deleted_snapshots
            and self.epoch_checkpoint_keep is None
        )

    @property
    def loses_valid_data(self) -> bool:
        return self.lost_entries > 0

    @property
    def advice(self) -> str:
        """What `ktool truncate` does with this partition: `none` (nothing to repair), `truncate`,
        `truncate --force` (valid data would be lost) or `refused` (damage truncation cannot repair)."""
        if self.unrepairable:
            return "refused"
        if self.is_noop:
            return "none"
        return "truncate --force" if self.loses_valid_data else "truncate"

    def refusal(self, force: bool) -> str | None:
        """Why `ktool truncate` refuses this plan (None: it applies it): the one policy, so that a dry
        run refuses what the real run would, with the same words and exit code."""
        name = self.partition.name
        if self.unrepairable:
            return (
                f"{name}: refused: damage the broker's recovery keeps; truncating cannot repair it (with "
                "or without --force)"
            )
        if self.loses_valid_data and not force:
            return (
                f"{name}: refused: {plural(self.lost_entries, 'valid entry', 'valid entries')} would be "
                "lost; the damage is in the middle, not a tail (--force cuts it anyway, keeping them in "
                "the backup)"
            )
        return None


def plan_from_report(
    report: PartitionReport, start: Segment | None = None, index_interval: int = DEFAULT_INDEX_INTERVAL
) -> RecoveryPlan:
    """The plan for a partition `validate` has already checked. `validate` takes its repair advice from
    this same plan, so the two commands cannot disagree."""
    part = report.partition
    plan = RecoveryPlan(part, index_interval=index_interval)
    first = 0 if start is None else part.segments.index(start)
    # The segments that were read (one removed or unreadable since the listing has no report).
    by_log = {r.path: r for r in report.segments}
    pairs = [(seg, by_log[seg.log]) for seg in part.segments[first:] if seg.log in by_log]
    reports = [r for _, r in pairs]
    for seg, seg_report in pairs:
        if plan.cut is None and seg_report.tail_bytes:
            cut_at = [
                f
                for f in seg_report.findings
                if f.file == str(seg.log)
                and f.position is not None
                and f.position >= seg_report.recovery_point
            ]
            first_bad = min(cut_at, key=lambda f: f.position) if cut_at else None
            reason = (
                f"{first_bad.kind} at position {first_bad.position}: {first_bad.message}"
                if first_bad is not None
                else f"no valid entry from position {seg_report.recovery_point}"
            )
            plan.cut = SegmentCut(
                seg, seg_report.recovery_point, seg_report.size, seg_report.valid_after, reason
            )
            plan.lost_entries += len(seg_report.valid_after)
            if seg.kind != FileKind.KAFKA07:  # Kafka 0.7 kept no index files
                plan.rebuild_indexes.append((seg, "the segment is truncated"))
            continue
        if plan.cut is not None:
            plan.deleted_segments.append(seg)
            plan.lost_entries += seg_report.entries
            continue
        broken = _broken_indexes(seg, seg_report)
        if broken:
            plan.rebuild_indexes.append((seg, broken))
    plan.new_log_end = _log_end(part, reports, plan)
    _plan_snapshots(plan)
    _plan_epochs(plan)
    plan.unrepairable = _left_unrepaired(
        plan, report, {str(f) for s in part.segments[:first] for f in _files(s)}
    )
    return plan


def _left_unrepaired(plan: RecoveryPlan, report: PartitionReport, before_start: set[str]) -> list[Finding]:
    """The errors this plan would leave: what the broker's recovery keeps (a wrong offset, an entry of
    unknown magic whose checksum matches, a malformed checkpoint). Truncation cannot repair those."""
    gone: set[str] = set()
    for seg in plan.deleted_segments:
        gone.update(str(f) for f in _files(seg))
    for seg, _ in plan.rebuild_indexes:
        gone.update(str(f) for f in (seg.offset_index, seg.time_index) if f is not None)
    gone.update(str(p) for p, _ in plan.deleted_snapshots)
    cut_file = str(plan.cut.segment.log) if plan.cut is not None else None
    left = []
    for f in report.all_findings():
        if f.severity != Severity.ERROR or f.file in gone or f.file in before_start:
            continue
        if (
            f.file == cut_file
            and f.position is not None
            and f.position >= plan.cut.keep_bytes
            and f.kind not in _ABOUT_THE_NAME
        ):
            continue
        left.append(f)
    return left


# Findings about a segment's base offset (its file name), not its bytes: cutting the segment, even to
# nothing, leaves them (an empty segment below its predecessor's end sets the log end back).
_ABOUT_THE_NAME = frozenset({"segments-overlap"})


def _files(seg: Segment) -> list[Path]:
    return [f for f in (seg.log, seg.offset_index, seg.time_index, seg.txn_index) if f is not None]


def _broken_indexes(seg: Segment, report: SegmentReport) -> str | None:
    names = {str(f) for f in (seg.offset_index, seg.time_index) if f is not None}
    findings = [f for f in report.findings if f.file in names and f.severity == Severity.ERROR]
    if findings:
        return f"{findings[0].kind}: {findings[0].message}"
    return None


def _log_end(part: Partition, reports: list[SegmentReport], plan: RecoveryPlan) -> int | None:
    kept = [r for r in reports if plan.cut is None or r.path != plan.cut.segment.log]
    if plan.cut is not None:
        cut_report = next(r for r in reports if r.path == plan.cut.segment.log)
        kept = [r for r in reports if r.base_offset < cut_report.base_offset] + [cut_report]
    for r in reversed(kept):
        if r.next_offset is not None:
            return r.next_offset
    if plan.cut is not None:
        return plan.cut.segment.base_offset
    return part.segments[0].base_offset if part.segments else None


def _plan_snapshots(plan: RecoveryPlan) -> None:
    """The broker drops producer snapshots past the log end, and snapshots it cannot read."""
    for path in plan.partition.snapshots:
        offset = base_offset_of(path)
        if (
            plan.cut is not None
            and plan.new_log_end is not None
            and offset is not None
            and offset > plan.new_log_end
        ):
            plan.deleted_snapshots.append(
                (path, f"taken at offset {offset}, past the new log end {plan.new_log_end}")
            )
            continue
        from kafka_tools.format import snapshot  # for partitions that have snapshots

        snap = snapshot.read_snapshot(path)
        if not snap.is_valid:
            plan.deleted_snapshots.append((path, snap.problem or "its CRC does not match"))


def _plan_epochs(plan: RecoveryPlan) -> None:
    path = plan.partition.leader_epoch_checkpoint
    if path is None or plan.cut is None or plan.new_log_end is None:
        return
    from kafka_tools.format import checkpoints

    try:
        entries = checkpoints.read_leader_epoch_checkpoint(path).entries
    except checkpoints.CheckpointError:
        return
    keep = sum(1 for e in entries if e.start_offset < plan.new_log_end)
    if keep < len(entries):
        plan.epoch_checkpoint_keep = keep


def partition_for(path: Path) -> tuple[Partition, Segment | None]:
    """A partition dir, or a segment file (recovery then starts at that segment)."""
    if path.is_dir():
        return read_partition(path), None
    part = read_partition(path.parent)
    for seg in part.segments:
        if seg.log.resolve() == path.resolve():
            return part, seg
    raise UsageError(f"{path}: not a segment (.log or .kafka) of {path.parent}")
