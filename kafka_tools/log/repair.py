"""Applying a recovery plan safely: the log dir locked, every byte removed kept in a backup with a
manifest, files replaced atomically, and `--undo` putting them back byte for byte."""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kafka_tools import __version__
from kafka_tools.durable import fsync_dir, read_json, write_json
from kafka_tools.errors import FindingsError, InputError, UsageError
from kafka_tools.format import checkpoints, index
from kafka_tools.format.kafka07 import iter_kafka07_entries
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of
from kafka_tools.format.mapping import maps_excluded
from kafka_tools.format.plural import plural
from kafka_tools.format.segment import Problem, iter_log_entries
from kafka_tools.log.dirs import (
    LOCK_FILE,
    Segment,
    has_log_dir_markers,
    is_partition_dir,
)
from kafka_tools.log.recovery import RecoveryPlan

MANIFEST = "manifest.json"
TEMP_SUFFIX = ".ktool.cleaned"  # a broker that starts after a crash deletes `*.cleaned` files itself
_COPY_CHUNK = 1 << 20


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
            offsets += index.OFFSET_INDEX_ENTRY.pack(entry.last_offset - base, valid)
            if max_ts > last_time[0]:
                times += index.TIME_INDEX_ENTRY.pack(max_ts, max_ts_offset - base)
                last_time = (max_ts, max_ts_offset)
            last_entry_at = valid
        valid += entry.entry_size
    if max_ts > last_time[0]:
        times += index.TIME_INDEX_ENTRY.pack(max_ts, max_ts_offset - base)
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
            raise InputError(
                f"{log_dir}: a running broker (or another ktool) holds {LOCK_FILE}; stop the broker first"
            ) from None
        with maps_excluded(log_dir):  # and no ktool reader has a file of it mapped (format/mapping.py)
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


def undo_targets(manifest_path: Path) -> list[Path]:
    """The partition directory a manifest restores (for asking its log dir's lock first)."""
    if not manifest_path.is_file():
        return []
    try:
        return [Path(read_json(manifest_path, "truncate manifest", "actions")["partition"])]
    except (KeyError, TypeError, ValueError, UsageError, InputError):
        return []  # `undo` itself says what is wrong with the manifest


def undo(manifest_path: Path) -> list[str]:
    """Restore every file a manifest names to its state before `ktool truncate`, checked by sha256."""
    manifest = read_json(manifest_path, "truncate manifest", "actions")
    backup = manifest_path.parent
    partition = Path(manifest["partition"])
    if manifest.get("state") == "undone":
        # Undoing twice must change nothing: the files may have moved on since (a broker ran).
        return [f"already undone: {manifest_path}; nothing changed"]
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
        if not path.exists():
            return f"{path} already absent"
        path.unlink()
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
