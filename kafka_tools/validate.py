"""The service behind `ktool validate`: every check the broker's recovery makes, and more, over files,
partitions and whole log dirs, reported as findings with file, byte position, offset and expectation.

Validity follows Kafka's LogSegment.recover: an entry is valid when its size is at least the minimum for
its format, it lies inside the file, its CRC matches and its offsets fit the segment. The first invalid
entry is where the broker would cut the segment (`recovery_point`); whether valid data follows that
point decides if truncation repairs the segment (a tail) or would lose data (corruption in the middle).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

from kafka_tools.errors import InputError
from kafka_tools.format import checkpoints, index, snapshot
from kafka_tools.format.compression import Codec
from kafka_tools.format.kafka07 import Kafka07Message, iter_kafka07_entries, resync_kafka07
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.record_batch import RecordBatch, RecordDecodeError, parse_batch_header
from kafka_tools.format.segment import (
    BatchHeader,
    Problem,
    ProblemKind,
    SegmentWindow,
    looks_like_text,
    resync,
    safe_to_map,
    walk_entries,
)
from kafka_tools.logdir import Discovery, LogDir, Partition, Segment, discover

INT32_MAX = (1 << 31) - 1
_KNOWN_CODECS = frozenset(int(c) for c in Codec)


class Severity(str, Enum):
    ERROR = "error"  # corruption: exit code 1
    WARNING = "warning"  # worth a look, not corruption (exit 1 only with --strict)
    INFO = "info"  # a fact an operator should know (a compacted topic's gaps)


@dataclass
class Finding:
    file: str
    kind: str
    severity: Severity
    message: str
    position: int | None = None
    offset: int | None = None
    expected: object = None
    actual: object = None
    repairable: bool | None = None  # True: inside a tail that `ktool truncate` removes; False: it cannot

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
    removes) or CORRUPT."""
    errors = [f for f in findings if f.severity == Severity.ERROR]
    if not errors:
        return "clean", 0
    return ("tail" if all(f.repairable for f in errors) else "CORRUPT"), len(errors)


@dataclass
class SegmentReport:
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

    @property
    def tail_bytes(self) -> int:
        return self.size - self.recovery_point

    @property
    def is_tail(self) -> bool:
        """Everything wrong lies in a tail with no valid entry after it: truncation repairs it."""
        return not self.valid_after


@dataclass
class Summary:
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

    @property
    def corrupt(self) -> bool:
        return self.errors > 0


@dataclass
class ValidateOptions:
    deep: bool = False  # decode the records of uncompressed batches too (compressed ones always are)
    strict: bool = False


# -- one segment ---------------------------------------------------------------------------------


def scan_segment(
    path: Path, options: ValidateOptions, progress: Callable[[int], None] | None = None
) -> SegmentReport:
    """Walk a `.log` or `.kafka` file and find everything the broker's recovery would object to."""
    size = path.stat().st_size
    base = base_offset_of(path) or 0
    report = SegmentReport(path, base, size)
    name = str(path)
    if size and looks_like_text(path):
        report.findings.append(
            Finding(
                name,
                ProblemKind.NOT_A_SEGMENT.value,
                Severity.ERROR,
                "this is text, not a Kafka log segment",
                0,
            )
        )
        _mark_repairable(report)  # the broker's recovery reads no valid entry in it and keeps 0 bytes
        return report
    kafka07 = kind_of(path) == FileKind.KAFKA07
    cut: int | None = None
    last: int | None = None
    nxt: int | None = None  # the offset after the last valid entry (0.7: the byte offset after it)
    deep = options.deep
    positions = report.entry_positions
    with open(path, "rb") as f:
        win = SegmentWindow(f, size, use_mmap=safe_to_map(path))
        if kafka07:
            walk = iter_kafka07_entries(path, base, progress=progress)
        else:
            walk = walk_entries(win, 0, size, progress, light=True)
        for item in walk:
            if type(item) is BatchHeader:
                lo = item.last_offset
                if (
                    cut is None
                    and item.crc == item.computed_crc
                    and not item.attributes & 0x07
                    and not deep
                    and (last is None or lo > last)
                    and 0 <= lo - base <= INT32_MAX
                    and 0 <= item.records_count <= item.last_offset_delta + 1
                ):
                    # The common case, kept flat: a valid, uncompressed batch in order.
                    report.entries += 1
                    first = item.base_offset
                    if report.first_offset is None:
                        report.first_offset = first
                    elif first > last + 1:
                        report.has_gaps = True
                    positions[item.position] = (first, lo)
                    last = lo
                    nxt = lo + 1
                    report.records += item.records_count
                    if item.max_timestamp > report.max_timestamp:
                        report.max_timestamp = item.max_timestamp
                    continue
                if item.is_valid and (item.is_compressed or deep):
                    item = parse_batch_header(
                        win.buf, win.ensure(item.position, item.entry_size), item.position
                    )
            if isinstance(item, Problem):
                if item.kept_by_broker:
                    # An entry the broker's recovery accepts: not a cut, and no truncation repairs it.
                    if cut is not None:
                        report.valid_after.append(item.position)
                    report.findings.append(
                        Finding(name, item.kind.value, Severity.ERROR, item.message, item.position, None)
                    )
                    continue
                if cut is None:
                    cut = item.position
                offset = (
                    item.offset
                    if item.offset is not None and last is not None and item.offset > last
                    else None
                )
                report.findings.append(
                    Finding(name, item.kind.value, Severity.ERROR, item.message, item.position, offset)
                )
                continue
            entry = item
            problems = _entry_findings(name, entry, base, last, options)
            breaks = [f for f in problems if f.kind in _RECOVERY_CUTS]
            if breaks and cut is None:
                cut = entry.position
            if cut is not None and not breaks and entry.is_valid:
                report.valid_after.append(entry.position)
            if cut is None:
                report.entries += 1
                first = _first_offset(entry)
                report.first_offset = first if report.first_offset is None else report.first_offset
                positions[entry.position] = (first, entry.last_offset)
                if last is not None and first > last + 1:
                    report.has_gaps = True
                last = entry.last_offset
                nxt = entry.next_offset
                report.records += _count(entry)
                ts = getattr(entry, "max_timestamp", getattr(entry, "timestamp", -1))
                report.max_timestamp = max(report.max_timestamp, ts)
            report.findings += problems
    if cut is not None:
        # The walk past the cut follows framing the damage may have changed (a damaged length field
        # frames the next entries wrongly), so look for valid entries from the cut itself as well.
        if kafka07:
            found = resync_kafka07(path, cut + 1)
        else:
            found = resync(path, cut + 1, min_offset=(base - 1 if last is None else last) + 1)
        report.valid_after = sorted(set(report.valid_after) | set(found))
    report.next_offset = nxt
    report.recovery_point = size if cut is None else cut
    report.last_offset = last
    _mark_repairable(report)
    return report


# What makes the broker's recovery (LogSegment.recover) stop at an entry it could frame: its checksum.
# Offsets sit outside every checksum, so a wrong one is kept by the broker (0.9 never looks at them;
# since 2.x an offset that does not fit the segment makes it split the segment, not truncate it):
# truncation cannot repair such an entry, and validate says so.
_RECOVERY_CUTS = frozenset({ProblemKind.CRC_MISMATCH.value})


def _first_offset(entry) -> int:
    if isinstance(entry, (RecordBatch, BatchHeader)):
        return entry.base_offset
    if isinstance(entry, LegacyMessage) and entry.is_compressed:
        try:
            return entry.base_offset
        except RecordDecodeError:
            return entry.offset
    return entry.offset


def _count(entry) -> int:
    if isinstance(entry, (RecordBatch, BatchHeader)):
        return entry.records_count
    if isinstance(entry, (LegacyMessage, Kafka07Message)) and entry.is_compressed:
        try:
            return len(entry.inner_messages())
        except RecordDecodeError:
            return 0
    return 1


def _entry_findings(name: str, entry, base: int, last: int | None, options: ValidateOptions) -> list[Finding]:
    out: list[Finding] = []
    pos = entry.position
    if not entry.is_valid:
        out.append(
            Finding(
                name,
                ProblemKind.CRC_MISMATCH.value,
                Severity.ERROR,
                f"stored crc {entry.crc} does not match computed {entry.computed_crc}",
                pos,
                entry.last_offset,
                expected=entry.computed_crc,
                actual=entry.crc,
            )
        )
        return out  # nothing else in a batch whose bytes are wrong is worth reporting
    if isinstance(entry, Kafka07Message):
        if entry.is_compressed:
            _deep_look(name, entry, out)
        return out
    unknown_codec = entry.codec not in _KNOWN_CODECS
    if unknown_codec:
        out.append(
            Finding(
                name,
                ProblemKind.UNKNOWN_CODEC.value,
                Severity.ERROR,
                f"unknown compression codec {entry.codec}",
                pos,
                entry.last_offset,
            )
        )
    delta = entry.last_offset - base
    if delta < 0 or delta > INT32_MAX:
        out.append(
            Finding(
                name,
                "offset-out-of-range",
                Severity.ERROR,
                f"offset {entry.last_offset} does not fit a segment based at {base}",
                pos,
                entry.last_offset,
                expected=f"{base}..{base + INT32_MAX}",
                actual=entry.last_offset,
            )
        )
    if last is not None and entry.last_offset <= last:
        out.append(
            Finding(
                name,
                ProblemKind.OFFSETS_NOT_INCREASING.value,
                Severity.ERROR,
                f"offset {entry.last_offset} follows {last}",
                pos,
                entry.last_offset,
                expected=f"> {last}",
                actual=entry.last_offset,
            )
        )
    if isinstance(entry, (RecordBatch, BatchHeader)):
        if entry.records_count < 0 or entry.records_count > entry.last_offset_delta + 1:
            out.append(
                Finding(
                    name,
                    "record-count-mismatch",
                    Severity.ERROR,
                    f"{entry.records_count} records cannot span offset deltas 0..{entry.last_offset_delta}",
                    pos,
                    entry.last_offset,
                )
            )
        if (entry.is_compressed or options.deep) and not unknown_codec:
            _deep_look(name, entry, out)
    elif entry.is_compressed and not unknown_codec:
        _deep_look(name, entry, out)
    return out


def _deep_look(name: str, entry, out: list[Finding]) -> None:
    """Decompress and decode: a batch whose CRC is right can still hold what no consumer can read."""
    try:
        records = entry.records()
    except RecordDecodeError as exc:
        out.append(
            Finding(
                name,
                ProblemKind.RECORDS_UNDECODABLE.value,
                Severity.ERROR,
                str(exc),
                exc.position,
                entry.last_offset,
            )
        )
        return
    if isinstance(entry, RecordBatch):
        offsets = [r.offset for r in records]
        if offsets and (
            offsets[0] < entry.base_offset
            or offsets[-1] > entry.last_offset
            or any(b <= a for a, b in zip(offsets, offsets[1:], strict=False))
        ):
            out.append(
                Finding(
                    name,
                    "record-offsets-inconsistent",
                    Severity.ERROR,
                    f"record offsets {offsets[0]}..{offsets[-1]} do not lie in increasing order within "
                    f"{entry.base_offset}..{entry.last_offset}",
                    entry.position,
                    entry.last_offset,
                )
            )
    elif isinstance(entry, LegacyMessage):
        inner = [r.offset for r in records]
        if inner and inner[-1] != entry.offset:
            out.append(
                Finding(
                    name,
                    "record-offsets-inconsistent",
                    Severity.ERROR,
                    f"wrapper offset {entry.offset} is not its last inner offset {inner[-1]}",
                    entry.position,
                    entry.offset,
                )
            )


def _mark_repairable(report: SegmentReport) -> None:
    for f in report.findings:
        if f.severity != Severity.ERROR:
            continue
        in_tail = f.position is not None and f.position >= report.recovery_point
        f.repairable = in_tail and report.is_tail
    if report.valid_after:
        report.findings.append(
            Finding(
                str(report.path),
                "valid-data-after-damage",
                Severity.ERROR,
                f"{len(report.valid_after)} valid entries follow the first invalid byte at "
                f"{report.recovery_point} (the first at {report.valid_after[0]}): truncation would lose them",
                report.valid_after[0],
                repairable=False,
            )
        )


# -- the files beside the segments ---------------------------------------------------------------


def _index_size_findings(path: Path, tail: index.IndexTail, width: int) -> list[Finding]:
    if not tail.trailing_bytes:
        return []
    message = f"size {path.stat().st_size} is not a multiple of {width}"
    return [Finding(str(path), "index-size", Severity.ERROR, message, tail.position, repairable=True)]


def check_offset_index(seg: Segment, report: SegmentReport) -> list[Finding]:
    """Entries must increase and point at the start of an entry whose last offset they name (KAFKA-7487;
    before it, brokers stored the first offset of a compressed message set, which is accepted too)."""
    path = seg.offset_index
    assert path is not None
    name = str(path)
    out: list[Finding] = []
    entries, tail = index.read_offset_index(path, seg.base_offset)
    out += _index_size_findings(path, tail, 8)
    previous = None
    for e in entries:
        where = e.slot * 8
        if previous is not None and e.offset <= previous.offset:
            out.append(
                Finding(
                    name,
                    "index-not-increasing",
                    Severity.ERROR,
                    f"entry {e.slot}: offset {e.offset} after {previous.offset}",
                    where,
                    e.offset,
                    repairable=True,
                )
            )
            break
        previous = e
        if e.position >= report.recovery_point:
            out.append(
                Finding(
                    name,
                    "index-past-valid-data",
                    Severity.ERROR,
                    f"entry {e.slot} points at position {e.position}, past the segment's valid "
                    f"{report.recovery_point} bytes",
                    where,
                    e.offset,
                    repairable=True,
                )
            )
            continue
        known = report.entry_positions.get(e.position)
        if known is None:
            out.append(
                Finding(
                    name,
                    "index-position-mismatch",
                    Severity.ERROR,
                    f"entry {e.slot} points at position {e.position}, where no batch starts",
                    where,
                    e.offset,
                    repairable=True,
                )
            )
        elif e.offset not in known:
            out.append(
                Finding(
                    name,
                    "index-offset-mismatch",
                    Severity.ERROR,
                    f"entry {e.slot} says offset {e.offset} at position {e.position}",
                    where,
                    e.offset,
                    expected=known[1],
                    actual=e.offset,
                    repairable=True,
                )
            )
    return out


def check_time_index(seg: Segment, report: SegmentReport) -> list[Finding]:
    path = seg.time_index
    assert path is not None
    name = str(path)
    out: list[Finding] = []
    entries, tail = index.read_time_index(path, seg.base_offset)
    out += _index_size_findings(path, tail, 12)
    for before, after in zip(entries, entries[1:], strict=False):
        if after.timestamp < before.timestamp or after.offset < before.offset:
            out.append(
                Finding(
                    name,
                    "time-index-not-increasing",
                    Severity.ERROR,
                    f"entry {after.slot}: ({after.timestamp}, {after.offset}) after "
                    f"({before.timestamp}, {before.offset})",
                    after.slot * 12,
                    after.offset,
                    repairable=True,
                )
            )
            break
    last = report.last_offset
    for e in entries:
        if last is not None and e.offset > last:
            out.append(
                Finding(
                    name,
                    "time-index-past-log-end",
                    Severity.ERROR,
                    f"entry {e.slot} names offset {e.offset}, past the segment's last valid offset {last}",
                    e.slot * 12,
                    e.offset,
                    repairable=True,
                )
            )
            break
    return out


def check_snapshot(path: Path) -> list[Finding]:
    snap = snapshot.read_snapshot(path)
    if snap.problem:
        return [Finding(str(path), "snapshot-malformed", Severity.ERROR, snap.problem, 0, repairable=False)]
    if not snap.is_valid:
        return [
            Finding(
                str(path),
                ProblemKind.CRC_MISMATCH.value,
                Severity.ERROR,
                f"stored crc {snap.crc} does not match computed {snap.computed_crc}",
                2,
                expected=snap.computed_crc,
                actual=snap.crc,
                repairable=False,
            )
        ]
    return []


# -- partitions and log dirs ---------------------------------------------------------------------


@dataclass
class PartitionReport:
    partition: Partition
    segments: list[SegmentReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    advice: str = "none"  # what `ktool truncate` does: none, truncate, truncate --force, refused

    @property
    def log_end_offset(self) -> int | None:
        """The offset after the last valid entry (what the broker would call the log end offset)."""
        for seg in reversed(self.segments):
            if seg.next_offset is not None:
                return seg.next_offset
        return self.segments[-1].base_offset if self.segments else None

    def all_findings(self) -> list[Finding]:
        return [f for s in self.segments for f in s.findings] + self.findings


def validate_partition(
    part: Partition, options: ValidateOptions, compacted: bool = False, progress=None
) -> PartitionReport:
    reports = []
    for seg in part.segments:
        seg_report = scan_segment(seg.log, options, progress(seg.log) if progress else None)
        check_segment_in_partition(seg, seg_report)
        reports.append(seg_report)
    return assemble_partition(part, reports, compacted)


def check_segment_in_partition(seg: Segment, report: SegmentReport) -> None:
    """What a segment's own files add to its scan: its indexes, and its first offset vs its name.
    (Apart from `assemble_partition` so that `ktool scan` can run it next to the scan, in an executor.)"""
    if seg.offset_index is not None:
        report.findings += check_offset_index(seg, report)
    if seg.time_index is not None:
        report.findings += check_time_index(seg, report)
    if report.first_offset is not None and report.first_offset < seg.base_offset:
        report.findings.append(
            Finding(
                str(seg.log),
                "offset-below-base",
                Severity.ERROR,
                f"first offset {report.first_offset} is below the segment's base offset {seg.base_offset}",
                0,
                report.first_offset,
                repairable=False,
            )
        )


def assemble_partition(part: Partition, segments: list[SegmentReport], compacted: bool) -> PartitionReport:
    """The partition-level checks over its segments' reports (in offset order): continuity between
    segments, later segments lost to a cut, snapshots, leader epochs, stray files."""
    report = PartitionReport(part)
    previous: SegmentReport | None = None
    for seg_report in segments:
        report.segments.append(seg_report)
        if previous is not None:
            report.findings += _continuity(part, previous, seg_report, compacted or previous.has_gaps)
        previous = seg_report if seg_report.next_offset is not None else previous
    _later_segments_after_cut(report)
    for snap in part.snapshots:
        report.findings += check_snapshot(snap)
    if part.leader_epoch_checkpoint is not None:
        report.findings += _leader_epochs(part.leader_epoch_checkpoint, report.log_end_offset)
    for f in part.transient:
        report.findings.append(
            Finding(
                str(f),
                "transient-file",
                Severity.WARNING,
                "left by an interrupted log cleaning, segment swap or deletion",
                None,
            )
        )
    for f in part.orphans:
        report.findings.append(
            Finding(
                str(f),
                "orphan-file",
                Severity.WARNING,
                "not part of any segment (an index without its log, or an unknown file)",
            )
        )
    advise_repair(report)
    return report


def advise_repair(report: PartitionReport) -> None:
    """Mark each error with what `ktool truncate` would do about it, from the plan truncate itself runs
    (recovery.plan_from_report): repairable only when truncate repairs it without --force."""
    from kafka_tools.recovery import plan_from_report  # recovery builds on this module

    plan = plan_from_report(report)
    report.advice = plan.advice
    left = {id(f) for f in plan.unrepairable}
    for f in report.all_findings():
        if f.severity == Severity.ERROR:
            f.repairable = report.advice == "truncate" and id(f) not in left


def _continuity(part: Partition, prev: SegmentReport, seg: SegmentReport, compacted: bool) -> list[Finding]:
    assert prev.next_offset is not None
    expected = prev.next_offset
    if seg.base_offset == expected or seg.first_offset is None and seg.base_offset >= expected:
        return []
    name = str(seg.path)
    if seg.base_offset < expected:
        return [
            Finding(
                name,
                "segments-overlap",
                Severity.ERROR,
                f"segment starts at {seg.base_offset} but {prev.path.name} ends at offset {prev.last_offset}",
                0,
                seg.base_offset,
                expected=expected,
                actual=seg.base_offset,
                repairable=False,
            )
        ]
    gap = seg.base_offset - expected
    if compacted:
        return [
            Finding(
                name,
                "offset-gap",
                Severity.INFO,
                f"{gap} offsets missing before this segment: expected in a compacted topic",
                0,
                seg.base_offset,
                expected=expected,
                actual=seg.base_offset,
            )
        ]
    return [
        Finding(
            name,
            "offset-gap",
            Severity.WARNING,
            f"{gap} offsets missing before this segment (after {prev.path.name}); only a compacted "
            f"topic should have gaps",
            0,
            seg.base_offset,
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
                    str(seg.path),
                    "later-segments-after-damage",
                    Severity.ERROR if entries else Severity.WARNING,
                    f"truncating this segment makes the broker delete {len(later)} later segments holding "
                    f"{entries} valid entries",
                    seg.recovery_point,
                    repairable=entries == 0,
                )
            )
            if entries:
                for f in seg.findings:
                    if f.repairable:
                        f.repairable = False
            return


def _leader_epochs(path: Path, log_end: int | None) -> list[Finding]:
    try:
        cp = checkpoints.read_leader_epoch_checkpoint(path)
    except checkpoints.CheckpointError as exc:
        return [Finding(str(path), "checkpoint-malformed", Severity.ERROR, f"line {exc.line}: {exc}")]
    out = []
    for before, after in zip(cp.entries, cp.entries[1:], strict=False):
        if after.epoch <= before.epoch or after.start_offset < before.start_offset:
            out.append(
                Finding(
                    str(path),
                    "leader-epochs-not-increasing",
                    Severity.ERROR,
                    f"epoch {after.epoch}@{after.start_offset} after {before.epoch}@{before.start_offset}",
                )
            )
    if log_end is not None and cp.entries and cp.entries[-1].start_offset > log_end:
        e = cp.entries[-1]
        out.append(
            _past_log_end(path, f"epoch {e.epoch} starts at {e.start_offset},", e.start_offset, log_end)
        )
    return out


def _past_log_end(path: Path, what: str, offset: int, log_end: int) -> Finding:
    """A checkpoint naming an offset the log does not reach (`what`: the entry, the start of the message)."""
    return Finding(
        str(path),
        "checkpoint-past-log-end",
        Severity.WARNING,
        f"{what} past the log end offset {log_end}",
        offset=offset,
        expected=f"<= {log_end}",
        actual=offset,
    )


def check_log_dir_checkpoints(ld: LogDir, reports: dict[str, PartitionReport]) -> list[Finding]:
    """Checkpoints that name offsets past a partition's log end, or partitions that do not exist."""
    out: list[Finding] = []
    for path in ld.checkpoints:
        try:
            cp = checkpoints.read_offset_checkpoint(path)
        except checkpoints.CheckpointError as exc:
            out.append(Finding(str(path), "checkpoint-malformed", Severity.ERROR, f"line {exc.line}: {exc}"))
            continue
        for e in cp.entries:
            rep = reports.get(f"{e.topic}-{e.partition}")
            if rep is None:
                continue
            end = rep.log_end_offset
            if end is not None and e.offset > end and path.name != "cleaner-offset-checkpoint":
                out.append(_past_log_end(path, f"{e.topic}-{e.partition}: {e.offset} is", e.offset, end))
    return out


def compacted_partitions(ld: LogDir) -> set[str]:
    path = ld.path / "cleaner-offset-checkpoint"
    if not path.is_file():
        return set()
    try:
        return {f"{e.topic}-{e.partition}" for e in checkpoints.read_offset_checkpoint(path).entries}
    except checkpoints.CheckpointError:
        return set()


# -- everything ---------------------------------------------------------------------------------


@dataclass
class Validation:
    partitions: list[PartitionReport] = field(default_factory=list)
    files: list[SegmentReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # not tied to one partition (checkpoints, files)

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
            if f.severity == Severity.ERROR:
                s.errors += 1
                if not f.repairable:
                    s.all_repairable = False
            elif f.severity == Severity.WARNING:
                s.warnings += 1
            else:
                s.infos += 1
        if s.errors == 0:
            s.all_repairable = True
        return s


def validate_paths(paths: list[str | os.PathLike], options: ValidateOptions, progress=None) -> Validation:
    found: Discovery = discover(paths)
    result = Validation()
    for ld in found.log_dirs:
        compacted = compacted_partitions(ld)
        reports = {}
        for part in ld.partitions:
            rep = validate_partition(part, options, part.name in compacted, progress)
            reports[part.name] = rep
            result.partitions.append(rep)
        result.findings += check_log_dir_checkpoints(ld, reports)
    for part in found.partitions:
        result.partitions.append(validate_partition(part, options, False, progress))
    for path in found.files:
        result_for_file(path, options, result, progress)
    return result


def result_for_file(path: Path, options: ValidateOptions, result: Validation, progress=None) -> None:
    kind = kind_of(path)
    try:
        if kind in (FileKind.LOG, FileKind.KAFKA07):
            result.files.append(scan_segment(path, options, progress(path) if progress else None))
        elif kind == FileKind.PRODUCER_SNAPSHOT:
            result.findings += check_snapshot(path)
        elif kind in (FileKind.OFFSET_INDEX, FileKind.TIME_INDEX):
            log = path.with_suffix(".log")
            seg = Segment(base_offset_of(path) or 0, log)
            report = scan_segment(log, options) if log.is_file() else SegmentReport(log, seg.base_offset, 0)
            if kind == FileKind.OFFSET_INDEX:
                seg.offset_index = path
                result.findings += check_offset_index(seg, report) if log.is_file() else []
            else:
                seg.time_index = path
                result.findings += check_time_index(seg, report)
        elif kind == FileKind.OFFSET_CHECKPOINT:
            checkpoints.read_offset_checkpoint(path)
        elif kind == FileKind.LEADER_EPOCH_CHECKPOINT:
            result.findings += _leader_epochs(path, None)
        else:
            raise InputError(
                f"{path}: not a file ktool validates (a .log, .kafka, index, snapshot or checkpoint)"
            )
    except checkpoints.CheckpointError as exc:
        result.findings.append(
            Finding(str(path), "checkpoint-malformed", Severity.ERROR, f"line {exc.line}: {exc}")
        )
    except PermissionError:
        raise InputError(f"{path}: permission denied") from None
