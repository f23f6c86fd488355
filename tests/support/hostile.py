"""Small segments that are valid frames with valid CRCs around hostile contents: the inputs the fuzzers
found (or the issue named) that reached undefined behaviour or an uncaught error, rebuilt from their
fields so a test says what each one is."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import crc32c

from kafka_tools.format.varint import encode_varint as zigzag

INT64_MAX = 2**63 - 1


def v2_record(
    offset_delta: int = 0,
    ts_delta: int = 0,
    key: bytes | None = None,
    value: bytes | None = b"v",
    tail: bytes = b"\x00",
) -> bytes:
    """One varint record; `tail` is its header section (a header count and the headers)."""
    body = b"\x00" + zigzag(ts_delta) + zigzag(offset_delta)
    for field in (key, value):
        body += zigzag(-1) if field is None else zigzag(len(field)) + field
    body += tail
    return zigzag(len(body)) + body


def v2_batch(
    section: bytes,
    count: int,
    base_offset: int = 0,
    base_timestamp: int = 1_700_000_000_000,
    attributes: int = 0,
    last_offset_delta: int = 0,
) -> bytes:
    """A v2 batch around a records section, its CRC correct."""
    after_crc = struct.pack(
        ">hiqqqhii", attributes, last_offset_delta, base_timestamp, base_timestamp, -1, -1, -1, count
    )
    after_crc += section
    body = struct.pack(">ib", 0, 2) + struct.pack(">I", crc32c.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", base_offset, len(body)) + body


def v1_message(
    offset: int, value: bytes | None, attributes: int = 0, timestamp: int = 1_700_000_000_000
) -> bytes:
    body = struct.pack(">bbq", 1, attributes, timestamp) + struct.pack(">i", -1)
    body += struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def v1_gzip_wrapper(offset: int, inner: bytes) -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    return v1_message(offset, c.compress(inner) + c.flush(), attributes=1)


def header_count_overflow() -> bytes:
    """A record whose header count is 8460809781839223477: count * 2 wraps negative in 64 bits."""
    return v2_batch(v2_record(tail=zigzag(8460809781839223477)), 1)


def offset_overflow() -> bytes:
    """A batch at offset INT64_MAX whose record's offset delta is 1: the sum is past int64."""
    return v2_batch(v2_record(offset_delta=1), 1, base_offset=INT64_MAX)


def timestamp_overflow() -> bytes:
    return v2_batch(v2_record(ts_delta=-1), 1, base_timestamp=-(2**63))


def v1_shift_overflow() -> bytes:
    """A v1 wrapper at offset INT64_MAX whose last inner offset is -1: the shift is 2^63."""
    inner = v1_message(0, b"a") + v1_message(-1, b"b")
    return v1_gzip_wrapper(INT64_MAX, inner)


CASES = {
    "header-count-overflow": header_count_overflow,
    "offset-overflow": offset_overflow,
    "timestamp-overflow": timestamp_overflow,
    "v1-shift-overflow": v1_shift_overflow,
}


def write(directory: Path, name: str) -> Path:
    part = directory / f"{name}-0"
    part.mkdir(parents=True, exist_ok=True)
    path = part / "00000000000000000000.log"
    path.write_bytes(CASES[name]())
    return path
