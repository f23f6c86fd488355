"""Checks of a segment's side files against the segment: the offset index, the time index, and
producer-state snapshots."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kafka_tools.format import index, snapshot
from kafka_tools.format.checksums import crc_finding
from kafka_tools.format.plural import plural
from kafka_tools.format.problems import ProblemKind
from kafka_tools.format.shared_methods import SharedMethods
from kafka_tools.log.checks.findings import Finding, SegmentReport, Severity
from kafka_tools.log.files.dirs import Segment

# -- the files beside the segments ---------------------------------------------------------------


IndexRead = tuple[list, index.IndexTail]  # what index.read_offset_index / read_time_index return


@dataclass(init=False, repr=False, eq=False)
class SegmentIndexes(SharedMethods):
    """A segment's `.index` and `.timeindex` as read before the segment itself: every entry then names
    bytes already written (a running broker appends to both while ktool reads)."""

    offset: IndexRead | None = None
    time: IndexRead | None = None

    def __init__(self, offset: IndexRead | None = None, time: IndexRead | None = None) -> None:
        self.offset = offset
        self.time = time

    @property
    def positions(self) -> set[int]:
        """The positions the `.index` points at: the entries `check_offset_index` must find in the scan."""
        return {e.position for e in self.offset[0]} if self.offset is not None else set()


def read_indexes(seg: Segment) -> SegmentIndexes:
    out = SegmentIndexes()
    if seg.offset_index is not None:
        _regular(seg.offset_index)
        out.offset = index.read_offset_index(seg.offset_index, seg.base_offset)
    if seg.time_index is not None:
        _regular(seg.time_index)
        out.time = index.read_time_index(seg.time_index, seg.base_offset)
    return out


def _regular(path: Path) -> None:
    """An index named so but not a regular file (a FIFO would block the read): OSError, unreadable."""
    if not stat.S_ISREG(os.stat(path).st_mode):
        raise OSError(0, f"{path.name}: named as an index but not a regular file", str(path))


def _index_size_findings(path: Path, tail: index.IndexTail, width: int, prefix: str) -> list[Finding]:
    """The index's shape: all-zero entries among its entries (one finding, however many), a partial
    entry at its end. `prefix`: the kind's, `index` or `time-index`."""
    out = []
    if tail.gap.entries:
        message = index.gap_message(tail.gap, width)
        where = tail.gap.first_slot * width
        out.append(
            Finding(
                file=str(path),
                kind=f"{prefix}-zero-entries",
                severity=Severity.ERROR,
                message=message,
                position=where,
                repairable=True,
            )
        )
    if tail.trailing_bytes:
        message = f"size {path.stat().st_size} is not a multiple of {width}"
        out.append(
            Finding(
                file=str(path),
                kind="index-size",
                severity=Severity.ERROR,
                message=message,
                position=tail.position,
                repairable=True,
            )
        )
    return out


def check_offset_index(seg: Segment, report: SegmentReport, read: IndexRead | None = None) -> list[Finding]:
    """Entries must increase and point at the start of an entry whose last offset they name (KAFKA-7487;
    before it, brokers stored the first offset of a compressed message set, which is accepted too).
    `read`: the entries as read before the segment was scanned (`read_indexes`), else read now."""
    path = seg.offset_index
    assert path is not None
    name = str(path)
    out: list[Finding] = []
    entries, tail = read if read is not None else index.read_offset_index(path, seg.base_offset)
    out += _index_size_findings(path, tail, 8, "index")
    previous = None
    for e in entries:
        where = e.slot * 8
        if previous is not None and e.offset <= previous.offset:
            out.append(
                Finding(
                    file=name,
                    kind="index-not-increasing",
                    severity=Severity.ERROR,
                    message=f"entry {e.slot}: offset {e.offset} after {previous.offset}",
                    position=where,
                    offset=e.offset,
                    repairable=True,
                )
            )
            break
        previous = e
        if e.position >= report.recovery_point:
            out.append(
                Finding(
                    file=name,
                    kind="index-past-valid-data",
                    severity=Severity.ERROR,
                    message=f"entry {e.slot} points at position {e.position}, past the segment's valid "
                    f"{plural(report.recovery_point, 'byte')}",
                    position=where,
                    offset=e.offset,
                    repairable=True,
                )
            )
            continue
        known = report.entry_positions.get(e.position)
        if known is None:
            out.append(
                Finding(
                    file=name,
                    kind="index-position-mismatch",
                    severity=Severity.ERROR,
                    message=f"entry {e.slot} points at position {e.position}, where no batch starts",
                    position=where,
                    offset=e.offset,
                    repairable=True,
                )
            )
        elif e.offset not in known:
            out.append(
                Finding(
                    file=name,
                    kind="index-offset-mismatch",
                    severity=Severity.ERROR,
                    message=f"entry {e.slot} says offset {e.offset} at position {e.position}",
                    position=where,
                    offset=e.offset,
                    expected=known[1],
                    actual=e.offset,
                    repairable=True,
                )
            )
    return out


def check_time_index(seg: Segment, report: SegmentReport, read: IndexRead | None = None) -> list[Finding]:
    path = seg.time_index
    assert path is not None
    name = str(path)
    out: list[Finding] = []
    entries, tail = read if read is not None else index.read_time_index(path, seg.base_offset)
    out += _index_size_findings(path, tail, 12, "time-index")
    for before, after in zip(entries, entries[1:], strict=False):
        if after.timestamp < before.timestamp or after.offset < before.offset:
            out.append(
                Finding(
                    file=name,
                    kind="time-index-not-increasing",
                    severity=Severity.ERROR,
                    message=f"entry {after.slot}: ({after.timestamp}, {after.offset}) after "
                    f"({before.timestamp}, {before.offset})",
                    position=after.slot * 12,
                    offset=after.offset,
                    repairable=True,
                )
            )
            break
    last = report.last_offset
    for e in entries:
        if last is None or e.offset > last:  # an empty segment's time index must be empty too
            held = "it holds no valid entry" if last is None else f"its last valid offset is {last}"
            out.append(
                Finding(
                    file=name,
                    kind="time-index-past-log-end",
                    severity=Severity.ERROR,
                    message=f"entry {e.slot} names offset {e.offset}, past the segment's end: {held}",
                    position=e.slot * 12,
                    offset=e.offset,
                    repairable=True,
                )
            )
            break
    return out


def check_snapshot(path: Path) -> list[Finding]:
    snap = snapshot.read_snapshot(path)
    if snap.problem:
        return [
            Finding(
                file=str(path),
                kind="snapshot-malformed",
                severity=Severity.ERROR,
                message=snap.problem,
                position=0,
                repairable=False,
            )
        ]
    if not snap.is_valid:
        return [
            Finding(
                file=str(path),
                kind=ProblemKind.CRC_MISMATCH.value,
                severity=Severity.ERROR,
                message=crc_finding(snap.crc, snap.computed_crc),
                position=2,
                expected=snap.computed_crc,
                actual=snap.crc,
                repairable=False,
            )
        ]
    return []


def index_positions(path: Path | None, base_offset: int) -> set[int]:
    """The positions an `.index` points at: the entries `check_offset_index` must find in the scan."""
    if path is None:
        return set()
    return {e.position for e in index.read_offset_index(path, base_offset)[0]}
