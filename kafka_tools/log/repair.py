"""Applying a recovery plan safely: the log dir locked, every byte removed kept in a backup with a
manifest, files replaced atomically, and `--undo` putting them back byte for byte.

What it never does: write through a link. Every file it changes, deletes or restores is a name directly
in the partition directory as given (never `resolve()`d, checked again for every path a manifest
names); a symbolic link, or a file with other hard links (a `cp -al` snapshot), is refused unless the
operator allows links, and then it is first given a copy of its own so the other names keep their bytes.

A crash at any point leaves a state a rerun can finish: the backup directory is written in a hidden
staging directory and renamed into place with its manifest (`prepared`), the changes follow, and the
manifest says `applied` last. A rerun that finds its partition's `prepared` manifest carries it out
(`resume`), or says in one line to `--undo` it when the files changed since.

Why one module of this size: the crash-safe apply, resume and undo share the manifest's format and the
link rules, and their order of writes, fsyncs and renames is what the safety rests on
(tests/test_kill_points.py kills the process at each step): kept together so that order reads top to
bottom.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import stat
import tempfile
import time
from pathlib import Path

from kafka_tools import __version__
from kafka_tools.errors import FindingsError, InputError, UsageError, os_reason
from kafka_tools.format import checkpoints, index
from kafka_tools.format.kafka07 import iter_kafka07_entries
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of
from kafka_tools.format.plural import plural
from kafka_tools.format.segment import Problem, iter_log_entries
from kafka_tools.keep.durable import fsync_dir, read_json, write_json
from kafka_tools.log.checks.recovery import RecoveryPlan
from kafka_tools.log.files.dirs import Segment
from kafka_tools.log.files.discover import check_backup_location
from kafka_tools.log.write_lock import write_lock

MANIFEST = "manifest.json"
TEMP_SUFFIX = ".ktool.cleaned"  # a broker that starts after a crash deletes `*.cleaned` files itself
PRIVATE_SUFFIX = ".ktool-copy.cleaned"  # a link's own copy, before it replaces the link
STAGING_SUFFIX = ".ktool-staging"  # a backup directory being written, in the backup root
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


# -- the files a plan touches: inside the partition directory, no links ------------------------------------


def confined(partition: Path, path: Path) -> Path:
    """`path` when it names a file directly in `partition` (by name: `..`, other directories and other
    partitions are refused); InputError otherwise. Every path a plan or a manifest names passes here
    before it is touched."""
    if path.parent != partition or path.name in ("", ".", "..") or not path.is_absolute():
        raise InputError(
            f"{path}: not a file of the partition directory {partition}; ktool changes nothing outside it"
        )
    return path


def partition_path(part_path: Path) -> Path:
    """The partition directory as given, made absolute without following links (`..` taken away by
    name): what manifests record and every path is checked against."""
    return Path(os.path.abspath(part_path))


def plan_files(plan: RecoveryPlan) -> list[Path]:
    """Every existing file the plan cuts, rewrites or deletes."""
    files: list[Path] = []
    if plan.cut is not None:
        files.append(plan.cut.segment.log)
        if plan.cut.segment.txn_index is not None and plan.new_log_end is not None:
            files.append(plan.cut.segment.txn_index)
    for seg in plan.deleted_segments:
        files += [f for f in (seg.log, seg.offset_index, seg.time_index, seg.txn_index) if f is not None]
    for seg, _ in plan.rebuild_indexes:
        files += [f for f in (seg.offset_index, seg.time_index) if f is not None]
    files += [p for p, _ in plan.deleted_snapshots]
    if plan.epoch_checkpoint_keep is not None and plan.partition.leader_epoch_checkpoint is not None:
        files.append(plan.partition.leader_epoch_checkpoint)
    return files


def check_links(plan: RecoveryPlan, allow_links: bool = False) -> None:
    """InputError (exit 3, one line) for the first file the plan would change that lies outside the
    partition directory, is a symbolic link, or has other hard links, unless `allow_links`."""
    partition = partition_path(plan.partition.path)
    for f in plan_files(plan):
        path = confined(partition, partition / f.name)
        link = _link_of(path)
        if link is not None and not allow_links:
            raise InputError(_link_refusal(path, link))


def _link_of(path: Path) -> str | None:
    """`symlink:TARGET` for a symbolic link, `hardlink` for a file with other names, None otherwise."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"symlink:{os.readlink(path)}"
    if st.st_nlink > 1:
        return "hardlink"
    return None


def _link_refusal(path: Path, link: str) -> str:
    if link.startswith("symlink:"):
        return (
            f"{path}: a symbolic link (to {link[len('symlink:') :]}); ktool truncate changes files of the "
            "partition directory only, never through a link (--allow-links replaces the link by a copy)"
        )
    return (
        f"{path}: has other names (hard links, e.g. a `cp -al` snapshot) that changing it in place would "
        "change too (--allow-links gives it a copy of its own first)"
    )


# -- applying, with a backup and a manifest ----------------------------------------------------------------


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


def _copy_range(src: Path, dst: Path, start: int = 0, length: int | None = None, mode: int = 0o600) -> str:
    """Copy bytes [start, start+length) of src into a new file dst (never an existing one, never
    through a link); fsync it; return their sha256."""
    h = hashlib.sha256()
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    with open(src, "rb") as fin, open(fd, "wb") as fout:
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


def _owner(path: Path) -> dict:
    """Mode, owner and group of a file (through a link: the file's), as manifests record them."""
    st = os.stat(path)
    return {"mode": stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid}


def _give_owner(fd: int, a: dict) -> None:
    """The mode, owner and group an action recorded, on a file ktool wrote (a broker running as its
    own user must still open it read-write). Old manifests recorded none: the file keeps its own."""
    if "uid" in a and (os.fstat(fd).st_uid, os.fstat(fd).st_gid) != (a["uid"], a["gid"]):
        try:
            os.fchown(fd, a["uid"], a["gid"])
        except PermissionError:
            pass  # not root: the file is ours, as every other file this user could have written
    if "mode" in a:
        os.fchmod(fd, a["mode"])


def _write_atomic(path: Path, data: bytes, a: dict) -> None:
    """`path` replaced by a file holding `data` with the action's owner and mode: written beside it
    under a temporary name, fsynced, renamed over it (a link at `path` is replaced, not followed)."""
    tmp = path.with_name(path.name + TEMP_SUFFIX)
    tmp.unlink(missing_ok=True)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(fd, "wb") as f:
        f.write(data)
        f.flush()
        _give_owner(f.fileno(), a)
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _write_manifest(backup: Path, manifest: dict) -> None:
    write_json(backup / MANIFEST, manifest)


def _staging_prefix(partition: Path) -> str:
    """Staging directories of one partition directory (not of another log dir's `topic-N`): a run holding
    its log dir's lock may remove the ones a killed run left."""
    return f".{partition.name}-{hashlib.sha256(str(partition).encode()).hexdigest()[:12]}-"


def apply_plan(plan: RecoveryPlan, backup_root: Path, allow_links: bool = False) -> Path:
    """Back up, then change the files; returns the backup directory holding the manifest. The caller
    holds the log dir's lock (`write_lock`). A backup that cannot be written completely (a full disk)
    is InputError naming the backup root, with nothing changed and no partial backup left."""
    part = plan.partition
    partition = partition_path(part.path)
    check_backup_location(backup_root)
    check_links(plan, allow_links)
    if plan.cut is not None and plan.cut.segment.size != plan.cut.size:
        raise InputError(f"{plan.cut.segment.log}: changed since it was planned; run ktool truncate again")
    try:
        backup_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{backup_root}: cannot create the backup directory: {os_reason(exc)}") from None
    for stale in backup_root.glob(_staging_prefix(partition) + "*" + STAGING_SUFFIX):
        shutil.rmtree(stale, ignore_errors=True)  # a killed run's: nothing refers to it
    staging = Path(
        tempfile.mkdtemp(prefix=_staging_prefix(partition), suffix=STAGING_SUFFIX, dir=backup_root)
    )
    try:
        actions = _back_up(plan, partition, staging)
        manifest = {
            "format": 1,
            "tool": f"ktool {__version__}",
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "partition": str(partition),
            "newLogEndOffset": plan.new_log_end,
            "state": "prepared",
            "actions": actions,
        }
        _write_manifest(staging, manifest)
        backup = _publish(staging, backup_root, part.name)
    except OSError as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise InputError(
            f"{backup_root}: cannot write the backup of {part.name}: {os_reason(exc)}; nothing was "
            "changed and the partial backup is removed"
        ) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    try:
        _finish(backup / MANIFEST, manifest, verify=False)
    except OSError as exc:  # the log dir's disk full or failing, half way: the manifest says what is left
        raise InputError(
            f"{exc.filename or partition}: {os_reason(exc)} while repairing {part.name}, half done: run "
            f"the same ktool truncate again to finish it, or ktool truncate --undo {backup / MANIFEST}"
        ) from None
    return backup


def _publish(staging: Path, backup_root: Path, name: str) -> Path:
    """The complete staging directory renamed to its final name, `NAME-TIMESTAMP[-N]`, in one step: a
    backup directory is never seen without its manifest."""
    stamp = time.strftime("%Y%m%dT%H%M%S")
    n = 1
    while True:
        backup = backup_root / (f"{name}-{stamp}" if n == 1 else f"{name}-{stamp}-{n}")
        if not os.path.lexists(backup):
            try:
                os.rename(staging, backup)
                fsync_dir(backup_root)
                return backup
            except OSError as exc:
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY):
                    raise
        n += 1


def _back_up(plan: RecoveryPlan, partition: Path, backup: Path) -> list[dict]:
    actions: list[dict] = []

    def named(f: Path) -> Path:
        return confined(partition, partition / f.name)

    if plan.cut is not None:
        log = named(plan.cut.segment.log)
        name = f"tail-{log.name}"
        sha_tail = _copy_range(log, backup / name, plan.cut.keep_bytes)
        actions.append(
            {
                "action": "truncate",
                "file": str(log),
                "originalSize": plan.cut.size,
                "newSize": plan.cut.keep_bytes,
                "backup": name,
                "backupSha256": sha_tail,
                "keptSha256": _sha256_file(log, plan.cut.keep_bytes),
                "originalSha256": _sha256_file(log),
                "reason": plan.cut.reason,
                **_owner(log),
                **_link(log),
            }
        )
        if plan.cut.valid_after:
            actions[-1]["salvaged"] = _salvage(log, plan.cut.valid_after, backup)
    for seg in plan.deleted_segments:
        for f in (seg.log, seg.offset_index, seg.time_index, seg.txn_index):
            if f is not None:
                actions.append(_whole_file_backup("delete", named(f), backup))
    for seg, why in plan.rebuild_indexes:
        keep = plan.cut.keep_bytes if plan.cut is not None and seg is plan.cut.segment else seg.size
        new_index, new_time = build_indexes(seg, keep, plan.index_interval)
        targets = [(named(seg.offset_index or seg.log.with_suffix(".index")), new_index)]
        if seg.time_index is not None:
            targets.append((named(seg.time_index), new_time))
        for path, data in targets:
            action = (
                _whole_file_backup("rewrite", path, backup)
                if os.path.lexists(path)
                else {"action": "create", "file": str(path), **_owner(named(seg.log))}  # as its segment
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
            action = _whole_file_backup("rewrite", named(seg.txn_index), backup)
            action.update(reason="aborted transactions past the new log end", newContentHex=kept.hex())
            actions.append(action)
    for path, why in plan.deleted_snapshots:
        action = _whole_file_backup("delete", named(path), backup)
        action["reason"] = why
        actions.append(action)
    if plan.epoch_checkpoint_keep is not None:
        path = plan.partition.leader_epoch_checkpoint
        assert path is not None
        entries = checkpoints.read_leader_epoch_checkpoint(path).entries[: plan.epoch_checkpoint_keep]
        text = f"0\n{len(entries)}\n" + "".join(f"{e.epoch} {e.start_offset}\n" for e in entries)
        action = _whole_file_backup("rewrite", named(path), backup)
        action.update(
            reason="leader epochs that start past the new log end", newContentHex=text.encode().hex()
        )
        actions.append(action)
    fsync_dir(backup)
    return actions


def _link(path: Path) -> dict:
    link = _link_of(path)
    return {} if link is None else {"link": link}


def _whole_file_backup(kind: str, path: Path, backup: Path) -> dict:
    name = f"{path.parent.name}--{path.name}"
    sha = _copy_range(path, backup / name)
    return {
        "action": kind,
        "file": str(path),
        "size": path.stat().st_size,
        "backup": name,
        "originalSha256": sha,
        **_owner(path),
        **_link(path),
    }


def _salvage(log: Path, positions: list[int], backup: Path) -> dict:
    """The valid entries after a hole, as a segment of their own, so none of them is lost."""
    name = f"salvaged-{log.name}"
    count = 0
    fd = os.open(backup / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with open(fd, "wb") as out, open(log, "rb") as f:
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


class Unfinishable(FindingsError):
    """An interrupted repair whose files changed since: it is not carried out over them."""


def _apply_actions(partition: Path, actions: list[dict], verify: bool = False) -> None:
    """Carry out a manifest's actions. Each is idempotent, so a rerun after a crash carries out the rest;
    `verify` (a rerun) first checks that each file holds its old or its new bytes, nothing else."""
    try:
        for a in actions:
            _apply_action(partition, a, verify)
    finally:
        _remove_leftovers(partition)
    fsync_dir(partition)


def _apply_action(partition: Path, a: dict, verify: bool) -> None:
    path = confined(partition, Path(a["file"]))
    _check_link(path, a)
    kind = a["action"]
    if kind == "truncate":
        _cut(path, a, verify)
    elif kind in ("rewrite", "create"):
        new = bytes.fromhex(a["newContentHex"])
        if verify and kind == "rewrite" and os.path.lexists(path):
            if path.stat().st_size == len(new) and path.read_bytes() == new:
                return
            if _sha256_file(path) != a["originalSha256"]:
                raise Unfinishable(f"{path}: changed since")
        _write_atomic(path, new, a)
    elif kind == "delete":
        if verify and os.path.lexists(path) and a.get("link") is None:
            if _sha256_file(path) != a["originalSha256"]:
                raise Unfinishable(f"{path}: changed since")
        path.unlink(missing_ok=True)  # a link: only the name in the partition directory goes


def _check_link(path: Path, a: dict) -> None:
    """A link a manifest did not allow is refused; one it allowed gets a copy of its own first (its
    target and its other names keep their bytes)."""
    link = _link_of(path)
    if link is None:
        return
    if a.get("link") is None:
        raise InputError(_link_refusal(path, link))
    if a["action"] == "truncate":  # a rewrite or a delete replaces or removes the name only
        copy = path.with_name(path.name + PRIVATE_SUFFIX)
        copy.unlink(missing_ok=True)
        _copy_range(path, copy)
        fd = os.open(copy, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            _give_owner(fd, a)
        finally:
            os.close(fd)
        os.replace(copy, path)


def _cut(path: Path, a: dict, verify: bool) -> None:
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        size = os.fstat(fd).st_size
        if size == a["newSize"]:
            return
        if verify and (size < a["newSize"] or _sha256_file(path, a["newSize"]) != a["keptSha256"]):
            raise Unfinishable(f"{path}: changed since")
        os.ftruncate(fd, a["newSize"])
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_leftovers(partition: Path) -> None:
    """ktool's temporary files in the partition directory (a crash's, or this run's on an error)."""
    for leftover in partition.glob("*.ktool*"):
        if leftover.name.endswith((TEMP_SUFFIX, PRIVATE_SUFFIX)):
            leftover.unlink(missing_ok=True)


def _finish(manifest_path: Path, manifest: dict, verify: bool) -> None:
    _apply_actions(Path(manifest["partition"]), manifest["actions"], verify=verify)
    manifest["state"] = "applied"
    _write_manifest(manifest_path.parent, manifest)


def interrupted(backup_root: Path, part_path: Path) -> list[Path]:
    """The manifests in `backup_root` of repairs of this partition directory that were begun and not
    finished (`prepared`), oldest first."""
    partition = str(partition_path(part_path))
    found = []
    for path in sorted(backup_root.glob(f"{part_path.name}-*/{MANIFEST}")):
        try:
            doc = read_json(path, "truncate manifest", "actions")
        except InputError:
            continue
        if doc.get("partition") == partition and doc.get("state") == "prepared":
            found.append(path)
    return found


def resume(manifest_path: Path) -> None:
    """Carry out the rest of an interrupted repair (the caller holds the log dir's lock); Unfinishable
    (exit 1, one line saying to `--undo` it) when a file it names holds neither its old nor its new
    bytes."""
    manifest = read_json(manifest_path, "truncate manifest", "actions")
    partition = _manifest_partition(manifest)
    try:
        for a in manifest["actions"]:
            confined(partition, Path(a["file"]))
        _finish(manifest_path, manifest, verify=True)
    except (Unfinishable, InputError) as exc:  # changed since, or a link made since
        _remove_leftovers(partition)
        raise Unfinishable(
            f"{partition.name}: the repair in {manifest_path} was interrupted and cannot be finished "
            f"({exc}); put the files back first: ktool truncate --undo {manifest_path}"
        ) from None


def _manifest_partition(manifest: dict) -> Path:
    raw = manifest.get("partition")
    partition = Path(raw) if isinstance(raw, str) else None
    if partition is None or not partition.is_absolute() or str(partition) != os.path.normpath(raw):
        raise InputError(f"{raw}: not a partition directory a manifest may name")
    return partition


def undo_targets(manifest_path: Path) -> list[Path]:
    """The partition directory a manifest restores (for asking its log dir's lock first)."""
    if not manifest_path.is_file():
        return []
    try:
        return [Path(read_json(manifest_path, "truncate manifest", "actions")["partition"])]
    except (KeyError, TypeError, ValueError, UsageError, InputError):
        return []  # `undo` itself says what is wrong with the manifest


def undo(manifest_path: Path) -> list[str]:
    """Restore every file a manifest names to its state before `ktool truncate`, checked by sha256.
    Every path it names is checked to lie in its partition directory (and every backup in the backup
    directory) before any file is touched."""
    manifest = read_json(manifest_path, "truncate manifest", "actions")
    backup = manifest_path.parent
    partition = _manifest_partition(manifest)
    if manifest.get("state") == "undone":
        # Undoing twice must change nothing: the files may have moved on since (a broker ran).
        return [f"already undone: {manifest_path}; nothing changed"]
    for a in manifest["actions"]:
        path = confined(partition, Path(a["file"]))
        if "backup" in a:
            confined(backup, backup / a["backup"])
        link = _link_of(path)
        if a["action"] == "truncate" and link is not None and link != a.get("link"):
            # restored in place: a link made since the repair is not written through
            raise InputError(_link_refusal(path, link))
    done: list[str] = []
    with write_lock(partition.parent, "ktool truncate --undo"):
        for a in reversed(manifest["actions"]):
            done.append(_undo_action(a, backup))
        _remove_leftovers(partition)
        fsync_dir(partition)
    manifest["state"] = "undone"
    _write_manifest(backup, manifest)
    return done


def _undo_action(a: dict, backup: Path) -> str:
    path = Path(a["file"])
    kind = a["action"]
    if kind == "create":
        if not os.path.lexists(path):
            return f"{path} already absent"
        path.unlink()
        return f"removed {path}"
    link = a.get("link") or ""
    if link.startswith("symlink:"):
        target = link[len("symlink:") :]
        if os.path.islink(path) and os.readlink(path) == target:
            return f"{path} already as before"
        # ktool never wrote through the link: its target still holds the old bytes
        if os.path.exists(path.parent / target) and _sha256_file(path.parent / target) == a["originalSha256"]:
            tmp = path.with_name(path.name + TEMP_SUFFIX)
            tmp.unlink(missing_ok=True)
            os.symlink(target, tmp)
            os.replace(tmp, path)
            return f"restored the link {path} -> {target}"
    if kind == "truncate":
        if (
            os.path.lexists(path)
            and path.stat().st_size == a["originalSize"]
            and _sha256_file(path) == a["originalSha256"]
        ):
            return f"{path} already whole"
        if _sha256_file(path, a["newSize"]) != a["keptSha256"]:
            raise FindingsError(f"{path}: changed since ktool truncated it; not restoring over it")
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
        with open(fd, "r+b") as f, open(backup / a["backup"], "rb") as tail:
            f.truncate(a["newSize"])
            f.seek(a["newSize"])
            shutil.copyfileobj(tail, f, _COPY_CHUNK)
            f.flush()
            os.fsync(f.fileno())
        if _sha256_file(path) != a["originalSha256"]:
            raise FindingsError(f"{path}: restored bytes do not match the original sha256")
        return f"restored {plural(a['originalSize'] - a['newSize'], 'byte')} to {path}"
    # delete / rewrite: the whole file is in the backup
    if os.path.lexists(path) and not os.path.islink(path) and _sha256_file(path) == a["originalSha256"]:
        return f"{path} already as before"
    tmp = path.with_name(path.name + TEMP_SUFFIX)
    tmp.unlink(missing_ok=True)
    sha = _copy_range(backup / a["backup"], tmp)
    if sha != a["originalSha256"]:
        tmp.unlink()
        raise FindingsError(f"{backup / a['backup']}: backup does not match its sha256; not restoring")
    fd = os.open(tmp, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        _give_owner(fd, a)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return f"restored {path}"
