"""The views of the one partition model (dirs.py: `list_partition` lists a partition directory once,
`Partition` describes it) that two kinds of callers take, each made from the same listing:

- `PartitionLog`, the readers' (`ktool read`, offsets-at, replicas): segments in base-offset order by
  name, each made only when asked for (nothing opened), the log start offset, and the warnings met on
  the way. Apart from log/reads/locate.py's readers so that a question the names answer (`ktool offsets-at
  --time earliest`) imports no segment machinery.
- `PartitionFiles`, the retention and compaction previews' (10,000 segments in well under 2 s):
  segments with their index files as strings (one `scandir`, names parsed as strings, no stat per
  file), the leader-epoch checkpoint, files that are not part of the log (ignored, as the broker
  ignores them), and files that cannot be read.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.errors import InputError, path_error
from kafka_tools.format.shared_methods import FrozenSharedMethods, SharedMethods
from kafka_tools.log.files.dirs import PartitionListing, PartitionPlace, list_partition, log_start_offset
from kafka_tools.log.files.discover import find_partition_dirs, is_log_dir


@dataclass(init=False, slots=True, repr=False, eq=False)
class ReadNote(FrozenSharedMethods):
    """A line for stderr: a warning (an index not used, a damaged batch) or a note on the start."""

    message: str
    problem: bool = False  # a damaged batch: the exit code says findings

    def __init__(self, message: str, problem: bool = False) -> None:
        object.__setattr__(self, "message", message)
        object.__setattr__(self, "problem", problem)


@dataclass(init=False, slots=True, repr=False, eq=False)
class SegmentFiles(FrozenSharedMethods):
    """A segment's log file and the index files beside it, as path strings (None: not there)."""

    base_offset: int
    log: str
    offset_index: str | None = None
    time_index: str | None = None
    txn_index: str | None = None

    def __init__(
        self,
        base_offset: int,
        log: str,
        offset_index: str | None = None,
        time_index: str | None = None,
        txn_index: str | None = None,
    ) -> None:
        object.__setattr__(self, "base_offset", base_offset)
        object.__setattr__(self, "log", log)
        object.__setattr__(self, "offset_index", offset_index)
        object.__setattr__(self, "time_index", time_index)
        object.__setattr__(self, "txn_index", txn_index)


class SegmentList(Sequence):
    """A partition's segments in base-offset order, each made (paths joined) only when asked for: a
    read of one offset in a partition of thousands of segments touches one or two."""

    def __init__(
        self, path: str, bases: list[int], stems: dict[int, str], suffix: str, names: set[str]
    ) -> None:
        self._path, self._bases, self._stems, self._suffix, self._names = path, bases, stems, suffix, names
        self._made: dict[int, SegmentFiles] = {}

    def __len__(self) -> int:
        return len(self._bases)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        i = range(len(self))[i]
        seg = self._made.get(i)
        if seg is None:
            base = self._bases[i]
            stem = os.path.join(self._path, self._stems[base])
            index = f"{self._stems[base]}.index"
            times = f"{self._stems[base]}.timeindex"
            seg = SegmentFiles(
                base,
                f"{stem}.{self._suffix}",
                f"{stem}.index" if index in self._names else None,
                f"{stem}.timeindex" if times in self._names else None,
            )
            self._made[i] = seg
        return seg


@dataclass(init=False, slots=True, repr=False, eq=False)
class PartitionLog(PartitionPlace, SharedMethods):
    """A partition directory's segments in base-offset order, as names tell them (nothing opened)."""

    path: str
    topic: str
    partition: int
    segments: SegmentList
    bases: list[int]
    kafka07: bool
    log_start_offset: int
    warnings: list[str] = field(default_factory=list)
    live: bool = False  # a broker writes it: the last segment's tail and indexes are in flight

    def __init__(
        self,
        path: str,
        topic: str,
        partition: int,
        segments: SegmentList,
        bases: list[int],
        kafka07: bool,
        log_start_offset: int,
        warnings: list[str] | None = None,
        live: bool = False,
    ) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.segments = segments
        self.bases = bases
        self.kafka07 = kafka07
        self.log_start_offset = log_start_offset
        self.warnings = [] if warnings is None else warnings
        self.live = live


def open_partition(path: str) -> PartitionLog:
    """A partition directory's segments by name, from the one partition model (`dirs.list_partition`);
    raise one-line errors for what cannot be read (a FIFO or a dangling link named as a segment would
    block or fail a reader halfway: said before anything is read)."""
    name = os.path.basename(os.path.normpath(path))
    topic, sep, number = name.rpartition("-")
    if not os.path.isdir(path):
        said = path_error(path) or f"{os.fspath(path)}: not a directory"
        raise InputError(f"{said} (expected a partition directory, topic-N)")
    if not sep or not topic or not number.isdigit():
        # a path that names the wrong kind of thing is an input that cannot be read (exit 3), as a file
        # named here is: a usage error is a command line that cannot be parsed
        log_dir = is_log_dir(Path(path))
        what = "a log dir, not a partition directory" if log_dir else "not a partition directory"
        raise InputError(f"{path}: {what} (expected topic-N)")
    listing = list_partition(path)
    if listing.unreadable and not listing.unreadable_segments:
        where, why = listing.unreadable[0]  # the directory itself
        raise InputError(f"{where}: {why}")
    for base, name in listing.unreadable_segments.items():
        # listed, so that a read reaching it says it cannot be read (one line, exit 3) where it is
        stem, _, suffix = name.partition(".")
        listing.stems[base] = stem
        listing.suffixes.add(suffix)
    if listing.bad_names:
        bad = sorted(listing.bad_names)[0]
        kind = bad.rpartition(".")[2]
        raise InputError(f"{os.path.join(path, bad)}: not a segment file name (expected digits.{kind})")
    if len(listing.suffixes) > 1:
        raise InputError(f"{path}: holds both .log and 0.7 .kafka segments")
    bases = listing.bases
    suffix = listing.suffix
    segments = SegmentList(path, bases, listing.stems, suffix, listing.names)
    part = PartitionLog(path, topic, int(number), segments, bases, suffix == "kafka", 0, live=listing.live)
    first = bases[0] if bases else 0
    log_dir = os.path.dirname(os.path.abspath(path))
    part.log_start_offset = log_start_offset(log_dir, part.topic, part.partition, first, part.warnings)
    return part


def segment_for(part: PartitionLog, offset: int) -> int:
    """Index of the segment whose base offset is the largest at or below `offset` (0 when below all)."""
    return max(bisect.bisect_right(part.bases, offset) - 1, 0)


# -- the previews' view: segments with their index files as strings ------------------------------


@dataclass(init=False, repr=False, eq=False)
class PartitionFiles(PartitionPlace, SharedMethods):
    path: Path
    topic: str
    partition: int
    segments: list[SegmentFiles] = field(default_factory=list)
    leader_epoch_checkpoint: str | None = None
    orphans: list[str] = field(default_factory=list)  # names that are not part of the log
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    live: bool = False  # a broker writes it: the last segment is being appended to

    def __init__(
        self,
        path: Path,
        topic: str,
        partition: int,
        segments: list[SegmentFiles] | None = None,
        leader_epoch_checkpoint: str | None = None,
        orphans: list[str] | None = None,
        unreadable: list[tuple[str, str]] | None = None,
        live: bool = False,
    ) -> None:
        self.path = path
        self.topic = topic
        self.partition = partition
        self.segments = [] if segments is None else segments
        self.leader_epoch_checkpoint = leader_epoch_checkpoint
        self.orphans = [] if orphans is None else orphans
        self.unreadable = [] if unreadable is None else unreadable
        self.live = live


def partition_files(path: Path, live: bool | None = None) -> PartitionFiles:
    return files_of(list_partition(path, live))


def files_of(listing: PartitionListing) -> PartitionFiles:
    part = PartitionFiles(Path(listing.path), listing.topic, listing.partition, live=listing.live)
    join = os.path.join
    root = listing.path
    files = {base: {"log": join(root, f"{stem}.log")} for base, stem in listing.stems.items()}
    kafka07 = [f"{stem}.kafka" for stem in listing.stems.values() if f"{stem}.log" not in listing.names]
    for name in kafka07:  # 0.7 segments are not under these policies: named, not previewed
        del files[int(name[: -len(".kafka")])]
    for base, attr, name in listing.indexes:
        seg = files.get(base)
        if seg is not None:
            seg[attr] = join(root, name)
    part.segments = [SegmentFiles(b, **files[b]) for b in sorted(files)]
    if listing.leader_epoch_checkpoint is not None:
        part.leader_epoch_checkpoint = join(root, listing.leader_epoch_checkpoint)
    # not part of the log: files the model keeps apart (snapshots, partition.metadata) are not listed
    indexes = {name for _, _, name in listing.indexes}
    extra = [n for n in listing.other if n != "partition.metadata"] + listing.metadata_snapshots + kafka07
    part.orphans = sorted([n for n in listing.orphans if n not in indexes] + extra)
    part.unreadable = sorted(listing.unreadable)
    return part


def find_partitions(paths: list[str]) -> list[PartitionFiles]:
    """The partitions under log dirs, partition directories or directories holding log dirs."""
    return [partition_files(path, live) for path, live in find_partition_dirs(paths)]
