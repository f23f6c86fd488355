"""The service behind `ktool tiered audit`: replay `__remote_log_metadata` from log dirs, then check
each user partition's remote segments: transitions, copies and deletes not finished in time, overlaps
and gaps (between remote segments, and to the local log), leader-epoch lineage, and, given the store,
segments missing from it, files no finished segment names and sizes that differ."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from kafka_tools.errors import InputError
from kafka_tools.format.batch_spans import Span, kept_spans, span_records
from kafka_tools.format.checkpoints import (
    CheckpointError,
    read_leader_epoch_checkpoint,
    read_partition_metadata,
)
from kafka_tools.format.kinds import partition_of
from kafka_tools.format.kraft.decoder import MetadataDecodeError
from kafka_tools.format.problems import Problem, ProblemKind
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.remote_events import span_events
from kafka_tools.format.remote_log_metadata import REMOTE_LOG_METADATA, decode_remote_log_metadata
from kafka_tools.format.remote_log_partitioner import DEFAULT_METADATA_PARTITIONS, metadata_partition
from kafka_tools.format.segment import breaks_recovery
from kafka_tools.log.checks.findings import Finding, Severity
from kafka_tools.log.files.dirs import list_partition
from kafka_tools.tiered.lineage import outside_lineage
from kafka_tools.tiered.replay import (
    COPY_FINISHED,
    COPY_STARTED,
    DELETE_PARTITION_FINISHED,
    DELETE_STARTED,
    PartitionReplay,
    RemoteSegment,
    Replay,
    Where,
)
from kafka_tools.tiered.store import StoredPartition, read_store


@dataclass(slots=True)
class LocalReplica:
    """A user partition's local log in one log dir."""

    path: Path
    topic_id: str | None
    local_start: int  # the first local segment's base offset
    log_end: int
    epochs: dict[int, int] | None  # leader-epoch-checkpoint; None: no file


@dataclass(slots=True)
class PartitionAudit:
    topic: str
    partition: int
    topic_id: str
    replay: PartitionReplay | None
    local: list[LocalReplica] = field(default_factory=list)
    stored: StoredPartition | None = None
    findings: list[Finding] = field(default_factory=list)

    def count(self, state: str) -> int:
        return 0 if self.replay is None else sum(s.state == state for s in self.replay.segments.values())

    @property
    def remote_range(self) -> tuple[int, int] | None:
        served = _served(self.replay)
        return (served[0].start_offset, max(s.end_offset for s in served)) if served else None


@dataclass(slots=True)
class Audit:
    partitions: list[PartitionAudit]
    findings: list[Finding]  # those of no partition (unreadable metadata); each partition keeps its own
    metadata_partitions: list[str]  # the __remote_log_metadata-N directories replayed
    records: int
    warnings: list[str]

    def all_findings(self) -> Iterator[Finding]:
        yield from self.findings
        for p in self.partitions:
            yield from p.findings


def _served(replay: PartitionReplay | None) -> list[RemoteSegment]:
    if replay is None:
        return []
    return sorted(
        (s for s in replay.segments.values() if s.state == COPY_FINISHED),
        key=lambda s: (s.start_offset, s.end_offset),
    )


def audit(
    paths: list[str],
    remote_dir: str | None,
    now_ms: int,
    stuck_after_ms: int,
    metadata_partitions: int | None = DEFAULT_METADATA_PARTITIONS,
) -> Audit:
    """Replay and check; raises KtoolError (one line) for what cannot be read at all."""
    from kafka_tools.log.files.dirs import set_aside, set_aside_line
    from kafka_tools.log.files.discover import find_partition_dirs

    replay = Replay()
    findings: list[Finding] = []
    warnings: list[str] = []
    metadata_dirs: dict[int, Path] = {}
    local: dict[tuple[str, int], list[LocalReplica]] = {}
    by_name: dict[tuple[str, int], list[LocalReplica]] = {}
    found = [path for path, _live in find_partition_dirs(paths)]
    renamed = [path for path in found if set_aside(path)]
    if renamed:  # a deleted, stray or moving replica: not the partition's log
        warnings.append(set_aside_line(renamed))
    for path in found:
        if set_aside(path):
            continue
        where = partition_of(path / "x")
        assert where is not None
        topic, number = where
        if topic == REMOTE_LOG_METADATA:
            if number in metadata_dirs:  # another broker's replica of the same events
                warnings.append(f"{path}: a second replica of {path.name}; {metadata_dirs[number]} replayed")
                continue
            metadata_dirs[number] = path
            continue
        replica = _local_replica(path, warnings)
        if replica is not None:
            if replica.topic_id is not None:
                local.setdefault((replica.topic_id, number), []).append(replica)
            by_name.setdefault((topic, number), []).append(replica)
    for number in sorted(metadata_dirs):
        _replay_partition(metadata_dirs[number], number, replay, findings)
    stored = read_store(remote_dir) if remote_dir is not None else {}
    audits: list[PartitionAudit] = []
    for key in sorted(set(replay.partitions) | set(stored)):
        part = replay.partitions.get(key)
        store_part = stored.get(key)
        if part is None and metadata_partitions is None:  # which partition holds its events: not known
            warnings.append(
                f"{store_part.path}: no __remote_log_metadata events for it in the log dirs given, and "
                "which metadata partition would hold them is not known: not compared"
            )
            continue
        if part is None and metadata_partition(key[0], key[1], metadata_partitions) not in metadata_dirs:
            # its events are in a metadata partition these log dirs do not hold: nothing to compare with
            warnings.append(
                f"{store_part.path}: its __remote_log_metadata partition is not in the log dirs given"
            )
            continue
        topic = part.topic if part is not None else store_part.topic  # type: ignore[union-attr]
        pa = PartitionAudit(topic, key[1], key[0], part, local.get(key, []), store_part)
        if not pa.local and by_name.get((topic, key[1])):  # no partition.metadata: matched by name
            pa.local = by_name[(topic, key[1])]
        _check(pa, now_ms, stuck_after_ms, metadata_partitions, remote_dir is not None)
        audits.append(pa)
    audits.sort(key=lambda a: (a.topic, a.partition))
    return Audit(
        audits, findings, [str(metadata_dirs[n]) for n in sorted(metadata_dirs)], replay.records, warnings
    )


def _local_replica(path: Path, warnings: list[str]) -> LocalReplica | None:
    from kafka_tools.errors import KtoolError
    from kafka_tools.log.files.views import open_partition
    from kafka_tools.log.reads.locate import log_end_offset

    topic_id = None
    meta = path / "partition.metadata"
    epochs: dict[int, int] | None = None
    try:
        if meta.is_file():
            topic_id = read_partition_metadata(meta).get("topic_id")
        checkpoint = path / "leader-epoch-checkpoint"
        if checkpoint.is_file():
            epochs = {e.epoch: e.start_offset for e in read_leader_epoch_checkpoint(checkpoint).entries}
        part = open_partition(str(path))
        local_start = part.bases[0] if part.bases else part.log_start_offset
        log_end = log_end_offset(part)
    except (CheckpointError, OSError, KtoolError) as exc:
        warnings.append(f"{path}: not read ({exc}); its local log is not compared")
        return None
    return LocalReplica(path, topic_id, local_start, log_end, epochs)


def _damaged(log: Path, problem: Problem) -> Finding:
    """Where the broker's recovery cuts a `__remote_log_metadata` segment (crc-mismatch: a batch whose
    checksum fails) or a frame it cannot follow (metadata-unreadable): nothing after it is replayed."""
    kind = "crc-mismatch" if problem.kind is ProblemKind.CRC_MISMATCH else "metadata-unreadable"
    what = "nothing from here on is replayed" if breaks_recovery(problem) else "skipped"
    return Finding(
        kind=kind,
        severity=Severity.ERROR,
        message=f"byte {problem.position}: {problem.message}; {what}",
        where=str(log),
        position=problem.position,
        offset=problem.offset,
    )


def _replay_partition(path: Path, number: int, replay: Replay, findings: list[Finding]) -> None:
    """Every record of one `__remote_log_metadata-N` directory, in offset order, into `replay`."""
    listing = list_partition(path)
    for full, why in listing.unreadable:  # a FIFO would block the read, a dangling link: one line, exit 3
        raise InputError(f"{full}: {why} (a segment of {path.name} cannot be read)")
    for base in listing.bases:
        log = Path(listing.join(f"{listing.stems[base]}.{listing.suffix}"))
        # Every entry's checksum is checked (the walk computes it) and the replay stops where the
        # broker's recovery would cut the log: the segments after the cut are not read either.
        for entry in kept_spans(log):
            if type(entry) is Span:  # most of the log: checked batches, read without a Python walk
                _replay_span(entry, log, number, replay, findings)
                continue
            if isinstance(entry, Problem):
                findings.append(_damaged(log, entry))
                if breaks_recovery(entry):
                    return
                continue
            if not isinstance(entry, RecordBatch) or entry.is_control:
                continue
            try:
                _replay_records(entry.iter_records(), number, replay, findings)
            except RecordDecodeError as exc:
                findings.append(_unreadable(log, entry.position, exc))


def _replay_span(span: Span, log: Path, number: int, replay: Replay, findings: list[Finding]) -> None:
    """A span's records as flat events (format/remote_events.py): a segment record's or an update's
    fields straight into `Replay.add` / `Replay.update`, any other value decoded and applied as a
    record of the Python walk is."""
    buf, at, end, shift = span
    update, add = replay.update, replay.add  # a million records: bound once
    while at < end:
        events, at = span_events(buf, at, end)
        for event in events:
            size = len(event)
            if size == 8:
                update(number, *event)
            elif size == 12:
                add(number, *event)
            elif size == 2:
                _replay_value(number, event[0], event[1], replay, findings)
            else:  # records the span walk could not read: the records before the damage, then why
                unreadable = partial(_unreadable_at, log, findings)
                damaged = Span(buf, event[0], event[1], shift)
                _replay_records(span_records(damaged, unreadable), number, replay, findings)


def _replay_records(records, number: int, replay: Replay, findings: list[Finding]) -> None:
    for r in records:
        _replay_value(number, r.offset, r.value, replay, findings)


def _replay_value(number: int, offset: int, value, replay: Replay, findings: list[Finding]) -> None:
    try:
        replay.apply(number, offset, decode_remote_log_metadata(value))
    except MetadataDecodeError as exc:
        findings.append(_undecodable(number, offset, exc))


def _undecodable(number: int, offset: int, exc: MetadataDecodeError) -> Finding:
    return Finding(
        kind="metadata-undecodable",
        severity=Severity.ERROR,
        message=f"byte {exc.position} of its value: {exc.message}",
        where=str(Where(number, offset)),
    )


def _unreadable_at(log: Path, findings: list[Finding], position: int, exc: RecordDecodeError) -> None:
    findings.append(_unreadable(log, position, exc))


def _unreadable(log: Path, position: int, exc: RecordDecodeError) -> Finding:
    return Finding(
        kind="metadata-unreadable",
        severity=Severity.ERROR,
        message=f"batch at byte {position}: {exc}",
        where=str(log),
    )


def _age(now_ms: int, then_ms: int) -> str:
    seconds = max(0, now_ms - then_ms) // 1000
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 7200:
        return f"{seconds // 60} min"
    return f"{seconds // 3600} h"


def _check(pa: PartitionAudit, now_ms: int, stuck_ms: int, partitions: int | None, with_store: bool) -> None:
    def add(kind: str, message: str, seg: RemoteSegment | None = None, where: object = None, seg_id=None):
        pa.findings.append(
            Finding(
                kind=kind,
                severity=Severity.ERROR,
                message=message,
                topic=pa.topic,
                partition=pa.partition,
                segment_id=seg_id if seg is None else seg.segment_id,
                start_offset=None if seg is None else seg.start_offset,
                end_offset=None if seg is None else seg.end_offset,
                where=None if where is None else str(where),
            )
        )

    part = pa.replay
    if part is not None:
        expected = None if partitions is None else metadata_partition(pa.topic_id, pa.partition, partitions)
        wrong = [] if expected is None else sorted(part.metadata_partitions - {expected})
        if wrong:
            add(
                "wrong-metadata-partition",
                f"events in __remote_log_metadata-{','.join(map(str, wrong))}; with {partitions} metadata "
                f"partitions RemoteLogMetadataTopicPartitioner puts them in {expected}",
            )
        for issue in part.issues:
            seg = part.segments.get(issue.segment_id) if issue.segment_id else None
            add(issue.kind, issue.message, seg, issue.where, issue.segment_id)
        for seg in sorted(part.segments.values(), key=lambda s: s.start_offset):
            if seg.state in (COPY_STARTED, DELETE_STARTED) and now_ms - seg.state_ms > stuck_ms:
                verb = "copy" if seg.state == COPY_STARTED else "delete"
                add(
                    f"{verb}-not-finished",
                    f"{seg.state} {_age(now_ms, seg.state_ms)} ago (broker {seg.broker_id}), "
                    f"offsets {seg.start_offset}-{seg.end_offset}, segment {seg.segment_id}",
                    seg,
                    seg.last,
                )
        if part.delete_state not in (None, DELETE_PARTITION_FINISHED) and part.delete_state_ms is not None:
            if now_ms - part.delete_state_ms > stuck_ms:
                add(
                    "partition-delete-not-finished",
                    f"{part.delete_state} {_age(now_ms, part.delete_state_ms)} ago",
                )
    served = _served(part)
    for prev, nxt in zip(served, served[1:], strict=False):
        if nxt.start_offset <= prev.end_offset:
            add(
                "overlap",
                f"segment {nxt.segment_id} ({nxt.start_offset}-{nxt.end_offset}) overlaps "
                f"{prev.segment_id} ({prev.start_offset}-{prev.end_offset})",
                nxt,
            )
        elif nxt.start_offset > prev.end_offset + 1:
            add(
                "gap",
                f"offsets {prev.end_offset + 1}-{nxt.start_offset - 1} are in no remote segment "
                f"(between {prev.segment_id} and {nxt.segment_id})",
                nxt,
            )
    if served:
        remote_end = max(s.end_offset for s in served)
        for replica in pa.local:
            if replica.local_start > remote_end + 1:
                add(
                    "gap-to-local",
                    f"offsets {remote_end + 1}-{replica.local_start - 1} are neither remote (ends at "
                    f"{remote_end}) nor local ({replica.path} starts at {replica.local_start})",
                    where=replica.path,
                )
        lineage = next((r for r in pa.local if r.epochs), None)
        if lineage is not None and lineage.epochs:
            for seg in served:
                why = outside_lineage(seg.leader_epochs, seg.end_offset, lineage.log_end, lineage.epochs)
                if why is not None:
                    add(
                        "epoch-lineage",
                        f"segment {seg.segment_id} ({seg.start_offset}-{seg.end_offset}, epochs "
                        f"{sorted(seg.leader_epochs)}) is not within the leader epochs of "
                        f"{lineage.path}: {why}",
                        seg,
                    )
    if with_store:
        _check_store(pa, now_ms, stuck_ms, add)


def _check_store(pa: PartitionAudit, now_ms: int, stuck_ms: int, add) -> None:
    stored = pa.stored.segments if pa.stored is not None else {}
    part = pa.replay
    live = part.segments if part is not None else {}
    for seg in _served(part):
        files = stored.get(seg.segment_id)
        if files is None or files.log_size is None:
            add(
                "missing-in-store",
                f"segment {seg.segment_id} is COPY_SEGMENT_FINISHED, its .log is not in the store",
                seg,
            )
        elif files.log_size != seg.size:
            add(
                "size-mismatch",
                f"segment {seg.segment_id}: {files.log_size} bytes in the store, {seg.size} in its metadata",
                seg,
            )
    for seg_id, files in sorted(stored.items()):
        seg = live.get(seg_id)
        names = ", ".join(sorted(files.names))
        assert pa.stored is not None
        if seg is None:
            deleted = part is not None and part.delete_state == DELETE_PARTITION_FINISHED
            why = "the partition's delete finished" if deleted else "no live segment of the metadata names it"
            add("unreferenced-files", f"{names} in {pa.stored.path}: {why}", where=pa.stored.path)
        elif seg.state == COPY_STARTED and now_ms - seg.state_ms > stuck_ms:
            add(
                "leaked-files",
                f"{names}: left by a copy started {_age(now_ms, seg.state_ms)} ago and never finished "
                f"(offsets {seg.start_offset}-{seg.end_offset})",
                seg,
                pa.stored.path,
            )
