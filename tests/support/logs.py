"""Generated log dirs of any size, fast: one v2 batch built by kafka-python, repeated with its base
offset, timestamps and CRC patched, so offsets run on across a partition's segments and every
segment covers its own time span (tests, bench)."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

from crc32c import crc32c
from kafka.record.default_records import DefaultRecordBatchBuilder

T0 = 1_700_000_000_000  # the first batch's timestamp (ms)
_CRC_FROM = 21  # a v2 batch's CRC-32C covers everything from its attributes on


def template_batch(records: int, value_bytes: int, codec: int = 0, key_prefix: bytes = b"k") -> bytes:
    """One v2 batch of `records` records (keys `k0`, `k1`…, values of `value_bytes` bytes), its
    timestamps one ms apart from T0."""
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i in range(records):
        value = (b"value-%d-" % i).ljust(value_bytes, b"x")
        b.append(i, timestamp=T0 + i, key=key_prefix + str(i).encode(), value=value, headers=[])
    return bytes(b.build())


def relocated(batch: bytes, base_offset: int, shift_ms: int) -> bytes:
    """`batch` with its base offset set and its timestamps moved by `shift_ms`, CRC recomputed."""
    buf = bytearray(batch)
    struct.pack_into(">q", buf, 0, base_offset)
    base_ts, max_ts = struct.unpack_from(">qq", buf, 27)
    struct.pack_into(">qq", buf, 27, base_ts + shift_ms, max_ts + shift_ms)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[_CRC_FROM:])))
    return bytes(buf)


@dataclass
class GeneratedLogDir:
    path: Path
    partitions: int
    segments: int  # per partition
    batches: int  # per segment
    records_per_batch: int
    segment_ms: (
        int  # each segment spans this many ms; segment s of every partition starts at T0 + s*segment_ms
    )

    @property
    def records(self) -> int:
        return self.partitions * self.segments * self.batches * self.records_per_batch


def write_log_dir(
    root: Path,
    partitions: int = 2,
    segments: int = 2,
    batches: int = 100,
    records: int = 50,
    value_bytes: int = 100,
    codec: int = 0,
    topic: str = "gen",
    segment_ms: int = 3_600_000,
) -> GeneratedLogDir:
    """A log dir `root` of `topic`-0… with `segments` segments of `batches` copies of one batch each.
    Segment s (of every partition) holds timestamps in [T0 + s*segment_ms, T0 + (s+1)*segment_ms)."""
    template = template_batch(records, value_bytes, codec)
    root.mkdir(parents=True, exist_ok=True)
    (root / "meta.properties").write_text("version=0\nbroker.id=0\n")
    step = max(1, (segment_ms - records) // max(batches, 1))
    for p in range(partitions):
        part = root / f"{topic}-{p}"
        part.mkdir(exist_ok=True)
        offset = 0
        for s in range(segments):
            with open(part / f"{offset:020d}.log", "wb") as f:
                for b in range(batches):
                    f.write(relocated(template, offset, s * segment_ms + b * step))
                    offset += records
    return GeneratedLogDir(root, partitions, segments, batches, records, segment_ms)
