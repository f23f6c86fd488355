"""Build the image of a KRaft log dir: the newest snapshot (`<end offset>-<epoch>.checkpoint` in
`__cluster_metadata-0`) at or before the offset asked, then the log's batches from there, as a
controller or broker does on start-up (Kafka's MetadataLoader).

Batches are walked with format/segment.py and their records decoded with format/kraft.py. Control
batches are skipped except the KRaft control records that change the image (VotersRecord,
KRaftVersionRecord, LeaderChangeMessage). What cannot be read is a Finding with its file and byte
position; everything decodable before and after it is still replayed."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_tools.errors import InputError, UsageError, os_error, os_reason, path_error
from kafka_tools.format.problems import Problem, ProblemKind
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import breaks_recovery, iter_log_entries, until_recovery_cut
from kafka_tools.log.checks.findings import Finding, Severity
from kafka_tools.log.files.dirs import PartitionListing, list_partition, partition_from
from kafka_tools.metadata.image import Image
from kafka_tools.metadata.node_files import METADATA_PARTITION, NodeFiles, read_node_files
from kafka_tools.metadata.replay import IMAGE_CONTROL_RECORDS, Replayer

UNREADABLE_SNAPSHOT, LOG_GAP = "unreadable-snapshot", "log-gap"
NOT_USED = "; not used"
SNAPSHOT_NAME = re.compile(r"^(?P<offset>\d{20})-(?P<epoch>\d{10})\.checkpoint$")
BOOTSTRAP = "bootstrap.checkpoint"


@dataclass(slots=True)
class Snapshot:
    path: Path
    end_offset: int  # the first offset the snapshot does not hold
    epoch: int


@dataclass(slots=True)
class Bootstrap:
    """bootstrap.checkpoint: what the log dir was formatted with (the first records a new cluster's
    controller writes)."""

    path: Path
    metadata_version: int | None
    records: int
    types: dict[str, int]


@dataclass
class MetadataLoad:
    """An image and how it was built: from which snapshot and log range, and what could not be read."""

    log_dir: Path
    partition_dir: Path
    image: Image
    replayer: Replayer
    node: NodeFiles
    snapshot: Snapshot | None = None
    snapshots: list[Snapshot] = field(default_factory=list)
    bootstrap: Bootstrap | None = None
    log_start: int | None = None  # first offset found in the log's segments
    log_end: int | None = None  # offset after the last record found
    findings: list[Finding] = field(default_factory=list)
    records_read: int = 0

    @property
    def all_findings(self) -> list[Finding]:
        return self.node.findings + self.findings

    def missing_records(self) -> str | None:
        """Why the image lacks records the log dir holds, in one line naming the file: a snapshot that
        could not be opened (Kafka writes them mode 0400, so another user meets this) with no log to
        go back to its end, or a gap in the log; None when the image holds every record there."""
        base = self.snapshot.end_offset if self.snapshot else 0
        ends = {str(s.path): s.end_offset for s in self.snapshots}
        unread = [(ends.get(f.file, 0), f) for f in self.findings if f.kind == UNREADABLE_SNAPSHOT]
        unread = [(end, f) for end, f in unread if end > base]
        gap = next((f for f in self.findings if f.kind == LOG_GAP), None)
        if gap is None and (self.log_start is not None or not unread):
            return None
        if not unread:
            return f"{gap.file}: {gap.message}"
        end, f = max(unread, key=lambda x: x[0])
        return (
            f"{f.file}: cannot be read ({f.message.removesuffix(NOT_USED)}) and the log does not hold the "
            f"records before offset {end}: the metadata image cannot be built without it"
        )

    def unread_notes(self) -> list[str]:
        """One line per snapshot that could not be opened where the image was built without it."""
        source = f"{self.snapshot.path.name} and the log" if self.snapshot else "the log"
        return [
            f"{f.file}: cannot be read ({f.message.removesuffix(NOT_USED)}); the image was built without "
            f"it, from {source}"
            for f in self.findings
            if f.kind == UNREADABLE_SNAPSHOT
        ]


def partition_dir_of(path: Path) -> tuple[Path, Path]:
    """(log dir, __cluster_metadata-0 dir) for a log dir or for the metadata partition dir itself."""
    if path.name.startswith("__cluster_metadata-"):
        return path.parent, path
    return path, path / METADATA_PARTITION


def list_snapshots(listing: PartitionListing) -> list[Snapshot]:
    """The partition's `<end offset>-<epoch>.checkpoint` snapshots, oldest first; one that is not a
    regular file (a FIFO would block the read) is one line, exit 3."""
    out = []
    for name in listing.metadata_snapshots + listing.orphans:  # a FIFO is listed as an orphan
        m = SNAPSHOT_NAME.match(name)
        if m:
            path = Path(listing.join(name))
            _check_regular(path)
            out.append(Snapshot(path, int(m.group("offset")), int(m.group("epoch"))))
    return sorted(out, key=lambda s: (s.end_offset, s.epoch))


def list_segments(listing: PartitionListing) -> list[Path]:
    """The partition's segments in offset order, from the one partition model (log/files/dirs.py)."""
    if listing.unreadable:
        path, why = listing.unreadable[0]
        raise InputError(f"{path}: cannot be read: {why}")
    return [seg.log for seg in partition_from(listing).segments]


def _check_regular(path: Path) -> None:
    """A FIFO or a device named as a snapshot would block or mislead a read: one line, exit 3."""
    if not path.is_file():
        missing = path_error(path)  # a dangling link, a loop of links
        if missing:
            raise InputError(missing.replace(f"{path}: ", f"{path}: cannot be read: ", 1))
        raise InputError(f"{path}: cannot be read: named as a snapshot but not a regular file")


def _decoder():
    from kafka_tools.format import kraft

    return kraft


def iter_file_records(
    path: Path,
    findings: list[Finding],
    start: int = 0,
    stop: int | None = None,
    cuts: list[Finding] | None = None,
) -> Iterator[tuple[int, bool, Any]]:
    """(offset, is_control, MetadataRecord) of each record of a segment or snapshot file with
    `start <= offset < stop`, in file order. Every batch's checksum is checked: the records end where
    the broker's recovery would cut the log (a batch whose checksum fails, a frame it cannot follow),
    that damage appended to `findings` (and to `cuts`: nothing after it, in this file or a later one,
    is to be read); undecodable records are findings and stepped over."""
    kraft = _decoder()
    decode, decode_error = kraft.decode_metadata_record, kraft.MetadataDecodeError
    name = str(path)
    for entry in until_recovery_cut(iter_log_entries(path)):
        if isinstance(entry, Problem):
            severity = Severity.WARNING if entry.kind == ProblemKind.ZERO_TAIL else Severity.ERROR
            message = entry.message
            cut = breaks_recovery(entry)
            if cut and severity == Severity.ERROR:
                message += "; the image stops before it (the broker's recovery cuts the log here)"
            finding = Finding(
                file=name,
                kind=entry.kind.value,
                severity=severity,
                message=message,
                position=entry.position,
                offset=entry.offset,
            )
            findings.append(finding)
            if cut:
                if cuts is not None and severity == Severity.ERROR:
                    cuts.append(finding)
                return
            continue
        if not isinstance(entry, RecordBatch):
            findings.append(
                Finding(
                    file=name,
                    kind="not-a-metadata-batch",
                    severity=Severity.ERROR,
                    message=f"magic {entry.magic} entry",
                    position=entry.position,
                )
            )
            continue
        if entry.last_offset < start:
            continue
        if stop is not None and entry.base_offset >= stop:
            return
        try:
            records = entry.records()
        except RecordDecodeError as exc:
            findings.append(
                Finding(
                    file=name,
                    kind="records-undecodable",
                    severity=Severity.ERROR,
                    message=str(exc),
                    position=exc.position,
                    offset=entry.base_offset,
                )
            )
            continue
        control = entry.is_control
        if not control and entry.base_offset >= start and (stop is None or entry.last_offset < stop):
            # The whole batch is wanted (the common case): no per-record bounds.
            for rec in records:
                try:
                    yield rec.offset, False, decode(rec.value or b"")
                except decode_error as exc:
                    findings.append(_undecodable(name, entry.position, rec.offset, exc))
            continue
        for rec in records:
            if rec.offset < start:
                continue
            if stop is not None and rec.offset >= stop:
                return
            try:
                if control:
                    decoded = kraft.decode_control_record(rec.key or b"", rec.value or b"")
                else:
                    decoded = decode(rec.value or b"")
            except decode_error as exc:
                findings.append(_undecodable(name, entry.position, rec.offset, exc))
                continue
            yield rec.offset, control, decoded


def _undecodable(name: str, position: int, offset: int, exc: Exception) -> Finding:
    """The decoder's message names the byte inside the record's value; the finding's position is the
    batch's in the file."""
    return Finding(
        file=name,
        kind="record-undecodable",
        severity=Severity.ERROR,
        message=f"record at offset {offset}: {exc}",
        position=position,
        offset=offset,
    )


def read_snapshot(snapshot: Snapshot, replayer: Replayer, findings: list[Finding]) -> int:
    """Replay a snapshot's records; check its SnapshotHeader first and SnapshotFooter last."""
    first, last, count = None, None, 0
    for _, control, record in iter_file_records(snapshot.path, findings):
        first = first or record.type_name
        last = record.type_name
        count += 1
        if control:
            if record.type_name in IMAGE_CONTROL_RECORDS:
                replayer.apply(replayer.image.offset, record)
            continue
        replayer.apply(replayer.image.offset, record)
    name = str(snapshot.path)
    if first != "SnapshotHeaderRecord":
        findings.append(
            Finding(
                file=name,
                kind="snapshot-missing-header",
                severity=Severity.ERROR,
                message=f"the first record is {first or 'missing'}",
                position=0,
            )
        )
    if last != "SnapshotFooterRecord":
        findings.append(
            Finding(
                file=name,
                kind="snapshot-missing-footer",
                severity=Severity.ERROR,
                message=f"no SnapshotFooterRecord at the end (last record: {last or 'none'}); "
                "the snapshot may have been cut while it was written",
                position=snapshot.path.stat().st_size,
            )
        )
    replayer.image.offset = snapshot.end_offset
    return count


def _readable(snapshot: Snapshot, findings: list[Finding]) -> bool:
    """Whether the snapshot can be opened; one that cannot is a finding and the image is built without
    it (from an older snapshot or the log; a `log-gap` when the log does not hold what it held)."""
    try:
        with open(snapshot.path, "rb"):
            return True
    except OSError as exc:
        findings.append(
            Finding(
                file=str(snapshot.path),
                kind=UNREADABLE_SNAPSHOT,
                severity=Severity.ERROR,
                message=f"{os_reason(exc)}{NOT_USED}",
                position=0,
            )
        )
        return False


def read_bootstrap(path: Path, findings: list[Finding]) -> Bootstrap:
    replayer = Replayer()
    count = 0
    for _, control, record in iter_file_records(path, findings):
        if not control:
            replayer.apply(0, record)
            count += 1
    return Bootstrap(path, replayer.image.metadata_version, count, dict(replayer.applied))


def load_image(
    path: str | Path, at_offset: int | None = None, events_from: int | None = None
) -> MetadataLoad:
    """The image of the log dir (or `__cluster_metadata-0` dir) at `at_offset` (every record below it
    applied; default: the whole log). With `events_from`, the changes from that offset on are Events
    (then no snapshot past it is used)."""
    try:
        return _load(Path(path), at_offset, events_from)
    except OSError as exc:
        where = exc.filename or path
        raise os_error(where, exc) from None


def load_whole_image(path: str | Path) -> MetadataLoad:
    """The image of the whole log, for an answer built on it (topics, brokers, configs, a migration's
    diff): where records are missing from it (`missing_records`), one line and exit 3, never an answer
    from part of the metadata."""
    load = load_image(path)
    missing = load.missing_records()
    if missing:
        raise InputError(missing)
    return load


def checked_dir(path: str | Path) -> Path:
    """A log dir checked against another node's image: it must exist, it need not be KRaft's."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: no such directory")
    return path


def _load(path: Path, at_offset: int | None, events_from: int | None) -> MetadataLoad:
    missing = path_error(path)
    if missing:
        raise InputError(missing)
    log_dir, part_dir = partition_dir_of(path)
    if not part_dir.is_dir():
        raise InputError(f"{path}: no {METADATA_PARTITION} directory (not a KRaft log dir)")
    node = read_node_files(log_dir)
    limit = at_offset if events_from is None else min(x for x in (at_offset, events_from) if x is not None)
    listing = list_partition(part_dir)
    snapshots = list_snapshots(listing)
    usable = [s for s in snapshots if limit is None or s.end_offset <= limit]
    replayer = Replayer(events_from=events_from)
    load = MetadataLoad(log_dir, part_dir, replayer.image, replayer, node, snapshots=snapshots)
    bootstrap = log_dir / BOOTSTRAP
    if bootstrap.is_file() and _readable(Snapshot(bootstrap, 0, 0), load.findings):
        load.bootstrap = read_bootstrap(bootstrap, load.findings)
    # Kafka writes snapshots mode 0400: another user reads the log from an older one, or from its start.
    usable = [s for s in usable if _readable(s, load.findings)]
    if usable:
        load.snapshot = usable[-1]
        load.records_read += read_snapshot(load.snapshot, replayer, load.findings)
    start = replayer.image.offset
    last = None
    cuts: list[Finding] = []
    for segment in list_segments(listing):
        if cuts:  # the broker's recovery deletes every segment after the one it cuts
            load.findings.append(Finding(
                file=str(segment), kind="after-damage", severity=Severity.WARNING,
                message=f"not replayed: after the damage at {cuts[0].file} position "
                f"{cuts[0].position}", position=0,
            ))  # fmt: skip
            continue
        records = iter_file_records(segment, load.findings, start, at_offset, cuts)
        first, end, read = replayer.replay_log(records)
        load.records_read += read
        if first is None:
            continue
        if last is None:
            load.log_start = first
            if first > start:
                load.findings.append(
                    Finding(
                        file=str(segment),
                        kind=LOG_GAP,
                        severity=Severity.ERROR,
                        message=f"the log starts at offset {first} but the image needs the records from "
                        f"{start}: no snapshot or segment holds them",
                        position=None,
                        offset=first,
                    )
                )
        last = end
    if last is not None:
        load.log_end = last + 1
        replayer.image.offset = max(replayer.image.offset, last + 1)  # control records skipped too
    if at_offset is not None and at_offset > replayer.image.offset:
        raise UsageError(
            f"--at-offset {at_offset} is past the end of the metadata log ({replayer.image.offset})"
        )
    return load
