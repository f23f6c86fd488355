"""Bytes read a field at a time from one buffer (a records section in memory) or from a stream of
pieces (a payload decompressed as it is read): what the Python record readers walk, so one walk serves
a section held whole and a section too large to hold."""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator


class StreamEnd(Exception):
    """The stream ended inside what was being read."""


class VarintTooLong(Exception):
    """A varint longer than 10 bytes."""


class StreamError(Exception):
    """Mixed into an error the stream's source raised already worded for the user (a decompression
    failure): a reader passes it on as it is."""


class ByteStream:
    """The bytes of `head` then of each piece of `rest`. A reader keeps `buf` and `i` in locals for its
    fast path and hands them back (`i`) before calling a method here, which may move to the next piece."""

    __slots__ = ("buf", "i", "base", "rest")

    def __init__(self, head: bytes, rest: Iterable[bytes] = ()) -> None:
        self.buf = head
        self.i = 0
        self.base = 0  # stream position of buf[0]
        self.rest: Iterator[bytes] = iter(rest)

    def _next(self) -> None:
        for piece in self.rest:
            if piece:
                self.base += len(self.buf)
                self.buf = piece
                self.i = 0
                return
        raise StreamEnd

    def position(self) -> int:
        return self.base + self.i

    def peek(self, n: int) -> bytes:
        """The next `n` bytes, left unread (has(n) said they are there)."""
        return self.buf[self.i : self.i + n]

    def has(self, n: int) -> bool:
        """Whether `n` more bytes are in the stream (read ahead into the buffer: for a few bytes)."""
        while len(self.buf) - self.i < n:
            piece = next(self.rest, None)
            if piece is None:
                return False
            self.base += self.i
            self.buf = self.buf[self.i :] + piece
            self.i = 0
        return True

    def byte(self) -> int:
        if self.i >= len(self.buf):
            self._next()
        b = self.buf[self.i]
        self.i += 1
        return b

    def take(self, n: int) -> bytes:
        if self.i + n <= len(self.buf):
            out = self.buf[self.i : self.i + n]
            self.i += n
            return out
        parts = []
        while n:
            if self.i >= len(self.buf):
                self._next()
            part = self.buf[self.i : self.i + n]
            self.i += len(part)
            n -= len(part)
            parts.append(part)
        return b"".join(parts)

    def skip(self, n: int, crc: int | None = None) -> int | None:
        """Step over `n` bytes (a key, a value), folding them into a running CRC-32 when given one."""
        while n:
            if self.i >= len(self.buf):
                self._next()
            step = min(n, len(self.buf) - self.i)
            if crc is not None:
                crc = zlib.crc32(memoryview(self.buf)[self.i : self.i + step], crc)
            self.i += step
            n -= step
        return crc

    def drain(self) -> int:
        """Bytes left in the stream (read through to the end: the decompression cap still bounds it)."""
        left = len(self.buf) - self.i
        self.i = len(self.buf)
        for piece in self.rest:
            left += len(piece)
        return left

    def zigzag(self) -> int:
        """A signed varint (Kafka keeps the low 64 bits of a longer value, as a Java long does)."""
        raw = shift = 0
        for _ in range(10):
            b = self.byte()
            raw |= (b & 0x7F) << shift
            if b < 0x80:
                raw &= 0xFFFFFFFFFFFFFFFF
                return (raw >> 1) ^ -(raw & 1)
            shift += 7
        raise VarintTooLong
