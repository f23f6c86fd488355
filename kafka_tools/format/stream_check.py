"""Checking what is inside a compressed batch or wrapper without holding it: the payload is
decompressed as a stream and its records (v2) or inner messages (v0/v1) are framed and checked as the
pieces go by, so memory stays at a piece or two whatever the payload inflates to (up to the cap).

Small payloads are decoded whole by the ordinary decoder (same messages, faster); only a payload that
inflates past `WHOLE_LIMIT` is walked as a stream, with the decoder's own checks and messages.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from kafka_tools.format import messages as T
from kafka_tools.format.byte_stream import ByteStream, StreamError
from kafka_tools.format.compression import Codec, DecompressionError, gunzip_whole, iter_decompressed
from kafka_tools.format.message_set import LegacyMessage, MessageSetReader, v1_shift
from kafka_tools.format.record_batch import RECORD_BATCH_OVERHEAD, TIMESTAMP_TYPE_MASK, RecordBatch
from kafka_tools.format.record_reader import INT64_MAX, RecordDecodeError, RecordReader
from kafka_tools.format.shared_methods import SharedMethods

WHOLE_LIMIT = 8 << 20  # decompressed bytes decoded whole; past this, walked as a stream


@dataclass(init=False, slots=True, repr=False, eq=False)
class InnerStats(SharedMethods):
    """What validation needs of a batch's contents: the offsets it holds, in order or not."""

    first_offset: int | None
    last_offset: int | None
    count: int
    increasing: bool | None  # None: not looked at (a v0/v1 wrapper walked in C; only batches need it)

    def __init__(
        self, first_offset: int | None, last_offset: int | None, count: int, increasing: bool | None
    ) -> None:
        self.first_offset = first_offset
        self.last_offset = last_offset
        self.count = count
        self.increasing = increasing


class _Said(RecordDecodeError, StreamError):
    """An error already worded for the user (a decompression failure): passed on as it is."""


def inner_stats(entry: RecordBatch | LegacyMessage) -> InnerStats:
    """Offsets of a compressed batch's records (or a wrapper's inner messages), every record framed
    and checked; raises RecordDecodeError as `records()` / `inner_messages()` would."""
    if isinstance(entry, RecordBatch):
        where = entry.position + RECORD_BATCH_OVERHEAD
        pieces = _pieces(entry.codec, entry.payload, entry.codec_label, where)
        head = _gather(pieces)
        if head is not None:
            return _stats([r.offset for r in entry.decode_payload(head)])
        log_append = entry.max_timestamp if entry.attributes & TIMESTAMP_TYPE_MASK else None
        reader = RecordReader(
            ByteStream(b"", pieces),
            entry.records_count,
            entry.base_offset,
            entry.base_timestamp,
            log_append,
            entry.base_sequence,
        )
        try:
            first, last, count, increasing = reader.check()
        except RecordDecodeError as exc:
            if isinstance(exc, _Said):
                raise
            raise RecordDecodeError(T.INSIDE_PAYLOAD.format(exc), where) from None
        if first is None:
            return InnerStats(None, None, 0, True)
        return InnerStats(entry.base_offset + first, entry.base_offset + last, count, increasing)
    where = entry.wrapper_payload_position
    if entry.value is None:
        raise RecordDecodeError(T.WRAPPER_NULL, where)
    head = gunzip_whole(entry.value, WHOLE_LIMIT) if entry.codec == Codec.GZIP else None
    if head is None:
        pieces = _pieces(entry.codec, entry.value, entry.codec_label, where)
        head = _gather(pieces)
    if head is not None:
        found = entry.summary_of(head)
        if found is not None:  # walked in C: only the offsets validate looks at for a wrapper
            count, first, last = found
            return InnerStats(first, last, count, None)
        return _stats([m.offset for m in entry.inner_from(head)])
    first, last, count, increasing, highs = MessageSetReader(ByteStream(b"", pieces), where).check()
    if entry.magic >= 1:  # v1 inner offsets are relative: the wrapper holds the last one's
        shift = v1_shift(entry.offset, last)
        k = bisect.bisect_right(highs[1], INT64_MAX - shift)
        if k < len(highs[1]):  # the first inner offset moved past int64, as inner_messages says
            raise RecordDecodeError(T.INNER_V1_PAST_INT64.format(highs[0][k], highs[1][k], shift), where)
        first, last = first + shift, last + shift
    return InnerStats(first, last, count, increasing)


def _stats(offsets: list[int]) -> InnerStats:
    if not offsets:
        return InnerStats(None, None, 0, True)
    increasing = all(b > a for a, b in zip(offsets, offsets[1:], strict=False))
    return InnerStats(offsets[0], offsets[-1], len(offsets), increasing)


class _Pieces:
    """The decompressed pieces, with decompression errors said as the decoder says them, and the
    pieces read ahead by `_gather` handed out first."""

    def __init__(self, codec: int, data, label: str, where: int) -> None:
        self.it = iter_decompressed(codec, data)
        self.label = label
        self.where = where
        self.ahead: list[bytes] = []

    def __iter__(self) -> _Pieces:
        return self  # one iterator, never restarted: closing a generator here would close the stream

    def __next__(self) -> bytes:
        if self.ahead:
            return self.ahead.pop(0)
        try:
            return next(self.it)
        except DecompressionError as exc:
            raise _Said(T.UNDECOMPRESSABLE.format(self.label, exc), self.where) from None


def _pieces(codec: int, data, label: str, where: int) -> _Pieces:
    return _Pieces(codec, data, label, where)


def _gather(pieces: _Pieces) -> bytes | None:
    """The whole payload when it is small (decoded whole, as dump-log does); None when it is not (the
    pieces read so far are kept to be walked as a stream)."""
    got: list[bytes] = []
    size = 0
    for piece in pieces:
        got.append(piece)
        size += len(piece)
        if size > WHOLE_LIMIT:
            pieces.ahead = got
            return None
    return b"".join(got)
