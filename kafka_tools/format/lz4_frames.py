"""The LZ4 frames Kafka writes, read block by block with a bound on each: the frame parsed here rather than
by the LZ4 library, so that 0.8-0.9's frames (their header checksum computed over the magic number too,
KAFKA-3160) decode as the data they are."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from kafka_tools.format.codec_ids import DecompressionError, cramjam_module
from kafka_tools.format.plural import plural

_LZ4_FRAME_MAGIC = 0x184D2204
_LZ4_SKIPPABLE_MASK = 0xFFFFFFF0
_LZ4_SKIPPABLE_MAGIC = 0x184D2A50
_LZ4_BLOCK_MAX = {4: 64 * 1024, 5: 256 * 1024, 6: 1024 * 1024, 7: 4 * 1024 * 1024}


class _Lz4Block(NamedTuple):
    data: bytes | memoryview
    stored: bool  # kept uncompressed by the writer
    independent: bool  # not linked to the blocks before it
    block_max: int  # the most its frame lets a block hold


def _lz4_blocks(data: bytes | memoryview) -> Iterator[_Lz4Block]:
    """The blocks of the LZ4 frames of a payload.

    Parsing the frame ourselves sidesteps the header checksum that Kafka before 0.10 computed over the
    magic number too (KAFKA-3160): such frames are valid data with a wrong descriptor checksum.
    """
    pos = 0
    while pos < len(data):
        if pos + 7 > len(data):
            raise DecompressionError(f"lz4 frame header cut at byte {pos}")
        (magic,) = struct.unpack_from("<I", data, pos)
        if magic & _LZ4_SKIPPABLE_MASK == _LZ4_SKIPPABLE_MAGIC:
            (skip,) = struct.unpack_from("<I", data, pos + 4)
            pos += 8 + skip
            continue
        if magic != _LZ4_FRAME_MAGIC:
            raise DecompressionError(f"lz4 frame magic {magic:#010x} is wrong at byte {pos}")
        flg, bd = data[pos + 4], data[pos + 5]
        if flg >> 6 != 1:
            raise DecompressionError(f"lz4 frame version {flg >> 6} is not supported")
        independent = bool(flg & 0x20)  # Kafka writes independent blocks; other writers may link them
        block_checksum = bool(flg & 0x10)
        content_size = bool(flg & 0x08)
        content_checksum = bool(flg & 0x04)
        has_dict_id = bool(flg & 0x01)
        block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 7)
        if block_max is None:
            raise DecompressionError(f"lz4 frame block size code {(bd >> 4) & 7} is invalid")
        pos += 6 + (8 if content_size else 0) + (4 if has_dict_id else 0) + 1  # + header checksum
        while True:
            if pos + 4 > len(data):
                raise DecompressionError("lz4 frame ends without an end mark")
            (size,) = struct.unpack_from("<I", data, pos)
            pos += 4
            if size == 0:
                break
            stored = bool(size & 0x80000000)
            size &= 0x7FFFFFFF
            if size > block_max or pos + size > len(data):
                raise DecompressionError(f"lz4 block of {plural(size, 'byte')} is invalid at byte {pos - 4}")
            yield _Lz4Block(data[pos : pos + size], stored, independent, block_max)
            pos += size + (4 if block_checksum else 0)
        if content_checksum:
            pos += 4


def lz4_pieces(data: bytes) -> Iterator[bytes]:
    """The decoded blocks, one by one."""
    import lz4.block

    history = b""  # the last 64 KiB of output, for blocks linked to the ones before them
    for block, stored, independent, block_max in _lz4_blocks(data):
        if not stored:
            try:
                if independent:
                    block = lz4.block.decompress(block, uncompressed_size=block_max)
                else:
                    block = lz4.block.decompress(block, uncompressed_size=block_max, dict=history)
            except Exception as exc:  # lz4.block.LZ4BlockError
                raise DecompressionError(f"lz4: {exc}") from None
        if not independent:
            history = (history + block)[-65536:]
        yield bytes(block)


# An LZ4 sequence turns 1 input byte into at most 255 bytes of output (a match length goes on in
# 255-byte steps): no block decodes to more than this, whatever its frame says.
def _lz4_room(block: _Lz4Block) -> int:
    n = len(block.data)
    return n if block.stored else min(block.block_max, 255 * n + 64)


def unlz4(data: bytes | memoryview, limit: int) -> bytes | bytearray | None:
    """Independent blocks (what Kafka writes) decompressed in place into one bytearray, with room for
    the most each block can hold, trimmed after; linked blocks, a payload whose room would pass
    `limit`, or no cramjam: None, for the caller to join the blocks one by one (which applies the cap
    exactly)."""
    whole = lz4_one_frame(data, limit)
    if whole is not None:
        return whole
    cramjam = cramjam_module()
    blocks = list(_lz4_blocks(memoryview(data)))
    room = sum(map(_lz4_room, blocks))
    if cramjam is None or not all(b.independent for b in blocks) or room > limit:
        return None
    out = bytearray(room)
    into = memoryview(out)
    pos = 0
    for block in blocks:
        room = _lz4_room(block)
        if block.stored:
            into[pos : pos + room] = block.data
            pos += room
            continue
        try:
            pos += cramjam.lz4.decompress_block_into(block.data, into[pos : pos + room])
        except cramjam.DecompressionError as exc:
            raise DecompressionError(f"lz4: {exc}") from None
    into.release()
    del out[pos:]
    return out


_lz4_frame_module: list = []


def lz4_one_frame(data: bytes | memoryview, limit: int) -> bytes | None:
    """What producers write (one frame taking the whole payload), in one call of the lz4 package's
    frame decoder when it is installed: it writes into the bytes it returns (no zeroed buffer, no
    trimming, no frame parsed in Python), about a third faster than block by block. Taken only when
    its output is bounded by `limit`: the content size the frame states (allocated up front), or else
    what the payload's length can decode to (a block of n bytes gives 255 n + 64 at most). Anything
    else, or a frame it refuses (a checksum it checks, the descriptor checksum of Kafka before 0.10:
    KAFKA-3160), or one that ends before the payload does: None, and the blocks are decoded one by one."""
    if not _lz4_frame_module:
        try:
            import lz4.frame as frame_module
        except ImportError:
            frame_module = None
        _lz4_frame_module.append(frame_module)
    frame_module = _lz4_frame_module[0]
    if frame_module is None or len(data) < 7 or data[:4] != b"\x04\x22\x4d\x18":
        return None
    if data[4] & 0x08:
        if len(data) < 14 or struct.unpack_from("<Q", data, 6)[0] > limit:
            return None
    elif 270 * len(data) > limit:
        return None
    try:
        out, used = frame_module.decompress(data, return_bytes_read=True)
    except Exception:  # RuntimeError for a bad frame; anything else goes the block-by-block way too
        return None
    return out if used == len(data) and len(out) <= limit else None
