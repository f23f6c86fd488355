"""Where an offset lives in a partition directory, found the way the broker's read path finds it.

A binary search over the segments' base offsets (their file names) picks the segment; a binary search
in its memory-mapped `.index` (8-byte entries: relative offset, position) gives the largest entry at or
below the offset; batches are then stepped over by their headers only, read in bounded chunks, up to the
one holding the offset. Nothing else is opened, so the cost does not grow with the segment count.

An index is never trusted blindly: one that is empty, cut, not increasing, pointing past its segment,
or whose entry does not match the batch it points at makes the segment be scanned from its start
instead (with one warning), which gives the same records.
"""

from __future__ import annotations

import bisect
import mmap
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

LOG_OVERHEAD = 12  # offset + size: the frame of every entry since 0.8
HEADER_UP_TO_MAGIC = 17
V2_LAST_OFFSET_DELTA_AT = 23  # baseOffset 8, length 4, leaderEpoch 4, magic 1, crc 4, attributes 2
MIN_ENTRY_SIZE = {0: 14, 1: 22, 2: 49}  # the size field's minimum per magic (Kafka's record overheads)
KAFKA07_MIN_SIZE = 5  # magic + crc (magic 0); the size field is 4 bytes
DEFAULT_CHUNK = 1 << 20  # bytes read at a time (a consumer's default fetch size)
READ_LIMIT = 64 << 20  # no batch above this is read whole: the bound of message.max.bytes-style settings
_NONZERO = re.compile(rb"[^\x00]")
_SEGMENT_STEM = re.compile(r"^(\d+)\.(log|kafka)$", re.M)
# a name ending like a segment's or an index's whose stem is not all digits
_BAD_NAME = re.compile(r"^(?!\d+\.(?:log|kafka|index|timeindex)$)[^\n]*\.(log|kafka|index|timeindex)$", re.M)
INDEX_INTERVAL_BYTES = 4096  # the broker's default index.interval.bytes
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"


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
    """List a partition directory's segments by name; raise one-line errors for what cannot be read."""
    name = os.path.basename(os.path.normpath(path))
    topic, sep, number = name.rpartition("-")
    if not os.path.isdir(path):
        what = "no such directory" if not os.path.exists(path) else "not a directory"
        raise InputError(f"{path}: {what} (expected a partition directory, topic-N)")
    if not sep or not topic or not number.isdigit():
        raise UsageError(f"{path}: not a partition directory (expected topic-N)")
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror or exc}") from None
    listing = "\n".join(names)  # one regex pass over every name (thousands of segments)
    bad = _BAD_NAME.search(listing)
    if bad is not None:
        raise InputError(
            f"{os.path.join(path, bad.group())}: not a segment file name (expected digits.{bad.group(1)})"
        )
    found = _SEGMENT_STEM.findall(listing)
    suffixes = {suffix for _, suffix in found}
    if len(suffixes) > 1:
        raise InputError(f"{path}: holds both .log and 0.7 .kafka segments")
    stems = {int(stem): stem for stem, _ in found}
    bases = sorted(stems)
    suffix = "kafka" if suffixes == {"kafka"} else "log"
    segments = SegmentList(path, bases, stems, suffix, set(names))
    part = PartitionLog(path, topic, int(number), segments, bases, suffix == "kafka", 0)
    part.log_start_offset = _log_start_offset(part)
    return part


def _log_start_offset(part: PartitionLog) -> int:
    """From the log dir's `log-start-offset-checkpoint` when it names the partition, else (and never
    below) the first segment's base offset, as the broker loads it."""
    first = part.bases[0] if part.bases else 0
    checkpoint = os.path.join(os.path.dirname(os.path.abspath(part.path)), LOG_START_CHECKPOINT)
    if not os.path.isfile(checkpoint):
        return first
    from kafka_tools.format.checkpoints import CheckpointError, read_offset_checkpoint

    try:
        entries = read_offset_checkpoint(checkpoint).entries
    except (CheckpointError, OSError) as exc:
        part.warnings.append(f"{checkpoint}: unreadable ({exc}); the log start is the first segment's")
        return first
    for e in entries:
        if e.topic == part.topic and e.partition == part.partition:
            return max(e.offset, first)
    return first


def segment_for(part: PartitionLog, offset: int) -> int:
    """Index of the segment whose base offset is the largest at or below `offset` (0 when below all)."""
    return max(bisect.bisect_right(part.bases, offset) - 1, 0)


class UntrustedIndex(Exception):
    """The index cannot be used; the message says why (the segment is scanned from its start)."""


def index_lookup(index_path: str | None, base_offset: int, target: int, log_size: int) -> tuple[int, int]:
    """(offset, position) of the largest `.index` entry at or below `target`, or (base, 0) when there is
    none. Raises UntrustedIndex when the file is missing, empty, cut, not increasing or points past the
    segment; a preallocated zero tail (after a crash) is not an entry."""
    if index_path is None:
        raise UntrustedIndex("no .index")
    try:
        f = open(index_path, "rb")
    except OSError as exc:
        raise UntrustedIndex(f"cannot be read ({exc.strerror or exc})") from None
    with f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise UntrustedIndex("empty")
        if size % 8:
            raise UntrustedIndex(f"size {size} is not a multiple of 8")
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            entries = _entries_before_zero_tail(mm, size // 8)
            if _NONZERO.search(mm, entries * 8) is not None:
                raise UntrustedIndex("entries follow a run of zeros (not increasing)")
            if entries == 0 or (entries == 1 and mm[:8] == bytes(8)):
                raise UntrustedIndex("empty")  # all zeros: a preallocated index with no entry yet
            column = array("I")
            column.frombytes(mm[: entries * 8])
    if sys.byteorder == "little":
        column.byteswap()
    relative, positions = column[0::2], column[1::2]
    if relative[-1] > 0x7FFFFFFF or not all(map(operator.lt, relative, relative[1:])):
        raise UntrustedIndex("offsets not increasing")
    if not all(map(operator.lt, positions, positions[1:])):
        raise UntrustedIndex("positions not increasing")
    if positions[-1] >= log_size:
        raise UntrustedIndex(f"entry points at position {positions[-1]}, past the segment ({log_size} bytes)")
    slot = bisect.bisect_right(relative, target - base_offset) - 1
    if slot < 0:
        return base_offset, 0
    return base_offset + relative[slot], positions[slot]


def _entries_before_zero_tail(mm: mmap.mmap, slots: int) -> int:
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

    def __init__(self, path: str, chunk: int = DEFAULT_CHUNK, limit: int = READ_LIMIT) -> None:
        self.path = path
        self.chunk = max(chunk, 64)
        self.limit = max(limit, self.chunk)
        try:
            # O_NONBLOCK: a FIFO named as a segment must not block the open (regular files ignore it)
            self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            info = os.fstat(self._fd)
        except OSError as exc:
            raise InputError(f"{path}: {exc.strerror or exc}") from None
        if not stat.S_ISREG(info.st_mode):
            os.close(self._fd)
            raise InputError(f"{path}: cannot be read: named as a segment but not a regular file")
        self.size = info.st_size

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
        if not self._zero_from(position):
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
        offset, position = index_lookup(seg.offset_index, seg.base_offset, target, reader.size)
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
    with SegmentReader(seg.log, chunk) as reader:
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
