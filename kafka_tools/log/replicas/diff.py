"""The service behind `ktool replicas diff`: copies of one partition (one per broker) compared offline.

Per replica: the log start and end, the high watermark and recovery point from the log dir's
checkpoints, the leader-epoch history (`leader-epoch-checkpoint`, and the epochs stamped in v2
batches, found by bisection: epochs never decrease along a log).

Where two replicas diverge: entries are compared by what identifies their content without decoding it
(a v2 batch: base offset, last offset and CRC-32C, which covers everything after the CRC field; a v0/v1
message or compressed wrapper: its offset and CRC; `replica_log.py`), located by a binary search over
offsets, so only O(log n) batches are read. A binary search is only sound on a prefix-then-different
shape; logs with leader epochs are also probed at every epoch boundary (KIP-101/279 leave no healed
divergence between them), and, when the two ends agree, logs without epochs (Kafka before 0.11
truncates a returning leader to its high watermark and then copies the new leader's records, so the
logs can differ in the middle and agree again after) are compared entry by entry. `full=True` always
compares entry by entry.

What each replica would lose if another became (or stayed) leader, as Kafka of that generation
truncates a follower: before leader epochs (0.8-0.10, or a replica without epochs) to its high
watermark (ReplicaManager.makeFollowers), then to the leader's log end when that is lower
(ReplicaFetcherThread.handleOffsetOutOfRange); with epochs by the OffsetsForLeaderEpoch rounds of
AbstractFetcherThread.getOffsetTruncationState over LeaderEpochFileCache.endOffsetFor (KIP-101,
KIP-279; `leader_epochs.py`); a follower whose end is below the leader's log start starts over at it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import FindingsError, InputError, UsageError, path_error
from kafka_tools.format.checkpoints import (
    CheckpointError,
    EpochEntry,
    meta_node_id,
    read_leader_epoch_checkpoint,
    read_properties,
)
from kafka_tools.log.files.dirs import checkpoint_offset
from kafka_tools.log.files.discover import is_log_dir, is_partition_dir
from kafka_tools.log.reads.locate import log_end_offset
from kafka_tools.log.replicas.leader_epochs import epoch_truncation
from kafka_tools.log.replicas.replica_log import (
    PROBE_CHUNK,
    Comparison,
    Entry,
    RangeStats,
    ReplicaLog,
    ReplicaUnreadable,
    entry_start,
    range_stats,
)

HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
MAX_EPOCHS = 10_000  # epoch transitions looked for in the batches of one replica
RULES = ("auto", "high-watermark", "leader-epoch")


@dataclass
class Replica:
    """One copy of the partition and the facts its files tell."""

    label: str
    path: str
    broker_id: int | None
    log_start: int
    log_end: int
    high_watermark: int | None
    recovery_point: int | None
    checkpoint_epochs: list[EpochEntry] | None  # None: no leader-epoch-checkpoint file
    batch_epochs: list[EpochEntry]  # (epoch, first offset) as stamped in the v2 batches
    magic: int | None  # of the last entry (None: empty log)
    segments: int
    in_flight: bool  # a broker holds the log dir's lock: its newest tail may still move
    warnings: list[str] = field(default_factory=list)

    @property
    def epochs(self) -> list[EpochEntry]:
        """The history the broker would load: the checkpoint, else the batches' (0.11+ recovery)."""
        if self.checkpoint_epochs:
            return self.checkpoint_epochs
        return self.batch_epochs

    @property
    def last_epoch(self) -> int | None:
        history = self.epochs
        return history[-1].epoch if history else None


@dataclass
class DivergentRange:
    start: int
    end: int  # exclusive
    sides: tuple[RangeStats, RangeStats]  # what replica a and replica b hold there


@dataclass
class PairDiff:
    """Two replicas compared over the offsets both hold."""

    a: int
    b: int
    common_start: int
    common_end: int  # exclusive
    status: str  # identical, prefix, diverged, no-overlap
    method: str  # binary-search, epoch-probes, full-compare
    ranges: list[DivergentRange]
    entries_compared: int
    epochs_part_at: int | None = None  # where the two leader-epoch histories first disagree

    @property
    def first_difference(self) -> int | None:
        return self.ranges[0].start if self.ranges else None


@dataclass
class Truncation:
    """What `follower` does if `leader` leads: where it truncates and what that removes."""

    leader: int
    follower: int
    rule: str  # high-watermark, leader-epoch
    truncate_to: int
    start_over_at: int | None  # below the leader's log start: the whole log goes, fetching starts here
    lost_start: int
    lost_end: int  # exclusive: the follower's log end
    lost: RangeStats
    steps: list[str]
    divergent_after: list[DivergentRange]  # below the truncation point and still different: silent

    @property
    def lost_offsets(self) -> int:
        return max(self.lost_end - self.lost_start, 0)


@dataclass
class ReplicasReport:
    topic: str
    partition: int
    replicas: list[Replica]
    pairs: list[PairDiff]
    truncations: list[Truncation]
    ranking: list[int]  # replica indexes, the one KIP-966 would pick first
    new_epoch: int | None  # the epoch an election would start (used for the epoch rule)

    @property
    def status(self) -> str:
        statuses = {p.status for p in self.pairs}
        for s in ("diverged", "prefix", "no-overlap"):
            if s in statuses:
                return s
        return "identical"


# ----------------------------------------------------------------------------------------- inputs


def resolve_partition_dirs(paths: list[str], partition: str | None) -> list[str]:
    """Each path's copy of the partition: a partition dir as given, or a log dir's `partition` (or its
    only partition, when it holds one)."""
    if len(paths) < 2:
        raise UsageError("give two or more copies of the partition (one per broker)")
    out: list[str] = []
    for raw in paths:
        path = os.path.normpath(raw)
        missing = path_error(raw)
        if missing:
            raise InputError(missing)
        p = Path(path)
        if is_partition_dir(p):
            if partition is not None and p.name != partition:
                raise UsageError(f"{raw}: a copy of {p.name}, not of {partition}")
            out.append(path)
        elif is_log_dir(p):
            names = sorted(c.name for c in p.iterdir() if is_partition_dir(c))
            if partition is None:
                if len(names) != 1:
                    listed = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
                    raise UsageError(
                        f"{raw}: a log dir of {len(names)} partitions ({listed}): name one with --partition"
                    )
                partition = names[0]
            if partition not in names:
                raise InputError(f"{raw}: no partition {partition} in this log dir")
            out.append(os.path.join(path, partition))
        else:
            raise InputError(f"{raw}: not a partition directory (topic-N) nor a Kafka log dir")
    names = {os.path.basename(p) for p in out}
    if len(names) > 1:
        raise UsageError(f"not copies of one partition: {', '.join(sorted(names))}")
    return out


def _broker_id(log_dir: str) -> int | None:
    path = os.path.join(log_dir, "meta.properties")
    try:
        value = meta_node_id(read_properties(path))
        return int(value) if value is not None else None
    except (OSError, CheckpointError, ValueError):
        return None


def _lock_held(log_dir: str) -> bool:
    from kafka_tools.log.files import broker_lock

    return broker_lock.is_live(log_dir)


def read_replica(log: ReplicaLog) -> Replica:
    """The facts of one replica: offsets, checkpoints, epoch histories."""
    part = log.part
    log_dir = os.path.dirname(os.path.abspath(log.path))
    warnings = part.warnings
    log_end = log_end_offset(part, PROBE_CHUNK)
    log_start = min(part.log_start_offset, log_end)
    where = (part.topic, part.partition, warnings, "not used")
    hw = checkpoint_offset(log_dir, HIGH_WATERMARK_CHECKPOINT, *where)
    rp = checkpoint_offset(log_dir, RECOVERY_POINT_CHECKPOINT, *where)
    checkpoint = None
    epoch_file = os.path.join(log.path, "leader-epoch-checkpoint")
    if os.path.isfile(epoch_file):
        try:
            entries = read_leader_epoch_checkpoint(epoch_file).entries
            # as the broker loads it: nothing at or past the log end, nothing below the log start but
            # the epoch holding it (LeaderEpochFileCache.truncateFromEnd / truncateFromStart)
            checkpoint = [e for e in entries if e.start_offset < log_end]
            below = [e for e in checkpoint if e.start_offset <= log_start]
            if len(below) > 1:
                checkpoint = [EpochEntry(below[-1].epoch, log_start)] + checkpoint[len(below) :]
        except (CheckpointError, OSError) as exc:
            warnings.append(f"{epoch_file}: unreadable ({exc}); the batches' epochs are used")
    last = log.entry_at(log_end - 1) if log_end > log_start else None
    batch_epochs = _batch_epochs(log, log_start, log_end, last)
    rep = Replica(
        log.label, log.path, _broker_id(log_dir), log_start, log_end, hw, rp, checkpoint, batch_epochs,
        None if last is None else last.magic, len(part.segments), _lock_held(log_dir), warnings,
    )  # fmt: skip
    if checkpoint and batch_epochs and _disagree(checkpoint, batch_epochs):
        warnings.append(
            f"{epoch_file}: says {_history_text(checkpoint)} but the batches say "
            f"{_history_text(batch_epochs)}; the broker uses the checkpoint"
        )
    if hw is not None and hw > log_end:
        warnings.append(
            f"{log_dir}/{HIGH_WATERMARK_CHECKPOINT}: high watermark {hw} is past the log end {log_end}"
        )
    return rep


def _disagree(checkpoint: list[EpochEntry], batches: list[EpochEntry]) -> bool:
    # A checkpoint may name an epoch with no batch yet (a leader elected at its log end): drop those.
    epochs = {e.epoch for e in batches}
    kept = [(e.epoch, e.start_offset) for e in checkpoint if e.epoch in epochs]
    return kept != [(e.epoch, e.start_offset) for e in batches if e.epoch in {c.epoch for c in checkpoint}]


def _history_text(history: list[EpochEntry]) -> str:
    return " ".join(f"{e.epoch}@{e.start_offset}" for e in history) or "-"


def _batch_epochs(log: ReplicaLog, start: int, end: int, last: Entry | None) -> list[EpochEntry]:
    """(epoch, first offset) of each epoch stamped in the v2 batches of [start, end): a bisection
    per epoch change, as epochs never decrease along a log."""
    if last is None or last.magic != 2 or last.epoch is None or last.epoch < 0:
        return []
    first = log.entry_at(start)
    lo = start
    if first is None:
        return []
    if first.magic != 2:  # an upgraded log: v0/v1 entries, then v2 from some offset on
        a, b = start, end - 1  # magic(a) < 2, magic(b) == 2
        while b - a > 1:
            mid = (a + b) // 2
            e = log.entry_at(mid)
            if e is not None and e.magic == 2:
                b = mid
            else:
                a = mid
        first = log.entry_at(b)
        lo = b
    history = [EpochEntry(first.epoch, max(first.first_offset, start))]
    while history[-1].epoch != last.epoch and len(history) < MAX_EPOCHS:
        current = history[-1].epoch
        a, b = lo, end - 1  # epoch(a) == current, epoch(b) > current
        while b - a > 1:
            mid = (a + b) // 2
            e = log.entry_at(mid)
            if e is not None and e.epoch is not None and e.epoch > current:
                b = mid
            else:
                a = mid
        e = log.entry_at(b)
        if e is None or e.epoch is None or e.epoch <= current:
            break  # epochs go down somewhere: no monotone history to find
        history.append(EpochEntry(e.epoch, e.first_offset))
        lo = e.last_offset
    return [e for e in history if e.epoch >= 0]


def compare_pair(
    logs: list[ReplicaLog], replicas: list[Replica], a: int, b: int, full: bool = False
) -> PairDiff:
    ra, rb = replicas[a], replicas[b]
    lo, hi = max(ra.log_start, rb.log_start), min(ra.log_end, rb.log_end)
    if lo >= hi:
        empty = ra.log_end <= ra.log_start or rb.log_end <= rb.log_start
        status = "prefix" if empty else "no-overlap"
        return PairDiff(a, b, lo, max(lo, hi), status, "none", [], 0)
    cmp = Comparison(logs[a], logs[b])
    ends_agree = cmp.equal_at(lo) and cmp.equal_at(hi - 1)
    if full:
        method, spans = "full-compare", cmp.ranges_by_scan(lo, hi)
    elif ra.epochs and rb.epochs:
        # every epoch boundary probed, bisection between probes that disagree: with leader epochs a
        # divergence starts at an epoch boundary and is cut by truncation (KIP-101/279), never healed
        boundaries = {e.start_offset for e in ra.epochs + rb.epochs + ra.batch_epochs + rb.batch_epochs}
        boundaries |= {x - 1 for x in boundaries}
        method = "epoch-probes" if ends_agree else "binary-search"
        spans = cmp.ranges_by_search(lo, hi, sorted(boundaries))
    elif not ends_agree:
        method, spans = "binary-search", cmp.ranges_by_search(lo, hi, [])
    else:  # no epochs and the ends agree: Kafka before 0.11 can leave a healed divergence inside
        method, spans = "full-compare", cmp.ranges_by_scan(lo, hi)
    read = cmp.entries  # to locate, not to count
    ranges = [
        DivergentRange(s, e, (range_stats(logs[a], s, e), range_stats(logs[b], s, e))) for s, e in spans
    ]
    if ranges:
        status = "diverged"
    elif ra.log_start == rb.log_start and ra.log_end == rb.log_end:
        status = "identical"
    else:
        status = "prefix"
    return PairDiff(a, b, lo, hi, status, method, ranges, read, epochs_part_at(ra, rb))


def epochs_part_at(ra: Replica, rb: Replica) -> int | None:
    """The first offset below both log ends where the two epoch histories say different things (an
    epoch starting at a different offset, or only on one side): where KIP-101/279 truncation cuts."""
    ha, hb = ra.epochs, rb.epochs
    if not ha or not hb:
        return None
    end = min(ra.log_end, rb.log_end)
    for ea, eb in zip(ha, hb, strict=False):
        if (ea.epoch, ea.start_offset) != (eb.epoch, eb.start_offset):
            at = min(ea.start_offset, eb.start_offset)
            return at if at < end else None
    longer = ha if len(ha) > len(hb) else hb
    shorter = min(len(ha), len(hb))
    if len(longer) > shorter and longer[shorter].start_offset < end:
        return longer[shorter].start_offset
    return None


# ------------------------------------------------------------------------------------ truncation


def truncation(
    logs: list[ReplicaLog], replicas: list[Replica], pair: PairDiff | None, leader: int, follower: int,
    new_epoch: int, rule: str,
) -> Truncation:  # fmt: skip
    """What `follower` would do if `leader` were elected (or stayed leader)."""
    f, lead = replicas[follower], replicas[leader]
    hw = min(f.high_watermark or 0, f.log_end)
    use_epochs = rule == "leader-epoch" or (rule == "auto" and bool(f.epochs) and bool(lead.epochs))
    if use_epochs:
        # an election starts a new epoch at the new leader's log end (an unclean one too)
        history = list(lead.epochs) + [EpochEntry(new_epoch, lead.log_end)]
        t, steps = epoch_truncation(f.epochs, f.log_end, hw, history, lead.log_end)
        used = "leader-epoch"
    else:
        t = hw
        source = "checkpoint" if f.high_watermark is not None else "no checkpoint: 0"
        steps = [f"truncate to the high watermark {t} ({source})"]
        used = "high-watermark"
    if t > lead.log_end:
        steps.append(f"fetch at {t} is out of range: truncate to the leader's log end {lead.log_end}")
        t = lead.log_end
    start_over = None
    if t < lead.log_start:
        steps.append(
            f"{t} is below the leader's log start {lead.log_start}: the whole log goes, fetching starts there"
        )
        start_over = lead.log_start
    # Log.truncateTo cuts at the start of the entry holding t: a batch or wrapper goes whole
    cut = f.log_start if start_over is not None else max(entry_start(logs[follower], t), f.log_start)
    if cut < t and start_over is None:
        steps.append(f"offset {t} is inside a batch: the whole batch goes, from offset {cut}")
    lost_start = cut
    t_kept = cut if start_over is None else t
    lost = range_stats(logs[follower], lost_start, f.log_end)
    after: list[DivergentRange] = []
    if pair is not None and start_over is None:
        for r in pair.ranges:
            if r.start >= t_kept:
                continue
            end = min(r.end, t_kept)
            if end == r.end:
                after.append(r)
            else:
                fa, fb = (follower, leader) if pair.a == follower else (leader, follower)
                after.append(
                    DivergentRange(
                        r.start,
                        end,
                        (range_stats(logs[fa], r.start, end), range_stats(logs[fb], r.start, end)),
                    )
                )
    return Truncation(leader, follower, used, t, start_over, lost_start, f.log_end, lost, steps, after)


def ranking(replicas: list[Replica]) -> list[int]:
    """KIP-966's choice for an unclean recovery: the highest last epoch, then the longest log."""
    return sorted(
        range(len(replicas)),
        key=lambda i: (
            -(replicas[i].last_epoch if replicas[i].last_epoch is not None else -1),
            -replicas[i].log_end,
            i,
        ),
    )


def diff_replicas(
    paths: list[str], partition: str | None = None, full: bool = False, rule: str = "auto"
) -> ReplicasReport:
    """Compare the copies of one partition named by `paths`; read-only."""
    if rule not in RULES:
        raise UsageError(f"unknown truncation rule {rule!r} (one of {', '.join(RULES)})")
    dirs = resolve_partition_dirs(paths, partition)
    logs = [ReplicaLog(d, p) for d, p in zip(dirs, paths, strict=True)]
    try:
        replicas = [read_replica(log) for log in logs]
        for log, rep in zip(logs, replicas, strict=True):
            log.check_crcs(rep.in_flight)
        ids = [r.broker_id for r in replicas]
        if None not in ids and len(set(ids)) == len(ids):  # one per broker: name them so
            for r in replicas:
                r.label = f"broker {r.broker_id}"
        pairs = [
            compare_pair(logs, replicas, a, b, full)
            for a in range(len(logs))
            for b in range(a + 1, len(logs))
        ]
        by_pair = {(p.a, p.b): p for p in pairs}
        last = [r.last_epoch for r in replicas if r.last_epoch is not None]
        new_epoch = max(last) + 1 if last else None
        truncations = [
            truncation(logs, replicas, by_pair[min(ld, f), max(ld, f)], ld, f, new_epoch or 0, rule)
            for ld in range(len(logs))
            for f in range(len(logs))
            if ld != f
        ]
    finally:
        for log in logs:
            log.close()
    part = logs[0].part
    return ReplicasReport(
        part.topic, part.partition, replicas, pairs, truncations, ranking(replicas), new_epoch
    )


def lost_record_events(path: str, start: int, end: int) -> Iterator:
    """dump-log's EntryEvents of the records a replica holds in [start, end) (what a truncation there
    removes), read as `ktool read --offset start` reads them."""
    from kafka_tools.log.reads.read import ReadNote, ReadStart, read_partition

    if end <= start:
        return
    try:
        for item in read_partition(path, ReadStart("offset", start)):
            if isinstance(item, ReadNote):
                continue  # the replica's own warnings were reported with its facts
            if not _trim(item, end):
                return
            yield item
    except FindingsError as exc:
        if "is out of range" in str(exc):
            return  # only control batches (transaction markers) there: no record a consumer sees
        raise ReplicaUnreadable(str(exc)) from None


def _trim(event, end: int) -> bool:
    """Keep only the records below `end`; False when none is left."""
    if event.records is not None:
        event.records = [r for r in event.records if r.offset < end]
        return bool(event.records)
    if event.inner is not None:
        event.inner = [m for m in event.inner if m.offset < end]
        return bool(event.inner)
    return event.entry.offset < end
