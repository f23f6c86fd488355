"""Applying a recovery plan safely: the log dir locked, every byte removed kept in a backup with a
manifest, files replaced atomically, and `--undo` putting them back byte for byte.

What it never does: write through a link, or anywhere but the partition directory it planned on. Every
file it changes, deletes or restores is a name directly in the partition directory (checked for every
path a manifest names), opened, renamed, unlinked or created relative to that directory held open
(log/held_dir.py: resolved once, its device and inode checked), so no rename of a path redirects it;
a symbolic link, or a file with other hard links (a `cp -al` snapshot), is refused unless the
operator allows links, and then it is first given a copy of its own so the other names keep their bytes.

A crash at any point leaves a state a rerun can finish: the backup directory is written in a hidden
staging directory and renamed into place with its manifest (`prepared`), the changes follow, and the
manifest says `applied` last. A rerun that finds its partition's `prepared` manifest carries it out
(`resume`), or says in one line to `--undo` it when the files changed since; the partition directory's
`.ktool-truncate-pending.deleted` names the manifest meanwhile, for a rerun with another state directory.

Why one module of this size: the crash-safe apply, resume and undo share the manifest's format and the
link rules, and their order of writes, fsyncs and renames is what the safety rests on
(tests/test_kill_points.py kills the process at each step): kept together so that order reads top to
bottom.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from contextlib import closing
from pathlib import Path

from kafka_tools import __version__, bounded_json
from kafka_tools.errors import FindingsError, InputError, UsageError, os_reason
from kafka_tools.format import checkpoints, index
from kafka_tools.format.kafka07 import iter_kafka07_entries
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of
from kafka_tools.format.plural import plural
from kafka_tools.format.problems import Problem
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.keep.durable import fsync_dir, read_json, write_json
from kafka_tools.log.checks.recovery import RecoveryPlan
from kafka_tools.log.files.dirs import Segment
from kafka_tools.log.files.discover import check_backup_location
from kafka_tools.log.held_dir import MANIFEST, POINTER, POINTER_TMP, HeldDir, hold_partition, hold_recorded
from kafka_tools.log.write_lock import write_lock

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
    before it is touched (and is then touched by its name, relative to the held directory)."""
    if path.parent != partition or path.name in ("", ".", "..") or not path.is_absolute():
        raise InputError(
            f"{path}: not a file of the partition directory {partition}; ktool changes nothing outside it"
        )
    return path


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


def check_links(plan: RecoveryPlan, held: HeldDir, allow_links: bool = False) -> None:
    """InputError (exit 3, one line) for the first file the plan would change that lies outside the
    partition directory, is a symbolic link, or has other hard links, unless `allow_links`."""
    for f in plan_files(plan):
        path = confined(held.path, held.shown(f))
        link = _link_of(held, path.name)
        if link is not None and not allow_links:
            raise InputError(_link_refusal(path, link))


def _link_of(held: HeldDir, name: str) -> str | None:
    """`symlink:TARGET` for a symbolic link, `hardlink` for a file with other names, None otherwise."""
    st = held.lstat(name)
    if st is None:
        return None
    if stat.S_ISLNK(st.st_mode):
        return f"symlink:{held.readlink(name)}"
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


def _sha256_fd(fd: int, limit: int | None = None) -> str:
    h = hashlib.sha256()
    pos = 0
    while limit is None or pos < limit:
        chunk = os.pread(fd, _COPY_CHUNK if limit is None else min(_COPY_CHUNK, limit - pos), pos)
        if not chunk:
            break
        h.update(chunk)
        pos += len(chunk)
    return h.hexdigest()


def _sha256_file(path: Path, limit: int | None = None) -> str:
    """A file of the backup directory (or a link's target), by path."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return _sha256_fd(fd, limit)
    finally:
        os.close(fd)


def _sha256_held(held: HeldDir, name: str, limit: int | None = None) -> str:
    fd = _open_read(held, name)
    try:
        return _sha256_fd(fd, limit)
    finally:
        os.close(fd)


def _open_read(held: HeldDir, name: str) -> int:
    """A file of the held directory opened for reading; a symbolic link there is read through (its
    bytes are what a manifest keeps; nothing is ever written through it)."""
    return os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=held.fd)


def _copy_fd(src: int, dst: int, start: int = 0, length: int | None = None) -> str:
    """Bytes [start, start+length) of src appended to dst, fsynced; their sha256."""
    h = hashlib.sha256()
    pos, end = start, None if length is None else start + length
    while end is None or pos < end:
        chunk = os.pread(src, _COPY_CHUNK if end is None else min(_COPY_CHUNK, end - pos), pos)
        if not chunk:
            break
        h.update(chunk)
        view = memoryview(chunk)
        while view:
            view = view[os.write(dst, view) :]
        pos += len(chunk)
    os.fsync(dst)
    return h.hexdigest()


_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def _back_up_range(held: HeldDir, name: str, dst: Path, start: int = 0, length: int | None = None) -> str:
    """Bytes of the held directory's file `name` copied into a new file dst of the backup (never an
    existing one, never through a link), fsynced; their sha256."""
    src = _open_read(held, name)
    try:
        out = os.open(dst, _NEW, 0o600)
        try:
            return _copy_fd(src, out, start, length)
        finally:
            os.close(out)
    finally:
        os.close(src)


def _owner(held: HeldDir, name: str) -> dict:
    """Mode, owner and group of a file (through a link: the file's), as manifests record them."""
    st = held.stat(name)
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


def _write_atomic(held: HeldDir, name: str, data: bytes, a: dict) -> None:
    """`name` replaced by a file holding `data` with the action's owner and mode: written beside it
    under a temporary name, fsynced, renamed over it (a link at `name` is replaced, not followed)."""
    tmp = name + TEMP_SUFFIX
    held.unlink(tmp, missing_ok=True)
    fd = held.open(tmp, _NEW)
    with open(fd, "wb") as f:
        f.write(data)
        f.flush()
        _give_owner(f.fileno(), a)
        os.fsync(f.fileno())
    held.replace(tmp, name)


def _write_manifest(backup: Path, manifest: dict) -> None:
    write_json(backup / MANIFEST, manifest)


# -- the pointer in the partition directory: an unfinished repair found whatever the state directory ------
_POINTER_MAX = 1 << 16


def _write_pointer(held: HeldDir, manifest_path: Path) -> None:
    held.unlink(POINTER_TMP, missing_ok=True)
    fd = held.open(POINTER_TMP, _NEW)
    with open(fd, "wb") as f:
        f.write(json.dumps({"format": 1, "manifest": str(manifest_path)}).encode() + b"\n")
        f.flush()
        os.fsync(f.fileno())
    held.replace(POINTER_TMP, POINTER)
    held.fsync()


def pointed_manifest(held: HeldDir) -> Path | None:
    """The manifest the partition directory's pointer names (None: no pointer); InputError (exit 3,
    one line) for a pointer that is not one."""
    try:
        fd = held.open(POINTER, os.O_RDONLY)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{held.shown(POINTER)}: cannot read: {os_reason(exc)}") from None
    try:
        raw = os.read(fd, _POINTER_MAX + 1)
    finally:
        os.close(fd)
    try:
        doc = bounded_json.loads(raw) if len(raw) <= _POINTER_MAX else None
    except ValueError:
        doc = None
    target = doc.get("manifest") if isinstance(doc, dict) else None
    if not isinstance(target, str) or not os.path.isabs(target):
        raise InputError(
            f"{held.shown(POINTER)}: not a ktool truncate pointer; remove it if no repair is unfinished"
        )
    return Path(target)


def drop_pointer(held: HeldDir, manifest_path: Path | None = None) -> None:
    """The pointer removed (when it names `manifest_path`, if given): its repair is finished or undone."""
    try:
        named = pointed_manifest(held)
    except InputError:
        named = None
    if named is None and held.exists(POINTER) and manifest_path is not None:
        return
    if manifest_path is None or named == manifest_path:
        held.unlink(POINTER, missing_ok=True)
        held.fsync()


def _staging_prefix(partition: Path) -> str:
    """Staging directories of one partition directory (not of another log dir's `topic-N`): a run holding
    its log dir's lock may remove the ones a killed run left."""
    return f".{partition.name}-{hashlib.sha256(str(partition).encode()).hexdigest()[:12]}-"


def apply_plan(
    plan: RecoveryPlan, backup_root: Path, allow_links: bool = False, held: HeldDir | None = None
) -> Path:
    """Back up, then change the files; returns the backup directory holding the manifest. The caller
    holds the log dir's lock (`write_lock`) and, normally, the partition directory the plan was read
    from (`held`: without it the plan's directory is opened here). A backup that cannot be written
    completely (a full disk) is InputError naming the backup root, with nothing changed and no partial
    backup left; a partition directory renamed or swapped since it was opened is InputError too."""
    if held is None:
        with closing(hold_partition(plan.partition.path)) as own:
            return apply_plan(plan, backup_root, allow_links, own)
    part = plan.partition
    partition = held.path
    check_backup_location(backup_root)
    check_links(plan, held, allow_links)
    if plan.cut is not None and _size(held, plan.cut.segment.log.name) != plan.cut.size:
        raise InputError(f"{plan.cut.segment.log}: changed since it was planned; run ktool truncate again")
    try:
        backup_root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"{backup_root}: cannot create the backup directory: {os_reason(exc)}") from None
    backup_root = Path(os.path.realpath(backup_root))  # the pointer names the manifest by an absolute path
    for stale in backup_root.glob(_staging_prefix(partition) + "*" + STAGING_SUFFIX):
        shutil.rmtree(stale, ignore_errors=True)  # a killed run's: nothing refers to it
    staging = Path(
        tempfile.mkdtemp(prefix=_staging_prefix(partition), suffix=STAGING_SUFFIX, dir=backup_root)
    )
    try:
        actions = _back_up(plan, held, staging)
        manifest = {
            "format": 1,
            "tool": f"ktool {__version__}",
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "partition": str(partition),
            "device": held.dev,
            "inode": held.ino,
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
        held.check_in_place()  # the last moment before the first change: the manifest names this path
        _write_pointer(held, backup / MANIFEST)
        _finish(backup / MANIFEST, manifest, held, verify=False)
    except OSError as exc:  # the log dir's disk full or failing, half way: the manifest says what is left
        raise InputError(
            f"{exc.filename or partition}: {os_reason(exc)} while repairing {part.name}, half done: run "
            f"the same ktool truncate again to finish it, or ktool truncate --undo {backup / MANIFEST}"
        ) from None
    return backup


def _size(held: HeldDir, name: str) -> int | None:
    try:
        return held.stat(name).st_size
    except FileNotFoundError:
        return None


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


def _back_up(plan: RecoveryPlan, held: HeldDir, backup: Path) -> list[dict]:
    actions: list[dict] = []

    def named(f: Path) -> Path:
        return confined(held.path, held.shown(f))

    if plan.cut is not None:
        log = named(plan.cut.segment.log)
        name = f"tail-{log.name}"
        sha_tail = _back_up_range(held, log.name, backup / name, plan.cut.keep_bytes)
        actions.append(
            {
                "action": "truncate",
                "file": str(log),
                "originalSize": plan.cut.size,
                "newSize": plan.cut.keep_bytes,
                "backup": name,
                "backupSha256": sha_tail,
                "keptSha256": _sha256_held(held, log.name, plan.cut.keep_bytes),
                "originalSha256": _sha256_held(held, log.name),
                "reason": plan.cut.reason,
                **_owner(held, log.name),
                **_link(held, log.name),
            }
        )
        if plan.cut.valid_after:
            actions[-1]["salvaged"] = _salvage(held, log.name, plan.cut.valid_after, backup)
    for seg in plan.deleted_segments:
        for f in (seg.log, seg.offset_index, seg.time_index, seg.txn_index):
            if f is not None:
                actions.append(_whole_file_backup("delete", held, named(f), backup))
    for seg, why in plan.rebuild_indexes:
        keep = plan.cut.keep_bytes if plan.cut is not None and seg is plan.cut.segment else seg.size
        # read through the held directory: the bytes the plan was made from
        new_index, new_time = build_indexes(
            Segment(seg.base_offset, held.via(seg.log)), keep, plan.index_interval
        )
        targets = [(named(seg.offset_index or seg.log.with_suffix(".index")), new_index)]
        if seg.time_index is not None:
            targets.append((named(seg.time_index), new_time))
        for path, data in targets:
            action = (
                _whole_file_backup("rewrite", held, path, backup)
                if held.exists(path.name)
                else {"action": "create", "file": str(path), **_owner(held, seg.log.name)}  # as its segment
            )
            action["reason"] = why
            action["newContentHex"] = data.hex()
            actions.append(action)
        if (
            seg.txn_index is not None
            and plan.new_log_end is not None
            and seg is getattr(plan.cut, "segment", None)
        ):
            entries, _ = index.read_txn_index(held.via(seg.txn_index))
            kept = b"".join(
                index.TXN_INDEX_ENTRY.pack(
                    e.version, e.producer_id, e.first_offset, e.last_offset, e.last_stable_offset
                )
                for e in entries
                if e.last_offset < plan.new_log_end
            )
            action = _whole_file_backup("rewrite", held, named(seg.txn_index), backup)
            action.update(reason="aborted transactions past the new log end", newContentHex=kept.hex())
            actions.append(action)
    for path, why in plan.deleted_snapshots:
        action = _whole_file_backup("delete", held, named(path), backup)
        action["reason"] = why
        actions.append(action)
    if plan.epoch_checkpoint_keep is not None:
        path = plan.partition.leader_epoch_checkpoint
        assert path is not None
        read = checkpoints.read_leader_epoch_checkpoint(held.via(path))
        entries = read.entries[: plan.epoch_checkpoint_keep]
        text = f"0\n{len(entries)}\n" + "".join(f"{e.epoch} {e.start_offset}\n" for e in entries)
        action = _whole_file_backup("rewrite", held, named(path), backup)
        action.update(
            reason="leader epochs that start past the new log end", newContentHex=text.encode().hex()
        )
        actions.append(action)
    fsync_dir(backup)
    return actions


def _link(held: HeldDir, name: str) -> dict:
    link = _link_of(held, name)
    return {} if link is None else {"link": link}


def _whole_file_backup(kind: str, held: HeldDir, path: Path, backup: Path) -> dict:
    name = f"{held.path.name}--{path.name}"
    sha = _back_up_range(held, path.name, backup / name)
    return {
        "action": kind,
        "file": str(path),
        "size": held.stat(path.name).st_size,
        "backup": name,
        "originalSha256": sha,
        **_owner(held, path.name),
        **_link(held, path.name),
    }


def _salvage(held: HeldDir, log_name: str, positions: list[int], backup: Path) -> dict:
    """The valid entries after a hole, as a segment of their own, so none of them is lost."""
    name = f"salvaged-{log_name}"
    log = held.via(log_name)
    count = 0
    fd = os.open(backup / name, _NEW, 0o600)
    src = _open_read(held, log_name)
    with open(fd, "wb") as out:
        try:
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
                    out.write(os.pread(src, entry.entry_size, entry.position))
                    count += 1
        finally:
            os.close(src)
        out.flush()
        os.fsync(out.fileno())
    return {"file": name, "entries": count, "sha256": _sha256_file(backup / name)}


class Unfinishable(FindingsError):
    """An interrupted repair whose files changed since: it is not carried out over them."""


def _apply_actions(partition: Path, actions: list[dict], verify: bool = False, *, held: HeldDir) -> None:
    """Carry out a manifest's actions. Each is idempotent, so a rerun after a crash carries out the rest;
    `verify` (a rerun) first checks that each file holds its old or its new bytes, nothing else."""
    try:
        for a in actions:
            _apply_action(held, partition, a, verify)
    finally:
        _remove_leftovers(held)
    held.fsync()


def _apply_action(held: HeldDir, partition: Path, a: dict, verify: bool) -> None:
    path = confined(partition, Path(a["file"]))
    name = path.name
    _check_link(held, path, a)
    kind = a["action"]
    if kind == "truncate":
        _cut(held, path, a, verify)
    elif kind in ("rewrite", "create"):
        new = bytes.fromhex(a["newContentHex"])
        if verify and kind == "rewrite" and held.exists(name):
            if _size(held, name) == len(new) and _sha256_held(held, name) == hashlib.sha256(new).hexdigest():
                return
            if _sha256_held(held, name) != a["originalSha256"]:
                raise Unfinishable(f"{path}: changed since")
        _write_atomic(held, name, new, a)
    elif kind == "delete":
        if verify and held.exists(name) and a.get("link") is None:
            if _sha256_held(held, name) != a["originalSha256"]:
                raise Unfinishable(f"{path}: changed since")
        held.unlink(name, missing_ok=True)  # a link: only the name in the partition directory goes


def _check_link(held: HeldDir, path: Path, a: dict) -> None:
    """A link a manifest did not allow is refused; one it allowed gets a copy of its own first (its
    target and its other names keep their bytes)."""
    link = _link_of(held, path.name)
    if link is None:
        return
    if a.get("link") is None:
        raise InputError(_link_refusal(path, link))
    if a["action"] == "truncate":  # a rewrite or a delete replaces or removes the name only
        copy = path.name + PRIVATE_SUFFIX
        held.unlink(copy, missing_ok=True)
        src = _open_read(held, path.name)
        try:
            out = held.open(copy, _NEW)
            try:
                _copy_fd(src, out)
                _give_owner(out, a)
            finally:
                os.close(out)
        finally:
            os.close(src)
        held.replace(copy, path.name)


def _cut(held: HeldDir, path: Path, a: dict, verify: bool) -> None:
    fd = held.open(path.name, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        if size == a["newSize"]:
            return
        if verify and (size < a["newSize"] or _sha256_fd(fd, a["newSize"]) != a["keptSha256"]):
            raise Unfinishable(f"{path}: changed since")
        os.ftruncate(fd, a["newSize"])
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_leftovers(held: HeldDir) -> None:
    """ktool's temporary files in the partition directory (a crash's, or this run's on an error)."""
    for name in held.names():
        if name.endswith((TEMP_SUFFIX, PRIVATE_SUFFIX)) or name == POINTER_TMP:
            held.unlink(name, missing_ok=True)


def _finish(manifest_path: Path, manifest: dict, held: HeldDir, verify: bool) -> None:
    _apply_actions(_manifest_partition(manifest), manifest["actions"], verify=verify, held=held)
    manifest["state"] = "applied"
    _write_manifest(manifest_path.parent, manifest)
    drop_pointer(held, manifest_path)


def _same_partition(doc: dict, held: HeldDir) -> bool:
    """A manifest's partition is the held directory: the same device and inode when it recorded them,
    else the same path once resolved (manifests before 0.x recorded the path only)."""
    raw = doc.get("partition")
    if not isinstance(raw, str):
        return False
    if "inode" in doc:
        return (doc.get("device"), doc.get("inode")) == (held.dev, held.ino)
    return os.path.realpath(raw) == str(held.path)


def interrupted(backup_root: Path, held: HeldDir) -> list[Path]:
    """The manifests of repairs of this partition directory that were begun and not finished
    (`prepared`), oldest first: those in `backup_root`, and the one the directory's pointer names
    (whatever state directory its run had). InputError for a pointer whose manifest cannot be read."""
    found: dict[str, Path] = {}
    paths = sorted(backup_root.glob(f"{held.path.name}-*/{MANIFEST}")) if backup_root.is_dir() else []
    for path in paths:
        try:
            doc = read_json(path, "truncate manifest", "actions")
        except InputError:
            continue
        if doc.get("state") == "prepared" and _same_partition(doc, held):
            found[os.path.realpath(path)] = path
    pointed = pointed_manifest(held)
    if pointed is not None and os.path.realpath(pointed) not in found:
        try:
            doc = read_json(pointed, "truncate manifest", "actions")
        except InputError as exc:
            raise InputError(
                f"{held.path}: an unfinished ktool truncate left {held.shown(POINTER)}, and its manifest "
                f"cannot be read ({exc}); bring that backup back or remove the pointer"
            ) from None
        if doc.get("state") == "prepared" and _same_partition(doc, held):
            found[os.path.realpath(pointed)] = pointed
    return sorted(found.values(), key=lambda p: p.parent.name)


def resume(manifest_path: Path, held: HeldDir) -> None:
    """Carry out the rest of an interrupted repair (the caller holds the log dir's lock); Unfinishable
    (exit 1, one line saying to `--undo` it) when a file it names holds neither its old nor its new
    bytes."""
    manifest = read_json(manifest_path, "truncate manifest", "actions")
    partition = _manifest_partition(manifest)
    try:
        if not _same_partition(manifest, held):
            raise InputError(f"{held.path}: not the directory the manifest names")
        for a in manifest["actions"]:
            confined(partition, Path(a["file"]))
        held.check_in_place()
        _finish(manifest_path, manifest, held, verify=True)
    except (Unfinishable, InputError) as exc:  # changed since, or a link made since
        _remove_leftovers(held)
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


def manifest_of(given: Path) -> Path:
    """The manifest `--undo` names: the file itself or its backup directory, by any path (relative,
    through links), made absolute as the kernel resolves it."""
    path = Path(os.path.realpath(given))
    return path / MANIFEST if path.is_dir() else path


def undo_targets(manifest_path: Path) -> list[Path]:
    """The partition directory a manifest restores (for asking its log dir's lock first)."""
    manifest_path = manifest_of(manifest_path)
    if not manifest_path.is_file():
        return []
    try:
        return [Path(read_json(manifest_path, "truncate manifest", "actions")["partition"])]
    except (KeyError, TypeError, ValueError, UsageError, InputError):
        return []  # `undo` itself says what is wrong with the manifest


def undo(manifest_path: Path) -> list[str]:
    """Restore every file a manifest names to its state before `ktool truncate`, checked by sha256.
    Every path it names is checked to lie in its partition directory (and every backup in the backup
    directory) before any file is touched; the partition directory is opened once, checked to be the
    one the repair changed (device and inode), and every file restored relative to it."""
    manifest_path = manifest_of(manifest_path)
    manifest = read_json(manifest_path, "truncate manifest", "actions")
    backup = manifest_path.parent
    partition = _manifest_partition(manifest)
    if manifest.get("state") == "undone":
        # Undoing twice must change nothing: the files may have moved on since (a broker ran).
        return [f"already undone: {manifest_path}; nothing changed"]
    for a in manifest["actions"]:
        confined(partition, Path(a["file"]))
        if "backup" in a:
            confined(backup, backup / a["backup"])
    with closing(hold_recorded(partition, manifest.get("device"), manifest.get("inode"))) as held:
        for a in manifest["actions"]:
            path = Path(a["file"])
            link = _link_of(held, path.name)
            if a["action"] == "truncate" and link is not None and link != a.get("link"):
                # restored in place: a link made since the repair is not written through
                raise InputError(_link_refusal(path, link))
        done: list[str] = []
        with write_lock(held.path.parent, "ktool truncate --undo"):
            for a in reversed(manifest["actions"]):
                done.append(_undo_action(held, a, backup))
            _remove_leftovers(held)
            held.fsync()
            manifest["state"] = "undone"
            _write_manifest(backup, manifest)
            drop_pointer(held, manifest_path)
    return done


def _undo_action(held: HeldDir, a: dict, backup: Path) -> str:
    path = Path(a["file"])
    name = path.name
    kind = a["action"]
    if kind == "create":
        if not held.exists(name):
            return f"{path} already absent"
        held.unlink(name)
        return f"removed {path}"
    link = a.get("link") or ""
    if link.startswith("symlink:"):
        target = link[len("symlink:") :]
        st = held.lstat(name)
        if st is not None and stat.S_ISLNK(st.st_mode) and held.readlink(name) == target:
            return f"{path} already as before"
        # ktool never wrote through the link: its target still holds the old bytes
        where = Path(os.path.join(f"/proc/self/fd/{held.fd}", target))  # relative to the held directory
        if os.path.exists(where) and _sha256_file(where) == a["originalSha256"]:
            tmp = name + TEMP_SUFFIX
            held.unlink(tmp, missing_ok=True)
            held.symlink(target, tmp)
            held.replace(tmp, name)
            return f"restored the link {path} -> {target}"
    if kind == "truncate":
        if (
            held.exists(name)
            and _size(held, name) == a["originalSize"]
            and _sha256_held(held, name) == a["originalSha256"]
        ):
            return f"{path} already whole"
        if _sha256_held(held, name, a["newSize"]) != a["keptSha256"]:
            raise FindingsError(f"{path}: changed since ktool truncated it; not restoring over it")
        fd = held.open(name, os.O_RDWR)
        try:
            tail = os.open(backup / a["backup"], os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.ftruncate(fd, a["newSize"])
                os.lseek(fd, a["newSize"], os.SEEK_SET)
                _copy_fd(tail, fd)
            finally:
                os.close(tail)
            restored = _sha256_fd(fd)
        finally:
            os.close(fd)
        if restored != a["originalSha256"]:
            raise FindingsError(f"{path}: restored bytes do not match the original sha256")
        return f"restored {plural(a['originalSize'] - a['newSize'], 'byte')} to {path}"
    # delete / rewrite: the whole file is in the backup
    st = held.lstat(name)
    if st is not None and not stat.S_ISLNK(st.st_mode) and _sha256_held(held, name) == a["originalSha256"]:
        return f"{path} already as before"
    tmp = name + TEMP_SUFFIX
    held.unlink(tmp, missing_ok=True)
    src = os.open(backup / a["backup"], os.O_RDONLY | os.O_CLOEXEC)
    try:
        fd = held.open(tmp, _NEW)
        try:
            sha = _copy_fd(src, fd)
            if sha != a["originalSha256"]:
                held.unlink(tmp)
                raise FindingsError(
                    f"{backup / a['backup']}: backup does not match its sha256; not restoring"
                )
            _give_owner(fd, a)
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        os.close(src)
    held.replace(tmp, name)
    return f"restored {path}"
