"""Where an offset lives in a partition directory, found the way the broker's read path finds it.

A binary search over the segments' base offsets (their file names, listed by the one partition model,
`dirs.list_partition`) picks the segment; a binary search in its `.index` (8-byte entries: relative
offset, position; read with pread, never mapped: a running broker trims it at a roll) gives the largest
entry at or below the offset; batches are then stepped over by their headers only, read in bounded
chunks, up to the one holding the offset. Nothing else is opened, so the cost does not grow with the
segment count. On a running broker's partition the newest segment's unfinished batch and the index
entries ahead of its data are in flight: the walk ends before them, without a warning.

An index is never trusted blindly: one that is empty, cut, not increasing, pointing past its segment,
or whose entry does not match the batch it points at makes the segment be scanned from its start
instead (with one warning), which gives the same records.
"""

from __future__ import annotations

import bisect
import operator
import os
import re
import stat
import struct
import sys
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from kafka_tools.errors import FindingsError, InputError, UsageError
from kafka_tools.log.dirs import list_partition, log_start_offset

LOG_OVERHEAD = 12  # offset + size: the frame of every entry since 0.8
HEADER_UP_TO_MAGIC = 17
V2_LAST_OFFSET_DELTA_AT = 23  # baseOffset 8, length 4, leaderEpoch 4, magic 1, crc 4, attributes 2
MIN_ENTRY_SIZE = {0: 14, 1: 22, 2: 49}  # the size field's minimum per magic (Kafka's record overheads)
KAFKA07_MIN_SIZE = 5  # magic + crc (magic 0); the size field is 4 bytes
DEFAULT_CHUNK = 1 << 20  # bytes read at a time (a consumer's default fetch size)
READ_LIMIT = 64 << 20  # no batch above this is read whole: the bound of message.max.bytes-style settings
_NONZERO = re.compile(rb"[^\x00]")
INDEX_INTERVAL_BYTES = 4096  # the broker's default index.interval.bytes


@dataclass(frozen=True, slots=True)
class SegmentFiles:
    base_offset: int
    log: str
    offset_index: str | None = None
    time_index: str | None = None


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


@dataclass(slots=True)
class PartitionLog:
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


@dataclass(slots=True)
class Frame:
    """One entry of a segment, complete in `buf` at `at` (its file position is `position`)."""

    position: int
    buf: bytes
    at: int
    size: int  # bytes the entry occupies in the file
    magic: int
    first_offset: int | None  # v2: base offset; v0/v1: None (a wrapper's first needs decompression)
    last_offset: int


def open_partition(path: str) -> PartitionLog:
    """A partition directory's segments by name, from the one partition model (`dirs.list_partition`);
    raise one-line errors for what cannot be read (a FIFO or a dangling link named as a segment would
    block or fail a reader halfway: said before anything is read)."""
    name = os.path.basename(os.path.normpath(path))
    topic, sep, number = name.rpartition("-")
    if not os.path.isdir(path):
        what = "no such directory" if not os.path.exists(path) else "not a directory"
        raise InputError(f"{path}: {what} (expected a partition directory, topic-N)")
    if not sep or not topic or not number.isdigit():
        raise UsageError(f"{path}: not a partition directory (expected topic-N)")
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


class SegmentGone(InputError):
    """A listed segment no longer exists: the broker deleted it (or renamed it `.deleted`) meanwhile."""


class UntrustedIndex(Exception):
    """The index cannot be used; the message says why (the segment is scanned from its start)."""


def index_lookup(
    index_path: str | None, base_offset: int, target: int, log_size: int, in_flight: bool = False
) -> tuple[int, int]:
    """(offset, position) of the largest `.index` entry at or below `target`, or (base, 0) when there is
    none. Raises UntrustedIndex when the file is missing, empty, cut, not increasing or points past the
    segment; a preallocated zero tail (after a crash) is not an entry. `in_flight`: the segment a
    running broker appends to, whose newest entries may name bytes not written yet (0.9 writes the
    entry before the batch): those are left out, not a reason to distrust the index.

    The file is read with pread, never memory-mapped: a broker trims the preallocated index of the
    segment it rolls, and a mapped page past the new end kills the reader with SIGBUS."""
    if index_path is None:
        raise UntrustedIndex("no .index")
    try:
        fd = os.open(index_path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise UntrustedIndex(f"cannot be read ({exc.strerror or exc})") from None
    try:
        data = _read_whole(fd, index_path)
    finally:
        os.close(fd)
    size = len(data)
    if size == 0:
        raise UntrustedIndex("empty")
    if size % 8:
        raise UntrustedIndex(f"size {size} is not a multiple of 8")
    entries = _entries_before_zero_tail(data, size // 8)
    if _NONZERO.search(data, entries * 8) is not None:
        raise UntrustedIndex("entries follow a run of zeros (not increasing)")
    if entries == 0 or (entries == 1 and data[:8] == bytes(8)):
        raise UntrustedIndex("empty")  # all zeros: a preallocated index with no entry yet
    column = array("I")
    column.frombytes(data[: entries * 8])
    if sys.byteorder == "little":
        column.byteswap()
    relative, positions = column[0::2], column[1::2]
    if relative[-1] > 0x7FFFFFFF or not all(map(operator.lt, relative, relative[1:])):
        raise UntrustedIndex("offsets not increasing")
    if not all(map(operator.lt, positions, positions[1:])):
        raise UntrustedIndex("positions not increasing")
    if in_flight:
        # Entries at or past the data's end name batches not written yet, and the newest one left
        # may name a batch still being written; the one before it names a complete batch.
        keep = max(bisect.bisect_left(positions, log_size) - 1, 0)
        relative, positions = relative[:keep], positions[:keep]
        if not keep:
            return base_offset, 0
    if positions[-1] >= log_size:
        raise UntrustedIndex(f"entry points at position {positions[-1]}, past the segment ({log_size} bytes)")
    slot = bisect.bisect_right(relative, target - base_offset) - 1
    if slot < 0:
        return base_offset, 0
    return base_offset + relative[slot], positions[slot]


def _read_whole(fd: int, path: str) -> bytes:
    """The file's bytes as of now (a file shortened meanwhile gives fewer: never a signal)."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UntrustedIndex("not a regular file")
    parts = []
    at = 0
    while at < st.st_size:
        try:
            chunk = os.pread(fd, min(st.st_size - at, 1 << 24), at)
        except OSError as exc:
            raise UntrustedIndex(f"cannot be read ({exc.strerror or exc})") from None
        if not chunk:
            break
        parts.append(chunk)
        at += len(chunk)
    data = b"".join(parts)
    return data[: len(data) - len(data) % 8] if len(data) < st.st_size else data


def _entries_before_zero_tail(mm: bytes, slots: int) -> int:
    """Slots before the preallocated zero tail: slot 0 may be (0, 0); any later real entry has a
    relative offset above 0, so the first all-zero slot after 0 starts the tail (binary search)."""
    if slots == 0:
        return 0
    lo, hi = 1, slots  # the first zero slot lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if mm[mid * 8 : mid * 8 + 8] == b"\x00" * 8:
            hi = mid
        else:
            lo = mid + 1
    return lo


class SegmentReader:
    """A segment's entries from a position on, read with pread in chunks of `chunk` bytes; an entry
    larger than the chunk is read again with the chunk doubled until it fits, up to `limit`. An entry
    cut by the end of the file is never handed out: it ends the walk with a FindingsError."""

    def __init__(
        self, path: str, chunk: int = DEFAULT_CHUNK, limit: int = READ_LIMIT, in_flight: bool = False
    ) -> None:
        self.path = path
        self.chunk = max(chunk, 64)
        self.limit = max(limit, self.chunk)
        self.in_flight = in_flight  # a running broker's active segment: a cut last entry is unwritten
        try:
            # O_NONBLOCK: a FIFO put where a segment was listed must not block the open
            self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            why = "removed since the partition was listed (retention or cleaning)"
            raise SegmentGone(f"{path}: {why}") from None
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from None
        st = os.fstat(self._fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(self._fd)
            raise InputError(f"{path}: cannot be read: named as a segment but not a regular file")
        self.size = st.st_size

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _read(self, position: int, length: int) -> bytes:
        try:
            return os.pread(self._fd, min(length, self.size - position), position)
        except OSError as exc:
            raise InputError(f"{self.path}: position {position}: {exc.strerror or exc}") from None

    def frames(self, position: int) -> Iterator[Frame]:
        """Entries of a 0.8+ segment (message sets v0/v1, record batches v2) from `position`."""
        chunk = self.chunk
        buf = self._read(position, chunk)
        start = position
        while position < self.size:
            at = position - start
            if len(buf) - at < HEADER_UP_TO_MAGIC:
                if self.size - position < HEADER_UP_TO_MAGIC:
                    self._tail(position)
                    return
                buf, start, at = self._read(position, chunk), position, 0
            offset, size = struct.unpack_from(">qi", buf, at)
            magic = buf[at + 16]
            if size == 0 and offset == 0 and self._zero_from(position):
                return  # a preallocated (zeroed) tail: the end of the data
            minimum = MIN_ENTRY_SIZE.get(magic)
            if minimum is None:
                raise FindingsError(f"{self.path}: position {position}: unknown magic {magic}")
            if size < minimum:
                raise FindingsError(
                    f"{self.path}: position {position}: entry size {size} is below the minimum {minimum}"
                )
            entry = size + LOG_OVERHEAD
            if entry > self.size - position and self.in_flight:
                return  # the batch the broker is appending: not there yet
            if entry > self.size - position:
                raise FindingsError(
                    f"{self.path}: position {position}: truncated batch: entry of {entry} bytes runs "
                    f"past the end of the file ({self.size - position} left)"
                )
            if at + entry > len(buf):
                buf, chunk = self._fit(position, entry, chunk, "batch")
                start, at = position, 0
            if magic == 2:
                (delta,) = struct.unpack_from(">i", buf, at + V2_LAST_OFFSET_DELTA_AT)
                yield Frame(position, buf, at, entry, 2, offset, offset + delta)
            else:
                yield Frame(position, buf, at, entry, magic, None, offset)
            position += entry

    def kafka07_frames(self, position: int) -> Iterator[Frame]:
        """Entries of a 0.7 `.kafka` segment (4-byte size, magic, …) from `position`; offsets are
        byte positions, so `last_offset` is the file position here (the caller adds the base)."""
        chunk = self.chunk
        buf = self._read(position, chunk)
        start = position
        while position < self.size:
            at = position - start
            if len(buf) - at < 5:
                if self.size - position < 5:
                    self._tail(position)
                    return
                buf, start, at = self._read(position, chunk), position, 0
            (size,) = struct.unpack_from(">i", buf, at)
            if size == 0 and self._zero_from(position):
                return
            if size < KAFKA07_MIN_SIZE:
                raise FindingsError(f"{self.path}: position {position}: message size {size} is below 5")
            entry = size + 4
            if entry > self.size - position:
                raise FindingsError(
                    f"{self.path}: position {position}: truncated message: entry of {entry} bytes runs "
                    f"past the end of the file ({self.size - position} left)"
                )
            if at + entry > len(buf):
                buf, chunk = self._fit(position, entry, chunk, "message")
                start, at = position, 0
            yield Frame(position, buf, at, entry, buf[at + 4], position, position)
            position += entry

    def _fit(self, position: int, entry: int, chunk: int, noun: str) -> tuple[bytes, int]:
        """The bytes from `position` in a chunk doubled until the whole entry fits (the chunk now in
        use is returned too); an entry over the read limit is a finding."""
        while chunk < entry:
            chunk *= 2
        if chunk > self.limit:
            raise FindingsError(
                f"{self.path}: position {position}: {noun} of {entry} bytes is over the read "
                f"limit of {self.limit} bytes"
            )
        return self._read(position, chunk), chunk

    def _tail(self, position: int) -> None:
        if not self.in_flight and not self._zero_from(position):
            raise FindingsError(
                f"{self.path}: position {position}: truncated batch: {self.size - position} trailing "
                "bytes, too few for an entry header"
            )

    def _zero_from(self, position: int) -> bool:
        while position < self.size:
            data = self._read(position, 1 << 20)
            if not data or data.count(0) != len(data):
                return False
            position += len(data)
        return True


def frames_from(
    seg: SegmentFiles, target: int, reader: SegmentReader, warnings: list[str]
) -> Iterator[Frame]:
    """The segment's entries from the one its `.index` says holds offsets up to `target` (entries wholly
    below `target` may come first). An index that cannot be trusted, or whose entry does not match the
    batch it points at, adds one warning and the walk starts at the segment's beginning."""
    try:
        offset, position = index_lookup(
            seg.offset_index, seg.base_offset, target, reader.size, reader.in_flight
        )
    except UntrustedIndex as why:
        # Below index.interval.bytes (4096 by default) a segment's index has no entry by design.
        if not (why.args[0] in ("no .index", "empty") and reader.size <= INDEX_INTERVAL_BYTES):
            name = seg.offset_index or seg.log[: -len(".log")] + ".index"
            warnings.append(f"{name}: {why}: not used, scanning the segment from its start")
        yield from reader.frames(0)
        return
    if position == 0:
        yield from reader.frames(0)
        return
    frames = reader.frames(position)
    try:
        first = next(frames, None)
    except FindingsError:  # the entry points inside a batch: what it reads there is no frame
        first = None
    stale = first is None or first.last_offset < offset
    if first is not None and first.first_offset is not None and first.first_offset > offset:
        stale = True
    if stale:
        found = "nothing" if first is None else f"offsets up to {first.last_offset}"
        warnings.append(
            f"{seg.offset_index}: stale: its entry says offset {offset} at position {position}, the log "
            f"has {found} there: not used, scanning the segment from its start"
        )
        yield from reader.frames(0)
        return
    yield first
    yield from frames


def log_end_offset(part: PartitionLog, chunk: int = DEFAULT_CHUNK) -> int:
    """The offset after the last entry of the last segment (its base offset when it is empty), from the
    last index entry on; 0.7: the base plus the segment's bytes of whole messages. A cut or damaged
    entry ends the log there (as the broker's recovery would), with a warning."""
    if not part.segments:
        return part.log_start_offset
    seg = part.segments[-1]
    with SegmentReader(seg.log, chunk, in_flight=part.live) as reader:
        last = seg.base_offset - 1
        try:
            if part.kafka07:
                for frame in reader.kafka07_frames(0):
                    last = seg.base_offset + frame.position + frame.size - 1
            else:
                for frame in frames_from(seg, 1 << 62, reader, part.warnings):
                    last = frame.last_offset
        except FindingsError as exc:
            part.warnings.append(f"{exc}; the log end is taken before it")
        return max(last + 1, seg.base_offset)
