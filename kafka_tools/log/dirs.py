"""A `log.dirs` tree as the broker sees it: log dirs, partitions, and each partition's segments in order.

Paths given by a user may be a segment file, a partition directory (`topic-N`), a log dir (holding
partition directories and checkpoint files) or any directory above log dirs; `discover` sorts them out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import InputError
from kafka_tools.format.checkpoints import BOOTSTRAP_CHECKPOINT, LEADER_EPOCH_CHECKPOINT, OFFSET_CHECKPOINTS
from kafka_tools.format.kinds import TRANSIENT_SUFFIXES, FileKind, base_offset_of, kind_of, partition_of

SEGMENT_KINDS = (FileKind.LOG, FileKind.KAFKA07)
LOCK_FILE = ".lock"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


@dataclass
class Segment:
    """A segment's log file with the index files that share its base offset."""

    base_offset: int
    log: Path
    offset_index: Path | None = None
    time_index: Path | None = None
    txn_index: Path | None = None

    @property
    def kind(self) -> FileKind:
        return kind_of(self.log)

    @property
    def size(self) -> int:
        return self.log.stat().st_size


@dataclass
class Partition:
    path: Path
    topic: str
    partition: int
    segments: list[Segment] = field(default_factory=list)
    snapshots: list[Path] = field(default_factory=list)
    leader_epoch_checkpoint: Path | None = None
    transient: list[Path] = field(default_factory=list)  # .deleted, .cleaned, .swap files
    orphans: list[Path] = field(default_factory=list)  # index files without their log, unknown files
    other: list[Path] = field(default_factory=list)  # partition.metadata, quorum-state (KRaft)
    metadata_snapshots: list[Path] = field(default_factory=list)  # KRaft `<offset>-<epoch>.checkpoint`
    # Files that cannot be read (a segment linked into an unmounted disk, a FIFO that would block a
    # reader, the directory itself): (path, why). The rest of the partition is still listed, so one bad
    # file does not hide the others; whoever judges the partition must say it was not fully read.
    unreadable: list[tuple[Path, str]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def log_dir(self) -> Path:
        return self.path.parent

    def unreadable_lines(self) -> list[str]:
        """One line per file that could not be read (`path: why`), as errors name them."""
        return [f"{path}: {why}" for path, why in self.unreadable]

    def check_readable(self) -> None:
        """Raise InputError (exit 3) naming the first unreadable file, for work that needs every file."""
        if self.unreadable:
            raise InputError(self.unreadable_lines()[0])


@dataclass
class LogDir:
    path: Path
    partitions: list[Partition] = field(default_factory=list)
    checkpoints: list[Path] = field(default_factory=list)
    side_files: list[Path] = field(default_factory=list)  # meta.properties, bootstrap.checkpoint (KRaft)

    @property
    def lock_file(self) -> Path:
        return self.path / LOCK_FILE


def read_partition(path: Path) -> Partition:
    where = partition_of(path / "x")
    if where is None:
        raise InputError(f"{path}: not a partition directory (expected topic-N)")
    part = Partition(path, where[0], where[1])
    segments: dict[int, Segment] = {}
    indexes: list[tuple[int, FileKind, Path]] = []
    unreadable_bases: set[int | None] = set()
    try:
        entries = sorted(path.iterdir())
    except OSError as exc:
        part.unreadable.append((path, str(exc.strerror or exc)))
        return part
    for f in entries:
        if not f.is_file():
            if kind_of(f) in SEGMENT_KINDS and base_offset_of(f) is not None:
                # A segment that cannot be read (a link into an unmounted disk, a FIFO that would block)
                # is not "no data": the partition cannot be fully checked.
                dangling = f.is_symlink() and not f.exists()
                what = "a dangling symbolic link" if dangling else "not a regular file"
                part.unreadable.append((f, f"named as a segment but {what}"))
                unreadable_bases.add(base_offset_of(f))
                continue
            part.orphans.append(f)
            continue
        if f.name.endswith(TRANSIENT_SUFFIXES):
            part.transient.append(f)
            continue
        kind = kind_of(f)
        base = base_offset_of(f)
        if kind in SEGMENT_KINDS and base is not None:
            segments[base] = Segment(base, f)
        elif kind in (FileKind.OFFSET_INDEX, FileKind.TIME_INDEX, FileKind.TXN_INDEX) and base is not None:
            indexes.append((base, kind, f))
        elif kind == FileKind.PRODUCER_SNAPSHOT:
            part.snapshots.append(f)
        elif f.name == LEADER_EPOCH_CHECKPOINT:
            part.leader_epoch_checkpoint = f
        elif kind in (FileKind.PARTITION_METADATA, FileKind.QUORUM_STATE):
            part.other.append(f)
        elif kind == FileKind.METADATA_SNAPSHOT:
            part.metadata_snapshots.append(f)
        else:
            part.orphans.append(f)
    for base, kind, f in indexes:
        seg = segments.get(base)
        if seg is None and base in unreadable_bases:
            continue  # the index of a segment that cannot be read: that segment is reported
        if seg is None:
            part.orphans.append(f)
        elif kind == FileKind.OFFSET_INDEX:
            seg.offset_index = f
        elif kind == FileKind.TIME_INDEX:
            seg.time_index = f
        else:
            seg.txn_index = f
    part.segments = [segments[b] for b in sorted(segments)]
    return part


# Files a broker keeps in a log dir and never in a partition directory.
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
    ld = LogDir(path)
    for p in sorted(path.iterdir()):
        if is_partition_dir(p):
            ld.partitions.append(read_partition(p))
        elif p.is_file() and p.name in OFFSET_CHECKPOINTS:
            ld.checkpoints.append(p)
        elif p.is_file() and p.name in ("meta.properties", BOOTSTRAP_CHECKPOINT):
            ld.side_files.append(p)
    return ld


@dataclass
class Discovery:
    """What a list of user paths names: whole log dirs, single partitions, single files."""

    log_dirs: list[LogDir] = field(default_factory=list)
    partitions: list[Partition] = field(default_factory=list)  # given directly, outside a whole log dir
    files: list[Path] = field(default_factory=list)  # single files given directly

    def all_partitions(self) -> list[Partition]:
        return [p for ld in self.log_dirs for p in ld.partitions] + self.partitions


def discover(paths: list[str | os.PathLike]) -> Discovery:
    found = Discovery()
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise InputError(f"{path}: no such file or directory")
        if path.is_file():
            found.files.append(path)
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
