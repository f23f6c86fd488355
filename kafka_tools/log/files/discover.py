"""What a list of user paths names, as the broker's log.dirs hold them: segment files, partition
directories (`topic-N`), log dirs (holding partition directories and checkpoint files) or any
directory above log dirs (`discover` sorts them out, and decides each single file's kind once); the
log dirs that own them, and whether a running broker holds one (`refuse_if_live`). Built on the
partition model of dirs.py."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import InputError, UsageError, path_error
from kafka_tools.format.kinds import BOOTSTRAP_CHECKPOINT, OFFSET_CHECKPOINTS, FileKind, kind_of, partition_of
from kafka_tools.format.shared_methods import SharedMethods
from kafka_tools.log.files.broker_lock import LOCK_FILE, is_live
from kafka_tools.log.files.dirs import CLEAN_SHUTDOWN_FILE, SEGMENT_KINDS, LogDir, Partition, read_partition

_LOG_DIR_ONLY = frozenset({"meta.properties", LOCK_FILE, CLEAN_SHUTDOWN_FILE, BOOTSTRAP_CHECKPOINT})


def is_partition_dir(path: Path) -> bool:
    """A `topic-N` directory, unless it holds what only a log dir holds (a log dir may be named
    `kafka-logs-1` too: Kafka's own test runs leave `kafka-<number>` log dirs)."""
    return path.is_dir() and partition_of(path / "x") is not None and not has_log_dir_markers(path)


def has_log_dir_markers(path: Path) -> bool:
    """The files only a broker's log dir holds (a lock, checkpoints, meta.properties)."""
    return any((path / name).exists() for name in (*OFFSET_CHECKPOINTS, *_LOG_DIR_ONLY))


def is_log_dir(path: Path) -> bool:
    """A directory holding partition directories or the broker's checkpoint files."""
    if not path.is_dir():
        return False
    names = {p.name for p in path.iterdir()}
    if names & (OFFSET_CHECKPOINTS | _LOG_DIR_ONLY):
        return True
    return any(is_partition_dir(p) and _holds_segments(p) for p in path.iterdir())


def _holds_segments(path: Path) -> bool:
    """A `name-N` directory is a partition when it holds segment files (any dir may be named so)."""
    try:
        return any(kind_of(f) in (*SEGMENT_KINDS, FileKind.OFFSET_INDEX) for f in path.iterdir())
    except OSError:
        return True  # unreadable: read_partition says so, rather than the partition going unseen


def read_log_dir(path: Path) -> LogDir:
    ld = LogDir(path, live=is_live(path))  # asked first: the listings below are read as of a broker
    for p in sorted(path.iterdir()):
        if is_partition_dir(p):
            ld.partitions.append(read_partition(p, ld.live))
        elif p.is_file() and p.name in OFFSET_CHECKPOINTS:
            ld.checkpoints.append(p)
        elif p.is_file() and p.name in ("meta.properties", BOOTSTRAP_CHECKPOINT):
            ld.side_files.append(p)
    return ld


@dataclass(init=False, repr=False, eq=False)
class Discovery(SharedMethods):
    """What a list of user paths names: whole log dirs, single partitions, single files."""

    log_dirs: list[LogDir] = field(default_factory=list)
    partitions: list[Partition] = field(default_factory=list)  # given directly, outside a whole log dir
    files: list[Path] = field(default_factory=list)  # single files given directly
    # each single file's kind, decided from its name once (discover) and carried to the walkers and checks
    kinds: dict[Path, FileKind] = field(default_factory=dict)

    def __init__(
        self,
        log_dirs: list[LogDir] | None = None,
        partitions: list[Partition] | None = None,
        files: list[Path] | None = None,
        kinds: dict[Path, FileKind] | None = None,
    ) -> None:
        self.log_dirs = [] if log_dirs is None else log_dirs
        self.partitions = [] if partitions is None else partitions
        self.files = [] if files is None else files
        self.kinds = {} if kinds is None else kinds

    def kind(self, path: Path) -> FileKind:
        """The kind of a single file given directly, as discover decided it."""
        kind = self.kinds.get(path)
        if kind is None:
            kind = self.kinds[path] = kind_of(path)
        return kind

    def all_partitions(self) -> list[Partition]:
        return [p for ld in self.log_dirs for p in ld.partitions] + self.partitions


def discover(paths: list[str | os.PathLike]) -> Discovery:
    found = Discovery()
    for raw in paths:
        path = Path(raw)
        missing = path_error(path)
        if missing:
            raise InputError(missing)
        if path.is_file():
            found.files.append(path)
            found.kinds[path] = kind_of(path)
        elif is_partition_dir(path):
            found.partitions.append(read_partition(path))
        elif is_log_dir(path):
            found.log_dirs.append(read_log_dir(path))
        else:
            below = sorted(p for p in _walk_dirs(path) if is_log_dir(p))
            if not below:
                raise InputError(f"{path}: no Kafka log directory or partition below it")
            found.log_dirs += [read_log_dir(p) for p in below]
    return found


def _walk_dirs(root: Path):
    for dirpath, dirnames, _ in os.walk(root):
        here = Path(dirpath)
        if is_log_dir(here):
            yield here
            dirnames[:] = []  # a log dir's children are partitions, read by read_log_dir
        else:
            dirnames.sort()


def find_partition_dirs(paths: list[str | os.PathLike]) -> list[tuple[Path, bool]]:
    """(partition directory, live) under log dirs, partition directories or directories holding log
    dirs, each log dir's lock asked once; a file is a usage error."""
    out: list[tuple[Path, bool]] = []
    for raw in paths:
        path = Path(raw)
        missing = path_error(path)
        if missing:
            raise InputError(missing)
        if path.is_file():
            raise UsageError(f"{path}: a file; give log dirs or partition directories")
        if is_partition_dir(path):
            out.append((path, is_live(path.parent.absolute())))
            continue
        log_dirs = [path] if is_log_dir(path) else sorted(_walk_dirs(path))
        if not log_dirs:
            raise InputError(f"{path}: no Kafka log directory or partition below it")
        for ld in log_dirs:
            live = is_live(ld)
            out += [(p, live) for p in partition_dirs(ld)]
    return out


def partition_dirs(log_dir: Path) -> list[Path]:
    """A log dir's partition directories, in name order."""
    return sorted(p for p in log_dir.iterdir() if is_partition_dir(p))


def owning_log_dirs(paths: list[str | os.PathLike]) -> list[Path]:
    """The log dirs the given paths lie in (a segment's, a partition's, a log dir itself, or every log
    dir below a directory), for asking their locks before anything else is read."""
    out: list[Path] = []
    for raw in paths:
        path = Path(raw).absolute()
        if path.is_file() or (path.is_symlink() and not path.exists()):
            found = [path.parent.parent]
        elif is_partition_dir(path):
            found = [path.parent]
        elif is_log_dir(path):
            found = [path]
        elif path.is_dir():
            found = sorted(_walk_dirs(path))
        else:
            found = []
        out += [d for d in found if d not in out]
    return out


def refuse_if_live(paths: list[str | os.PathLike], what: str) -> None:
    """Raise InputError (exit 3) when a broker holds the lock of a log dir the paths lie in (or --live
    says one runs): asked first, before anything is listed or planned, so nothing is changed."""
    from kafka_tools.log.files import broker_lock

    for log_dir in owning_log_dirs(paths):
        if broker_lock.mode() == broker_lock.LIVE:
            raise InputError(f"{log_dir}: --live: a running broker's log dir; {what} changes nothing in it")
        if broker_lock.lock_held(log_dir):
            raise InputError(broker_lock.held_message(log_dir, what))


def check_backup_location(backup_root: Path) -> None:
    """A directory inside a log dir is loaded by the broker as a (broken) partition: refuse to put the
    backup there (backup_root, and the per-partition directories made inside it); a file in the way is
    the environment's (exit 3)."""
    if backup_root.exists() and not backup_root.is_dir():
        raise InputError(f"{backup_root}: cannot be the backup directory: a file, not a directory")
    root = backup_root.resolve()
    for d in (root, root.parent):
        if d.exists() and has_log_dir_markers(d):
            raise UsageError(f"{backup_root}: inside the Kafka log dir {d}; put backups elsewhere")
    for d in root.parents:
        if is_partition_dir(d) and d.parent.exists() and has_log_dir_markers(d.parent):
            raise UsageError(f"{backup_root}: inside the partition directory {d}; put backups elsewhere")


def printable_path(path: str | os.PathLike) -> str:
    """A path as valid UTF-8 text: a byte of a name that is not UTF-8 shown as `\xe9` (what a table,
    Arrow or a JSON parser can hold), never as the lone surrogate `\udce9` Python decodes it to."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")
