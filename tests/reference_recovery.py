"""The broker's log recovery, written for the tests from Kafka's sources and independent of ktool (nothing
here imports kafka_tools): what LogSegment.recover keeps of a segment, byte for byte.

* Kafka 0.7 (FileMessageSet.recover / validateMessage): a message is a 4-byte size, then magic (0, or 1
  with an attributes byte) and a CRC32 of the payload. Recovery stops at fewer than 4 bytes left, a size
  below Message.MinHeaderSize (5), a message past the end of the file, or a CRC that does not match.
  (An unknown magic makes 0.7 throw UnknownMagicByteException instead: the reference stops there.)
* Kafka 0.9 (FileMessageSet.iterator(maxMessageSize) + Message.ensureValid), for message sets: stop at a
  log header (offset, size) that is incomplete, a size below Message.MinHeaderSize (14), a size above
  message.max.bytes (1000012; InvalidMessageException, caught by recover), a message past the end of the
  file, or a CRC32 (magic .. end) that does not match. Offsets are never looked at.
* Kafka 0.11+ (FileLogInputStream.nextBatch + RecordBatch.ensureValid), for record batches and mixed
  segments: stop when no more than 17 bytes are left, at a size below 14 (LegacyRecord.RECORD_OVERHEAD_V0)
  or above the largest record (1048588), at an entry past the end of the file; an entry whose magic byte
  is below 2 is a legacy message (CRC32 from magic on), any other a batch (at least 61 bytes, CRC-32C from
  the attributes on). The checksums leave the offset fields (and a batch's epoch and magic) uncovered.

(0.7's CRC covers the payload only: a magic-1 message's attributes byte, which names the codec, is
outside it, so a flipped codec bit is kept by the broker and leaves a payload no consumer can read.)

`soundness` then says whether what recovery keeps is a log a consumer can read: offsets inside the
segment and increasing, batches of magic 2, a v0 wrapper's offset equal to its last inner message's.
Damage there is kept by the broker, so no truncation can repair it.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

from kafka.codec import gzip_decode, snappy_decode
from kafka.record.legacy_records import LegacyRecordBatch
from kafka.record.util import calc_crc32c

MAX_MESSAGE_09 = 1000012  # 0.9 message.max.bytes default, with the log overhead
MAX_RECORD_MODERN = 1048588  # max.message.bytes default since 0.11
INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True)
class KeptEntry:
    position: int
    size: int  # whole entry, header included
    magic: int


def recover_kafka07(data: bytes) -> tuple[int, list[KeptEntry]]:
    pos, kept = 0, []
    while len(data) - pos >= 4:
        (size,) = struct.unpack_from(">i", data, pos)
        if size < 5 or pos + 4 + size > len(data):
            break
        magic = data[pos + 4]
        if magic not in (0, 1) or (magic == 1 and size < 6):
            break
        crc_at = pos + 5 + magic
        (crc,) = struct.unpack_from(">I", data, crc_at)
        if zlib.crc32(data[crc_at + 4 : pos + 4 + size]) != crc:
            break
        kept.append(KeptEntry(pos, 4 + size, magic))
        pos += 4 + size
    return pos, kept


def recover_kafka09(data: bytes) -> tuple[int, list[KeptEntry]]:
    pos, kept = 0, []
    while len(data) - pos >= 12:
        _offset, size = struct.unpack_from(">qi", data, pos)
        if size < 14 or size > MAX_MESSAGE_09 or pos + 12 + size > len(data):
            break
        (crc,) = struct.unpack_from(">I", data, pos + 12)
        if zlib.crc32(data[pos + 16 : pos + 12 + size]) != crc:
            break
        kept.append(KeptEntry(pos, 12 + size, struct.unpack_from(">b", data, pos + 16)[0]))
        pos += 12 + size
    return pos, kept


def recover_modern(data: bytes) -> tuple[int, list[KeptEntry]]:
    pos, kept = 0, []
    while pos < len(data) - 17:
        _offset, size = struct.unpack_from(">qi", data, pos)
        if size < 14 or size > MAX_RECORD_MODERN or pos > len(data) - 12 - size:
            break
        end = pos + 12 + size
        (magic,) = struct.unpack_from(">b", data, pos + 16)
        if magic < 2:
            (crc,) = struct.unpack_from(">I", data, pos + 12)
            ok = zlib.crc32(data[pos + 16 : end]) == crc
        else:
            (crc,) = struct.unpack_from(">I", data, pos + 17)
            ok = 12 + size >= 61 and calc_crc32c(data[pos + 21 : end]) == crc
        if not ok:
            break
        kept.append(KeptEntry(pos, 12 + size, magic))
        pos = end
    return pos, kept


def recover(data: bytes, rules: str) -> tuple[int, list[KeptEntry]]:
    """(bytes the broker keeps, the entries in them) under `rules`: "0.7", "0.9" or "modern"."""
    return {"0.7": recover_kafka07, "0.9": recover_kafka09, "modern": recover_modern}[rules](data)


_INNER: dict[bytes, tuple[int, int]] = {}


def _legacy_offsets(entry: bytes, magic: int) -> tuple[int, int]:
    """(first, last) offset of a legacy message, decompressing a wrapper with kafka-python."""
    (offset,) = struct.unpack_from(">q", entry, 0)
    if entry[17] & 0x07 == 0:
        return offset, offset
    if entry not in _INNER:
        offsets = [r.offset for r in LegacyRecordBatch(bytearray(entry), magic)]
        _INNER[entry] = (offsets[0], offsets[-1])
    return _INNER[entry]


def soundness(data: bytes, kept: list[KeptEntry], base: int, rules: str) -> str | None:
    """Why the kept prefix is not a readable log (None when it is): damage recovery does not remove."""
    if rules == "0.7":
        return _kafka07_soundness(data, kept)
    last = None
    for i, e in enumerate(kept):
        raw = data[e.position : e.position + e.size]
        (offset,) = struct.unpack_from(">q", raw, 0)
        if e.magic == 2 or (rules == "modern" and e.magic > 2):
            if e.magic != 2:
                return f"batch at {e.position} has magic {e.magic}"
            (delta,) = struct.unpack_from(">i", raw, 23)
            first, end = offset, offset + delta
        else:
            try:
                first, end = _legacy_offsets(raw, e.magic)
            except Exception as exc:  # a wrapper kafka-python cannot read
                return f"wrapper at {e.position} unreadable: {exc}"
            if end != offset:  # v1: a wrapper offset below its last relative one leaves them as stored
                return f"v{e.magic} wrapper at {e.position}: offset {offset}, last inner {end}"
            end = offset
        if not 0 <= end - base <= INT32_MAX:
            return f"entry at {e.position}: offset {end} outside the segment based at {base}"
        if i == 0 and first < base:
            return f"entry at {e.position}: first offset {first} below the base {base}"
        if last is not None and end <= last:
            return f"entry at {e.position}: offset {end} after {last}"
        last = end
    return None


def _kafka07_soundness(data: bytes, kept: list[KeptEntry]) -> str | None:
    """0.7 offsets are byte positions; only the codec bits (outside the CRC) can go wrong."""
    for e in kept:
        if e.magic != 1:
            continue
        codec = data[e.position + 5] & 0x03
        if codec == 0:
            continue
        payload = data[e.position + 10 : e.position + e.size]
        try:
            if codec == 1:
                inner = gzip_decode(payload)
            elif codec == 2:
                inner = snappy_decode(payload)
            else:
                return f"message at {e.position}: unknown codec {codec}"
        except Exception as exc:  # what a consumer would get too
            return f"message at {e.position}: codec {codec} payload unreadable: {exc}"
        if not inner or recover_kafka07(inner)[0] != len(inner):
            return f"message at {e.position}: codec {codec} payload holds no valid message set"
    return None


# -- the partition: Log.loadSegments / Log.recoverLog ------------------------------------------------------
#
# The broker lists a partition's `<base>.log` files and orders the segments by the base offset in their
# names; nothing checks that a base offset follows its predecessor's last offset (a missing segment leaves
# a gap the log simply continues over; an overlap is loaded as it is). After an unclean shutdown every
# segment past the recovery point (0 without a checkpoint, as here) is recovered in that order with
# LogSegment.recover, which also rewrites the segment's `.index` and `.timeindex`; the first segment that
# loses bytes ends the log: every later segment is deleted with its index files (Log.recoverLog,
# `unflushed.foreach(deleteSegment)`).
#
# Index rebuilding (LogSegment.recover, 0.11+): before an entry, when `validBytes - lastIndexEntry >
# index.interval.bytes`, append (lastOffset - base, validBytes) to the `.index` and, to the `.timeindex`,
# (max timestamp so far, the last offset of the entry that had it) unless that timestamp is not above the
# time index's last one (TimeIndex.maybeAppend; an empty time index counts as timestamp -1); after the
# walk, the same time entry once more (a closed segment's final entry). lastOffset is the shallow offset
# of a legacy message (a wrapper carries its last inner offset) and baseOffset + lastOffsetDelta for a
# batch. (0.9/0.10 stored the first inner offset of a compressed wrapper instead; both index forms find
# the same data, and ktool writes today's.) A legacy message's timestamp is its own (magic 1) or -1.


def entry_last_offset(data: bytes, e: KeptEntry) -> int:
    (offset,) = struct.unpack_from(">q", data, e.position)
    if e.magic >= 2:
        return offset + struct.unpack_from(">i", data, e.position + 23)[0]
    return offset


def entry_first_offset(data: bytes, e: KeptEntry) -> int:
    """The first offset an entry holds: a batch's base offset, a wrapper's first inner message's."""
    if e.magic >= 2:
        return struct.unpack_from(">q", data, e.position)[0]
    return _legacy_offsets(data[e.position : e.position + e.size], e.magic)[0]


def entry_max_timestamp(data: bytes, e: KeptEntry) -> int:
    if e.magic >= 2:
        return struct.unpack_from(">q", data, e.position + 35)[0]
    if e.magic == 1:
        return struct.unpack_from(">q", data, e.position + 18)[0]
    return -1


def rebuild_indexes(data: bytes, kept: list[KeptEntry], base: int, interval: int) -> tuple[bytes, bytes]:
    """The `.index` and `.timeindex` LogSegment.recover writes for the kept entries of a segment."""
    offsets, times = bytearray(), bytearray()
    valid = last_index_entry = 0
    max_ts, max_ts_offset = -1, base
    time_last = -1  # TimeIndex.lastEntry of an empty index: (NO_TIMESTAMP, base)

    def maybe_append_time() -> None:
        nonlocal time_last
        if max_ts > time_last:
            times.extend(struct.pack(">qi", max_ts, max_ts_offset - base))
            time_last = max_ts

    for e in kept:
        last = entry_last_offset(data, e)
        ts = entry_max_timestamp(data, e)
        if ts > max_ts:
            max_ts, max_ts_offset = ts, last
        if valid - last_index_entry > interval:
            offsets.extend(struct.pack(">iI", last - base, valid))
            maybe_append_time()
            last_index_entry = valid
        valid += e.size
    maybe_append_time()
    return bytes(offsets), bytes(times)


@dataclass
class PartitionRecovery:
    cut: int | None  # base offset of the segment recovery truncates (None: nothing cut)
    keep_bytes: int  # what it keeps of that segment
    deleted: list[int]  # base offsets of the later segments it deletes
    lost_entries: int  # valid entries in the deleted segments
    kept: dict[int, list[KeptEntry]]  # base offset -> entries kept, for every segment left
    unsound: str | None  # damage recovery keeps (see `soundness`), across segments too


def recover_partition(segments: dict[int, bytes], rules: str) -> PartitionRecovery:
    """Log.recoverLog over `segments` (base offset -> segment bytes), recovery point 0."""
    out = PartitionRecovery(None, 0, [], 0, {}, None)
    next_offset = None  # one past the last offset kept so far
    for base in sorted(segments):
        data = segments[base]
        if out.cut is not None:
            out.deleted.append(base)
            out.lost_entries += len(recover(data, rules)[1])
            continue
        prefix, kept = recover(data, rules)
        out.kept[base] = kept
        if prefix < len(data):
            out.cut, out.keep_bytes = base, prefix
        if out.unsound is None:
            out.unsound = soundness(data, kept, base, rules)
        if out.unsound is None and next_offset is not None and base < next_offset:
            out.unsound = f"segment {base} starts below its predecessor's next offset {next_offset}"
        if kept:
            next_offset = entry_last_offset(data, kept[-1]) + 1
    return out
