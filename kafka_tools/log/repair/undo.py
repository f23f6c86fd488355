"""`ktool truncate --undo`: every file a manifest names put back as it was before the repair, checked by
sha256, in the reverse order of the actions; twice is the same as once. The manifest's format and the
leftovers a run may leave are log/repair/apply.py's."""

from __future__ import annotations

import os
import stat
from contextlib import closing
from pathlib import Path

from kafka_tools.errors import FindingsError, InputError, UsageError
from kafka_tools.format.plural import plural
from kafka_tools.keep.durable import read_json
from kafka_tools.log.repair.apply import file_size, manifest_partition, remove_leftovers, write_manifest
from kafka_tools.log.repair.file_copies import (
    NEW_FILE,
    TEMP_SUFFIX,
    copy_fd,
    give_owner,
    sha256_fd,
    sha256_file,
    sha256_held,
)
from kafka_tools.log.repair.held_dir import MANIFEST, HeldDir, hold_recorded
from kafka_tools.log.repair.links import confined, link_of, link_refusal
from kafka_tools.log.repair.pointer import drop_pointer
from kafka_tools.log.repair.write_lock import write_lock


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
    partition = manifest_partition(manifest)
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
            link = link_of(held, path.name)
            if a["action"] == "truncate" and link is not None and link != a.get("link"):
                # restored in place: a link made since the repair is not written through
                raise InputError(link_refusal(path, link))
        done: list[str] = []
        with write_lock(held.path.parent, "ktool truncate --undo"):
            for a in reversed(manifest["actions"]):
                done.append(_undo_action(held, a, backup))
            remove_leftovers(held)
            held.fsync()
            manifest["state"] = "undone"
            write_manifest(backup, manifest)
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
        if os.path.exists(where) and sha256_file(where) == a["originalSha256"]:
            tmp = name + TEMP_SUFFIX
            held.unlink(tmp, missing_ok=True)
            held.symlink(target, tmp)
            held.replace(tmp, name)
            return f"restored the link {path} -> {target}"
    if kind == "truncate":
        if (
            held.exists(name)
            and file_size(held, name) == a["originalSize"]
            and sha256_held(held, name) == a["originalSha256"]
        ):
            return f"{path} already whole"
        if sha256_held(held, name, a["newSize"]) != a["keptSha256"]:
            raise FindingsError(f"{path}: changed since ktool truncated it; not restoring over it")
        fd = held.open(name, os.O_RDWR)
        try:
            tail = os.open(backup / a["backup"], os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.ftruncate(fd, a["newSize"])
                os.lseek(fd, a["newSize"], os.SEEK_SET)
                copy_fd(tail, fd)
            finally:
                os.close(tail)
            restored = sha256_fd(fd)
        finally:
            os.close(fd)
        if restored != a["originalSha256"]:
            raise FindingsError(f"{path}: restored bytes do not match the original sha256")
        return f"restored {plural(a['originalSize'] - a['newSize'], 'byte')} to {path}"
    # delete / rewrite: the whole file is in the backup
    st = held.lstat(name)
    if st is not None and not stat.S_ISLNK(st.st_mode) and sha256_held(held, name) == a["originalSha256"]:
        return f"{path} already as before"
    tmp = name + TEMP_SUFFIX
    held.unlink(tmp, missing_ok=True)
    src = os.open(backup / a["backup"], os.O_RDONLY | os.O_CLOEXEC)
    try:
        fd = held.open(tmp, NEW_FILE)
        try:
            sha = copy_fd(src, fd)
            if sha != a["originalSha256"]:
                held.unlink(tmp)
                raise FindingsError(
                    f"{backup / a['backup']}: backup does not match its sha256; not restoring"
                )
            give_owner(fd, a)
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        os.close(src)
    held.replace(tmp, name)
    return f"restored {path}"
