"""Producer-state snapshots (`NNNN.snapshot`, Kafka 0.11+), as ProducerStateManager writes them.

Layout: version int16, crc uint32 (CRC-32C of everything after it), then an array (int32 count) of
entries: producerId int64, epoch int16, lastSequence int32, lastOffset int64, offsetDelta int32,
timestamp int64, coordinatorEpoch int32, currentTxnFirstOffset int64.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field

from kafka_tools.format.checksums import crc32c
from kafka_tools.format.plural import plural
from kafka_tools.format.shared_methods import SharedMethods

SNAPSHOT_VERSION = 1
HEADER = struct.Struct(">hIi")
ENTRY = struct.Struct(">qhiqiqiq")
MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024


@dataclass(init=False, slots=True, repr=False, eq=False)
class ProducerEntry(SharedMethods):
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
    size = os.path.getsize(path)
    if size > MAX_SNAPSHOT_BYTES:
        return ProducerSnapshot(-1, 0, 0, [], f"{size} bytes is too large for a producer snapshot")
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < HEADER.size:
        return ProducerSnapshot(
            -1, 0, 0, [], f"{plural(len(data), 'byte')}, too short for a snapshot header ({HEADER.size})"
        )
    version, crc, count = HEADER.unpack_from(data, 0)
    snapshot = ProducerSnapshot(version, crc, crc32c(memoryview(data)[6:]))
    if version != SNAPSHOT_VERSION:
        snapshot.problem = f"unknown snapshot version {version}"
        return snapshot
    expected = HEADER.size + max(count, 0) * ENTRY.size
    if count < 0 or expected != len(data):
        snapshot.problem = (
            f"header says {plural(count, 'entry')} ({plural(expected, 'byte')}) but the file has "
            f"{plural(len(data), 'byte')}"
        )
        count = max(0, min(count, (len(data) - HEADER.size) // ENTRY.size))
    for i in range(count):
        snapshot.entries.append(ProducerEntry(*ENTRY.unpack_from(data, HEADER.size + i * ENTRY.size)))
    return snapshot
