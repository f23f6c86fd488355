"""Each partition's producer state, as ProducerStateManager loads it: the newest producer snapshot
(`.snapshot`) at or below the log end, then every batch after it replayed as ProducerAppendInfo does —
per producer its epoch, last sequence, coordinator epoch and open transaction; markers closing them;
the first unstable offset, which is the last stable offset `read_committed` consumers stop at."""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import os_error
from kafka_tools.format.kinds import base_offset_of
from kafka_tools.format.message_set import LegacyMessage
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_batch import ControlType, RecordBatch, control_record
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import breaks_recovery, iter_log_entries, resync, until_recovery_cut
from kafka_tools.format.snapshot import read_snapshot
from kafka_tools.log.files.dirs import Partition, Segment

NO_PRODUCER = -1


@dataclass(slots=True)
class OpenTransaction:
    """A transaction with data in the partition and no COMMIT/ABORT marker yet."""

    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    first_offset: int
    last_offset: int
    last_timestamp: int


@dataclass(slots=True)
class ProducerState:
    """ProducerStateEntry: what the partition's leader knows of one producer."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    last_timestamp: int
    coordinator_epoch: int
    open: OpenTransaction | None = None


@dataclass(slots=True)
class ReplayAnomaly:
    """A batch or marker a healthy leader would not have appended (or, `info`, that needs no action)."""

    kind: str
    offset: int
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    timestamp: int
    message: str
    info: bool = False


@dataclass(slots=True)
class Damage:
    """Bytes of a segment the broker's recovery cuts the log at (a batch whose checksum fails, an entry
    it cannot parse), or, an unknown magic whose checksum matches, keeps unread: nothing the replay
    builds comes from them, and nothing after a cut is replayed."""

    file: Path
    position: int
    offset: int | None  # the batch's base offset (a v0/v1 message's offset), when the bytes say one
    kind: str
    message: str

    @staticmethod
    def of(file: Path, problem: Problem) -> Damage:
        cut = breaks_recovery(problem)
        what = "the broker's recovery cuts the log here: nothing after it is replayed" if cut else "skipped"
        message = f"{file}: position {problem.position}: {problem.message}; {what}"
        return Damage(file, problem.position, problem.offset, problem.kind.value, message)


def is_torn_tail(seg: Segment, problem: Problem, newest: bool) -> bool:
    """Whether the walk's stop is what a crash (or, live, the append in progress) leaves: a frame it
    cannot follow at the end of the newest segment, with no valid entry after it (validate's tail). A
    length field damaged in the middle of the data, or in a rolled segment, is damage."""
    if not problem.is_fatal or not newest:
        return False
    return not resync(seg.log, problem.position + 1, seg.base_offset, limit=1)


@dataclass(slots=True)
class PartitionProducers:
    """One partition's producers after the replay, and where its last stable offset is."""

    topic: str
    partition: int
    path: Path
    live: bool
    snapshot_offset: int | None  # the snapshot the replay started from (None: the log start)
    log_start_offset: int
    log_end_offset: int
    newest_timestamp: int
    producers: dict[int, ProducerState] = field(default_factory=dict)
    anomalies: list[ReplayAnomaly] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    damage: list[Damage] = field(default_factory=list)  # findings of every audit command (exit 1)
    batches_replayed: int = 0
    snapshot_path: Path | None = None

    @property
    def open_transactions(self) -> list[OpenTransaction]:
        return sorted((p.open for p in self.producers.values() if p.open), key=lambda t: t.first_offset)

    @property
    def last_stable_offset(self) -> int:
        """The first unstable offset, or the log end when no transaction is open."""
        opened = self.open_transactions
        return opened[0].first_offset if opened else self.log_end_offset


def _snapshots(part: Partition) -> list[tuple[int, Path]]:
    found = [(base_offset_of(p), p) for p in part.snapshots]
    return sorted((o, p) for o, p in found if o is not None)


def replay_partition(part: Partition, from_start: bool = False) -> PartitionProducers:
    """The partition's producer state: from its newest usable snapshot (or, `from_start`, from the log
    start) through the last batch. Raises InputError (exit 3) when a segment cannot be read."""
    part.check_readable()
    first = part.segments[0].base_offset if part.segments else 0
    result = PartitionProducers(part.topic, part.partition, part.path, part.live, None, first, first, -1)
    candidates = [] if from_start else _snapshots(part)
    while True:
        start = first
        result.producers.clear()
        result.anomalies.clear()
        result.damage.clear()
        result.batches_replayed = 0
        result.snapshot_offset = result.snapshot_path = None
        if candidates:
            offset, path = candidates[-1]
            snap = read_snapshot(path)
            if snap.is_valid and offset >= first:
                result.snapshot_offset = start = offset
                result.snapshot_path = path
                _load_snapshot(result, snap.entries)
            else:
                why = snap.problem or f"CRC-32C {snap.computed_crc:#010x}, stored {snap.crc:#010x}"
                if offset < first:
                    why = f"below the log start {first}"
                result.notes.append(f"{path}: not used ({why})")
                candidates.pop()
                continue
        result.log_end_offset = start
        _replay_from(part, result, start)
        if result.snapshot_offset is not None and result.log_end_offset < result.snapshot_offset:
            result.notes.append(
                f"{candidates[-1][1]}: past the log end {result.log_end_offset}; the broker would not load it"
            )
            candidates.pop()
            continue
        return result


def _load_snapshot(result: PartitionProducers, entries) -> None:
    for e in entries:
        state = ProducerState(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.timestamp,
                              e.coordinator_epoch)  # fmt: skip
        if e.current_txn_first_offset >= 0:
            state.open = OpenTransaction(e.producer_id, e.producer_epoch, e.coordinator_epoch,
                                         e.current_txn_first_offset, e.last_offset, e.timestamp)  # fmt: skip
        result.producers[e.producer_id] = state
        result.newest_timestamp = max(result.newest_timestamp, e.timestamp)


def _replay_from(part: Partition, result: PartitionProducers, start: int, stop: int | None = None) -> None:
    bases = [s.base_offset for s in part.segments]
    first_segment = max(bisect.bisect_right(bases, start) - 1, 0)
    last = len(part.segments) - 1
    for k in range(first_segment, len(part.segments)):
        seg = part.segments[k]
        try:
            # Every batch's checksum is checked (the walk computes it): the replay stops where the
            # broker's recovery would cut the log, so its log end is validate's and truncate's.
            for entry in until_recovery_cut(iter_log_entries(seg.log)):
                if isinstance(entry, Problem):
                    if not is_torn_tail(seg, entry, k == last):
                        result.damage.append(Damage.of(seg.log, entry))
                    elif not part.live:  # a running broker's tail is in flight
                        # a torn tail: what a crash leaves, and the broker's recovery cuts
                        result.notes.append(f"{seg.log}: position {entry.position}: {entry.message}; "
                                            "replayed up to there, as the broker's recovery")  # fmt: skip
                    if breaks_recovery(entry):
                        return
                    continue
                if isinstance(entry, LegacyMessage):
                    result.log_end_offset = max(result.log_end_offset, entry.offset + 1)
                    continue
                if entry.next_offset <= start:
                    continue
                if stop is not None and entry.base_offset >= stop:
                    return
                result.log_end_offset = max(result.log_end_offset, entry.next_offset)
                result.newest_timestamp = max(result.newest_timestamp, entry.max_timestamp)
                result.batches_replayed += 1
                if entry.producer_id != NO_PRODUCER:
                    _append(result, entry)
        except OSError as exc:
            raise os_error(seg.log, exc) from exc


def _anomaly(result, kind, batch: RecordBatch, message, coordinator_epoch=-1, info=False) -> None:
    result.anomalies.append(ReplayAnomaly(kind, batch.base_offset, batch.producer_id, batch.producer_epoch,
                                          coordinator_epoch, batch.max_timestamp, message, info))  # fmt: skip


def _append(result: PartitionProducers, batch: RecordBatch) -> None:
    """ProducerAppendInfo.append for one batch of an idempotent or transactional producer."""
    pid, epoch = batch.producer_id, batch.producer_epoch
    state = result.producers.get(pid)
    if state is None:
        state = result.producers[pid] = ProducerState(pid, epoch, -1, -1, -1, -1)
    elif epoch < state.producer_epoch:
        _anomaly(result, "epoch-backwards", batch,
                 f"producer {pid} wrote epoch {epoch} after epoch {state.producer_epoch}: a fenced "
                 "producer's write, kept only through an unclean election or a restore")  # fmt: skip
    if epoch != state.producer_epoch:
        # ProducerStateEntry.maybeUpdateProducerEpoch: a batch or marker of another epoch clears the
        # producer's batch history. A coordinator's timeout-abort and every transaction-version-2 commit
        # write their marker with a new epoch: the snapshot after it says last sequence and offset -1.
        state.last_sequence = state.last_offset = -1
    if batch.is_control:
        _marker(result, state, batch)
    else:
        if batch.is_transactional and state.open is None:
            state.open = OpenTransaction(pid, epoch, state.coordinator_epoch, batch.base_offset,
                                         batch.last_offset, batch.max_timestamp)  # fmt: skip
        elif not batch.is_transactional and state.open is not None:
            _anomaly(result, "non-transactional-in-transaction", batch,
                     f"producer {pid} wrote a non-transactional batch inside its transaction open since "
                     f"offset {state.open.first_offset}")  # fmt: skip
        if state.open is not None and batch.is_transactional:
            state.open.last_offset, state.open.last_timestamp = batch.last_offset, batch.max_timestamp
            state.open.producer_epoch = epoch
        state.last_sequence = batch.last_sequence
    state.producer_epoch = max(state.producer_epoch, epoch) if state.producer_epoch >= 0 else epoch
    if not batch.is_control:  # a marker moves the epoch and the time, not the last data offset
        state.last_offset = batch.last_offset
    state.last_timestamp = batch.max_timestamp


def _marker(result: PartitionProducers, state: ProducerState, batch: RecordBatch) -> None:
    try:
        records = batch.records(limit=1)
        marker = control_record(records[0]) if records else None
    except RecordDecodeError as exc:
        _anomaly(result, "undecodable-marker", batch, f"control batch: {exc}")
        return
    if marker is None or marker.type_id not in (ControlType.ABORT, ControlType.COMMIT):
        return  # not an end-transaction marker (no producer state changes)
    epoch = -1 if marker.coordinator_epoch is None else marker.coordinator_epoch
    if epoch < state.coordinator_epoch:
        _anomaly(result, "stale-coordinator-epoch", batch,
                 f"{marker.type_name} marker of producer {state.producer_id} from coordinator epoch {epoch} "
                 f"after epoch {state.coordinator_epoch}: a zombie coordinator's", epoch)  # fmt: skip
    if state.open is None:
        _anomaly(result, "marker-without-transaction", batch,
                 f"{marker.type_name} marker of producer {state.producer_id} with no open transaction "
                 "(the coordinator marks every partition it added)", epoch, info=True)  # fmt: skip
    state.open = None
    state.coordinator_epoch = max(state.coordinator_epoch, epoch)


def snapshot_disagreements(part: Partition, result: PartitionProducers) -> list[ReplayAnomaly]:
    """Where the snapshot the replay started from disagrees with its own log: the batches before it,
    replayed from the log start, leave a producer another epoch, sequence, last offset or open
    transaction than the snapshot says. A producer only the snapshot has is not one (its batches may be
    deleted); one only the log has is, when its transaction is open (an expired producer never is)."""
    if result.snapshot_offset is None or result.snapshot_path is None:
        return []
    first = part.segments[0].base_offset if part.segments else 0
    replayed = PartitionProducers(part.topic, part.partition, part.path, part.live, None, first, first, -1)
    _replay_from(part, replayed, first, result.snapshot_offset)
    result.damage += [d for d in replayed.damage if d not in result.damage]  # before the snapshot
    stored = {e.producer_id: e for e in read_snapshot(result.snapshot_path).entries}
    out = []
    for pid, state in sorted(replayed.producers.items()):
        entry = stored.get(pid)
        mine = (
            state.producer_epoch,
            state.last_sequence,
            state.last_offset,
            state.open.first_offset if state.open else -1,
        )
        if entry is None:
            if state.open is None:
                continue
            theirs = None
        else:
            theirs = (
                entry.producer_epoch,
                entry.last_sequence,
                entry.last_offset,
                entry.current_txn_first_offset,
            )
            if theirs == mine:
                continue
        what = (
            "no entry"
            if theirs is None
            else "epoch {}, last sequence {}, last offset {}, transaction from {}".format(*theirs)
        )
        out.append(ReplayAnomaly(
            "snapshot-disagrees", result.snapshot_offset, pid, state.producer_epoch, state.coordinator_epoch,
            state.last_timestamp,
            f"{result.snapshot_path.name} has {what} for producer {pid}; the log before it says epoch "
            "{}, last sequence {}, last offset {}, transaction from {}".format(*mine),
        ))  # fmt: skip
    return out
