"""Walk a `.log` segment entry by entry, with byte positions, and say where and why validity ends.

The walk mirrors Kafka's FileLogInputStream and LogSegment.recover: an entry is the 12-byte log header
(offset, size) plus `size` bytes; magic sits at byte 16 for every generation. The file is read through a
bounded window, so memory stays flat whatever the segment size, and no length field read from the
file is ever used to allocate before it has been checked against the file's real size.

The frame checks and the header-only walk are format/entry_headers.py's; what a walk reports,
format/problems.py's. Here: the window, the one full walk (`walk_entries`) every reader, check and writer
calls, and the broker's recovery rule (`breaks_recovery`, `until_recovery_cut`).
"""

from __future__ import annotations

import bisect
import mmap
import os
import re
import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from kafka_tools.format import accel, batch_runs
from kafka_tools.format.checksums import crc32, crc32c, crc_finding
from kafka_tools.format.entry_headers import (
    HEADER_UP_TO_MAGIC,
    BatchHeader,
    EntryHeader,
    FrameFault,
    entry_minimum,
    frame_fault,
    zero_from,
)
from kafka_tools.format.extents import next_data
from kafka_tools.format.mapping import MappedFile, ShortenedWhileRead, map_file, safe_to_map
from kafka_tools.format.message_set import LegacyMessage, parse_message
from kafka_tools.format.problems import Problem, ProblemKind
from kafka_tools.format.record_batch import (
    BATCH_HEADER,
    CRC_START,
    LOG_OVERHEAD,
    RECORD_BATCH_OVERHEAD,
    RecordBatch,
    parse_batch_header,
)
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.shared_methods import SharedMethods

WINDOW = 8 * 1024 * 1024
_RELEASE_STEP = 16 * 1024 * 1024  # mapped pages further behind the walk than this are released

Entry = RecordBatch | LegacyMessage


class SegmentWindow:
    """Bytes of a file by position: one buffer refilled by pread as the walk moves on, or a read-only
    memory map of the whole file (no copying), whose pages behind the walk are handed back so the
    resident memory stays flat whatever the file's size."""

    def __init__(
        self,
        fileobj,
        size: int,
        window: int = WINDOW,
        use_mmap: bool = False,
        release_step: int | None = None,
    ) -> None:
        self._f = fileobj
        self.size = size
        self._window = window
        self.buf = b""
        self.view = memoryview(b"")
        self.start = 0
        self._map: mmap.mmap | None = None
        self._mapped: MappedFile | None = None
        self._released = 0
        self._release_step = release_step or _RELEASE_STEP  # mapped pages this far behind are handed back
        if use_mmap and size > 0:
            # guarded and held shared against ktool's own writers (format/mapping.py), else pread
            self._mapped = map_file(fileobj.fileno(), _name_of(fileobj), size)
        if self._mapped is not None:
            self._map = self._mapped.map
            self.buf = self._map
            self.view = memoryview(self._map)
            self.size = min(size, len(self._map))

    def ensure(self, position: int, length: int) -> int:
        """Make `length` bytes at `position` available; return their index in `self.buf`."""
        if self._map is not None:
            if position + length > self.size:
                raise ShortenedWhileRead(position, self._f.name)
            if position - self._released >= self._release_step:
                upto = position - self._release_step // 2
                upto -= upto % mmap.PAGESIZE  # madvise takes whole pages (a step of 16 MiB / 3 is not)
                self._map.madvise(mmap.MADV_DONTNEED, self._released, upto - self._released)
                self._released = upto
            return position
        rel = position - self.start
        if 0 <= rel and rel + length <= len(self.buf):
            return rel
        want = max(length, self._window)
        self.buf = os.pread(self._f.fileno(), min(want, self.size - position), position)
        self.view = memoryview(self.buf)
        self.start = position
        if len(self.buf) < length:
            raise ShortenedWhileRead(position, self._f.name)
        return 0

    def available(self, position: int) -> int:
        """Bytes at `position` that `ensure` gives without a read (a window's worth when mapped)."""
        if self._map is not None:
            return max(0, min(self.size - position, self._window))
        rel = position - self.start
        return len(self.buf) - rel if 0 <= rel <= len(self.buf) else 0

    def is_zero_from(self, position: int) -> bool:
        return zero_from(self._f.fileno(), position, self.size)


def _name_of(fileobj) -> str | bytes:
    name = getattr(fileobj, "name", None)
    return name if isinstance(name, str | bytes) else f"/proc/self/fd/{fileobj.fileno()}"


INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


class MessageRun(NamedTuple):
    """Consecutive plain (uncompressed) magic 0/1 messages, each framed, CRC-checked and above the
    offset before it, walked in C: what validate and dump need of them, without an object a message.
    The pure-Python walk never makes runs; it yields the same messages one by one."""

    position: int  # of the first message
    end: int  # the file position after the last one
    count: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    has_gaps: bool  # offsets within the run (or from `RunBounds.prev` to the first) skip some
    data: bytes | None  # the messages' bytes, when `RunBounds.keep_data` asks for them


@dataclass(init=False, repr=False, eq=False)
class RunBounds(SharedMethods):
    """Asks `walk_entries` for MessageRuns, and which messages they may hold. The caller keeps `prev`
    (the offset a message must exceed) and `enabled` current as it consumes the walk."""

    lo: int = INT64_MIN  # offsets must lie in lo..hi
    hi: int = INT64_MAX
    prev: int | None = None
    enabled: bool = True
    keep_data: bool = False
    stops: Sequence[int] = ()  # sorted positions a run must begin at, not run through (index targets)
    max_bytes: int = WINDOW  # a run ends within this many bytes (pages behind are released, progress told)
    batches: bool = False  # light walks: ordinary v2 batches as BatchRuns too (format/batch_runs.py)

    def __init__(
        self,
        lo: int = INT64_MIN,
        hi: int = INT64_MAX,
        prev: int | None = None,
        enabled: bool = True,
        keep_data: bool = False,
        stops: Sequence[int] = (),
        max_bytes: int = WINDOW,
        batches: bool = False,
    ) -> None:
        self.lo = lo
        self.hi = hi
        self.prev = prev
        self.enabled = enabled
        self.keep_data = keep_data
        self.stops = stops
        self.max_bytes = max_bytes
        self.batches = batches


HAS_MESSAGE_RUNS = accel.BUILT


def iter_log_entries(
    path: str | os.PathLike,
    start: int = 0,
    end: int | None = None,
    progress: Callable[[int], None] | None = None,
    runs: RunBounds | None = None,
) -> Iterator[Entry | MessageRun | Problem]:
    """Yield each entry of a `.log` segment in file order, then at most one fatal Problem.

    Entries with a bad CRC are yielded as they are (their `is_valid` is False) and the walk goes on,
    as DumpLogSegments does; a frame that cannot be followed ends the walk with a Problem. With
    `runs` (and the C extension), plain magic 0/1 messages come as MessageRuns.
    """
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        limit = size if end is None else min(size, end)
        win = SegmentWindow(f, size, use_mmap=safe_to_map(path))
        walk = walk_entries(win, start, limit, progress, runs=runs)
        yield from walk


def walk_entries(
    win: SegmentWindow,
    position: int,
    limit: int,
    progress: Callable[[int], None] | None = None,
    light: bool = False,
    runs: RunBounds | None = None,
) -> Iterator[Entry | EntryHeader | MessageRun | Problem]:
    """The walk itself; `light` yields v2 batches as EntryHeader tuples (CRC checked, records not kept),
    `runs` plain magic 0/1 messages as MessageRuns (walked in C, when it is built)."""
    file_end = win.size
    unpack = BATCH_HEADER.unpack_from
    make = BatchHeader._make
    next_report = position
    scan_messages = accel.fast("scan_messages") if runs is not None else None
    scan_batches = batch_runs.scanner() if runs is not None and runs.batches and light else None
    while position < limit:
        if progress is not None and position >= next_report:
            progress(position)
            next_report = position + WINDOW
        remaining = file_end - position
        if remaining < HEADER_UP_TO_MAGIC:
            kind = ProblemKind.ZERO_TAIL if win.is_zero_from(position) else ProblemKind.TRUNCATED_HEADER
            yield FrameFault(kind, position, remaining).problem()
            return
        i = win.ensure(position, HEADER_UP_TO_MAGIC)
        buf = win.buf
        offset, size = struct.unpack_from(">qi", buf, i)
        magic = buf[i + 16]
        if magic > 127:
            magic -= 256
        if size == 0 and offset == 0 and win.is_zero_from(position):
            yield FrameFault(ProblemKind.ZERO_TAIL, position, remaining).problem()
            return
        fault = frame_fault(offset, size, magic, position, remaining)
        entry_size = size + LOG_OVERHEAD
        if fault is not None:
            if fault.kind is not ProblemKind.UNKNOWN_MAGIC:
                yield fault.problem()
                return
            # The frame (offset, size) is the same in every generation, so the walk can step over it.
            i = win.ensure(position, entry_size)
            kept = checksum_matches(win.view[i : i + entry_size], magic)
            why = "; its checksum matches, so the broker's recovery keeps it" if kept else ""
            yield Problem(position, ProblemKind.UNKNOWN_MAGIC, f"unknown magic {magic}{why}", offset, kept)
            position += entry_size
            continue
        i = win.ensure(position, entry_size)
        if magic == 2 and scan_batches is not None and runs.enabled:
            run = batch_runs.batch_run(
                scan_batches, win.buf, i, position, min(limit, position + runs.max_bytes), file_end,
                runs.prev, runs.lo, runs.hi, runs.stops,
            )  # fmt: skip
            if run is not None:
                yield run
                position = run.end
                continue
        if magic == 2 and light:
            h = unpack(win.buf, i)
            yield make(
                (
                    position,
                    entry_size,
                    2,
                    h[0],
                    h[0] + h[6],
                    h[8],
                    h[5] & 0xFFFF,
                    h[12],
                    h[9],
                    h[4],
                    crc32c(win.view[i + CRC_START : i + entry_size]),
                    None,
                    0,
                )
            )
        elif magic == 2:
            yield parse_batch_header(win.buf, i, position)
        elif scan_messages is not None and runs.enabled:
            stop = min(limit, position + runs.max_bytes)
            if runs.stops:
                k = bisect.bisect_right(runs.stops, position)
                if k < len(runs.stops):
                    stop = min(stop, runs.stops[k])
            j, count, first, last, max_ts, gaps = scan_messages(
                win.buf, i, i + stop - position, i + file_end - position, runs.prev, runs.lo, runs.hi
            )
            if count:
                data = bytes(win.view[i:j]) if runs.keep_data else None
                end_pos = position + j - i
                yield MessageRun(position, end_pos, count, first, last, max_ts, gaps, data)
                position = end_pos
                continue
            yield _parsed_message(win.buf, i, position, entry_size, offset)
        else:
            yield _parsed_message(win.buf, i, position, entry_size, offset)
        position += entry_size
    if progress is not None:
        progress(position)


def _parsed_message(buf, i: int, position: int, entry_size: int, offset: int | None):
    try:
        return parse_message(buf, i, position, i + entry_size)
    except RecordDecodeError as exc:
        # The problem is where the entry starts: that is where the broker's recovery cuts
        # (the byte at fault goes in the message).
        return Problem(position, ProblemKind.MALFORMED_ENTRY, f"{exc} (byte {exc.position})", offset)


def checksum_matches(entry: memoryview | bytes, magic: int) -> bool:
    """Whether the broker's recovery accepts an entry of unknown magic: since 0.11 it reads magic >= 2
    as a record batch (length >= 61, CRC-32C from the attributes on) and anything below 2 as a legacy
    message (CRC32 from the magic on); neither check covers the magic byte of a batch."""
    stored = struct.unpack_from(">I", entry, 12 if magic < 2 else 17)[0]
    if magic < 2:
        return len(entry) >= LOG_OVERHEAD + 14 and crc32(entry[16:]) == stored
    return len(entry) >= RECORD_BATCH_OVERHEAD and crc32c(entry[CRC_START:]) == stored


def breaks_recovery(item: object) -> bool:
    """Whether the broker's recovery (LogSegment.recover) stops at this item of a walk and cuts the log
    there: a Problem it does not keep (a frame it cannot follow, a message it cannot parse, an unknown
    magic whose checksum fails) or an entry whose checksum fails. The one rule behind validate's
    recovery point, truncate's cut, dump-log's valid bytes and every audit's log end."""
    if isinstance(item, Problem):
        return not item.kept_by_broker
    return not getattr(item, "is_valid", True)  # runs hold only entries the C walk checked


def damaged_entry(entry: Entry) -> Problem:
    """A whole entry whose checksum fails, as the Problem an audit reports: its position, its base
    offset (a v0/v1 message: its offset as stored) and the one wording of a checksum mismatch."""
    what = "batch" if isinstance(entry, RecordBatch) else "message"
    offset = entry.base_offset if isinstance(entry, RecordBatch) else entry.offset
    text = f"{what} at offset {offset}: {crc_finding(entry.crc, entry.computed_crc)}"
    return Problem(entry.position, ProblemKind.CRC_MISMATCH, text, offset)


def until_recovery_cut(walk: Iterable[Entry | Problem]) -> Iterator[Entry | Problem]:
    """The items of a walk the broker's recovery keeps, then the one it stops at (an entry whose
    checksum fails comes as a crc-mismatch Problem) and nothing after it: what an audit may trust.
    The checksums are the walk's own (computed once, in C when it is built)."""
    for item in walk:
        if type(item) is RecordBatch:  # the common case, checked inline: this walk is every audit's
            if item.crc == item.computed_crc:
                yield item
                continue
        elif not breaks_recovery(item):
            yield item
            continue
        yield item if isinstance(item, Problem) else damaged_entry(item)
        return


def looks_like_text(path: str | os.PathLike, probe: int = 512) -> bool:
    """True when a file begins with printable text: a `.log` that is really a log4j file, say."""
    with open(path, "rb") as f:
        head = f.read(probe)
    if len(head) < 17:
        return False
    printable = len(head) - len(head.translate(None, _PRINTABLE))  # counted in C, not a byte at a time
    return printable / len(head) > 0.95


_PRINTABLE = bytes(range(32, 127)) + b"\t\n\r"


_NONZERO = re.compile(rb"[^\x00]")
_RESYNC_MIN_HELD = 1 << 16  # below this much left in the window, a resync search reads a new window
RESYNC_MAX_BYTES = 1 << 30  # give up looking for valid data after damage beyond this much file


def resync(path: str | os.PathLike, start: int, min_offset: int, limit: int = 1 << 20) -> list[int]:
    """Positions of valid entries (framed, CRC-checked, offsets at or past `min_offset`) after damage
    that lost the framing at `start - 1`: what lies beyond a hole that truncation would throw away.

    Candidates are found by the shape of an entry header (high half of the offset, magic 0-2 at byte
    16); each is checked by its CRC, then the walk follows the framing from there.
    """
    hi = struct.pack(">I", (min_offset >> 32) & 0xFFFFFFFF)
    pattern = re.compile(re.escape(hi) + rb"(?=.{12}[\x00-\x02])", re.DOTALL)
    found: list[int] = []
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        win = SegmentWindow(f, size)
        pos = start
        end = min(size, start + RESYNC_MAX_BYTES)
        while pos + HEADER_UP_TO_MAGIC <= end and len(found) < limit:
            # A valid entry holds a non-zero byte (its size) within its first 12 bytes, so none starts
            # more than 16 bytes before the next stretch the disk holds: holes are jumped, not read.
            data = next_data(f.fileno(), pos, end)
            if data is None:
                break
            pos = max(pos, data - 16)
            # Search what the window holds before reading another: a candidate that fails moves `pos` by
            # one byte, and a fresh 8 MiB read at each (once 11 of them for 1 KB of batches) is waste.
            held = win.available(pos)
            chunk_len = min(held if held >= _RESYNC_MIN_HELD else WINDOW, end - pos)
            i0 = win.ensure(pos, chunk_len)
            m = pattern.search(win.buf, i0, i0 + chunk_len)
            if m is None:
                pos += max(1, chunk_len - HEADER_UP_TO_MAGIC)
                continue
            cand = pos + (m.start() - i0)
            entry = _entry_at(win, cand, size, min_offset)
            if entry is None:
                j = m.start()
                if win.buf[j : j + HEADER_UP_TO_MAGIC] == bytes(HEADER_UP_TO_MAGIC):
                    # Inside a run of zeros: the next header can begin at most 16 bytes before its end.
                    z = _NONZERO.search(win.buf, j, i0 + chunk_len)
                    pos = max(cand + 1, pos + ((z.start() if z else i0 + chunk_len) - i0) - 16)
                else:
                    pos = cand + 1
                continue
            for item in walk_entries(win, cand, size):
                if isinstance(item, Problem):
                    if item.is_fatal:
                        break
                    continue
                if item.is_valid:
                    found.append(item.position)
            return found
    return found


def _entry_at(win: SegmentWindow, position: int, size: int, min_offset: int) -> Entry | None:
    i = win.ensure(position, HEADER_UP_TO_MAGIC)
    offset, length = struct.unpack_from(">qi", win.buf, i)
    magic = win.buf[i + 16]
    minimum = entry_minimum(magic)
    if (
        not (min_offset <= offset < min_offset + (1 << 31))
        or length < minimum
        or position + 12 + length > size
    ):
        return None
    i = win.ensure(position, length + LOG_OVERHEAD)
    try:
        entry = (
            parse_batch_header(win.buf, i, position)
            if magic == 2
            else parse_message(win.buf, i, position, i + length + LOG_OVERHEAD)
        )
    except RecordDecodeError:
        return None
    return entry if entry.is_valid else None
