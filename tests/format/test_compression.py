"""Decompression is exact for every codec Kafka producers write, and bounded for hostile payloads."""

from __future__ import annotations

import gzip
import struct

import lz4.frame
import pytest
import snappy
import zstandard

from kafka_tools.format.compression import Codec, DecompressionError, decompress

DATA = b"".join(b"record-%06d|" % i for i in range(20_000))


def _xerial(data: bytes, block: int = 32 * 1024) -> bytes:
    out = bytearray(b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1))
    for i in range(0, len(data), block):
        chunk = snappy.compress(data[i : i + block])
        out += struct.pack(">i", len(chunk)) + chunk
    return bytes(out)


@pytest.mark.parametrize(
    ("codec", "payload"),
    [
        (Codec.GZIP, gzip.compress(DATA)),
        (Codec.SNAPPY, snappy.compress(DATA)),
        (Codec.SNAPPY, _xerial(DATA)),
        (Codec.LZ4, lz4.frame.compress(DATA)),
        (Codec.LZ4, lz4.frame.compress(DATA, block_checksum=True, content_checksum=True, store_size=True)),
        (Codec.ZSTD, zstandard.ZstdCompressor().compress(DATA)),
    ],
    ids=["gzip", "snappy-raw", "snappy-xerial", "lz4", "lz4-checksums", "zstd"],
)
def test_round_trip_with_independent_compressors(codec: Codec, payload: bytes) -> None:
    assert decompress(codec, payload) == DATA


def test_lz4_frame_with_kafka_0_9_header_checksum_is_read() -> None:
    frame = bytearray(lz4.frame.compress(DATA))
    frame[6] ^= 0x5A  # Kafka < 0.10 computed the descriptor checksum over the magic too: a wrong byte here
    assert decompress(Codec.LZ4, bytes(frame)) == DATA


BOMB = 64 * 1024 * 1024


@pytest.mark.parametrize(
    ("codec", "payload"),
    [
        (Codec.GZIP, gzip.compress(bytes(BOMB))),
        (Codec.LZ4, lz4.frame.compress(bytes(BOMB))),
        (Codec.ZSTD, zstandard.ZstdCompressor().compress(bytes(BOMB))),
        (Codec.SNAPPY, snappy.compress(bytes(BOMB))),
    ],
    ids=["gzip", "lz4", "zstd", "snappy"],
)
def test_a_payload_past_the_cap_is_refused_not_allocated(codec: Codec, payload: bytes) -> None:
    with pytest.raises(DecompressionError, match="limit|claims"):
        decompress(codec, payload, limit=1024 * 1024)


def test_snappy_length_preamble_that_lies_is_refused() -> None:
    lie = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x0F]) + b"\x00" * 10  # claims 4 GiB from 15 bytes
    with pytest.raises(DecompressionError, match="claims"):
        decompress(Codec.SNAPPY, lie)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_garbage_is_a_decompression_error(codec: Codec) -> None:
    with pytest.raises(DecompressionError):
        decompress(codec, b"\x00\x01garbage that no codec wrote\xff" * 3)


def test_unknown_codec_is_a_decompression_error() -> None:
    with pytest.raises(DecompressionError, match="unknown compression codec 6"):
        decompress(6, b"abc")


def test_zstd_frames_without_size_and_several_frames_are_read_whole() -> None:
    unsized = zstandard.ZstdCompressor(write_content_size=False).compress(DATA)
    assert decompress(Codec.ZSTD, unsized) == DATA
    two = zstandard.ZstdCompressor().compress(DATA[:1000]) + zstandard.ZstdCompressor().compress(DATA[1000:])
    assert decompress(Codec.ZSTD, two) == DATA
