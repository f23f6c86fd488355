"""Decompression is exact for every codec Kafka producers write, and bounded for hostile payloads."""

from __future__ import annotations

import gzip
import random
import struct
import zlib

import lz4.frame
import pytest
import snappy
import zstandard
from hypothesis import given as given_examples
from hypothesis import settings
from hypothesis import strategies as st

from kafka_tools.format import accel, codec_ids, compression, lz4_frames
from kafka_tools.format.compression import (
    Codec,
    DecompressionError,
    decompress,
    decompress_buffer,
    iter_decompressed,
)

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


INCOMPRESSIBLE = random.Random(5).randbytes(300_000)


@pytest.mark.parametrize(
    ("codec", "payload", "data"),
    [
        (Codec.LZ4, lz4.frame.compress(DATA, block_linked=False), DATA),  # what Kafka writes
        (
            Codec.LZ4,
            lz4.frame.compress(DATA, block_linked=False, block_size=lz4.frame.BLOCKSIZE_MAX4MB),
            DATA,
        ),
        (Codec.LZ4, lz4.frame.compress(INCOMPRESSIBLE, block_linked=False), INCOMPRESSIBLE),  # stored blocks
        (Codec.LZ4, lz4.frame.compress(DATA, block_linked=True), DATA),
        (Codec.SNAPPY, _xerial(INCOMPRESSIBLE + DATA), INCOMPRESSIBLE + DATA),
        (Codec.GZIP, gzip.compress(DATA[:5000]) + gzip.compress(DATA[5000:]), DATA),  # two members
        (Codec.GZIP, gzip.compress(DATA) + bytes(8), DATA),  # zero padding after the member
    ],
    ids=[
        "lz4-independent",
        "lz4-4mb-blocks",
        "lz4-stored",
        "lz4-linked",
        "snappy-mixed",
        "gzip-2",
        "gzip-pad",
    ],
)
@pytest.mark.parametrize("cramjam", [True, False], ids=["cramjam-isal", "stdlib"])
def test_the_in_place_buffer_holds_what_the_pieces_hold(
    codec: Codec, payload: bytes, data: bytes, cramjam: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not cramjam:  # nor isal: the standard library alone
        monkeypatch.setattr(codec_ids, "_cramjam_module", [None])
        monkeypatch.setattr(compression, "_fast_inflate_module", [zlib])
    pieces = b"".join(iter_decompressed(codec, payload))
    assert pieces == data
    for given in (payload, memoryview(payload), bytearray(payload)):
        assert decompress_buffer(codec, given) == data
    assert type(decompress(codec, payload)) is bytes


@pytest.mark.parametrize("codec", [Codec.SNAPPY, Codec.LZ4])
def test_a_damaged_block_is_a_decompression_error_in_place_too(codec: Codec) -> None:
    payload = bytearray(
        _xerial(DATA) if codec == Codec.SNAPPY else lz4.frame.compress(DATA, block_linked=False)
    )
    for at in range(40, len(payload), 997):  # inside the blocks: lengths and literals made wrong
        damaged = bytearray(payload)
        damaged[at : at + 4] = b"\xff\xff\xff\xff"
        try:
            out = decompress_buffer(codec, bytes(damaged))
        except DecompressionError:
            continue
        assert len(out) <= len(DATA) + 4 * 65536  # wrong bytes, maybe, but never more than the blocks allow


def test_lz4_blocks_are_refused_past_the_cap_before_their_room_is_made() -> None:
    payload = lz4.frame.compress(bytes(8 * 1024 * 1024), block_linked=False)
    with pytest.raises(DecompressionError, match="limit"):
        decompress_buffer(Codec.LZ4, payload, limit=1024 * 1024)


# Past FAST_INFLATE_AFTER compressed (random bytes do not shrink): inflated by isal where installed.
LARGE = random.Random(7).randbytes(compression.FAST_INFLATE_AFTER) + DATA


@pytest.mark.parametrize("data", [DATA[:5000], LARGE], ids=["small", "large"])
@pytest.mark.parametrize("fast", [True, False], ids=["isal", "stdlib"])
def test_a_broken_gzip_stream_says_the_same_with_or_without_isal(
    fast: bool, data: bytes, monkeypatch
) -> None:
    if not fast:
        monkeypatch.setattr(compression, "_fast_inflate_module", [zlib])
    bad = bytearray(gzip.compress(data))
    bad[-6] ^= 1  # the CRC-32 in the trailer
    with pytest.raises(
        DecompressionError, match="^gzip: Error -3 while decompressing data: incorrect data check$"
    ):
        decompress(Codec.GZIP, bytes(bad))
    assert decompress(Codec.GZIP, gzip.compress(data)) == data


def test_isal_waits_until_a_command_has_inflated_enough(monkeypatch) -> None:
    """The first small streams are inflated by the standard library's zlib, already loaded: isal's
    import costs a small command more than it saves there; past FAST_INFLATE_AFTER bytes (many small
    v1 wrappers, or one large stream), isal inflates."""
    used = []

    class Spy:
        error = zlib.error

        @staticmethod
        def decompressobj(wbits):
            used.append(wbits)
            return zlib.decompressobj(wbits)

    def fast():
        monkeypatch.setattr(compression, "_fast_inflate_module", [Spy])
        return Spy

    monkeypatch.setattr(compression, "_fast_inflate_module", [])
    monkeypatch.setattr(compression, "_fast_inflate", fast)
    monkeypatch.setattr(compression, "_zlib_inflated", [0])
    small = gzip.compress(DATA[:5000])
    assert decompress(Codec.GZIP, small) == DATA[:5000]
    assert used == []
    for _ in range(compression.FAST_INFLATE_AFTER // len(small) + 1):
        assert decompress(Codec.GZIP, small) == DATA[:5000]
    assert used != []  # many small streams: isal took over
    monkeypatch.setattr(compression, "_fast_inflate_module", [])
    monkeypatch.setattr(compression, "_zlib_inflated", [0])
    used.clear()
    assert decompress(Codec.GZIP, gzip.compress(LARGE)) == LARGE
    assert used == [47]  # one large stream: isal at once


def _lz4_outcome(payload: bytes, limit: int = compression.MAX_DECOMPRESSED):
    try:
        return bytes(decompress_buffer(Codec.LZ4, payload, limit))
    except DecompressionError as exc:
        return str(exc)


def _with_size(frame: bytes, size: int) -> bytes:
    """A sized frame (store_size) with its content size made `size` (the descriptor checksum, which
    the block-by-block reader does not check, left as it was)."""
    return frame[:6] + struct.pack("<Q", size) + frame[14:]


@pytest.mark.parametrize(
    "payload",
    [
        lz4.frame.compress(DATA, block_linked=False),  # what Kafka writes
        lz4.frame.compress(DATA, block_linked=False, store_size=True),  # what kafka-python writes
        lz4.frame.compress(DATA[:5000]) + lz4.frame.compress(DATA[5000:]),  # two frames: both read
        lz4.frame.compress(DATA) + b"\x50\x2a\x4d\x18\x04\x00\x00\x00abcd",  # a skippable frame after
        _with_size(lz4.frame.compress(DATA, store_size=True), len(DATA) + 1),  # a size that lies
        _with_size(lz4.frame.compress(DATA, store_size=True), 2**62),  # a size past any cap
        lz4.frame.compress(b""),
    ],
    ids=["kafka", "sized", "two-frames", "skippable-after", "lying-size", "huge-size", "empty"],
)
def test_lz4_in_one_call_gives_what_the_blocks_give(payload: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lz4 package's frame decoder, when it takes a payload, gives the bytes (or the error) that
    the block-by-block reader gives; it never takes one whose output could pass the cap."""
    fast = _lz4_outcome(payload)
    small = _lz4_outcome(payload, limit=len(DATA) // 2)
    monkeypatch.setattr(lz4_frames, "_lz4_frame_module", [None])
    assert fast == _lz4_outcome(payload)
    assert small == _lz4_outcome(payload, limit=len(DATA) // 2)


def test_lz4_in_one_call_is_taken_for_what_producers_write() -> None:
    for payload in (lz4.frame.compress(DATA), lz4.frame.compress(DATA, store_size=False)):
        assert lz4_frames.lz4_one_frame(payload, compression.MAX_DECOMPRESSED) == DATA
    huge = _with_size(lz4.frame.compress(DATA, store_size=True), 2**40)
    assert lz4_frames.lz4_one_frame(huge, compression.MAX_DECOMPRESSED) is None  # never allocated
    assert lz4_frames.lz4_one_frame(lz4.frame.compress(DATA), len(DATA) - 1) is None


def _snappy_shapes(data: bytes) -> list[bytes]:
    """Raw and xerial payloads of `data` (blocks of a few sizes), as producers write them."""
    return [snappy.compress(data), _xerial(data), _xerial(data, 1000), _xerial(data, 7)]


@pytest.mark.skipif(accel.fast("snappy_decompress") is None, reason="C extension not built")
@settings(max_examples=300, deadline=None)
@given_examples(
    st.one_of(
        st.binary(max_size=3000),
        st.lists(st.sampled_from([b"a", b"kafka", b"\x00" * 9, b"0123456789abcdef" * 5]), max_size=400).map(
            b"".join
        ),
    )
)
def test_the_c_snappy_decoder_gives_what_the_payload_holds(data: bytes) -> None:
    for payload in _snappy_shapes(data):
        assert accel.C.snappy_decompress(payload, 1 << 30) == data


@pytest.mark.skipif(accel.fast("snappy_decompress") is None, reason="C extension not built")
@settings(max_examples=500, deadline=None)
@given_examples(st.binary(min_size=1, max_size=2000), st.data())
def test_a_damaged_snappy_payload_reads_the_same_with_or_without_the_c_decoder(data: bytes, draw) -> None:
    payload = bytearray(draw.draw(st.sampled_from(_snappy_shapes(data))))
    for _ in range(draw.draw(st.integers(1, 4))):
        i = draw.draw(st.integers(0, len(payload) - 1))
        payload[i] = draw.draw(st.integers(0, 255))
    cut = draw.draw(st.integers(0, len(payload)))
    payload = bytes(payload[:cut])
    limit = draw.draw(st.sampled_from([1 << 20, len(data), max(len(data) - 1, 0)]))
    fast = accel.C.snappy_decompress(payload, limit)

    def outcome():
        try:
            return bytes(decompress_buffer(Codec.SNAPPY, payload, limit)), None
        except DecompressionError as exc:
            return None, str(exc)

    def streamed():  # block by block, as a deep look reads a payload (iter_decompressed)
        try:
            return b"".join(iter_decompressed(Codec.SNAPPY, payload, limit)), None
        except DecompressionError as exc:
            return None, str(exc)

    with_c, streamed_c = outcome(), streamed()
    saved = accel.C
    try:
        accel.C = accel.without("snappy_decompress")
        without_c, streamed_without = outcome(), streamed()
    finally:
        accel.C = saved
    assert with_c == without_c  # the same bytes, or the same error
    assert streamed_c == streamed_without
    assert fast is None or fast == with_c[0]  # what the C decoder takes, cramjam reads the same


@pytest.mark.skipif(accel.fast("snappy_decompress") is None, reason="C extension not built")
def test_the_c_snappy_decoder_declines_what_it_does_not_read_exactly() -> None:
    data = b"kafka " * 1000
    raw = snappy.compress(data)
    assert accel.C.snappy_decompress(raw, len(data) - 1) is None  # past the cap: nothing made
    assert accel.C.snappy_decompress(raw + b"\x00", 1 << 20) is None  # bytes after the last element
    assert accel.C.snappy_decompress(raw[:-1], 1 << 20) is None  # cut
    assert accel.C.snappy_decompress(b"", 1 << 20) is None
    # a literal whose length byte has fewer than 4 bytes after it: cramjam (the snap crate) reads a
    # 32-bit word there and refuses it, so the C decoder declines it too (tests/fuzz/regressions/snappy)
    assert accel.C.snappy_decompress(b"\x02\xf0\x01\x02\xf0", 1 << 20) is None
    assert accel.C.snappy_decompress(b"\xff\xff\xff\xff\xff\x01", 1 << 40) is None  # a 6-byte preamble
    assert accel.C.snappy_decompress(b"\x05\x01\x00", 1 << 20) is None  # a copy with offset 0 ...
    assert accel.C.snappy_decompress(b"\x08\x0d\x01", 1 << 20) is None  # ... or before the output
    assert accel.C.snappy_decompress(_xerial(b""), 1 << 20) == b""
    assert accel.C.snappy_decompress(_xerial(data)[:-3], 1 << 20) is None  # a block cut inside
    big = b"\xfe\xff\xff\xff\x0f" + b"\x00" * 10  # 4 GiB declared by 15 bytes
    assert accel.C.snappy_decompress(big, 1 << 40) is None
