"""Segments whose one compressed batch (or v1 wrapper) inflates far past ktool's 256 MiB cap: valid
records all the way, so a checker that streams has to walk them, not stop at the first byte."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterator
from pathlib import Path

import crc32c

VALUE = 1024
CHUNK_RECORDS = 1024  # records per piece handed to the compressor


def _zigzag(n: int) -> bytes:
    raw = (n << 1) ^ (n >> 63)
    out = bytearray()
    while raw >= 0x80:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


def _v2_record(delta: int) -> bytes:
    body = b"\x00" + _zigzag(0) + _zigzag(delta) + _zigzag(-1) + _zigzag(VALUE) + b"\x00" * VALUE + _zigzag(0)
    return _zigzag(len(body)) + body


def _v1_inner(offset: int) -> bytes:
    body = struct.pack(">bbq", 1, 0, 1_700_000_000_000) + struct.pack(">i", -1) + struct.pack(">i", VALUE)
    body += b"\x00" * VALUE
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def pieces(magic: int, total: int) -> Iterator[bytes]:
    """The uncompressed records section (v2) or inner message set (v1), about `total` bytes, in pieces."""
    make = _v2_record if magic == 2 else _v1_inner
    n = 0
    size = 0
    while size < total:
        piece = b"".join(make(n + i) for i in range(CHUNK_RECORDS))
        n += CHUNK_RECORDS
        size += len(piece)
        yield piece


def count_for(magic: int, total: int) -> int:
    per = len(_v2_record(0) if magic == 2 else _v1_inner(0))
    return -(-total // (per * CHUNK_RECORDS)) * CHUNK_RECORDS


def compress(codec: str, chunks: Iterator[bytes]) -> bytes:
    out = bytearray()
    if codec == "gzip":
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        for piece in chunks:
            out += c.compress(piece)
        out += c.flush()
    elif codec == "snappy":  # xerial framing, as the Java client writes it
        import snappy

        out += b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
        for piece in chunks:
            for at in range(0, len(piece), 32 * 1024):
                block = snappy.compress(piece[at : at + 32 * 1024])
                out += struct.pack(">i", len(block)) + block
    elif codec == "lz4":
        import lz4.frame

        c = lz4.frame.LZ4FrameCompressor(block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False)
        out += c.begin()
        for piece in chunks:
            out += c.compress(piece)
        out += c.flush()
    elif codec == "zstd":
        import zstandard

        c = zstandard.ZstdCompressor().compressobj()
        for piece in chunks:
            out += c.compress(piece)
        out += c.flush()
    return bytes(out)


CODECS = {"gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def v2_bomb(codec: str, total: int) -> bytes:
    count = count_for(2, total)
    payload = compress(codec, pieces(2, total))
    after_crc = struct.pack(
        ">hiqqqhii", CODECS[codec], count - 1, 1_700_000_000_000, 1_700_000_000_000, -1, -1, -1, count
    )
    after_crc += payload
    crc = crc32c.crc32c(after_crc)
    body = struct.pack(">ib", 0, 2) + struct.pack(">I", crc) + after_crc
    return struct.pack(">qi", 0, len(body)) + body


def v1_bomb(codec: str, total: int) -> bytes:
    count = count_for(1, total)
    payload = compress(codec, pieces(1, total))
    body = struct.pack(">bbq", 1, CODECS[codec], 1_700_000_000_000) + struct.pack(">i", -1)
    body += struct.pack(">i", len(payload)) + payload
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", count - 1, len(message)) + message


def write_bomb(directory: Path, magic: int, codec: str, total: int) -> Path:
    part = directory / f"bomb-v{magic}-{codec}-0"
    part.mkdir(parents=True, exist_ok=True)
    path = part / "00000000000000000000.log"
    path.write_bytes(v2_bomb(codec, total) if magic == 2 else v1_bomb(codec, total))
    return path
