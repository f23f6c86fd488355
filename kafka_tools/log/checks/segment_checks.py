"""Checks of one segment file: every entry framed and checksummed, offsets in order, compressed
contents decoded (as a stream), and where the broker's recovery would cut."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_tools.format.batch_runs import BatchRun
from kafka_tools.format.checksums import crc_finding
from kafka_tools.format.compression import Codec
from kafka_tools.format.entry_headers import BatchHeader
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of
from kafka_tools.format.mapping import ShortenedWhileRead
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.plural import plural
from kafka_tools.format.problems import Problem, ProblemKind
from kafka_tools.format.record_batch import RecordBatch, parse_batch_header
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import (
    MessageRun,
    RunBounds,
    SegmentWindow,
    breaks_recovery,
    looks_like_text,
    resync,
    safe_to_map,
    walk_entries,
)
from kafka_tools.format.stream_check import InnerStats, inner_stats
from kafka_tools.log.checks.findings import Finding, SegmentReport, Severity, ValidateOptions
from kafka_tools.log.files.dirs import Segment

if TYPE_CHECKING:
    from kafka_tools.log.checks.index_checks import SegmentIndexes

_KNOWN_CODECS = frozenset(int(c) for c in Codec)

INT32_MAX = (1 << 31) - 1  # offsets in a segment are kept as 32-bit deltas from its base offset
# Read by pread in pieces that stay in the CPU's cache, so the CRC reads what was just copied:
# 2 MiB cost 25 % less CPU than 8 MiB on the 1 GiB v2 segment (bench/validate.py, ktool-pread).
PREAD_WINDOW = 2 * 1024 * 1024

# The Kafka 0.7 reader is imported with the first .kafka file: until then no entry is one of its
# messages (isinstance of an empty tuple is always False), and a v2 segment's start-up skips it.
_Kafka07Message: type | tuple[type, ...] = ()


def _kafka07():
    global _Kafka07Message
    from kafka_tools.format import kafka07

    _Kafka07Message = kafka07.Kafka07Message
    return kafka07


# -- one segment ---------------------------------------------------------------------------------


class _Accepted:
    """What the valid entries before the cut add up to, kept by one `accept` whatever the walk yields
    (a C run of batches or messages, one batch header, one decoded entry)."""

    __slots__ = ("report", "runs", "wanted", "last", "next_offset")

    def __init__(self, report: SegmentReport, runs: RunBounds, wanted: Collection[int]) -> None:
        self.report = report
        self.runs = runs
        self.wanted = wanted
        self.last: int | None = None  # the last valid entry's last offset
        self.next_offset: int | None = None  # the offset after it (0.7: the byte offset after it)

    def accept(
        self,
        entries: int,
        records: int,
        first: int,
        last: int,
        next_offset: int,
        max_timestamp: int,
        gaps: bool = False,
        hits: Iterable[tuple[int, int, int]] = (),
    ) -> None:
        """`entries` valid entries holding `records` records, offsets `first` to `last`; `gaps`: a C run
        saw offsets skipped inside it; `hits`: the (position, first, last) of entries the index checks
        look up."""
        report = self.report
        report.entries += entries
        report.records += records
        if report.first_offset is None:
            report.first_offset = first
        if gaps or (self.last is not None and first > self.last + 1):
            report.has_gaps = True
        for position, lo, hi in hits:
            report.entry_positions[position] = (lo, hi)
        self.last = self.runs.prev = last
        self.next_offset = next_offset
        if max_timestamp > report.max_timestamp:
            report.max_timestamp = max_timestamp


def scan_segment(
    path: Path,
    options: ValidateOptions,
    progress: Callable[[int], None] | None = None,
    index_positions: Collection[int] = (),
    prefix: BatchRun | None = None,
    kind: FileKind | None = None,
) -> SegmentReport:
    """Walk a `.log` or `.kafka` file and find everything the broker's recovery would object to.
    `prefix`: the file's first batches, already walked (log/workers/parallel.py: a segment split over cores,
    which `options.split` does when set).

    `entry_positions` keeps only the entries at `index_positions` (what `check_offset_index` looks
    up): one per entry would make memory grow with the segment (a million a 130 MB of small v0
    messages)."""
    size = path.stat().st_size
    base = base_offset_of(path) or 0
    report = SegmentReport(path, base, size)
    name = str(path)
    if size and looks_like_text(path):
        report.findings.append(
            Finding(
                file=name,
                kind=ProblemKind.NOT_A_SEGMENT.value,
                severity=Severity.ERROR,
                message="this is text, not a Kafka log segment",
                position=0,
            )
        )
        _mark_repairable(report)  # the broker's recovery reads no valid entry in it and keeps 0 bytes
        return report
    kafka07 = (kind_of(path) if kind is None else kind) == FileKind.KAFKA07
    cut: int | None = None
    deep = options.deep
    wanted = index_positions if isinstance(index_positions, (set, frozenset)) else set(index_positions)
    runs = RunBounds(lo=base, hi=base + INT32_MAX, stops=sorted(wanted), batches=not deep)
    done = _Accepted(report, runs, wanted)
    accept = done.accept
    if options.step:
        runs.max_bytes = options.step
    with open(path, "rb") as f:
        mapped = options.mmap and safe_to_map(path)
        win = SegmentWindow(f, size, PREAD_WINDOW, use_mmap=mapped, release_step=options.step)
        if kafka07:
            walk = _kafka07().iter_kafka07_entries(path, base, progress=progress)
        else:
            if prefix is None and options.split is not None:
                prefix = options.split(path, base, sorted(wanted))
            start = 0 if prefix is None else prefix.end
            walk = walk_entries(win, start, size, progress, light=True, runs=runs)
            if prefix is not None:
                walk = chain([prefix], walk)
        for item in walk:
            if type(item) is BatchRun:
                # Valid uncompressed v2 batches in order and in range (the C walk checked it), before any cut.
                last = item.last_offset
                accept(
                    item.count, item.records, item.first_offset, last, last + 1, item.max_timestamp,
                    item.has_gaps, item.hits,
                )  # fmt: skip
                continue
            if type(item) is MessageRun:
                # Valid plain messages in order and in range (the C walk checked it), before any cut.
                first, last = item.first_offset, item.last_offset
                hits = ((item.position, first, first),) if item.position in wanted else ()
                accept(item.count, item.count, first, last, last + 1, item.max_timestamp, item.has_gaps, hits)
                continue
            if type(item) is BatchHeader:
                lo = item.last_offset
                if (
                    cut is None
                    and item.crc == item.computed_crc
                    and not item.attributes & 0x07
                    and not deep
                    and (done.last is None or lo > done.last)
                    and 0 <= lo - base <= INT32_MAX
                    and 0 <= item.records_count <= item.last_offset_delta + 1
                ):
                    # The common case: a valid, uncompressed batch in order.
                    first = item.base_offset
                    hits = ((item.position, first, lo),) if item.position in wanted else ()
                    accept(1, item.records_count, first, lo, lo + 1, item.max_timestamp, False, hits)
                    continue
                if item.is_valid and (item.is_compressed or deep):
                    item = parse_batch_header(
                        win.buf, win.ensure(item.position, item.entry_size), item.position
                    )
            if isinstance(item, Problem):
                offset = None
                if not breaks_recovery(item):
                    # An entry the broker's recovery accepts: not a cut, and no truncation repairs it.
                    if cut is not None:
                        report.valid_after.append(item.position)
                else:
                    if cut is None:
                        cut = item.position
                        runs.enabled = False
                    if item.offset is not None and done.last is not None and item.offset > done.last:
                        offset = item.offset
                report.findings.append(
                    Finding(
                        file=name,
                        kind=item.kind.value,
                        severity=Severity.ERROR,
                        message=item.message,
                        position=item.position,
                        offset=offset,
                    )
                )
                continue
            entry = item
            # Recovery stops at an entry it could frame only for its checksum (breaks_recovery). Offsets
            # sit outside every checksum, so a wrong one is kept by the broker (0.9 never looks at them;
            # since 2.x an offset that does not fit the segment makes it split the segment, not truncate
            # it): truncation cannot repair such an entry, and validate says so.
            inner: list[InnerStats] = []  # what _deep_look learnt of a compressed entry's contents
            problems = _entry_findings(name, entry, base, done.last, options, inner)
            breaks = breaks_recovery(entry)
            if breaks and cut is None:
                cut = entry.position
                runs.enabled = False
            if cut is not None and not breaks and entry.is_valid:
                report.valid_after.append(entry.position)
            if cut is None:
                first, last = _first_offset(entry, inner), entry.last_offset
                hits = ((entry.position, first, last),) if entry.position in wanted else ()
                ts = getattr(entry, "max_timestamp", getattr(entry, "timestamp", -1))
                accept(1, _count(entry, inner), first, last, entry.next_offset, ts, False, hits)
            report.findings += problems
        if os.fstat(f.fileno()).st_size < size:  # cut while walked: what was read after the cut is no file
            raise ShortenedWhileRead(size, path)  # that ever was, so no findings of it (one line, exit 3)
    last = done.last
    if cut is not None:
        # The walk past the cut follows framing the damage may have changed (a damaged length field
        # frames the next entries wrongly), so look for valid entries from the cut itself as well.
        if kafka07:
            found = _kafka07().resync_kafka07(path, cut + 1)
        else:
            found = resync(path, cut + 1, min_offset=(base - 1 if last is None else last) + 1)
            if not found and last is None and base > 0:
                # Entries below the base of a segment named past them (a misnamed file) are still data
                # the cut throws away: truncate must ask for --force, not drop them silently.
                found = resync(path, cut + 1, min_offset=0)
        report.valid_after = sorted(set(report.valid_after) | set(found))
    report.next_offset = done.next_offset
    report.recovery_point = size if cut is None else cut
    report.last_offset = last
    _mark_repairable(report)
    return report


def _first_offset(entry, inner: list[InnerStats]) -> int:
    if isinstance(entry, (RecordBatch, BatchHeader)):
        return entry.base_offset
    if inner:  # a compressed wrapper, already walked (not decompressed again)
        first = inner[0].first_offset
        return entry.offset if first is None else first
    if isinstance(entry, LegacyMessage) and entry.is_compressed:
        try:
            return entry.inner_summary()[1]
        except RecordDecodeError:
            return entry.offset
    return entry.offset


def _count(entry, inner: list[InnerStats]) -> int:
    if isinstance(entry, (RecordBatch, BatchHeader)):
        return entry.records_count
    if inner:
        return inner[0].count
    if isinstance(entry, LegacyMessage) and entry.is_compressed:
        try:
            return entry.inner_summary()[0]
        except RecordDecodeError:
            return 0
    if isinstance(entry, _Kafka07Message) and entry.is_compressed:
        try:
            return len(entry.inner_messages())
        except RecordDecodeError:
            return 0
    return 1


def _entry_findings(
    name: str, entry, base: int, last: int | None, options: ValidateOptions, inner: list[InnerStats]
) -> list[Finding]:
    out: list[Finding] = []
    pos = entry.position
    if not entry.is_valid:
        out.append(
            Finding(
                file=name,
                kind=ProblemKind.CRC_MISMATCH.value,
                severity=Severity.ERROR,
                message=crc_finding(entry.crc, entry.computed_crc),
                position=pos,
                offset=entry.last_offset,
                expected=entry.computed_crc,
                actual=entry.crc,
            )
        )
        return out  # nothing else in a batch whose bytes are wrong is worth reporting
    if isinstance(entry, _Kafka07Message):
        if entry.is_compressed:
            _deep_look(name, entry, out, inner)
        return out
    unknown_codec = entry.codec not in _KNOWN_CODECS
    if unknown_codec:
        out.append(
            Finding(
                file=name,
                kind=ProblemKind.UNKNOWN_CODEC.value,
                severity=Severity.ERROR,
                message=f"unknown compression codec {entry.codec}",
                position=pos,
                offset=entry.last_offset,
            )
        )
    delta = entry.last_offset - base
    if delta < 0 or delta > INT32_MAX:
        out.append(
            Finding(
                file=name,
                kind="offset-out-of-range",
                severity=Severity.ERROR,
                message=f"offset {entry.last_offset} does not fit a segment based at {base}",
                position=pos,
                offset=entry.last_offset,
                expected=f"{base}..{base + INT32_MAX}",
                actual=entry.last_offset,
            )
        )
    if last is not None and entry.last_offset <= last:
        out.append(
            Finding(
                file=name,
                kind=ProblemKind.OFFSETS_NOT_INCREASING.value,
                severity=Severity.ERROR,
                message=f"offset {entry.last_offset} follows {last}",
                position=pos,
                offset=entry.last_offset,
                expected=f"> {last}",
                actual=entry.last_offset,
            )
        )
    if isinstance(entry, (RecordBatch, BatchHeader)):
        if entry.records_count < 0 or entry.records_count > entry.last_offset_delta + 1:
            out.append(
                Finding(
                    file=name,
                    kind="record-count-mismatch",
                    severity=Severity.ERROR,
                    message=f"{plural(entry.records_count, 'record')} cannot span offset deltas "
                    f"0..{entry.last_offset_delta}",
                    position=pos,
                    offset=entry.last_offset,
                )
            )
        if (entry.is_compressed or options.deep) and not unknown_codec:
            _deep_look(name, entry, out, inner)
    elif entry.is_compressed and not unknown_codec:
        _deep_look(name, entry, out, inner)
    return out


def _deep_look(name: str, entry, out: list[Finding], inner: list[InnerStats]) -> None:
    """Decompress and decode: a batch whose CRC is right can still hold what no consumer can read.
    Compressed contents are walked as a stream (format/stream_check.py): memory stays flat however
    far the payload inflates, up to the cap."""
    try:
        if isinstance(entry, (RecordBatch, LegacyMessage)) and entry.is_compressed:
            stats = inner_stats(entry)
        elif isinstance(entry, RecordBatch):
            offsets = [r.offset for r in entry.records()]
            stats = InnerStats(
                offsets[0] if offsets else None,
                offsets[-1] if offsets else None,
                len(offsets),
                all(b > a for a, b in zip(offsets, offsets[1:], strict=False)),
            )
        else:
            entry.records()  # a 0.7 wrapper
            return
    except RecordDecodeError as exc:
        inner.append(InnerStats(None, None, 0, True))  # undecodable: counted as holding nothing
        out.append(
            Finding(
                file=name,
                kind=ProblemKind.RECORDS_UNDECODABLE.value,
                severity=Severity.ERROR,
                message=str(exc),
                position=exc.position,
                offset=entry.last_offset,
            )
        )
        return
    inner.append(stats)
    if stats.first_offset is None:
        return
    if isinstance(entry, RecordBatch):
        if (
            stats.first_offset < entry.base_offset
            or stats.last_offset > entry.last_offset
            or not stats.increasing
        ):
            out.append(
                Finding(
                    file=name,
                    kind="record-offsets-inconsistent",
                    severity=Severity.ERROR,
                    message=f"record offsets {stats.first_offset}..{stats.last_offset} do not lie in "
                    "increasing "
                    f"order within {entry.base_offset}..{entry.last_offset}",
                    position=entry.position,
                    offset=entry.last_offset,
                )
            )
    elif stats.last_offset != entry.offset:
        out.append(
            Finding(
                file=name,
                kind="record-offsets-inconsistent",
                severity=Severity.ERROR,
                message=f"wrapper offset {entry.offset} is not its last inner offset {stats.last_offset}",
                position=entry.position,
                offset=entry.offset,
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
                file=str(report.path),
                kind="valid-data-after-damage",
                severity=Severity.ERROR,
                message=f"{plural(len(report.valid_after), 'valid entry', 'valid entries')} after the "
                "first invalid "
                f"byte at {report.recovery_point} (the first at {report.valid_after[0]}): truncation "
                "would lose them",
                position=report.valid_after[0],
                repairable=False,
            )
        )


def check_segment(seg: Segment, options: ValidateOptions, progress=None) -> SegmentReport:
    """One segment of a partition: its indexes read, then its scan, then the indexes checked against
    it. The indexes first: a running broker appends to the segment and its indexes while they are
    read, and an entry read after the scan could name a batch the scan did not reach."""
    # The index checks are imported for segments that have indexes, not for one without (a segment
    # file named alone, a partition of small segments).
    indexes = None
    if seg.offset_index is not None or seg.time_index is not None:
        from kafka_tools.log.checks.index_checks import read_indexes

        indexes = read_indexes(seg)
    positions = indexes.positions if indexes is not None else set()
    report = scan_segment(seg.log, options, progress, positions, kind=seg.kind)
    check_segment_in_partition(seg, report, indexes)
    return report


def check_segment_in_partition(
    seg: Segment, report: SegmentReport, indexes: SegmentIndexes | None = None
) -> None:
    """What a segment's own files add to its scan: its indexes, and its first offset vs its name.
    (Apart from `assemble_partition` so that `ktool scan` can run it next to the scan, in an executor.)"""
    if seg.offset_index is not None or seg.time_index is not None:
        from kafka_tools.log.checks.index_checks import SegmentIndexes, check_offset_index, check_time_index

        indexes = indexes or SegmentIndexes()
        if seg.offset_index is not None:
            report.findings += check_offset_index(seg, report, indexes.offset)
        if seg.time_index is not None:
            report.findings += check_time_index(seg, report, indexes.time)
    if report.first_offset is not None and report.first_offset < seg.base_offset:
        report.findings.append(
            Finding(
                file=str(seg.log),
                kind="offset-below-base",
                severity=Severity.ERROR,
                message=f"first offset {report.first_offset} is below the segment's base offset "
                f"{seg.base_offset}",
                position=0,
                offset=report.first_offset,
                repairable=False,
            )
        )
