"""Producer batches, markers, snapshots and __transaction_state records written byte by byte as the
broker lays them out (RecordBatch v2, EndTransactionMarker, ProducerStateManager's snapshot v1,
TransactionLogKey/Value v0 and v1), into log dirs the tests then read."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

import crc32c

from kafka_tools.format.java_hash import partition_for

T0 = 1_700_000_000_000
STATUS = {"Empty": 0, "Ongoing": 1, "PrepareCommit": 2, "PrepareAbort": 3, "CompleteCommit": 4,
          "CompleteAbort": 5, "Dead": 6, "PrepareEpochFence": 7}  # fmt: skip
ABORT, COMMIT = 0, 1
TRANSACTIONAL, CONTROL = 0x10, 0x20


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(n: int) -> bytes:
    return uvarint((n << 1) ^ (n >> 63))


def record(delta: int, key: bytes | None, value: bytes | None) -> bytes:
    body = b"\x00" + varint(0) + varint(delta)
    for f in (key, value):
        body += varint(-1) if f is None else varint(len(f)) + f
    body += varint(0)
    return varint(len(body)) + body


def batch(base: int, records: list[tuple[bytes | None, bytes | None]], pid: int = -1, epoch: int = -1,
          seq: int = -1, attrs: int = 0, ts: int = T0) -> bytes:  # fmt: skip
    section = b"".join(record(i, k, v) for i, (k, v) in enumerate(records))
    after = struct.pack(">hiqqqhii", attrs, len(records) - 1, ts, ts, pid, epoch, seq, len(records))
    after += section
    body = struct.pack(">ib", 0, 2) + struct.pack(">I", crc32c.crc32c(after)) + after
    return struct.pack(">qi", base, len(body)) + body


def marker(base: int, pid: int, epoch: int, kind: int, coordinator_epoch: int, ts: int = T0) -> bytes:
    key = struct.pack(">hh", 0, kind)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return batch(base, [(key, value)], pid, epoch, -1, TRANSACTIONAL | CONTROL, ts)


def snapshot(entries: list[tuple[int, int, int, int, int, int, int, int]]) -> bytes:
    body = struct.pack(">i", len(entries)) + b"".join(struct.pack(">qhiqiqiq", *e) for e in entries)
    return struct.pack(">hI", 1, crc32c.crc32c(body)) + body


def txn_key(tid: str) -> bytes:
    raw = tid.encode()
    return struct.pack(">hh", 0, len(raw)) + raw


def txn_value(pid: int, epoch: int, status: str, partitions: dict[str, list[int]] | None,
              timeout: int = 60000, start: int = T0, update: int = T0, version: int = 0,
              tagged: dict[int, bytes] | None = None) -> bytes:  # fmt: skip
    out = struct.pack(">hqhib", version, pid, epoch, timeout, STATUS[status])
    if version == 0:
        if partitions is None:
            out += struct.pack(">i", -1)
        else:
            out += struct.pack(">i", len(partitions))
            for topic, ids in partitions.items():
                out += struct.pack(">h", len(topic)) + topic.encode() + struct.pack(">i", len(ids))
                out += b"".join(struct.pack(">i", i) for i in ids)
        return out + struct.pack(">qq", update, start)
    if partitions is None:
        out += uvarint(0)
    else:
        out += uvarint(len(partitions) + 1)
        for topic, ids in partitions.items():
            out += uvarint(len(topic) + 1) + topic.encode() + uvarint(len(ids) + 1)
            out += b"".join(struct.pack(">i", i) for i in ids) + uvarint(0)
    out += struct.pack(">qq", update, start)
    tagged = tagged or {}
    out += uvarint(len(tagged))
    for tag in sorted(tagged):
        out += uvarint(tag) + uvarint(len(tagged[tag])) + tagged[tag]
    return out


@dataclass
class Log:
    """A partition's one segment, appended batch by batch with offsets counted."""

    next_offset: int = 0
    data: bytearray = field(default_factory=bytearray)

    def append(self, n: int = 1, **kw) -> int:
        first = self.next_offset
        self.data += batch(first, [(b"k", b"v")] * n, **kw)
        self.next_offset += n
        return first

    def txn(self, pid: int, epoch: int, seq: int, n: int = 1, ts: int = T0) -> int:
        return self.append(n, pid=pid, epoch=epoch, seq=seq, attrs=TRANSACTIONAL, ts=ts)

    def end(self, pid: int, epoch: int, kind: int, coordinator_epoch: int, ts: int = T0) -> int:
        first = self.next_offset
        self.data += marker(first, pid, epoch, kind, coordinator_epoch, ts)
        self.next_offset += 1
        return first

    def state(self, tid: str, value: bytes | None, ts: int = T0) -> int:
        first = self.next_offset
        self.data += batch(first, [(txn_key(tid), value)], ts=ts)
        self.next_offset += 1
        return first

    def write(self, log_dir: Path, name: str) -> Path:
        part = log_dir / name
        part.mkdir(parents=True, exist_ok=True)
        (part / "00000000000000000000.log").write_bytes(bytes(self.data))
        return part


def log_dir(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir(parents=True, exist_ok=True)
    (d / "meta.properties").write_text("version=0\nbroker.id=0\n")
    return d


def hanging_log_dir(root: Path) -> Path:
    """A log dir whose `orders-0` holds a committed transaction, one the coordinator still owns
    (producer 1000, id app-1, Ongoing) and one it does not know (producer 2000, hanging once 15 minutes
    are past), with `__transaction_state` saying so."""
    d = log_dir(root)
    data = Log()
    data.append(2)
    data.txn(3000, 0, 0, n=2)
    data.end(3000, 0, COMMIT, 0)
    data.txn(2000, 1, 0, n=3, ts=T0)
    data.txn(1000, 3, 0, n=2, ts=T0 + 1000)
    data.append(1, ts=T0 + 60_000)
    data.write(d, "orders-0")
    for tid, values in (
        ("app-1", [txn_value(1000, 3, "Empty", None), txn_value(1000, 3, "Ongoing", {"orders": [0]})]),
        ("done", [txn_value(3000, 0, "CompleteCommit", None)]),
    ):
        coord = Log()
        for value in values:
            coord.state(tid, value)
        coord.write(d, f"__transaction_state-{partition_for(tid, 50)}")  # app-1: 5, done: 32
    stamp(d, T0 + 60_000)
    return d


def stamp(root: Path, ms: int) -> None:
    """Every file's mtime set to `ms`, as a broker that stopped then left them (a copy keeps them: cp -a):
    find-hanging's clock is the newest time the log dirs hold, file times included."""
    for path in root.rglob("*"):
        os.utime(path, ns=(ms * 1_000_000, ms * 1_000_000))
