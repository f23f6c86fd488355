"""`ktool retention`: which segments the broker's delete policy would remove next, and why; a preview
that never writes.

The rules are Kafka's, per broker generation (see docs/validate.md, "ktool retention"):

* 0.8 – 0.10.0 (LogManager.cleanupExpiredSegments / cleanupSegmentsToMaintainSize, Log.deleteOldSegments):
  a segment expires when `now - file mtime > retention.ms`; then, while the log is over retention.bytes,
  the oldest segments whose removal keeps it at or above the limit go. Compacted logs are skipped.
* 0.10.1+: the same, with the segment's largest record timestamp (the last `.timeindex` entry) in place
  of the mtime (`largestTimestamp`: the mtime only when the segment has no timestamp).
* 0.11.0: also segments wholly below the log start offset (`log-start-offset-checkpoint`, KIP-107),
  also for compacted logs; 0.11.0.1+ (KAFKA-5634): never a segment holding an offset at or above the
  high watermark (`replication-offset-checkpoint`); 3.0+ (KAFKA-12177): the log-start-offset step first.

Every generation walks the segments oldest first and stops at the first one the predicate keeps; the
active (last) segment goes only when non-empty, and when every segment goes the broker first rolls a new
empty one at the log end offset, which becomes the log start offset.

The Rule that says which policies a generation applies, and the report's dataclasses the renderers
print: log/retention_plan.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from kafka_tools.errors import InputError, os_error_line
from kafka_tools.format.checkpoints import offsets_by_partition
from kafka_tools.format.shared_methods import SharedMethods
from kafka_tools.log.files.views import PartitionFiles, SegmentFiles, partition_files
from kafka_tools.log.files.views import find_partitions as _find
from kafka_tools.log.retention_config import SettingSources, TopicSettings
from kafka_tools.log.retention_plan import (
    PartitionRetention,
    RetentionReport,
    Rule,
    SegmentPlan,
    detect_rule,
    rule_for_version,
)
from kafka_tools.log.retention_plan import (
    broker_version as version_numbers,
)
from kafka_tools.log.segment_facts import (
    IndexUntrusted,
    last_offset_index_entry,
    last_time_index_entry,
    scan_entries,
    stat_ms,
)

HW_CHECKPOINT = "replication-offset-checkpoint"
KRAFT_METADATA_TOPIC = "__cluster_metadata"
LSO_CHECKPOINT = "log-start-offset-checkpoint"
# What the preview does instead when a checkpoint cannot be read (said in its warning).
_UNUSED = {
    LSO_CHECKPOINT: "the log start is the first segment's",
    HW_CHECKPOINT: "the high watermark is taken as the log end",
}


def find_partitions(paths: list[str]) -> list[PartitionFiles]:
    """The partitions under the given log dirs / partition directories (a file is a usage error)."""
    parts = _find(paths)
    if not parts:
        raise InputError(f"{paths[0]}: no partition directories found")
    return parts


class _Checkpoints:
    """The log dirs' checkpoint files, read once per log dir."""

    def __init__(self) -> None:
        self._cache: dict[tuple[Path, str], tuple[dict | None, list[str]]] = {}

    def offset(self, part: PartitionFiles, name: str, problems: list[str]) -> tuple[int | None, bool]:
        """(offset, file present) for the partition in its log dir's checkpoint `name`; a checkpoint
        that cannot be parsed is named in `problems` (for every partition that needed it)."""
        key = (part.log_dir, name)
        if key not in self._cache:
            w: list[str] = []
            self._cache[key] = (offsets_by_partition(part.log_dir, name, w, _UNUSED.get(name, "not used")), w)
        table, errors = self._cache[key]
        problems.extend(errors)
        if table is None:
            return None, False
        return table.get((part.topic, part.partition)), True


def log_end_offset(seg: SegmentFiles, size: int, warnings: list[str], live: bool = False) -> tuple[int, int]:
    """The offset after the last valid entry of the last segment, and the largest timestamp of the
    batches read for it: from its last `.index` entry on, or a scan of the whole segment when that
    index is missing or untrusted. `live`: a running broker appends to it, so its newest index entry
    may name a batch not (fully) written yet and a cut last entry is in flight: no warning for those."""
    if size == 0:
        return seg.base_offset, -1
    start = 0
    if seg.offset_index is not None:
        try:
            entry = last_offset_index_entry(seg.offset_index)
        except (IndexUntrusted, OSError) as exc:
            warnings.append(f"{exc}; scanned the segment instead")
            entry = None
        if entry is not None and 0 <= entry[1] < size:
            start = entry[1]
    scan = scan_entries(seg.log, start)
    if scan.next_offset is None and start:
        if not live:
            warnings.append(f"{seg.offset_index}: its last entry points at no entry; scanned the segment")
        scan = scan_entries(seg.log, 0)
    if scan.problem and not live:
        warnings.append(f"{seg.log}: {scan.problem} (the log end is taken before it)")
    return (seg.base_offset if scan.next_offset is None else scan.next_offset), scan.max_timestamp


def largest_timestamp(
    seg: SegmentFiles, mtime_ms: int, warnings: list[str], tail_max: int = -1
) -> tuple[int, str]:
    """LogSegment.largestTimestamp: the largest record timestamp, else the file's mtime. `tail_max`:
    the largest timestamp of the active segment's batches after its last `.index` entry, which a
    crashed or running broker's `.timeindex` may not hold yet (a clean shutdown appends it; recovery
    recomputes it), so the larger of the two is taken."""
    if seg.time_index is not None:
        try:
            entry = last_time_index_entry(seg.time_index)
        except (IndexUntrusted, OSError) as exc:
            warnings.append(f"{exc}; scanned the segment's batches instead")
            entry = None
        if entry is not None and entry[0] >= 0:
            if tail_max > entry[0]:
                return tail_max, "batches after the last .timeindex entry"
            return entry[0], "timeindex"
    scan = scan_entries(seg.log)
    if scan.max_timestamp >= 0:
        return scan.max_timestamp, "batches"
    return mtime_ms, "mtime"


_VIRTUAL = -1  # the empty segment the broker rolls when every segment goes


@dataclass(init=False, repr=False, eq=False)
class _Log(SharedMethods):
    """The partition as the simulated broker sees it between steps."""

    plans: list[SegmentPlan]
    remaining: list[int]  # indexes into plans; _VIRTUAL for a rolled empty segment
    log_end: int
    log_start: int

    def __init__(self, plans: list[SegmentPlan], remaining: list[int], log_end: int, log_start: int) -> None:
        self.plans = plans
        self.remaining = remaining
        self.log_end = log_end
        self.log_start = log_start

    def base(self, i: int) -> int:
        return self.log_end if i == _VIRTUAL else self.plans[i].base_offset

    def size(self, i: int) -> int:
        return 0 if i == _VIRTUAL else self.plans[i].size


Predicate = Callable[[int, int | None], tuple[bool, str]]  # (segment, next) -> (deletable, why)


def _deletable(log: _Log, hw: int | None, predicate: Predicate) -> tuple[list[int], str]:
    """Log.deletableSegments: the oldest-first run the predicate accepts, and why the run stopped."""
    out: list[int] = []
    for k, i in enumerate(log.remaining):
        last = k == len(log.remaining) - 1
        nxt = None if last else log.remaining[k + 1]
        upper = log.log_end if last else log.base(nxt)  # type: ignore[arg-type]
        if hw is not None and hw < upper:
            return out, f"holds offsets at or above the high watermark {hw}"
        ok, why = predicate(i, nxt)
        if not ok:
            return out, why
        if last and log.size(i) == 0:
            return out, "the active segment is empty"
        out.append(i)
    return out, ""


def _apply(log: _Log, chosen: list[int], step: str, reasons: dict[int, str], rolled: list[bool]) -> None:
    for i in chosen:
        plan = log.plans[i]
        plan.deleted_by = step
        plan.reason = reasons.get(i, step)
    if not chosen:
        return
    if len(chosen) == len(log.remaining):
        log.remaining = [_VIRTUAL]  # Log.roll() first: a log always keeps one segment
        rolled[0] = True
    else:
        log.remaining = log.remaining[len(chosen) :]
    log.log_start = max(log.log_start, log.base(log.remaining[0]))


def plan_partition(
    part: PartitionFiles,
    settings: TopicSettings,
    rule: Rule,
    rule_why: str,
    now_ms: int,
    checkpoints: _Checkpoints,
) -> PartitionRetention:
    res = PartitionRetention(part.name, str(part.path), part.topic, rule, rule_why, settings)
    if part.unreadable:
        res.unreadable = part.unreadable_lines()[0]
        return res
    if not part.segments:
        res.notes.append("no segments")
        return res
    for orphan in part.orphans:
        res.notes.append(f"{orphan}: not a segment of this log (ignored, as the broker ignores it)")
    last = len(part.segments) - 1
    try:
        facts = [stat_ms(s.log) for s in part.segments]
    except FileNotFoundError:
        raise  # removed since listed: `preview` lists the partition again
    except OSError as exc:
        res.unreadable = os_error_line(exc.filename, exc)
        return res
    res.segments = [
        SegmentPlan(s.base_offset, str(s.log), size, mtime, i == last)
        for i, (s, (size, mtime)) in enumerate(zip(part.segments, facts, strict=True))
    ]
    res.log_end_offset, tail_max = log_end_offset(part.segments[-1], facts[-1][0], res.warnings, part.live)
    first_base = part.segments[0].base_offset
    log_start = first_base
    if rule.log_start_step:
        lso, _ = checkpoints.offset(part, LSO_CHECKPOINT, res.inconsistent)
        if lso is not None and lso > log_start:
            log_start = min(lso, res.log_end_offset)
    res.log_start_before = log_start
    hw = None
    if rule.high_watermark:
        hw, present = checkpoints.offset(part, HW_CHECKPOINT, res.inconsistent)
        if hw is None:
            hw = res.log_end_offset
            where = "no entry in" if present else "no"
            res.high_watermark_source = (
                f"{where} {HW_CHECKPOINT}: assumed at the log end (a caught-up leader's)"
            )
        else:
            res.high_watermark_source = HW_CHECKPOINT
            if hw > res.log_end_offset and part.live:
                res.notes.append(
                    f"high watermark {hw} is past the log end {res.log_end_offset}: in flight (a running "
                    "broker appended after the segments were read); the log end is taken"
                )
                hw = res.log_end_offset
            elif hw > res.log_end_offset:
                res.inconsistent.append(
                    f"{part.log_dir / HW_CHECKPOINT}: high watermark {hw} of {part.name} is past its log end "
                    f"{res.log_end_offset} (ktool takes the log end, as the broker clamps it)"
                )
                hw = res.log_end_offset
        res.high_watermark = hw
    log = _Log(res.segments, list(range(len(res.segments))), res.log_end_offset, log_start)
    rolled = [False]
    steps = _steps(res, log, rule, settings, now_ms, part, tail_max)
    stopped: dict[int, list[str]] = {}
    for name, predicate, reasons in steps:
        chosen, why = _deletable(log, hw, predicate)
        _apply(log, chosen, name, reasons, rolled)
        if why and log.remaining and log.remaining[0] != _VIRTUAL:
            stopped.setdefault(log.remaining[0], []).append(f"{name}: {why}")
    res.rolled = rolled[0]
    res.log_start_after = log.log_start
    if log.remaining and log.remaining[0] != _VIRTUAL:
        first_kept = res.segments[log.remaining[0]]
        default = (
            "cleanup.policy=compact: retention does not delete it" if not settings.deletes else "no limit set"
        )
        if part.topic == KRAFT_METADATA_TOPIC:
            default = "KRaft's metadata log: not previewed"
        first_kept.reason = "; ".join(stopped.get(log.remaining[0], [])) or default
    return res


def _steps(
    res, log: _Log, rule: Rule, settings: TopicSettings, now_ms: int, part: PartitionFiles, tail_max: int
):
    """The delete steps in the generation's order: (name, predicate, reasons filled as it runs)."""
    steps: list[tuple[str, Predicate, dict[int, str]]] = []
    if part.topic == KRAFT_METADATA_TOPIC:
        res.notes.append(
            "KRaft's metadata log: not under the delete policy (its segments go behind metadata snapshots, "
            "by metadata.max.retention.ms/bytes); not previewed"
        )
        return steps
    if settings.deletes:
        retention_ms = int(settings.retention_ms.value)  # type: ignore[arg-type]
        if retention_ms >= 0:
            steps.append(("time", *_time_predicate(res, rule, retention_ms, now_ms, part, tail_max)))
        else:
            res.notes.append("retention.ms -1: no time limit")
        retention_bytes = int(settings.retention_bytes.value)  # type: ignore[arg-type]
        if retention_bytes >= 0:
            steps.append(("size", *_size_predicate(log, retention_bytes)))
        else:
            res.notes.append("retention.bytes -1: no size limit")
    elif rule.log_start_step:
        res.notes.append(
            "cleanup.policy=compact: not deleted by time or size (only below the log start offset)"
        )
    else:
        res.notes.append("cleanup.policy=compact: the broker's retention skips compacted logs")
    if rule.log_start_step:
        lso_step = ("log-start-offset", *_log_start_predicate(log))
        if rule.log_start_first:
            steps.insert(0, lso_step)
        else:
            steps.append(lso_step)
    return steps


def _time_predicate(
    res: PartitionRetention, rule: Rule, retention_ms: int, now_ms: int, part: PartitionFiles, tail_max: int
):
    reasons: dict[int, str] = {}

    def predicate(i: int, _next: int | None) -> tuple[bool, str]:
        if i == _VIRTUAL:
            return False, "the active segment is empty"
        plan = res.segments[i]
        if rule.timestamps:
            tail = tail_max if plan.active else -1
            ts, src = largest_timestamp(part.segments[i], plan.mtime_ms, res.warnings, tail)
        else:
            ts, src = plan.mtime_ms, "mtime"
        plan.largest_timestamp, plan.timestamp_source = ts, src
        age = now_ms - ts
        what = "largest timestamp" if src != "mtime" else "mtime"
        if age > retention_ms:
            reasons[i] = f"time: {what} {ts} ({src}) is {age} ms old > retention.ms {retention_ms}"
            return True, ""
        return False, f"{what} {ts} ({src}) is {age} ms old <= retention.ms {retention_ms}"

    return predicate, reasons


def _size_predicate(log: _Log, retention_bytes: int):
    reasons: dict[int, str] = {}
    state: dict[str, int | None] = {"diff": None}

    def predicate(i: int, _next: int | None) -> tuple[bool, str]:
        if state["diff"] is None:
            total = sum(log.size(j) for j in log.remaining)
            if total < retention_bytes:
                state["diff"] = -1
                return False, f"log size {total} < retention.bytes {retention_bytes}"
            state["diff"] = total - retention_bytes
        diff = state["diff"]
        size = log.size(i)
        if diff is not None and diff >= 0 and diff - size >= 0:
            state["diff"] = diff - size
            reasons[i] = f"size: log over retention.bytes {retention_bytes} by {diff}, segment {size} bytes"
            return True, ""
        return False, f"deleting its {size} bytes would leave the log below retention.bytes {retention_bytes}"

    return predicate, reasons


def _log_start_predicate(log: _Log):
    reasons: dict[int, str] = {}

    def predicate(i: int, nxt: int | None) -> tuple[bool, str]:
        if nxt is not None and log.base(nxt) <= log.log_start:
            reasons[i] = f"log-start-offset: every offset is below the log start offset {log.log_start}"
            return True, ""
        return False, f"holds offsets at or above the log start offset {log.log_start}"

    return predicate, reasons


def preview(
    parts: list[PartitionFiles],
    sources: SettingSources,
    now_ms: int,
    broker_version: str | None = None,
    compaction: bool = False,
) -> RetentionReport:
    """The retention preview of every partition (and the compaction preview with `compaction`)."""
    forced = rule_for_version(broker_version) if broker_version else None
    # KIP-534 (Kafka 3.1): v2 batches carry their tombstones' and markers' delete horizon
    horizons = not broker_version or version_numbers(broker_version) >= (3, 1, 0, 0)
    checkpoints = _Checkpoints()
    for part in parts:  # every log dir's checkpoints read before any segment they are compared with
        for name in (LSO_CHECKPOINT, HW_CHECKPOINT):
            checkpoints.offset(part, name, [])
    out = []
    for part in parts:
        if forced is not None:
            rule, why = forced, f"--broker-version {broker_version}"
        else:
            rule, why = detect_rule(part)
        settings = sources.for_topic(part.topic)
        out.append(_preview_partition(part, settings, rule, why, now_ms, checkpoints, compaction, horizons))
    return RetentionReport(out, now_ms, sources)


RELIST_ATTEMPTS = 3


def _preview_partition(
    part: PartitionFiles,
    settings: TopicSettings,
    rule: Rule,
    why: str,
    now_ms: int,
    checkpoints: _Checkpoints,
    compaction: bool,
    horizons: bool = True,
) -> PartitionRetention:
    """One partition's preview; a segment the broker deleted since the listing makes the partition be
    listed again and previewed afresh (a running broker's retention works while ktool reads)."""
    for attempt in range(RELIST_ATTEMPTS):
        try:
            res = plan_partition(part, settings, rule, why, now_ms, checkpoints)
            if compaction and settings.compacts and not res.unreadable and part.segments:
                from kafka_tools.log.compaction import preview_compaction

                res.compaction = preview_compaction(
                    part,
                    settings,
                    res.log_start_before,
                    res.log_end_offset or 0,
                    checkpoints,
                    res.inconsistent,
                    res.warnings,
                    now_ms if horizons else None,
                )
            if attempt:
                res.notes.append(f"listed again: the broker removed segments while it was read ({attempt}x)")
            return res
        except FileNotFoundError as exc:
            gone = exc
            part = partition_files(part.path, part.live)
    res = PartitionRetention(part.name, str(part.path), part.topic, rule, why, settings)
    res.unreadable = f"{gone.filename}: removed while read, {RELIST_ATTEMPTS} times in a row"
    return res
