"""Applying a recovery plan safely: the log dir locked, every byte removed kept in a backup with a
manifest, files replaced atomically, and `--undo` putting them back byte for byte.

What it never does: write through a link, or anywhere but the partition directory it planned on. Every
file it changes, deletes or restores is a name directly in the partition directory (checked for every
path a manifest names), opened, renamed, unlinked or created relative to that directory held open
(log/repair/held_dir.py: resolved once, its device and inode checked), so no rename of a path redirects it;
a symbolic link, or a file with other hard links (a `cp -al` snapshot), is refused unless the
operator allows links, and then it is first given a copy of its own so the other names keep their bytes.

A crash at any point leaves a state a rerun can finish: the backup directory is written in a hidden
staging directory and renamed into place with its manifest (`prepared`), the changes follow, and the
manifest says `applied` last. A rerun that finds its partition's `prepared` manifest carries it out
(`resume`), or says in one line to `--undo` it when the files changed since; the partition directory's
`.ktool-truncate-pending.deleted` names the manifest meanwhile, for a rerun with another state directory.

The order of writes, fsyncs and renames is what the safety rests on (tests/test_kill_points.py kills
the process at each step): apply and resume read top to bottom here, `--undo` in log/repair/undo.py;
the bytes they copy and hash are log/repair/file_copies.py's, the link rules log/repair/links.py's.
"""

from __future__ import annotations

import errno
import hashlib
import os
import shutil
import tempfile
import time
from contextlib import closing
from pathlib import Path

from kafka_tools import __version__
from kafka_tools.errors import FindingsError, InputError, os_reason
from kafka_tools.format import checkpoints, index
from kafka_tools.format.kafka07 import iter_kafka07_entries
from kafka_tools.format.kinds import FileKind, base_offset_of, kind_of
from kafka_tools.format.problems import Problem
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.keep.durable import fsync_dir, read_json, write_json
from kafka_tools.log.checks.recovery import RecoveryPlan
from kafka_tools.log.files.dirs import Segment
from kafka_tools.log.files.discover import check_backup_location
from kafka_tools.log.repair.file_copies import (
    NEW_FILE,
    TEMP_SUFFIX,
    back_up_range,
    copy_fd,
    give_owner,
    open_read,
    owner,
    sha256_fd,
    sha256_file,
    sha256_held,
    write_atomic,
)
from kafka_tools.log.repair.held_dir import (
    MANIFEST,
    POINTER,
    POINTER_TMP,
    HeldDir,
    hold_partition,
)
from kafka_tools.log.repair.links import check_links, confined, link_of, link_refusal
from kafka_tools.log.repair.pointer import drop_pointer, pointed_manifest, write_pointer
from kafka_tools.log.repair.rebuilt_indexes import build_indexes

PRIVATE_SUFFIX = ".ktool-copy.cleaned"  # a link's own copy, before it replaces the link
STAGING_SUFFIX = ".ktool-staging"  # a backup directory being written, in the backup root


# -- applying, with a backup and a manifest ----------------------------------------------------------------


def write_manifest(backup: Path, manifest: dict) -> None:
    write_json(backup / MANIFEST, manifest)


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
    if plan.cut is not None and file_size(held, plan.cut.segment.log.name) != plan.cut.size:
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
        write_manifest(staging, manifest)
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
        write_pointer(held, backup / MANIFEST)
        _finish(backup / MANIFEST, manifest, held, verify=False)
    except OSError as exc:  # the log dir's disk full or failing, half way: the manifest says what is left
        raise InputError(
            f"{exc.filename or partition}: {os_reason(exc)} while repairing {part.name}, half done: run "
            f"the same ktool truncate again to finish it, or ktool truncate --undo {backup / MANIFEST}"
        ) from None
    return backup


def file_size(held: HeldDir, name: str) -> int | None:
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
        sha_tail = back_up_range(held, log.name, backup / name, plan.cut.keep_bytes)
        actions.append(
            {
                "action": "truncate",
                "file": str(log),
                "originalSize": plan.cut.size,
                "newSize": plan.cut.keep_bytes,
                "backup": name,
                "backupSha256": sha_tail,
                "keptSha256": sha256_held(held, log.name, plan.cut.keep_bytes),
                "originalSha256": sha256_held(held, log.name),
                "reason": plan.cut.reason,
                **owner(held, log.name),
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
                else {"action": "create", "file": str(path), **owner(held, seg.log.name)}  # as its segment
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
    link = link_of(held, name)
    return {} if link is None else {"link": link}


def _whole_file_backup(kind: str, held: HeldDir, path: Path, backup: Path) -> dict:
    name = f"{held.path.name}--{path.name}"
    sha = back_up_range(held, path.name, backup / name)
    return {
        "action": kind,
        "file": str(path),
        "size": held.stat(path.name).st_size,
        "backup": name,
        "originalSha256": sha,
        **owner(held, path.name),
        **_link(held, path.name),
    }


def _salvage(held: HeldDir, log_name: str, positions: list[int], backup: Path) -> dict:
    """The valid entries after a hole, as a segment of their own, so none of them is lost."""
    name = f"salvaged-{log_name}"
    log = held.via(log_name)
    count = 0
    fd = os.open(backup / name, NEW_FILE, 0o600)
    src = open_read(held, log_name)
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
    return {"file": name, "entries": count, "sha256": sha256_file(backup / name)}


class Unfinishable(FindingsError):
    """An interrupted repair whose files changed since: it is not carried out over them."""


def _apply_actions(partition: Path, actions: list[dict], verify: bool = False, *, held: HeldDir) -> None:
    """Carry out a manifest's actions. Each is idempotent, so a rerun after a crash carries out the rest;
    `verify` (a rerun) first checks that each file holds its old or its new bytes, nothing else."""
    try:
        for a in actions:
            _apply_action(held, partition, a, verify)
    finally:
        remove_leftovers(held)
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
            if (
                file_size(held, name) == len(new)
                and sha256_held(held, name) == hashlib.sha256(new).hexdigest()
            ):
                return
            if sha256_held(held, name) != a["originalSha256"]:
                raise Unfinishable(f"{path}: changed since")
        write_atomic(held, name, new, a)
    elif kind == "delete":
        if verify and held.exists(name) and a.get("link") is None:
            if sha256_held(held, name) != a["originalSha256"]:
                raise Unfinishable(f"{path}: changed since")
        held.unlink(name, missing_ok=True)  # a link: only the name in the partition directory goes


def _check_link(held: HeldDir, path: Path, a: dict) -> None:
    """A link a manifest did not allow is refused; one it allowed gets a copy of its own first (its
    target and its other names keep their bytes)."""
    link = link_of(held, path.name)
    if link is None:
        return
    if a.get("link") is None:
        raise InputError(link_refusal(path, link))
    if a["action"] == "truncate":  # a rewrite or a delete replaces or removes the name only
        copy = path.name + PRIVATE_SUFFIX
        held.unlink(copy, missing_ok=True)
        src = open_read(held, path.name)
        try:
            out = held.open(copy, NEW_FILE)
            try:
                copy_fd(src, out)
                give_owner(out, a)
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
        if verify and (size < a["newSize"] or sha256_fd(fd, a["newSize"]) != a["keptSha256"]):
            raise Unfinishable(f"{path}: changed since")
        os.ftruncate(fd, a["newSize"])
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_leftovers(held: HeldDir) -> None:
    """ktool's temporary files in the partition directory (a crash's, or this run's on an error)."""
    for name in held.names():
        if name.endswith((TEMP_SUFFIX, PRIVATE_SUFFIX)) or name == POINTER_TMP:
            held.unlink(name, missing_ok=True)


def _finish(manifest_path: Path, manifest: dict, held: HeldDir, verify: bool) -> None:
    _apply_actions(manifest_partition(manifest), manifest["actions"], verify=verify, held=held)
    manifest["state"] = "applied"
    write_manifest(manifest_path.parent, manifest)
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
    partition = manifest_partition(manifest)
    try:
        if not _same_partition(manifest, held):
            raise InputError(f"{held.path}: not the directory the manifest names")
        for a in manifest["actions"]:
            confined(partition, Path(a["file"]))
        held.check_in_place()
        _finish(manifest_path, manifest, held, verify=True)
    except (Unfinishable, InputError) as exc:  # changed since, or a link made since
        remove_leftovers(held)
        raise Unfinishable(
            f"{partition.name}: the repair in {manifest_path} was interrupted and cannot be finished "
            f"({exc}); put the files back first: ktool truncate --undo {manifest_path}"
        ) from None


def manifest_partition(manifest: dict) -> Path:
    raw = manifest.get("partition")
    partition = Path(raw) if isinstance(raw, str) else None
    if partition is None or not partition.is_absolute() or str(partition) != os.path.normpath(raw):
        raise InputError(f"{raw}: not a partition directory a manifest may name")
    return partition
