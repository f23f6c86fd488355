"""Replicas of one partition written as a broker would leave them, with an independent encoder
(kafka-python's record builders): record batches v2 stamped with their leader epoch, or message sets
v0/v1; segments rolled every N entries with an `.index` entry per entry (each over 4 KiB when values
are large enough, as a broker indexes), `leader-epoch-checkpoint`, and the log dir's
`replication-offset-checkpoint` / `recovery-point-offset-checkpoint` / `meta.properties`.

An entry is a `Batch`: its leader epoch (v2; ignored for v0/v1) and its values; offsets run on from
the previous entry, so two replicas built from the same entries at the start hold byte-identical
batches there, as a follower copying its leader does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder

TOPIC = "orders"
T0 = 1_700_000_000_000


@dataclass
class Batch:
    epoch: int
    values: list[bytes]
    codec: int = 0  # 0 none, 1 gzip
    magic: int | None = None  # this batch's format, when not the replica's (an upgraded log)


@dataclass
class BuiltReplica:
    log_dir: Path
    path: Path  # the partition dir
    log_end: int
    batches: list[tuple[int, int, int]] = field(default_factory=list)  # (first offset, last offset, bytes)
    values: dict[int, bytes] = field(default_factory=dict)  # offset -> value


def v2_batch(base_offset: int, epoch: int, values: list[bytes], codec: int = 0) -> bytes:
    b = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 30,
    )
    for i, v in enumerate(values):
        b.append(i, timestamp=T0 + base_offset + i, key=b"k%d" % (base_offset + i), value=v, headers=[])
    buf = bytearray(b.build())
    # base offset and partition leader epoch sit before the CRC (not covered by it): the leader
    # stamps both on append, as here
    struct.pack_into(">q", buf, 0, base_offset)
    struct.pack_into(">i", buf, 12, epoch)
    return bytes(buf)


def legacy_entry(base_offset: int, magic: int, values: list[bytes], codec: int = 0) -> bytes:
    """Messages at base_offset.. (uncompressed: one message each; compressed: one wrapper)."""
    b = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i, v in enumerate(values):
        # magic 0 wrappers hold absolute inner offsets; magic 1 relative ones (the wrapper has the last)
        offset = base_offset + i if (magic == 0 or codec == 0) else i
        b.append(offset, timestamp=T0 + base_offset + i if magic else None, key=None, value=v)
    buf = bytearray(b.build())
    if codec:  # a wrapper carries its last inner offset (outside the CRC), as the broker sets it
        struct.pack_into(">q", buf, 0, base_offset + len(values) - 1)
    return bytes(buf)


def write_replica(
    root: Path,
    broker_id: int,
    batches: list[Batch],
    *,
    magic: int = 2,
    high_watermark: int | None = None,
    epochs: list[tuple[int, int]] | None = None,
    log_start: int = 0,
    per_segment: int = 4,
    partition: int = 0,
) -> BuiltReplica:
    """A log dir `root` holding `TOPIC-partition` with `batches` from offset `log_start` on.
    `epochs`: the leader-epoch-checkpoint's (epoch, start offset) entries (None: no file)."""
    log_dir = root
    part = log_dir / f"{TOPIC}-{partition}"
    part.mkdir(parents=True, exist_ok=True)
    (log_dir / "meta.properties").write_text(f"version=0\nbroker.id={broker_id}\n")
    built = BuiltReplica(log_dir, part, log_start)
    offset = log_start
    segment: list[bytes] = []
    segment_base = offset
    index: list[tuple[int, int]] = []
    position = 0

    def flush() -> None:
        name = f"{segment_base:020d}"
        (part / f"{name}.log").write_bytes(b"".join(segment))
        (part / f"{name}.index").write_bytes(b"".join(struct.pack(">iI", r, p) for r, p in index))

    for n, batch in enumerate(batches):
        if n and n % per_segment == 0:
            flush()
            segment, index, position, segment_base = [], [], 0, offset
        this = magic if batch.magic is None else batch.magic
        if this == 2:
            data = v2_batch(offset, batch.epoch, batch.values, batch.codec)
            entries = [data]
        elif batch.codec:
            entries = [legacy_entry(offset, this, batch.values, batch.codec)]
        else:
            entries = [legacy_entry(offset + i, this, [v]) for i, v in enumerate(batch.values)]
        last = offset + len(batch.values) - 1
        if position:  # an entry per append, as LogSegment.append: where the append starts, with its
            # largest offset (0.10.1+; v2) or, in 0.8-0.10.0, its first offset (v0/v1 here)
            index.append(((last if this == 2 else offset) - segment_base, position))
        for data in entries:
            segment.append(data)
            position += len(data)
        built.batches.append((offset, last, sum(len(d) for d in entries)))
        for i, v in enumerate(batch.values):
            built.values[offset + i] = v
        offset = last + 1
    flush()
    built.log_end = offset
    hw = offset if high_watermark is None else high_watermark
    for name, value in (("replication-offset-checkpoint", hw), ("recovery-point-offset-checkpoint", offset)):
        (log_dir / name).write_text(f"0\n1\n{TOPIC} {partition} {value}\n")
    (log_dir / "log-start-offset-checkpoint").write_text(f"0\n1\n{TOPIC} {partition} {log_start}\n")
    if epochs is not None:
        lines = "".join(f"{e} {s}\n" for e, s in epochs)
        (part / "leader-epoch-checkpoint").write_text(f"0\n{len(epochs)}\n{lines}")
    return built


def values(prefix: str, first: int, count: int, size: int = 40) -> list[bytes]:
    """`count` distinct values naming their writer and offset (`prefix-first`…), padded to `size`."""
    return [f"{prefix}-{first + i}".encode().ljust(size, b".") for i in range(count)]
