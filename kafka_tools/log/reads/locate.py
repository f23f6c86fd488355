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
import stat
from collections.abc import Iterator

from kafka_tools.errors import FindingsError, InputError, os_error, os_reason
from kafka_tools.format.entry_headers import (
    HEADER_CHUNK,
    KAFKA07_MIN_SIZE,
    KAFKA07_SIZE_FIELD,
    MAGICS,
    EntryHeader,
    FrameFault,
    iter_headers,
)
from kafka_tools.format.index import IndexGap, entry_bytes, offset_index_columns
from kafka_tools.format.problems import ProblemKind
from kafka_tools.format.record_batch import LOG_OVERHEAD
from kafka_tools.log.files.views import PartitionLog, SegmentFiles

DEFAULT_CHUNK = HEADER_CHUNK  # bytes read at a time (a consumer's default fetch size)
READ_LIMIT = 64 << 20  # no batch above this is read whole: the bound of message.max.bytes-style settings
INDEX_INTERVAL_BYTES = 4096  # the broker's default index.interval.bytes


Frame = EntryHeader  # one entry, complete in `buf` at `at` (its file position is `position`)


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
        raise UntrustedIndex(f"cannot be read ({os_reason(exc)})") from None
    try:
        data, size = _read_entries(fd, index_path)
    finally:
        os.close(fd)
    if size == 0:
        raise UntrustedIndex("empty")
    if size % 8:
        raise UntrustedIndex(f"size {size} is not a multiple of 8")
    entries = len(data) // 8
    if entries == 0 or (entries == 1 and data[:8] == bytes(8)):
        raise UntrustedIndex("empty")  # all zeros: a preallocated index with no entry yet
    relative, positions = offset_index_columns(data, entries)
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


def _read_entries(fd: int, path: str) -> tuple[bytes, int]:
    """The bytes of the file's entries before its zero tail (`index.used_entries`: a preallocated,
    sparse 8 GiB index costs no more than its entries; one with a hole before an entry, no more than
    the entries before the hole) and the file's size. A file shortened meanwhile
    gives fewer: never a signal."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise UntrustedIndex("not a regular file")
    try:
        data = entry_bytes(fd, st.st_size, 8)
    except IndexGap:
        raise UntrustedIndex("entries follow a run of zeros (not increasing)") from None
    except OSError as exc:
        raise UntrustedIndex(f"cannot be read ({os_reason(exc)})") from None
    return data, st.st_size


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
            raise os_error(path, exc) from None
        st = os.fstat(self._fd)
        if not stat.S_ISREG(st.st_mode):
            os.close(self._fd)
            what = (
                "is a directory" if stat.S_ISDIR(st.st_mode) else "named as a segment but not a regular file"
            )
            raise InputError(f"{path}: cannot be read: {what}")
        self.size = st.st_size

    def close(self) -> None:
        os.close(self._fd)

    def __enter__(self) -> SegmentReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def frames(self, position: int) -> Iterator[Frame]:
        """Entries of a 0.8+ segment (message sets v0/v1, record batches v2) from `position`."""
        return self._frames(position, kafka07=False)

    def kafka07_frames(self, position: int) -> Iterator[Frame]:
        """Entries of a 0.7 `.kafka` segment (4-byte size, magic, …) from `position`; offsets are
        byte positions, so `last_offset` is the file position here (the caller adds the base)."""
        return self._frames(position, kafka07=True)

    def _frames(self, position: int, kafka07: bool) -> Iterator[Frame]:
        noun = "message" if kafka07 else "batch"
        walk = iter_headers(
            self._fd, position, whole=True, chunk=self.chunk, limit=self.limit, kafka07=kafka07
        )
        try:
            for frame in walk:
                if type(frame) is FrameFault:
                    self._fault(frame, noun)
                    return
                if frame.buf is None:
                    raise FindingsError(
                        f"{self.path}: position {frame.position}: {noun} of {frame.entry_size} bytes is "
                        f"over the read limit of {self.limit} bytes"
                    )
                yield frame
        except OSError as exc:
            raise InputError(f"{self.path}: position {position}: {os_reason(exc)}") from None

    def _fault(self, fault: FrameFault, noun: str) -> None:
        """The walk stopped at `fault`: the end of the data (a zero tail; on a running broker's active
        segment, the entry being appended), or a finding."""
        where = f"{self.path}: position {fault.position}"
        kind = fault.kind
        if noun == "batch" and fault.magic is not None and fault.magic not in MAGICS:
            raise FindingsError(f"{where}: unknown magic {fault.magic & 0xFF}")
        if kind is ProblemKind.ZERO_TAIL:
            return
        if kind is ProblemKind.SIZE_BELOW_MINIMUM:
            if noun == "message":
                raise FindingsError(f"{where}: message size {fault.size} is below {KAFKA07_MIN_SIZE}")
            raise FindingsError(f"{where}: entry size {fault.size} is below the minimum {fault.minimum}")
        if self.in_flight and (kind is ProblemKind.TRUNCATED_HEADER or noun == "batch"):
            return  # the entry the broker is appending: not there yet
        if kind is ProblemKind.TRUNCATED_HEADER:
            raise FindingsError(
                f"{where}: truncated batch: {fault.remaining} trailing bytes, too few for an entry header"
            )
        entry = fault.size + (KAFKA07_SIZE_FIELD if noun == "message" else LOG_OVERHEAD)
        raise FindingsError(
            f"{where}: truncated {noun}: entry of {entry} bytes runs past the end of the file "
            f"({fault.remaining} left)"
        )


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
                    last = seg.base_offset + frame.position + frame.entry_size - 1
            else:
                for frame in frames_from(seg, 1 << 62, reader, part.warnings):
                    last = frame.last_offset
        except FindingsError as exc:
            part.warnings.append(f"{exc}; the log end is taken before it")
        return max(last + 1, seg.base_offset)
