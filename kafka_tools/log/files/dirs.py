"""The one partition model: a `log.dirs` tree as the broker sees it, log dirs (`LogDir`), partitions
(`Partition`) and each partition's segments in order (`Segment`, its kind decided from the listing's
names), listed by one `scandir` (`list_partition`); the readers' and the previews' views of a
partition are made from the same listing (views.py). What a user's paths name: discover.py.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import InputError, os_reason
from kafka_tools.format.kinds import (
    LEADER_EPOCH_CHECKPOINT,
    QUORUM_STATE,
    REMOTE_LOG_SNAPSHOT,
    TRANSIENT_SUFFIXES,
    FileKind,
    base_offset_of,
    kind_of,
    partition_of,
    set_aside_state,
)
from kafka_tools.format.plural import plural
from kafka_tools.format.shared_methods import SharedMethods
from kafka_tools.log.files.broker_lock import LOCK_FILE, is_live

SEGMENT_KINDS = (FileKind.LOG, FileKind.KAFKA07)
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"


@dataclass(init=False, repr=False, eq=False)
class Segment(SharedMethods):
    """A segment's log file with the index files that share its base offset."""

    base_offset: int
    log: Path
    offset_index: Path | None = None
    time_index: Path | None = None
    txn_index: Path | None = None

    def __init__(
        self,
        base_offset: int,
        log: Path,
        offset_index: Path | None = None,
        time_index: Path | None = None,
        txn_index: Path | None = None,
    ) -> None:
        self.base_offset = base_offset
        self.log = log
        self.offset_index = offset_index
        self.time_index = time_index
        self.txn_index = txn_index
        self._kind: FileKind | None = None  # decided once, from the name, when first asked

    @property
    def kind(self) -> FileKind:
        if self._kind is None:
            self._kind = kind_of(self.log)
        return self._kind

    @property
    def size(self) -> int:
        return self.log.stat().st_size


# What a broker renames a partition directory `topic-N.<uuid>-<state>` for (LogManager).
SET_ASIDE = {
    "delete": "awaiting deletion (-delete)",
    "stray": "set aside as stray (-stray)",
    "future": "being moved in from another log dir (-future)",
}


def set_aside(path: str | os.PathLike) -> str | None:
    """`delete`, `stray` or `future` for a partition directory the broker renamed so, else None."""
    return set_aside_state(Path(path).name)


def set_aside_line(paths: list[Path]) -> str:
    """One line for the renamed partition directories a command does not read, by state."""
    by_state: dict[str, int] = {}
    for path in paths:
        state = set_aside(path) or ""
        by_state[state] = by_state.get(state, 0) + 1
    counts = ", ".join(f"{n} {SET_ASIDE.get(state, state)}" for state, n in sorted(by_state.items()))
    dirs = plural(len(paths), "partition directory", "partition directories")
    return f"{dirs} Kafka renamed, not read: {counts}"


class PartitionPlace:
    """Where a partition is, as every view of it says it (`Partition` here, the readers' and the
    previews' views in views.py): `path`, `topic` and `partition` are the subclass's fields."""

    __slots__ = ()

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"  # type: ignore[attr-defined]

    @property
    def log_dir(self) -> Path:
        return Path(self.path).parent  # type: ignore[attr-defined]

    def unreadable_lines(self) -> list[str]:
        """One line per file that could not be read (`path: why`), as errors name them."""
        return [f"{path}: {why}" for path, why in self.unreadable]  # type: ignore[attr-defined]


@dataclass(init=False, repr=False, eq=False)
class Partition(PartitionPlace, SharedMethods):
    """A partition directory (topic-N): its segments in offset order and the files beside them."""

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
    live: bool = False  # a broker writes it now (its log dir's .lock is held, or --live)

    def __init__(
        self,
        path: Path,
        topic: str,
        partition: int,
        segments: list[Segment] | None = None,
        snapshots: list[Path] | None = None,
        leader_epoch_checkpoint: Path | None = None,
        transient: list[Path] | None = None,
        orphans: list[Path] | None = None,
        other: list[Path] | None = None,
        metadata_snapshots: list[Path] | None = None,
        unreadable: list[tuple[Path, str]] | None = None,
        live: bool = False,
    ) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.segments = [] if segments is None else segments
        self.snapshots = [] if snapshots is None else snapshots
        self.leader_epoch_checkpoint = leader_epoch_checkpoint
        self.transient = [] if transient is None else transient
        self.orphans = [] if orphans is None else orphans
        self.other = [] if other is None else other
        self.metadata_snapshots = [] if metadata_snapshots is None else metadata_snapshots
        self.unreadable = [] if unreadable is None else unreadable
        self.live = live

    @property
    def active(self) -> Segment | None:
        """The newest segment: the one a running broker appends to."""
        return self.segments[-1] if self.segments else None

    def check_readable(self) -> None:
        """Raise InputError (exit 3) naming the first unreadable file, for work that needs every file."""
        if self.unreadable:
            raise InputError(self.unreadable_lines()[0])


@dataclass(init=False, repr=False, eq=False)
class LogDir(SharedMethods):
    """One of a broker's log.dirs: its partitions, offset checkpoints and side files."""

    path: Path
    partitions: list[Partition] = field(default_factory=list)
    checkpoints: list[Path] = field(default_factory=list)
    side_files: list[Path] = field(default_factory=list)  # meta.properties, bootstrap.checkpoint (KRaft)
    live: bool = False

    def __init__(
        self,
        path: Path,
        partitions: list[Partition] | None = None,
        checkpoints: list[Path] | None = None,
        side_files: list[Path] | None = None,
        live: bool = False,
    ) -> None:
        self.path = path
        self.partitions = [] if partitions is None else partitions
        self.checkpoints = [] if checkpoints is None else checkpoints
        self.side_files = [] if side_files is None else side_files
        self.live = live

    @property
    def lock_file(self) -> Path:
        return self.path / LOCK_FILE


@dataclass(init=False, slots=True, repr=False, eq=False)
class PartitionListing(SharedMethods):
    """One `scandir` of a partition directory, names sorted out as strings (no stat per file, no Path
    per file): what every command's view of a partition is made from. Cheap for 10,000 segments."""

    path: str
    topic: str
    partition: int
    live: bool  # a broker holds the log dir (or --live): the newest segment is being written
    stems: dict[int, str] = field(default_factory=dict)  # base offset -> name stem of each segment
    suffixes: set[str] = field(default_factory=set)  # "log", "kafka"
    names: set[str] = field(default_factory=set)  # every name, to tell which index files exist
    indexes: list[tuple[int, str, str]] = field(default_factory=list)  # (base, attr, name)
    transient: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    bad_names: list[str] = field(default_factory=list)  # like a segment's or index's, stem not digits
    snapshots: list[str] = field(default_factory=list)
    leader_epoch_checkpoint: str | None = None
    other: list[str] = field(default_factory=list)
    metadata_snapshots: list[str] = field(default_factory=list)
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (full path, why)
    unreadable_segments: dict[int, str] = field(default_factory=dict)  # base offset -> file name

    def __init__(
        self,
        path: str,
        topic: str,
        partition: int,
        live: bool,
        stems: dict[int, str] | None = None,
        suffixes: set[str] | None = None,
        names: set[str] | None = None,
        indexes: list[tuple[int, str, str]] | None = None,
        transient: list[str] | None = None,
        orphans: list[str] | None = None,
        bad_names: list[str] | None = None,
        snapshots: list[str] | None = None,
        leader_epoch_checkpoint: str | None = None,
        other: list[str] | None = None,
        metadata_snapshots: list[str] | None = None,
        unreadable: list[tuple[str, str]] | None = None,
        unreadable_segments: dict[int, str] | None = None,
    ) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.live = live
        self.stems = {} if stems is None else stems
        self.suffixes = set() if suffixes is None else suffixes
        self.names = set() if names is None else names
        self.indexes = [] if indexes is None else indexes
        self.transient = [] if transient is None else transient
        self.orphans = [] if orphans is None else orphans
        self.bad_names = [] if bad_names is None else bad_names
        self.snapshots = [] if snapshots is None else snapshots
        self.leader_epoch_checkpoint = leader_epoch_checkpoint
        self.other = [] if other is None else other
        self.metadata_snapshots = [] if metadata_snapshots is None else metadata_snapshots
        self.unreadable = [] if unreadable is None else unreadable
        self.unreadable_segments = {} if unreadable_segments is None else unreadable_segments

    @property
    def bases(self) -> list[int]:
        return sorted(self.stems)

    @property
    def suffix(self) -> str:
        return "kafka" if self.suffixes == {"kafka"} else "log"

    def join(self, name: str) -> str:
        return os.path.join(self.path, name)


_INDEX_ATTRS = {"index": "offset_index", "timeindex": "time_index", "txnindex": "txn_index"}
_LOOKS_LIKE_SEGMENT = frozenset({"log", "kafka", "index", "timeindex"})


def _not_a_segment(path: str) -> str:
    """Why a file named as a segment is not one to read, in the words of errors.os_reason."""
    try:
        st = os.stat(path)
    except OSError as exc:
        return os_reason(exc, path)  # a dangling link, a loop of links
    return (
        os_reason(IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
        if stat.S_ISDIR(st.st_mode)
        else "named as a segment but not a regular file"
    )


def list_partition(
    path: str | os.PathLike, live: bool | None = None, where: tuple[str, int] | None = None
) -> PartitionListing:
    """The partition directory's files by name. `live`: whether a broker writes it (None: ask its log
    dir's lock). `where`: its topic and partition when `path` does not say them (a held directory read
    through `/proc/self/fd/N`). A directory that cannot be listed is recorded as unreadable, not raised."""
    text = os.fspath(path)
    where = partition_of(Path(text) / "x") if where is None else where
    if where is None:
        raise InputError(f"{text}: not a partition directory (expected topic-N)")
    if live is None:
        live = is_live(os.path.dirname(os.path.abspath(text)))
    out = PartitionListing(text, where[0], where[1], live)
    try:
        entries = list(os.scandir(text))
    except FileNotFoundError as exc:
        if live:
            return out  # deleted (or renamed `-delete`) by the running broker since its log dir was listed
        out.unreadable.append((text, os_reason(exc, text)))
        return out
    except OSError as exc:
        out.unreadable.append((text, os_reason(exc)))
        return out
    out.names = {entry.name for entry in entries}
    for entry in entries:
        name = entry.name
        if name.endswith(TRANSIENT_SUFFIXES):
            out.transient.append(name)
            continue
        stem, _, suffix = name.partition(".")
        if suffix in _INDEX_ATTRS and stem.isdigit():
            out.indexes.append((int(stem), _INDEX_ATTRS[suffix], name))  # the hot path: no stat at all
            continue
        try:
            regular = entry.is_file()  # the directory entry's type: no stat but for symbolic links
        except OSError:
            regular = False
        if suffix in ("log", "kafka") and stem.isdigit():
            if not regular:
                # A segment that cannot be read (a link into an unmounted disk, a FIFO that would
                # block a reader) is not "no data": the partition cannot be fully read.
                full = entry.path
                out.unreadable.append((full, _not_a_segment(full)))
                out.unreadable_segments[int(stem)] = name
                continue
            out.stems[int(stem)] = stem
            out.suffixes.add(suffix)
        elif not regular:
            out.orphans.append(name)
        elif name == LEADER_EPOCH_CHECKPOINT:
            out.leader_epoch_checkpoint = name
        elif name.endswith(".snapshot"):
            out.snapshots.append(name)
        elif name in ("partition.metadata", QUORUM_STATE, REMOTE_LOG_SNAPSHOT):
            out.other.append(name)
        elif kind_of(name) == FileKind.METADATA_SNAPSHOT:
            out.metadata_snapshots.append(name)
        else:
            if name.rpartition(".")[2] in _LOOKS_LIKE_SEGMENT:
                out.bad_names.append(name)
            out.orphans.append(name)
    for base, _attr, name in out.indexes:
        if base not in out.stems and base not in out.unreadable_segments:
            out.orphans.append(name)  # an index without its log (of an unreadable one: that is said)
    return out


def is_newest_live_segment(p: Path) -> bool:
    """`p` is (or is the index of) the newest segment of a partition a running broker writes: the one
    it appends to (the log dir's `.lock` held, or --live). For files named one by one."""
    p = Path(p).absolute()
    if partition_of(p) is None or not is_live(p.parent.parent):
        return False
    try:
        listing = list_partition(p.parent, live=True)
    except InputError:
        return False
    return bool(listing.stems) and base_offset_of(p) == max(listing.stems)


def read_partition(path: Path, live: bool | None = None, where: tuple[str, int] | None = None) -> Partition:
    """The partition with Path objects for every file (what validate and truncate walk)."""
    listing = list_partition(path, live, where)
    return partition_from(listing)


def partition_from(listing: PartitionListing) -> Partition:
    root = Path(listing.path)
    part = Partition(root, listing.topic, listing.partition, live=listing.live)
    segments = {}
    for base, stem in listing.stems.items():
        suffix = _segment_suffix(listing, stem)
        seg = segments[base] = Segment(base, root / f"{stem}.{suffix}")
        seg._kind = FileKind.KAFKA07 if suffix == "kafka" else FileKind.LOG  # the listing's name says it
    for base, attr, name in listing.indexes:
        seg = segments.get(base)
        if seg is not None:
            setattr(seg, attr, root / name)
    part.segments = [segments[b] for b in sorted(segments)]
    part.snapshots = [root / n for n in sorted(listing.snapshots)]
    if listing.leader_epoch_checkpoint is not None:
        part.leader_epoch_checkpoint = root / listing.leader_epoch_checkpoint
    part.transient = [root / n for n in sorted(listing.transient)]
    part.orphans = [root / n for n in sorted(listing.orphans)]
    part.other = [root / n for n in sorted(listing.other)]
    part.metadata_snapshots = [root / n for n in sorted(listing.metadata_snapshots)]
    part.unreadable = [(Path(p), why) for p, why in sorted(listing.unreadable)]
    return part


def _segment_suffix(listing: PartitionListing, stem: str) -> str:
    if len(listing.suffixes) == 1:
        return next(iter(listing.suffixes))
    return "log" if f"{stem}.log" in listing.names else "kafka"


def checkpoint_offset(
    log_dir: str | os.PathLike, name: str, topic: str, partition: int, warnings: list[str], unused: str
) -> int | None:
    """The offset the log dir's checkpoint `name` keeps for one partition; None when the file is
    missing, does not name it, or cannot be read (then a warning ending in `unused`: what happens instead)."""
    from kafka_tools.format.checkpoints import offsets_by_partition

    offsets = offsets_by_partition(log_dir, name, warnings, unused)
    return None if offsets is None else offsets.get((topic, partition))


def log_start_offset(
    log_dir: str | os.PathLike, topic: str, partition: int, first_base: int, warnings: list[str]
) -> int:
    """The log start offset as the broker loads it: `log-start-offset-checkpoint` when it names the
    partition, never below the first segment's base offset (which it is without a checkpoint)."""
    unused = "the log start is the first segment's"
    offset = checkpoint_offset(log_dir, LOG_START_CHECKPOINT, topic, partition, warnings, unused)
    return first_base if offset is None else max(offset, first_base)


# Files a broker keeps in a log dir and never in a partition directory.
