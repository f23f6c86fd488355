"""Producer-state snapshots (`NNNN.snapshot`, Kafka 0.11+), as ProducerStateManager writes them.

Layout: version int16, crc uint32 (CRC-32C of everything after it), then an array (int32 count) of
entries: producerId int64, epoch int16, lastSequence int32, lastOffset int64, offsetDelta int32,
timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from kafka_tools.format.checksums import crc32c, crc32c_zeros
from kafka_tools.format.extents import CHUNK, EntryWalk, ZeroRun, data_extents, fixed_entries
from kafka_tools.format.plural import plural
from kafka_tools.format.shared_methods import SharedMethods

SNAPSHOT_VERSION = 1
HEADER = struct.Struct(">hIi")
ENTRY = struct.Struct(">qhiqiqiq")
MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024


@dataclass(init=False, slots=True, repr=False, eq=False)
class ProducerEntry(SharedMethods):
    """One producer's state in a `.snapshot` file."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    def __init__(
        self,
        producer_id: int,
        producer_epoch: int,
        last_sequence: int,
        last_offset: int,
        offset_delta: int,
        timestamp: int,
        coordinator_epoch: int,
        current_txn_first_offset: int,
    ) -> None:
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.last_sequence = last_sequence
        self.last_offset = last_offset
        self.offset_delta = offset_delta
        self.timestamp = timestamp
        self.coordinator_epoch = coordinator_epoch
        self.current_txn_first_offset = current_txn_first_offset

    @property
    def first_sequence(self) -> int:
        return self.last_sequence - self.offset_delta


@dataclass(init=False, slots=True, repr=False, eq=False)
class ProducerSnapshot(SharedMethods):
    """A producer state `.snapshot` file read: its version, stored and computed CRC, its entries."""

    version: int
    crc: int
    computed_crc: int
    entries: list[ProducerEntry] = field(default_factory=list)
    problem: str | None = None  # structural problem; entries hold what could be read

    def __init__(
        self,
        version: int,
        crc: int,
        computed_crc: int,
        entries: list[ProducerEntry] | None = None,
        problem: str | None = None,
    ) -> None:
        self.version = version
        self.crc = crc
        self.computed_crc = computed_crc
        self.entries = [] if entries is None else entries
        self.problem = problem

    @property
    def is_valid(self) -> bool:
        return self.problem is None and self.crc == self.computed_crc


def read_snapshot(path: str | os.PathLike) -> ProducerSnapshot:
    """The snapshot's header, checksum and entries, read by what the file really holds: the size cap is
    checked before anything is read, the header's count against the bytes that follow it, the CRC
    computed in chunks, and all-zero entries (a hole, or zeros written where entries should be: no
    producer Kafka writes is all zeros) counted in the problem, never listed. A 511 MiB sparse file
    whose header says 2**31 - 1 entries costs a read of its holes, not eleven million entries."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        return _read(fd, os.fstat(fd).st_size)
    finally:
        os.close(fd)


def _read(fd: int, size: int) -> ProducerSnapshot:
    if size > MAX_SNAPSHOT_BYTES:
        return ProducerSnapshot(-1, 0, 0, [], f"{size} bytes is too large for a producer snapshot")
    head = os.pread(fd, HEADER.size, 0)
    if len(head) < HEADER.size:
        return ProducerSnapshot(
            -1, 0, 0, [], f"{plural(len(head), 'byte')}, too short for a snapshot header ({HEADER.size})"
        )
    version, crc, count = HEADER.unpack(head)
    snapshot = ProducerSnapshot(version, crc, _crc_after_header(fd, size))
    if version != SNAPSHOT_VERSION:
        snapshot.problem = f"unknown snapshot version {version}"
        return snapshot
    problems = []
    expected = HEADER.size + max(count, 0) * ENTRY.size
    if count < 0 or expected != size:
        problems.append(
            f"header says {plural(count, 'entry')} ({plural(expected, 'byte')}) but the file has "
            f"{plural(size, 'byte')}"
        )
        count = max(0, min(count, (size - HEADER.size) // ENTRY.size))
    walk = EntryWalk(ZeroRun())
    for _slot, raw in fixed_entries(fd, HEADER.size, ENTRY.size, count, walk):
        snapshot.entries.append(ProducerEntry(*ENTRY.unpack(raw)))
    zeros = walk.zeros
    if zeros.entries:
        problems.append(
            f"{plural(zeros.entries, 'entry')} all zeros, the first at byte "
            f"{HEADER.size + zeros.first_slot * ENTRY.size}: a hole or zeros where entries should be "
            f"(not listed)"
        )
    if walk.shortened:
        problems.append("shortened while read")
    snapshot.problem = "; ".join(problems) or None
    return snapshot


def _crc_after_header(fd: int, size: int) -> int:
    """CRC-32C of everything after the crc field: its data read in chunks (memory stays flat), its holes
    never read (`crc32c_zeros`)."""
    value = 0
    at = 6
    for start, end in data_extents(fd, 6, size):
        value = crc32c_zeros(value, start - at)
        at = start
        while at < end:
            chunk = os.pread(fd, min(CHUNK, end - at), at)
            if not chunk:
                return value  # shortened while read: the entries' walk says so
            value = crc32c(chunk, value)
            at += len(chunk)
    return crc32c_zeros(value, size - at)
