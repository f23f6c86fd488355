"""What a running broker has not finished writing, told apart from damage.

On a live partition (its log dir's `.lock` held by a broker, `--live`, or a newest segment that grew
while ktool read it) the newest segment is being appended to: its last entry may be cut by the end of
the file or half copied, its `.index` may name a batch not written yet (0.9 writes the entry before
the batch), its `.timeindex` an offset of that batch, and its preallocated index ends in zeros. Those
are reported once, as an `in-flight` finding (severity info, never exit 1) and the tail is left out
of the segment's size, so no repair is planned for it. Rolled segments keep every check: damage there
is still an error. Transient files (`.deleted`, `.cleaned`, `.swap`), index files whose segment was
just renamed, checkpoints ahead of the log end read before them, and segments, producer snapshots and
side files deleted between the listing and the read are in flight too on a live partition.
"""

from __future__ import annotations

import os
from pathlib import Path

from kafka_tools.format.plural import plural
from kafka_tools.log.checks.findings import IN_FLIGHT, Finding, SegmentReport, Severity
from kafka_tools.log.files.dirs import Partition, Segment

# What an index of the segment being written says of bytes not (fully) written yet.
_INDEX_AHEAD = frozenset({"index-past-valid-data", "time-index-past-log-end"})


def grew_while_read(seg: Segment, report: SegmentReport) -> bool:
    """The segment is larger now than when it was read: something appends to it (the data says so
    where the lock cannot, e.g. a copy of a broker's log dir on a shared mount)."""
    try:
        return os.stat(seg.log).st_size > report.size
    except OSError:
        return False


def settle_active_segment(seg: Segment, report: SegmentReport) -> None:
    """The newest segment of a live partition: its unfinished tail and the index entries ahead of its
    data become one in-flight finding each, instead of errors, and the tail leaves the segment's
    size (the broker has not made it part of the log yet). Damage followed by valid data is not a
    tail being written: it stays an error."""
    log = str(report.path)  # as the findings name it (`ktool scan` names files as the user did)
    if report.tail_bytes and not report.valid_after:
        cut = report.recovery_point
        in_tail = [f for f in report.findings if f.file == log and (f.position or 0) >= cut]
        report.findings = [f for f in report.findings if f not in in_tail]
        what = f"; it reads as {in_tail[0].kind}: {in_tail[0].message}" if in_tail else ""
        report.findings.append(
            Finding(
                file=log,
                kind=IN_FLIGHT,
                severity=Severity.INFO,
                message=f"the last {plural(report.tail_bytes, 'byte')} are the batch the running broker "
                "is appending "
                f"(not part of the log yet){what}",
                position=cut,
            )
        )
        report.size = cut
    for i, f in enumerate(report.findings):
        if f.kind in _INDEX_AHEAD:  # findings only a segment's own .index / .timeindex has
            report.findings[i] = in_flight(f, "an entry ahead of the data written so far")


def settle_newest(part: Partition, reports: list[SegmentReport]) -> None:
    """Settle the newest segment's report when the partition is live or the segment grew meanwhile
    (`reports` in segment order; a newest segment not read has no report and nothing to settle)."""
    active = part.active
    if not reports or active is None or reports[-1].base_offset != active.base_offset:
        return
    if part.live or grew_while_read(active, reports[-1]):
        settle_active_segment(active, reports[-1])


def in_flight(f: Finding, why: str) -> Finding:
    """The finding restated as in flight (info), keeping where it is and what it said."""
    said = f"{why} ({f.kind}: {f.message})"
    return Finding(
        file=f.file,
        kind=IN_FLIGHT,
        severity=Severity.INFO,
        message=said,
        position=f.position,
        offset=f.offset,
        expected=f.expected,
        actual=f.actual,
    )


def noted(path: str | Path, what: str) -> Finding:
    """An in-flight finding on a whole file: what the running broker is doing with it."""
    return Finding(file=str(path), kind=IN_FLIGHT, severity=Severity.INFO, message=what)


def removed_segment(seg: Segment) -> Finding:
    """A listed segment that was gone when read: the broker's retention or cleaner removed it."""
    why = "removed (or renamed .deleted) by the broker since the partition was listed: not checked"
    return noted(seg.log, why)


def removed_file(path: Path) -> Finding:
    """A listed producer snapshot or side file gone when read: the broker keeps only its newest few
    snapshots, and a segment's .txnindex goes with the segment its retention or cleaner removes."""
    return noted(path, "removed by the broker since the partition was listed: not checked")


def transient_file(path: Path) -> Finding:
    return noted(path, "a segment the running broker is deleting, cleaning or swapping in")


def index_without_segment(path: Path) -> Finding:
    return noted(path, "an index whose segment the running broker is renaming or creating")
