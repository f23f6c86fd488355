"""A partition directory resolved once and held by descriptor, so no rename of a path can redirect a
repair that is under way.

`hold_partition` opens the directory a PATH names the way the kernel resolves it (`..` after a symbolic
link goes up from the link's target, as `open` does, not by taking a name away), refuses it when its
last component is itself a symbolic link (unless the operator says to follow it), and records what it
got: the path `/proc/self/fd/N` reads back, and the device and inode. From then on everything goes
through the descriptor: the plan's reads (`via`: `/proc/self/fd/N/NAME`, which the kernel looks up in
the held directory whatever has been renamed since) and every open, rename, unlink and create
(`dir_fd=`). Swapping the path for a link to another directory (`renameat2(RENAME_EXCHANGE)`) then
changes nothing ktool reads or writes; `check_in_place` turns such a swap into a clean refusal before
the first change, because the manifest names the directory by its path.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from kafka_tools.errors import InputError, os_reason
from kafka_tools.format.kinds import topic_partition
from kafka_tools.log.checks.recovery import RecoveryPlan
from kafka_tools.log.files.dirs import Partition, read_partition

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
MANIFEST = "manifest.json"  # a repair's record, in its backup directory (log/repair.py writes it)

# A rerun under another state directory (`sudo` and `sudo -i` differ in XDG_STATE_HOME and HOME) does not
# see the first run's backups; the pointer, written before the first change and removed after the last,
# names its manifest from the partition directory itself. Its name ends in `.deleted`: Kafka's LogLoader
# (removeTempFilesAndCollectSwapFiles) deletes a stray `*.deleted` file of a partition directory at start-up
# without parsing its name (a `*.cleaned` one would go through offsetFromFile, which wants a number), and
# 0.9's Log.loadSegments deletes it too; a broker that starts on a half-repaired partition has taken the
# repair over, so the pointer going with it is right. It ends in neither `.checkpoint.deleted` (a KRaft
# snapshot's, which LogLoader keeps) nor `.swap`.
POINTER = ".ktool-truncate-pending.deleted"
POINTER_TMP = ".ktool-truncate-pending.tmp.deleted"


def may_be_unfinished(held: HeldDir, backup_root: Path) -> bool:
    """Whether an unfinished repair of this partition could exist: its pointer, or a backup of it in
    `backup_root`. One stat and one glob, so that a dry run of a partition nobody began to repair
    imports none of the repair machinery (hashing, journals) to find out."""
    return held.exists(POINTER) or any(backup_root.glob(f"{held.path.name}-*/{MANIFEST}"))


@dataclass(init=False, repr=False, eq=False)
class HeldDir:
    """An open directory: `path` as the kernel resolved it when opened, its device and inode."""

    path: Path
    fd: int
    dev: int
    ino: int

    def __init__(self, path: Path, fd: int, dev: int, ino: int) -> None:
        self.path = path
        self.fd = fd
        self.dev = dev
        self.ino = ino

    def via(self, name: str | os.PathLike) -> Path:
        """A path to the file `name` of the held directory for readers that take a path: the kernel
        resolves `/proc/self/fd/N` to the open directory itself, never by its name."""
        return Path(f"/proc/self/fd/{self.fd}") / Path(name).name

    def said(self, text: str) -> str:
        """A message naming `via` paths, said with the directory's own path instead."""
        io = f"/proc/self/fd/{self.fd}"
        return str(self.path) if text == io else text.replace(io + "/", f"{self.path}/")

    def shown(self, name: str | os.PathLike) -> Path:
        """The file `name` of the directory as messages and manifests name it."""
        return self.path / Path(name).name

    def open(self, name: str, flags: int, mode: int = 0o600) -> int:
        return os.open(name, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=self.fd)

    def lstat(self, name: str) -> os.stat_result | None:
        try:
            return os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def stat(self, name: str) -> os.stat_result:
        """Through a link: the file's (what a manifest records as the owner of a linked file)."""
        return os.stat(name, dir_fd=self.fd)

    def exists(self, name: str) -> bool:
        return self.lstat(name) is not None

    def readlink(self, name: str) -> str:
        return os.readlink(name, dir_fd=self.fd)

    def unlink(self, name: str, missing_ok: bool = False) -> None:
        try:
            os.unlink(name, dir_fd=self.fd)
        except FileNotFoundError:
            if not missing_ok:
                raise

    def replace(self, src: str, dst: str) -> None:
        os.replace(src, dst, src_dir_fd=self.fd, dst_dir_fd=self.fd)

    def symlink(self, target: str, name: str) -> None:
        os.symlink(target, name, dir_fd=self.fd)

    def names(self) -> list[str]:
        return os.listdir(self.fd)

    def fsync(self) -> None:
        os.fsync(self.fd)

    def check_in_place(self) -> None:
        """InputError (exit 3, one line) when the path no longer names the held directory (renamed,
        swapped for a link or another directory since it was opened): nothing is changed then."""
        try:
            st = os.lstat(self.path)
        except OSError:
            st = None
        if st is None or (st.st_dev, st.st_ino) != (self.dev, self.ino):
            raise InputError(directory_changed(self.path))

    def reopened(self, follow_links: bool = False) -> HeldDir:
        """The same directory opened again by its path (a plan waiting to be applied keeps no
        descriptor: 10,000 partitions would exhaust them), checked to be the one planned on: the
        same device and inode, else InputError (exit 3, one line) and nothing is changed."""
        again = hold_partition(self.path, follow_links)
        if (again.dev, again.ino) != (self.dev, self.ino):
            again.close()
            raise InputError(directory_changed(self.path))
        return again

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


def directory_changed(path: Path) -> str:
    return (
        f"{path}: the partition directory changed (renamed or replaced) while ktool truncate held it; "
        "nothing more was changed, run ktool truncate again"
    )


def hold_partition(path: Path, follow_links: bool = False) -> HeldDir:
    """The partition directory `path` names, opened once. InputError (exit 3, one line) when it cannot
    be opened, or when its last component is a symbolic link and not `follow_links` (a repair changes
    the partition directories of its log dir, not a directory elsewhere that a link points to)."""
    followed = False
    try:
        fd = os.open(path, _DIR_FLAGS | os.O_NOFOLLOW)
    except OSError as exc:
        # O_NOFOLLOW|O_DIRECTORY on a link: ELOOP, or ENOTDIR (Linux checks the type first)
        link = exc.errno in (errno.ELOOP, errno.ENOTDIR) and _is_symlink(path)  # asked once: it may move
        if not link and exc.errno in (errno.ELOOP, errno.ENOTDIR) and os.path.isdir(path):
            raise InputError(directory_changed(path)) from None  # a link a moment ago, a directory now
        if not link:
            raise InputError(f"{path}: cannot open the partition directory: {os_reason(exc)}") from None
        if not follow_links:
            raise InputError(symlinked_partition(path)) from None
        followed = True
        try:
            fd = os.open(path, _DIR_FLAGS)
        except OSError as exc2:
            raise InputError(f"{path}: cannot open the partition directory: {os_reason(exc2)}") from None
    try:
        st = os.fstat(fd)
        said = _said_path(path, Path(os.readlink(f"/proc/self/fd/{fd}")), followed)
        again = os.lstat(said)
        if (again.st_dev, again.st_ino) != (st.st_dev, st.st_ino):
            raise FileNotFoundError
    except OSError:
        os.close(fd)
        raise InputError(directory_changed(path)) from None
    except BaseException:
        os.close(fd)
        raise
    return HeldDir(said, fd, st.st_dev, st.st_ino)


def _said_path(given: Path, resolved: Path, followed: bool) -> Path:
    """The path the directory is named by from now on: the one given, made absolute by name (as an
    operator knows it, `/var/lib/kafka` linked to `/data/kafka`), when taking `..` away by name cannot
    change what it names; otherwise (a `..`, possibly after a link; a followed link) the path the
    kernel resolved. The caller checks that it names the directory opened (or it changed meanwhile)."""
    if followed or ".." in given.parts:
        return resolved
    return Path(os.path.abspath(given))


def hold_recorded(path: Path, dev: int | None, ino: int | None) -> HeldDir:
    """The partition directory a manifest names, opened as `hold_partition` does (never through a
    link), and checked to be the directory the repair changed: the same device and inode, when the
    manifest recorded them (older manifests did not). InputError (exit 3, one line) otherwise."""
    held = hold_partition(path)
    if dev is not None and (held.dev, held.ino) != (dev, ino):
        held.close()
        raise InputError(
            f"{path}: not the partition directory the repair changed (replaced since: another device "
            "and inode); ktool changes nothing there"
        )
    return held


def symlinked_partition(path: Path) -> str:
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return (
        f"{path}: a symbolic link to {target}, not a partition directory of its log dir; ktool truncate "
        "does not follow it (--follow-dir-links repairs the directory it points to)"
    )


def _is_symlink(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except OSError:
        return False


def read_held_partition(held: HeldDir) -> Partition:
    """The held partition directory listed through its descriptor (its files' paths are `via` paths:
    planning reads them from the held directory, whatever is renamed meanwhile). The caller holds the
    log dir's lock, so no broker writes it. `shown_as` turns the plan made from it back into the
    directory's own paths for messages and manifests."""
    where = topic_partition(held.path.name)
    if where is None:
        raise InputError(f"{held.path}: not a partition directory (expected topic-N)")
    return read_partition(Path(f"/proc/self/fd/{held.fd}"), live=False, where=where)


def shown_as(held: HeldDir, part: Partition, plan: RecoveryPlan | None = None) -> None:
    """Every path of `part` (and of the plan made from it), and every message naming one, said as the
    held directory's path instead of its `/proc/self/fd/N` (in place: the plan's segments are the
    partition's own objects, compared by identity)."""
    io = f"/proc/self/fd/{held.fd}"
    text = held.said

    def path(p: Path | None) -> Path | None:
        return None if p is None else held.shown(p) if str(p.parent) == io else p

    part.path = held.path
    for seg in part.segments:
        seg.log = path(seg.log)  # type: ignore[assignment]
        seg.offset_index, seg.time_index, seg.txn_index = (
            path(seg.offset_index),
            path(seg.time_index),
            path(seg.txn_index),
        )
    for attr in ("snapshots", "transient", "orphans", "other", "metadata_snapshots"):
        setattr(part, attr, [path(p) for p in getattr(part, attr)])
    part.leader_epoch_checkpoint = path(part.leader_epoch_checkpoint)
    part.unreadable = [(Path(text(str(p))), text(why)) for p, why in part.unreadable]
    if plan is None:
        return
    if plan.cut is not None:
        plan.cut.reason = text(plan.cut.reason)
    plan.rebuild_indexes = [(seg, text(why)) for seg, why in plan.rebuild_indexes]
    plan.deleted_snapshots = [(path(p), text(why)) for p, why in plan.deleted_snapshots]  # type: ignore[misc]
    plan.notes = [text(n) for n in plan.notes]
    for f in plan.unrepairable:
        f.file, f.message = text(f.file), text(f.message)
