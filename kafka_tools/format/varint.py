"""Kafka's variable-length integers (protobuf style; signed ones zigzag-encoded)."""

from __future__ import annotations


class VarintError(ValueError):
    def __init__(self, message: str, position: int, too_long: bool = False) -> None:
        super().__init__(message)
        self.position = position
        self.too_long = too_long


def read_uvarint(buf: bytes | memoryview, pos: int, max_bytes: int = 10) -> tuple[int, int]:
    """Unsigned varint at `pos`: (value, position after it)."""
    result = 0
    shift = 0
    end = len(buf)
    start = pos
    while True:
        if pos >= end:
            raise VarintError("varint runs past the end of its buffer", start)
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            # Kafka reads varlongs into a Java long: keep the low 64 bits as it does.
            return result & 0xFFFFFFFFFFFFFFFF, pos
        shift += 7
        if pos - start >= max_bytes:
            raise VarintError(f"varint longer than {max_bytes} bytes", start, too_long=True)


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    """Signed (zigzag) varint or varlong at `pos`: (value, position after it)."""
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def encode_uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    return encode_uvarint((value << 1) ^ (value >> 63))
