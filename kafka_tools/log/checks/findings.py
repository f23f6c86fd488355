"""What validation reports: findings with their severity, and the reports of a segment, a partition
and a whole run that `validate`, `truncate` and `scan` share."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_tools.format.shared_methods import SharedMethods
from kafka_tools.log.files.dirs import Partition

if TYPE_CHECKING:
    from kafka_tools.format.batch_runs import BatchRun


class Severity(str, Enum):
    ERROR = "error"  # corruption: exit code 1
    WARNING = "warning"  # worth a look, not corruption (exit 1 only with --strict)
    INFO = "info"  # a fact an operator should know (a compacted topic's gaps)


@dataclass(init=False, repr=False, eq=False, kw_only=True)
class Finding(SharedMethods):
    """One thing wrong (or worth saying): where (file, byte position, offset), what, how bad. Every
    audit reports through it (validate, metadata check, transactions, tiered), built by keyword: the
    fields after `repairable` are those only some audits fill (None otherwise); each audit's renderer
    picks the ones its JSON contract names."""

    kind: str
    severity: Severity
    message: str
    file: str | None = None
    position: int | None = None
    offset: int | None = None  # transactions: the open transaction's (or damaged batch's) first offset
    expected: object = None
    actual: object = None
    repairable: bool | None = None  # True: inside a tail that `ktool truncate` removes; False: it cannot
    # the partition a finding of a whole cluster's files is about (transactions, tiered)
    topic: str | None = None
    partition: int | None = None
    # transactions: the producer that pins the partition, and how to clear it
    producer_id: int | None = None
    producer_epoch: int | None = None
    coordinator_epoch: int | None = None
    last_timestamp: int | None = None
    age_ms: int | None = None
    transactional_id: str | None = None
    records_behind: int | None = None  # offsets read_committed consumers cannot read behind it
    abort_command: str | None = None
    # tiered: the remote segment, and the metadata record (`__remote_log_metadata-N@offset`) or file
    segment_id: str | None = None
    start_offset: int | None = None
    end_offset: int | None = None
    where: str | None = None

    def __init__(
        self,
        *,
        kind: str,
        severity: Severity,
        message: str,
        file: str | None = None,
        position: int | None = None,
        offset: int | None = None,
        expected: object = None,
        actual: object = None,
        repairable: bool | None = None,
        topic: str | None = None,
        partition: int | None = None,
        producer_id: int | None = None,
        producer_epoch: int | None = None,
        coordinator_epoch: int | None = None,
        last_timestamp: int | None = None,
        age_ms: int | None = None,
        transactional_id: str | None = None,
        records_behind: int | None = None,
        abort_command: str | None = None,
        segment_id: str | None = None,
        start_offset: int | None = None,
        end_offset: int | None = None,
        where: str | None = None,
    ) -> None:
        self.kind = kind
        self.severity = severity
        self.message = message
        self.file = file
        self.position = position
        self.offset = offset
        self.expected = expected
        self.actual = actual
        self.repairable = repairable
        self.topic = topic
        self.partition = partition
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.coordinator_epoch = coordinator_epoch
        self.last_timestamp = last_timestamp
        self.age_ms = age_ms
        self.transactional_id = transactional_id
        self.records_behind = records_behind
        self.abort_command = abort_command
        self.segment_id = segment_id
        self.start_offset = start_offset
        self.end_offset = end_offset
        self.where = where

    def fields(self) -> dict:
        """Its fields by their stable names (`--json` and the `findings` table of `ktool scan`)."""
        return {
            "file": self.file,
            "severity": self.severity.value,
            "kind": self.kind,
            "position": self.position,
            "offset": self.offset,
            "message": self.message,
            "expected": self.expected,
            "actual": self.actual,
            "repairable": self.repairable,
        }


def status_of(findings: list[Finding]) -> tuple[str, int]:
    """A partition's status and error count: clean, tail (every error in a tail `ktool truncate`
    removes), CORRUPT, or unreadable (a file of it could not be read)."""
    errors = [f for f in findings if f.severity == Severity.ERROR]
    if any(f.kind == UNREADABLE for f in errors):
        return "unreadable", len(errors)
    if not errors:
        return "clean", 0
    return ("tail" if all(f.repairable for f in errors) else "CORRUPT"), len(errors)


@dataclass(init=False, repr=False, eq=False)
class SegmentReport(SharedMethods):
    """What the walk of one segment file found: its entries and records, offsets, where validity ends."""

    path: Path
    base_offset: int
    size: int
    entries: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None  # of the last valid entry before the recovery point
    next_offset: int | None = None  # the offset after it (0.7: the byte offset after its message)
    recovery_point: int = 0  # bytes the broker's recovery keeps
    valid_after: list[int] = field(default_factory=list)  # positions of valid entries past the recovery point
    max_timestamp: int = -1
    has_gaps: bool = False
    entry_positions: dict[int, tuple[int, int]] = field(
        default_factory=dict
    )  # position -> (first, last offset)
    findings: list[Finding] = field(default_factory=list)

    def __init__(
        self,
        path: Path,
        base_offset: int,
        size: int,
        entries: int = 0,
        records: int = 0,
        first_offset: int | None = None,
        last_offset: int | None = None,
        next_offset: int | None = None,
        recovery_point: int = 0,
        valid_after: list[int] | None = None,
        max_timestamp: int = -1,
        has_gaps: bool = False,
        entry_positions: dict[int, tuple[int, int]] | None = None,
        findings: list[Finding] | None = None,
    ) -> None:
        self.path = path
        self.base_offset = base_offset
        self.size = size
        self.entries = entries
        self.records = records
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.next_offset = next_offset
        self.recovery_point = recovery_point
        self.valid_after = [] if valid_after is None else valid_after
        self.max_timestamp = max_timestamp
        self.has_gaps = has_gaps
        self.entry_positions = {} if entry_positions is None else entry_positions
        self.findings = [] if findings is None else findings

    @property
    def tail_bytes(self) -> int:
        return self.size - self.recovery_point

    @property
    def is_tail(self) -> bool:
        """Everything wrong lies in a tail with no valid entry after it: truncation repairs it."""
        return not self.valid_after


@dataclass(init=False, repr=False, eq=False)
class Summary(SharedMethods):
    """The totals of a validation, which decide its verdict and exit code."""

    files: int = 0
    partitions: int = 0
    segments: int = 0
    bytes: int = 0
    entries: int = 0
    records: int = 0
    errors: int = 0
    warnings: int = 0
    infos: int = 0
    tail_bytes: int = 0
    all_repairable: bool = True  # every error is a tail that `ktool truncate` repairs
    unreadable: int = 0
    needs_force: int = 0  # partitions `ktool truncate` repairs only with --force (losing valid data)
    refused: int = 0  # partitions with damage `ktool truncate` cannot repair (the broker keeps it)
    in_flight: int = 0  # a running broker's unfinished writes (log/checks/in_flight.py): info, not damage

    def __init__(
        self,
        files: int = 0,
        partitions: int = 0,
        segments: int = 0,
        bytes: int = 0,
        entries: int = 0,
        records: int = 0,
        errors: int = 0,
        warnings: int = 0,
        infos: int = 0,
        tail_bytes: int = 0,
        all_repairable: bool = True,
        unreadable: int = 0,
        needs_force: int = 0,
        refused: int = 0,
        in_flight: int = 0,
    ) -> None:
        self.files = files
        self.partitions = partitions
        self.segments = segments
        self.bytes = bytes
        self.entries = entries
        self.records = records
        self.errors = errors
        self.warnings = warnings
        self.infos = infos
        self.tail_bytes = tail_bytes
        self.all_repairable = all_repairable
        self.unreadable = unreadable
        self.needs_force = needs_force
        self.refused = refused
        self.in_flight = in_flight

    @property
    def corrupt(self) -> bool:
        return self.errors > 0


@dataclass(init=False, repr=False, eq=False)
class ValidateOptions(SharedMethods):
    """What to check (`--deep`, `--strict`) and how the planner chose to read."""

    deep: bool = False  # decode the records of uncompressed batches too (compressed ones always are)
    strict: bool = False
    # How, not what (never set by the user): whether segments may be memory-mapped (False: pread, as
    # the tests compare), and, set by validate_paths from log/workers/parallel.py's plan, what checks a large
    # segment's first batches on several cores.
    mmap: bool = True
    split: Callable[[Path, int, list[int]], BatchRun | None] | None = None
    # One of several walkers: its mapped pages are handed back (and its runs end) every `step` bytes,
    # so that the walkers' resident pages together stay small; None: the one walker's own steps.
    step: int | None = None

    def __init__(
        self,
        deep: bool = False,
        strict: bool = False,
        mmap: bool = True,
        split: Callable[[Path, int, list[int]], BatchRun | None] | None = None,
        step: int | None = None,
    ) -> None:
        self.deep = deep
        self.strict = strict
        self.mmap = mmap
        self.split = split
        self.step = step


# -- partitions and log dirs ---------------------------------------------------------------------


@dataclass(init=False, repr=False, eq=False)
class PartitionReport(SharedMethods):
    """A partition's segment reports in offset order, the findings across them, and the repair advice."""

    partition: Partition
    segments: list[SegmentReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    advice: str = "none"  # what `ktool truncate` does: none, truncate, truncate --force, refused

    def __init__(
        self,
        partition: Partition,
        segments: list[SegmentReport] | None = None,
        findings: list[Finding] | None = None,
        advice: str = "none",
    ) -> None:
        self.partition = partition
        self.segments = [] if segments is None else segments
        self.findings = [] if findings is None else findings
        self.advice = advice

    @property
    def log_end_offset(self) -> int | None:
        """The offset after the last valid entry (what the broker would call the log end offset)."""
        for seg in reversed(self.segments):
            if seg.next_offset is not None:
                return seg.next_offset
        return self.segments[-1].base_offset if self.segments else None

    def all_findings(self) -> list[Finding]:
        return [f for s in self.segments for f in s.findings] + self.findings


UNREADABLE = "unreadable-file"
IN_FLIGHT = "in-flight"  # what a running broker is writing or removing right now (log/checks/in_flight.py)


def unreadable_finding(path: Path, why: str) -> Finding:
    """A file of the partition that could not be read: the partition is not known to be clean (exit 3)."""
    return Finding(
        file=str(path),
        kind=UNREADABLE,
        severity=Severity.ERROR,
        message=f"cannot be read: {why}",
        repairable=False,
    )
