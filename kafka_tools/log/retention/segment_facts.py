"""What the delete policy needs to know of a segment, read cheaply: its size and mtime (one stat), its
largest timestamp (the last `.timeindex` entry: one pread at the end), and, for the last segment, the
log end offset (the last `.index` entry, then the batch headers after it). Never a whole-segment decode
unless an index is missing or cannot be trusted, and then only that one segment is scanned.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from kafka_tools.format.index import OFFSET_INDEX_ENTRY, TIME_INDEX_ENTRY, UntrustedIndexSize, last_entry
from kafka_tools.format.problems import ProblemKind
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.format.shared_methods import SharedMethods

MAGIC_AT = 16  # byte 16 of an entry is its magic in every generation (offset, size, crc|epoch, magic)


class IndexUntrusted(Exception):
    """An index file ktool will not read from (its length is not a whole number of entries)."""


@dataclass(init=False, repr=False, eq=False)
class LargestTimestamp(SharedMethods):
    value: int  # ms; -1 when the segment holds no timestamp
    source: str  # "timeindex", "batches" (scanned), "mtime"

    def __init__(self, value: int, source: str) -> None:
        self.value = value
        self.source = source


def stat_ms(path: str | os.PathLike) -> tuple[int, int]:
    """(size, mtime in ms as Java's File.lastModified gives it)."""
    st = os.stat(path)
    return st.st_size, st.st_mtime_ns // 1_000_000


def last_time_index_entry(path: str | os.PathLike) -> tuple[int, int] | None:
    """(timestamp, relative offset) of the last `.timeindex` entry, or None when it has none."""
    return _last(path, TIME_INDEX_ENTRY)


def last_offset_index_entry(path: str | os.PathLike) -> tuple[int, int] | None:
    """(relative offset, position) of the last `.index` entry, or None."""
    return _last(path, OFFSET_INDEX_ENTRY)


def _last(path: str | os.PathLike, layout) -> tuple[int, int] | None:
    try:
        return last_entry(path, layout)
    except UntrustedIndexSize as exc:
        raise IndexUntrusted(str(exc)) from None


def magic_of(path: str | os.PathLike) -> int | None:
    """The magic of the segment's first entry; None for an empty or too short file."""
    try:
        with open(path, "rb") as f:
            head = f.read(MAGIC_AT + 1)
    except OSError:
        return None
    return head[MAGIC_AT] if len(head) > MAGIC_AT else None


@dataclass(init=False, repr=False, eq=False)
class Scan(SharedMethods):
    """What a walk of a segment's entry headers found."""

    next_offset: int | None  # after the last valid entry; None when it has none
    max_timestamp: int  # -1 when no entry carries one
    problem: str | None  # why the walk stopped early, if it did

    def __init__(self, next_offset: int | None, max_timestamp: int, problem: str | None) -> None:
        self.next_offset = next_offset
        self.max_timestamp = max_timestamp
        self.problem = problem


def scan_entries(path: str | os.PathLike, start: int = 0) -> Scan:
    """Walk entries from byte `start` (a batch boundary), keeping the last offset and the largest
    timestamp; v2 batches and v0/v1 wrappers carry both in their headers, so nothing is decompressed."""
    next_offset: int | None = None
    max_ts = -1
    problem = None
    for entry in iter_log_entries(path, start):
        if not hasattr(entry, "next_offset"):
            if getattr(entry, "is_fatal", False) and entry.kind != ProblemKind.ZERO_TAIL:
                problem = f"byte {entry.position}: {entry.message}"
            continue
        next_offset = entry.next_offset
        ts = getattr(entry, "max_timestamp", None)
        if ts is None:
            ts = getattr(entry, "timestamp", -1)
        if ts > max_ts:
            max_ts = ts
    return Scan(next_offset, max_ts, problem)
