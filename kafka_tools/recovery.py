"""What the broker's log recovery would do to a partition, and doing it safely.

The broker (Log.recoverLog / LogSegment.recover) walks each segment, keeps the bytes up to the first
invalid entry, rebuilds that segment's indexes, and — when it cut anything — deletes every later
segment. `plan_partition` computes exactly that; `apply_plan` carries it out with a backup of every
byte it removes or rewrites, written and fsynced before anything changes, and a manifest from which
`undo` restores the old state exactly. A crash at any point leaves the old or the new state of each
file plus the complete backup.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools import __version__
from kafka_tools.durable import fsync_dir, read_json, write_json
from kafka_tools.errors import FindingsError, InputError, UsageError
from kafka_tools.format import checkpoints, index, snapshot
from kafka_tools.format.kafka07 import iter_kafka07_entries
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of
from kafka_tools.format.plural import plural
from kafka_tools.format.segment import Problem, iter_log_entries
from kafka_tools.logdir import (
    LOCK_FILE,
    Partition,
    Segment,
    has_log_dir_markers,
    is_partition_dir,
    read_partition,
)
from kafka_tools.validate import (
    SegmentReport,
    ValidateOptions,
    check_offset_index,
    check_time_index,
    scan_segment,
)

DEFAULT_INDEX_INTERVAL = 4096
MANIFEST = "manifest.json"
TEMP_SUFFIX = ".ktool.cleaned"  # a broker that starts after a crash deletes `*.cleaned` files itself
_COPY_CHUNK = 1 << 20


@dataclass
class SegmentCut:
    segment: Segment
    keep_bytes: int
    size: int
    valid_after: list[int]  # positions of valid entries in the part that is cut
    reason: str

    @property
    def cut_bytes(self) -> int:
        return self.size - self.keep_bytes


@dataclass
class RecoveryPlan:
    partition: Partition
    cut: SegmentCut | None = None
    deleted_segments: list[Segment] = field(default_factory=list)
    lost_entries: int = 0  # valid entries the plan removes: after a hole, or in deleted segments
    rebuild_indexes: list[tuple[Segment, str]] = field(default_factory=list)  # (segment, why)
    deleted_snapshots: list[tuple[Path, str]] = field(default_factory=list)
    epoch_checkpoint_keep: int | None = None  # entries of leader-epoch-checkpoint to keep, when fewer
    new_log_end: int | None = None
    index_interval: int = DEFAULT_INDEX_INTERVAL
    notes: list[str] = field(default_factory=list)

    @property
    def is_noop(self) -> bool:
        return (
            self.cut is None
            and not self.deleted_segments
            and not self.rebuild_indexes
            and not self.deleted_snapshots
            and self.epoch_checkpoint_keep is None
        )

    @property
    def loses_valid_data(self) -> bool:
        return self.lost_entries > 0


def plan_partition(
    part: Partition, start: Segment | None = None, index_interval: int = DEFAULT_INDEX_INTERVAL
) -> RecoveryPlan:
    """The broker's recovery from segment `start` (default: the first) to the end of the partition."""
    plan = RecoveryPlan(part, index_interval=index_interval)
    options = ValidateOptions()
    segments = part.segments if start is None else part.segments[part.segments.index(start) :]
    reports: list[SegmentReport] = []
    for seg in segments:
        report = scan_segment(seg.log, options)
        reports.append(report)
        if plan.cut is None and report.tail_bytes:
            first = min((f for f in report.findings if f.position is not None), key=lambda f: f.position)
            plan.cut = SegmentCut(
                seg,
                report.recovery_point,
                report.size,
                report.valid_after,
                f"{first.kind} at position {first.position}: {first.message}",
            )
            plan.lost_entries += len(report.valid_after)
            if seg.kind != FileKind.KAFKA07:  # Kafka 0.7 kept no index files
                plan.rebuild_indexes.append((seg, "the segment is truncated"))
            continue
        if plan.cut is not None:
            plan.deleted_segments.append(seg)
            plan.lost_entries += report.entries
            continue
        broken = _broken_indexes(seg, report)
        if broken:
            plan.rebuild_indexes.append((seg, broken))
    plan.new_log_end = _log_end(part, reports, plan)
    _plan_snapshots(plan)
    _plan_epochs(plan)
    return plan


def _broken_indexes(seg: Segment, report: SegmentReport) -> str | None:
    findings = []
    if seg.offset_index is not None:
        findings += check_offset_index(seg, report)
    if seg.time_index is not None:
        findings += check_time_index(seg, report)
    if findings:
        return f"{findings[0].kind}: {findings[0].message}"
    return None


def _log_end(part: Partition, reports: list[SegmentReport], plan: RecoveryPlan) -> int | None:
    kept = [r for r in reports if plan.cut is None or r.path != plan.cut.segment.log]
    if plan.cut is not None:
        cut_report = next(r for r in reports if r.path == plan.cut.segment.log)
        kept = [r for r in reports if r.base_offset < cut_report.base_offset] + [cut_report]
    for r in reversed(kept):
        if r.next_offset is not None:
            return r.next_offset
    if plan.cut is not None:
        return plan.cut.segment.base_offset
    return part.segments[0].base_offset if part.segments else None


def _plan_snapshots(plan: RecoveryPlan) -> None:
    """The broker drops producer snapshots past the log end, and snapshots it cannot read."""
    for path in plan.partition.snapshots:
        offset = base_offset_of(path)
        if (
            plan.cut is not None
            and plan.new_log_end is not None
            and offset is not None
            and offset > plan.new_log_end
        ):
            plan.deleted_snapshots.append(
                (path, f"taken at offset {offset}, past the new log end {plan.new_log_end}")
            )
            continue
        snap = snapshot.read_snapshot(path)
        if not snap.is_valid:
            plan.deleted_snapshots.append((path, snap.problem or "its CRC does not match"))


def _plan_epochs(plan: RecoveryPlan) -> None:
    path = plan.partition.leader_epoch_checkpoint
    if path is None or plan.cut is None or plan.new_log_end is None:
        return
    try:
        entries = checkpoints.read_leader_epoch_checkpoint(path).entries
    except checkpoints.CheckpointError:
        return
    keep = sum(1 for e in entries if e.start_offset < plan.new_log_end)
    if keep < len(entries):
        plan.epoch_checkpoint_keep = keep


# -- index rebuilding -------------------------------------------------------------------------------------


def build_indexes(seg: Segment, keep_bytes: int, interval: int) -> tuple[bytes, bytes]:
    """The `.index` and `.timeindex` bytes LogSegment.recover writes for the first `keep_bytes` of a
    segment: an entry after every `interval` bytes naming the batch's last offset (KAFKA-7487), the time
    index following the largest timestamp so far, plus its final entry as a closed segment has."""
    base = seg.base_offset
    offsets = bytearray()
    times = bytearray()
    valid = 0
    last_entry_at = 0
    max_ts, max_ts_offset = -1, base
    last_time = (-1, base)
    if kind_of(seg.log) == FileKind.KAFKA07:
        return b"", b""  # Kafka 0.7 kept no such indexes
    for entry in iter_log_entries(seg.log, end=keep_bytes):
        if isinstance(entry, Problem):
            break
        ts = getattr(entry, "max_timestamp", getattr(entry, "timestamp", -1))
        if ts > max_ts:
            max_ts, max_ts_offset = ts, entry.last_offset
        if valid - last_entry_at > interval:
            offsets += struct.pack(">iI", entry.last_offset - base, valid)
            if max_ts > last_time[0]:
                times += struct.pack(">qi", max_ts, max_ts_offset - base)
                last_time = (max_ts, max_ts_offset)
            last_entry_at = valid
        valid += entry.entry_size
    if max_ts > last_time[0]:
        times += struct.pack(">qi", max_ts, max_ts_offset - base)
    return bytes(offsets), bytes(times)


# -- applying, with a backup and a manifest ----------------------------------------------------------------


@contextmanager
def log_dir_lock(log_dir: Path) -> Iterator[None]:
    """Hold the log dir's `.lock` as the broker does: fails at once while a broker holds it, and keeps a
    broker from starting on the directory while ktool changes it."""
    lock_path = log_dir / LOCK_FILE
    existed = lock_path.exists()
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InputError(f"{lock_path}: cannot open the log dir lock: {exc.strerror}") from None
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            raise FindingsError(
                f"{log_dir}: a running broker (or another ktool) holds {LOCK_FILE}; stop the broker first"
            ) from None
        yield
    finally:
        os.close(fd)
        if not existed:
            lock_path.unlink(missing_ok=True)


def _sha256_file(path: Path, limit: int | None = None) -> str:
    h = hashlib.sha256()
    remaining = limit
    with open(path, "rb") as f:
        while remaining is None or remaining > 0:
            chunk = f.read(_COPY_CHUNK if remaining is None else min(_COPY_CHUNK, remaining))
            if not chunk:
                break
            h.update(chunk)
            if remaining is not None:
                remaining -= len(chunk)
    return h.hexdigest()


def _copy_range(src: Path, dst: Path, start: int = 0, length: int | None = None) -> str:
    """Copy bytes [start, start+length) of src into a new file dst; fsync it; return their sha256."""
    h = hashlib.sha256()
    with open(src, "rb") as fin, open(dst, "xb") as fout:
        fin.seek(start)
        remaining = length
        while remaining is None or remaining > 0:
            chunk = fin.read(_COPY_CHUNK if remaining is None else min(_COPY_CHUNK, remaining))
            if not chunk:
                break
            h.update(chunk)
            fout.write(chunk)
            if remaining is not None:
                remaining -= len(chunk)
        fout.flush()
        os.fsync(fout.fileno())
    return h.hexdigest()


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + TEMP_SUFFIX)
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def _write_manifest(backup: Path, manifest: dict) -> None:
    write_json(backup / MANIFEST, manifest)


def check_backup_location(backup_root: Path) -> None:
    """A directory inside a log dir is loaded by the broker as a (broken) partition: refuse to put the
    backup there (backup_root, and the per-partition directories made inside it)."""
    root = backup_root.resolve()
    for d in (root, root.parent):
        if d.exists() and has_log_dir_markers(d):
            raise UsageError(f"{backup_root}: inside the Kafka log dir {d}; put backups elsewhere")
    for d in root.parents:
        if is_partition_dir(d) and d.parent.exists() and has_log_dir_markers(d.parent):
            raise UsageError(f"{backup_root}: inside the partition directory {d}; put backups elsewhere")


def apply_plan(plan: RecoveryPlan, backup_root: Path) -> Path:
    """Back up, then change the files; returns the backup directory holding the manifest."""
    part = plan.partition
    check_backup_location(backup_root)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    backup = backup_root / f"{part.name}-{stamp}"
    n = 1
    while backup.exists():
        n += 1
        backup = backup_root / f"{part.name}-{stamp}-{n}"
    backup.mkdir(parents=True)
    actions = _back_up(plan, backup)
    manifest = {
        "format": 1,
        "tool": f"ktool {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "partition": str(part.path.resolve()),
        "newLogEndOffset": plan.new_log_end,
        "state": "prepared",
        "actions": actions,
    }
    _write_manifest(backup, manifest)
    _apply_actions(plan, actions)
    manifest["state"] = "applied"
    _write_manifest(backup, manifest)
    return backup


def _back_up(plan: RecoveryPlan, backup: Path) -> list[dict]:
    actions: list[dict] = []
    if plan.cut is not None:
        log = plan.cut.segment.log
        name = f"tail-{log.name}"
        sha_tail = _copy_range(log, backup / name, plan.cut.keep_bytes)
        actions.append(
            {
                "action": "truncate",
                "file": str(log.resolve()),
                "originalSize": plan.cut.size,
                "newSize": plan.cut.keep_bytes,
                "backup": name,
                "backupSha256": sha_tail,
                "keptSha256": _sha256_file(log, plan.cut.keep_bytes),
                "originalSha256": _sha256_file(log),
                "reason": plan.cut.reason,
            }
        )
        if plan.cut.valid_after:
            actions[-1]["salvaged"] = _salvage(log, plan.cut.valid_after, backup)
    for seg in plan.deleted_segments:
        for f in (seg.log, seg.offset_index, seg.time_index, seg.txn_index):
            if f is not None:
                actions.append(_whole_file_backup("delete", f, backup))
    for seg, why in plan.rebuild_indexes:
        keep = plan.cut.keep_bytes if plan.cut is not None and seg is plan.cut.segment else seg.size
        new_index, new_time = build_indexes(seg, keep, plan.index_interval)
        targets = [(seg.offset_index or seg.log.with_suffix(".index"), new_index)]
        if seg.time_index is not None:
            targets.append((seg.time_index, new_time))
        for path, data in targets:
            action = (
                _whole_file_backup("rewrite", path, backup)
                if path.exists()
                else {"action": "create", "file": str(path.resolve())}
            )
            action["reason"] = why
            action["newContentHex"] = data.hex()
            actions.append(action)
        if (
            seg.txn_index is not None
            and plan.new_log_end is not None
            and seg is getattr(plan.cut, "segment", None)
        ):
            entries, _ = index.read_txn_index(seg.txn_index)
            kept = b"".join(
                index.TXN_INDEX_ENTRY.pack(
                    e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset
                )
                for e in entries
                if e.last_offset < plan.new_log_end
            )
            action = _whole_file_backup("rewrite", seg.txn_index, backup)
            action.update(reason="aborted transactions past the new log end", newContentHex=kept.hex())
            actions.append(action)
    for path, why in plan.deleted_snapshots:
        action = _whole_file_backup("delete", path, backup)
        action["reason"] = why
        actions.append(action)
    if plan.epoch_checkpoint_keep is not None:
        path = plan.partition.leader_epoch_checkpoint
        assert path is not None
        entries = checkpoints.read_leader_epoch_checkpoint(path).entries[: plan.epoch_checkpoint_keep]
        text = f"0\n{len(entries)}\n" + "".join(f"{e.epoch} {e.start_offset}\n" for e in entries)
        action = _whole_file_backup("rewrite", path, backup)
        action.update(
            reason="leader epochs that start past the new log end", newContentHex=text.encode().hex()
        )
        actions.append(action)
    fsync_dir(backup)
    return actions


def _whole_file_backup(kind: str, path: Path, backup: Path) -> dict:
    name = f"{path.parent.name}--{path.name}"
    sha = _copy_range(path, backup / name)
    return {
        "action": kind,
        "file": str(path.resolve()),
        "size": path.stat().st_size,
        "backup": name,
        "originalSha256": sha,
    }


def _salvage(log: Path, positions: list[int], backup: Path) -> dict:
    """The valid entries after a hole, as a segment of their own, so none of them is lost."""
    name = f"salvaged-{log.name}"
    count = 0
    with open(backup / name, "xb") as out, open(log, "rb") as f:
        walk = (
            iter_kafka07_entries(log, base_offset_of(log) or 0, positions[0])
            if kind_of(log) == FileKind.KAFKA07
            else iter_log_entries(log, positions[0])
        )
        wanted = set(positions)
        for entry in walk:
            if isinstance(entry, Problem):
                continue
            if entry.position in wanted:
                out.write(os.pread(f.fileno(), entry.entry_size, entry.position))
                count += 1
        out.flush()
        os.fsync(out.fileno())
    return {"file": name, "entries": count, "sha256": _sha256_file(backup / name)}


def _apply_actions(plan: RecoveryPlan, actions: list[dict]) -> None:
    touched_dirs: set[Path] = set()
    for a in actions:
        path = Path(a["file"])
        touched_dirs.add(path.parent)
        if a["action"] == "truncate":
            with open(path, "r+b") as f:
                f.truncate(a["newSize"])
                f.flush()
                os.fsync(f.fileno())
        elif a["action"] in ("rewrite", "create"):
            _write_atomic(path, bytes.fromhex(a["newContentHex"]))
        elif a["action"] == "delete":
            path.unlink(missing_ok=True)
    for d in touched_dirs:
        fsync_dir(d)


def undo(manifest_path: Path) -> list[str]:
    """Restore every file a manifest names to its state before `ktool truncate`, checked by sha256."""
    manifest = read_json(manifest_path, "truncate manifest", "actions")
    backup = manifest_path.parent
    partition = Path(manifest["partition"])
    done: list[str] = []
    with log_dir_lock(partition.parent):
        for a in reversed(manifest["actions"]):
            done.append(_undo_action(a, backup))
        for leftover in partition.glob(f"*{TEMP_SUFFIX}"):
            leftover.unlink()
        fsync_dir(partition)
    manifest["state"] = "undone"
    _write_manifest(backup, manifest)
    return done


def _undo_action(a: dict, backup: Path) -> str:
    path = Path(a["file"])
    kind = a["action"]
    if kind == "create":
        path.unlink(missing_ok=True)
        return f"removed {path}"
    if kind == "truncate":
        if (
            path.exists()
            and path.stat().st_size == a["originalSize"]
            and _sha256_file(path) == a["originalSha256"]
        ):
            return f"{path} already whole"
        if _sha256_file(path, a["newSize"]) != a["keptSha256"]:
            raise FindingsError(f"{path}: changed since ktool truncated it; not restoring over it")
        with open(path, "r+b") as f, open(backup / a["backup"], "rb") as tail:
            f.truncate(a["newSize"])
            f.seek(a["newSize"])
            shutil.copyfileobj(tail, f, _COPY_CHUNK)
            f.flush()
            os.fsync(f.fileno())
        if _sha256_file(path) != a["originalSha256"]:
            raise FindingsError(f"{path}: restored bytes do not match the original sha256")
        return f"restored {plural(a['originalSize'] - a['newSize'], 'byte')} to {path}"
    # delete / rewrite: the whole file is in the backup
    if path.exists() and _sha256_file(path) == a["originalSha256"]:
        return f"{path} already as before"
    tmp = path.with_name(path.name + TEMP_SUFFIX)
    tmp.unlink(missing_ok=True)
    sha = _copy_range(backup / a["backup"], tmp)
    if sha != a["originalSha256"]:
        tmp.unlink()
        raise FindingsError(f"{backup / a['backup']}: backup does not match its sha256; not restoring")
    os.replace(tmp, path)
    return f"restored {path}"


def partition_for(path: Path) -> tuple[Partition, Segment | None]:
    """A partition dir, or a segment file (recovery then starts at that segment)."""
    if path.is_dir():
        return read_partition(path), None
    part = read_partition(path.parent)
    for seg in part.segments:
        if seg.log.resolve() == path.resolve():
            return part, seg
    raise UsageError(f"{path}: not a segment (.log or .kafka) of {path.parent}")
