"""Decompression of Kafka message-set and batch payloads, with a hard cap on output size.

Every decompressor is bounded: a corrupt or hostile payload can never make ktool allocate more than
`limit` bytes (default `MAX_DECOMPRESSED`), whatever its length fields claim.

The four codecs Kafka writes (gzip, snappy with and without xerial framing, lz4 frames, zstd), each a
short streaming and whole-buffer reader, behind one dispatch (`decompress`, `iter_decompressed`) and one
bound on the declared sizes that must see all of them; the codec ids and that bound in format/codec_ids.py,
the LZ4 frame reader (0.8-0.9's header checksum) in format/lz4_frames.py.
"""

from __future__ import annotations

import io
import struct
import threading
import zlib
from collections.abc import Iterator

from kafka_tools.format import accel
from kafka_tools.format.codec_ids import (
    MAX_DECOMPRESSED,
    Codec,
    DecompressionError,
    codec_label,
    cramjam_module,
)
from kafka_tools.format.plural import plural

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
# each imported at its codec's first batch (ktool's LZ4 frame reader too)
_CODEC_MODULES = ("lz4.block", "lz4.frame", "zstandard", "kafka_tools.format.lz4_frames")


def load_codecs() -> None:
    """Every codec's library imported now, not at its first batch: for a caller about to decode in
    threads (scan's lanes), whose Ctrl-C would otherwise wait for a thread in the middle of an import."""
    import importlib

    cramjam_module()
    for name in _CODEC_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:  # not installed: that codec's batch says so when it comes
            pass


def decompress(codec_id: int, data: bytes | memoryview, limit: int = MAX_DECOMPRESSED) -> bytes:
    """Decompress a payload written by any Kafka producer with codec `codec_id`."""
    out = decompress_buffer(codec_id, data, limit)
    return out if type(out) is bytes else bytes(out)


def decompress_buffer(
    codec_id: int, data: bytes | memoryview, limit: int = MAX_DECOMPRESSED
) -> bytes | bytearray:
    """`decompress`'s payload in the one buffer its codec fills (snappy and lz4 blocks are
    decompressed in place into a bytearray), for a reader that copies out what it keeps, as the record
    decoders do: no copy of the whole payload is made after the decompressor's own."""
    if codec_id == Codec.GZIP:
        return _gunzip(data, limit)
    if codec_id == Codec.SNAPPY:
        return _unsnappy(data, limit)
    if codec_id == Codec.LZ4:
        from kafka_tools.format.lz4_frames import unlz4  # the LZ4 frame reader: at the first LZ4 batch

        whole = unlz4(data, limit)
        return whole if whole is not None else _joined(Codec.LZ4, bytes(data), limit)
    if codec_id == Codec.ZSTD:
        return _unzstd(data, limit)
    if codec_id == Codec.NONE:
        return bytes(data)
    raise DecompressionError(f"unknown compression codec {codec_id}")


def _joined(codec_id: int, data: bytes | memoryview, limit: int) -> bytearray:
    out = bytearray()  # grown piece by piece: the cap stops it before a second copy exists
    for piece in iter_decompressed(codec_id, data, limit):
        out += piece
    return out


STREAM_PIECE = 1 << 20  # bytes of output per piece when decompressing as a stream


def iter_decompressed(
    codec_id: int, data: bytes | memoryview, limit: int = MAX_DECOMPRESSED, piece: int = STREAM_PIECE
) -> Iterator[bytes]:
    """The decompressed payload in pieces (about `piece` bytes; a codec's block at most), the cap
    applied as it goes: a reader that looks at each piece and lets it go holds one piece, not the
    whole payload. Raises DecompressionError as `decompress` does, once the output passes `limit`."""
    if codec_id == Codec.GZIP:
        yield from _gunzip_pieces(data, limit, piece)
        return
    if codec_id == Codec.SNAPPY:
        pieces = _snappy_pieces(bytes(data), limit)
    elif codec_id == Codec.LZ4:
        from kafka_tools.format.lz4_frames import lz4_pieces

        pieces = lz4_pieces(bytes(data))
    elif codec_id == Codec.ZSTD:
        pieces = _zstd_pieces(data, limit, piece)
    elif codec_id == Codec.NONE:
        pieces = iter((bytes(data),))
    else:
        raise DecompressionError(f"unknown compression codec {codec_id}")
    total = 0
    for out in pieces:
        total += len(out)
        if total > limit:
            raise DecompressionError(
                f"{codec_label(codec_id)} payload decompresses past the {limit}-byte limit"
            )
        yield out


def gunzip_whole(data: bytes | memoryview, limit: int) -> bytes | None:
    """The common case in one call: a single gzip (or zlib) stream inflating to at most `limit` bytes.
    None for anything else (several members, padding, a bigger or broken stream), which
    `iter_decompressed` then handles and reports; the bound holds either way."""
    inflate = _inflater(len(data))
    d = inflate.decompressobj(47)
    try:
        out = d.decompress(data, limit + 1)
    except inflate.error:
        return None
    if not d.eof or d.unused_data or len(out) > limit:
        return None
    return out


# Compressed bytes a command inflates with the standard library's zlib (loaded already) before it
# loads isal: its import (1-1.5 ms, a third of what validating a small log dir of every codec spends
# over its own start-up) buys microseconds on a few small payloads, and is soon paid back on many
# (v1 gzip wrappers are a few KiB each: 4 x 17 MB took 1.4x the CPU on zlib alone).
FAST_INFLATE_AFTER = 256 * 1024

_fast_inflate_module: list = []
_zlib_inflated = [0]  # compressed bytes given to zlib so far (a race between threads only delays isal)


def _inflater(size: int):
    """What inflates a stream of `size` compressed bytes: zlib for the first FAST_INFLATE_AFTER bytes
    a command inflates, then _fast_inflate's module."""
    if not _fast_inflate_module:
        _zlib_inflated[0] += size
        if _zlib_inflated[0] <= FAST_INFLATE_AFTER:
            return zlib
    return _fast_inflate()


def _fast_inflate():
    """isal's zlib when it is installed (ISA-L decodes gzip in about half zlib's time, checking the
    same trailer), else the standard library's. Only a stream it decodes whole and clean is taken
    from it: everything else goes the stdlib's way, so what a broken payload reports does not depend
    on whether isal is there."""
    if not _fast_inflate_module:
        try:
            from isal import isal_zlib as inflate
        except ImportError:
            inflate = zlib
        _fast_inflate_module.append(inflate)
    return _fast_inflate_module[0]


GUNZIP_WHOLE = 16 * 1024 * 1024  # the most output gzip is decoded into in one call


def _gunzip(data: bytes | memoryview, limit: int) -> bytes | bytearray:
    """One gzip (or zlib) stream of up to GUNZIP_WHOLE bytes in one call (zlib joins its output
    blocks at the end of a call, so a call holds its output twice: hence the bound); anything else
    (several members, padding, a bigger or broken stream) as pieces, joined, the cap applied."""
    whole = gunzip_whole(data, min(limit, GUNZIP_WHOLE))
    return whole if whole is not None else _joined(Codec.GZIP, data, limit)


def _gunzip_pieces(data: bytes | memoryview, limit: int, piece: int) -> Iterator[bytes]:
    # wbits 47 accepts both gzip and zlib headers; some old clients wrote bare zlib streams.
    total = 0
    rest = data
    try:
        while True:
            d = zlib.decompressobj(47)
            tail = rest
            while True:
                out = d.decompress(tail, piece)
                total += len(out)
                if total > limit:
                    raise DecompressionError(f"gzip payload decompresses past the {limit}-byte limit")
                if out:
                    yield out
                tail = d.unconsumed_tail
                if d.eof or (not tail and not out):
                    break
            if not d.eof:
                raise DecompressionError("gzip payload ends before its stream does")
            rest = d.unused_data
            # Concatenated gzip members are legal; trailing zero padding is not another member.
            if not rest or not rest.strip(b"\x00"):
                return
    except zlib.error as exc:
        raise DecompressionError(f"gzip: {exc}") from None


def _snappy_blocks(data: bytes | memoryview) -> Iterator[bytes | memoryview]:
    """The raw snappy blocks of a payload: the xerial framing's blocks (what the Java and most other
    clients write), or the payload itself when it is one raw block."""
    if data[: len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        yield data
        return
    pos = 16
    while pos < len(data):
        if pos + 4 > len(data):
            raise DecompressionError(f"snappy xerial frame cut inside a block length at byte {pos}")
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or pos + n > len(data):
            raise DecompressionError(f"snappy xerial block of {plural(n, 'byte')} runs past the payload")
        yield data[pos : pos + n]
        pos += n


def _snappy_pieces(data: bytes, limit: int) -> Iterator[bytes]:
    for block in _snappy_blocks(data):
        yield _snappy_raw(block, limit)


def _unsnappy(data: bytes | memoryview, limit: int) -> bytes | bytearray:
    """The C decoder's bytes when it decodes the payload whole (format/csrc/snappy.c: no buffer zeroed,
    the framing read in C); else every block decompressed into one bytearray of the size the blocks
    declare (checked against `limit` before it is made), with cramjam (what python-snappy 0.7 runs
    too), which says what is wrong with a payload the C decoder does not take; without cramjam, the
    blocks one by one, joined."""
    fast = accel.fast("snappy_decompress")
    if fast is not None:
        out = fast(data, limit)
        if out is not None:
            return out
    cramjam = cramjam_module()
    if cramjam is None:
        return _joined(Codec.SNAPPY, data, limit)
    view = memoryview(data)
    blocks = [(block, _snappy_declared(block, limit)) for block in _snappy_blocks(view)]
    total = sum(n for _, n in blocks)
    if total > limit:
        raise DecompressionError(f"snappy payload decompresses past the {limit}-byte limit")
    out = bytearray(total)
    into = memoryview(out)
    pos = 0
    for block, n in blocks:
        try:
            got = cramjam.snappy.decompress_raw_into(block, into[pos : pos + n])
        except cramjam.DecompressionError as exc:
            raise DecompressionError(f"snappy: {exc}") from None
        if got != n:
            raise DecompressionError(f"snappy block gives {plural(got, 'byte')}, its preamble says {n}")
        pos += n
    return out


def _snappy_declared(block: bytes | memoryview, limit: int) -> int:
    """The uncompressed size a raw snappy block states, refused when past `limit` or impossible."""
    declared, _ = _read_uvarint(block, 0)
    # A snappy element emits at most 64 bytes from 3 input bytes; anything above ~22x is a lie.
    if declared > limit or declared > 22 * len(block) + 64:
        raise DecompressionError(f"snappy block claims {plural(declared, 'byte')} from {len(block)}")
    return declared


def _zstd_declared(data: bytes, limit: int) -> int:
    """The size a zstd frame says it holds (-1: not said), refused when past `limit` before any work."""
    import zstandard

    try:
        declared = zstandard.frame_content_size(data)
    except zstandard.ZstdError as exc:
        raise DecompressionError(f"zstd: {exc}") from None
    if declared > limit:
        raise DecompressionError(f"zstd frame claims {plural(declared, 'byte')}, past the {limit}-byte limit")
    return declared


def _zstd_pieces(data: bytes | memoryview, limit: int, piece: int) -> Iterator[bytes]:
    import zstandard

    data = bytes(data)
    _zstd_declared(data, limit)  # a frame that claims more than the cap is refused before any work
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data), read_across_frames=True)
        while True:
            out = reader.read(piece)
            if not out:
                return
            yield out
    except zstandard.ZstdError as exc:
        raise DecompressionError(f"zstd: {exc}") from None


def _snappy_raw(block: bytes | memoryview, limit: int) -> bytes:
    """One raw block, by the C decoder when it decodes it exactly (no import of python-snappy and
    cramjam, 2-2.5 ms, for a small command); else by python-snappy, which says what is wrong. A block
    that begins as xerial's framing does is left to python-snappy: the C decoder would read it framed."""
    _snappy_declared(block, limit)
    fast = accel.fast("snappy_decompress")
    if fast is not None and block[: len(_XERIAL_MAGIC)] != _XERIAL_MAGIC:
        out = fast(block, limit)
        if out is not None:
            return out
    import snappy  # python-snappy

    try:
        return snappy.decompress(block)
    except Exception as exc:  # python-snappy raises its own and cramjam's exception types
        raise DecompressionError(f"snappy: {exc}") from None


_zstd_local = threading.local()


def _zstd_decompressor():
    """This thread's ZstdDecompressor, made once: a new one (a fresh zstd context) for every batch
    cost about a quarter of a small zstd batch's decode."""
    d = getattr(_zstd_local, "d", None)
    if d is None:
        import zstandard

        d = _zstd_local.d = zstandard.ZstdDecompressor()
    return d


def _unzstd(data: bytes | memoryview, limit: int) -> bytes:
    import zstandard

    declared = _zstd_declared(data, limit)
    if declared >= 0:
        # One frame that states its size (Java's client; librdkafka's do not): one call, much faster
        # than streaming. More frames after it make that call fail, and the stream reads them all.
        try:
            return _zstd_decompressor().decompress(data, allow_extra_data=False)
        except zstandard.ZstdError:
            pass
    # Pieces that grow with the output, the limit checked as it grows: `read(limit + 1)` made a buffer of
    # the whole limit for every small batch (3x this loop's time on librdkafka's unsized frames).
    try:
        reader = _zstd_decompressor().stream_reader(data, read_across_frames=True)
        parts, total, size = [], 0, min(limit + 1, max(1 << 16, 8 * len(data)))
        while chunk := reader.read(size):
            parts.append(chunk)
            total += len(chunk)
            if total > limit:
                raise DecompressionError(f"zstd payload decompresses past the {limit}-byte limit")
            size = min(limit + 1 - total, max(total, 1 << 16))
    except zstandard.ZstdError as exc:
        raise DecompressionError(f"zstd: {exc}") from None
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _read_uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise DecompressionError("snappy length preamble is cut")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 35:
            raise DecompressionError("snappy length preamble is too long")


class CodecAndCrc:
    """What every generation's log entry answers alike, given its `codec`, `crc` and `computed_crc`."""

    __slots__ = ()
    codec: int
    crc: int
    computed_crc: int

    @property
    def is_valid(self) -> bool:
        return self.crc == self.computed_crc

    @property
    def codec_label(self) -> str:
        return codec_label(self.codec)

    @property
    def is_compressed(self) -> bool:
        return self.codec != 0  # Codec.NONE (an enum member's lookup costs a microsecond)

    def iter_records(self, limit: int | None = None) -> Iterator:
        """The entry's records one at a time (v2 batches make each as it is asked for)."""
        return iter(self.records(limit))
