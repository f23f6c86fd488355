"""The two checksums of Kafka's formats: CRC32 (messages v0/v1, Kafka 0.7) and CRC-32C (v2 batches)."""

from __future__ import annotations

import zlib

from crc32c import crc32c as _crc32c


def crc32(data: bytes | memoryview) -> int:
    """CRC32 (IEEE), as java.util.zip.CRC32 computes it."""
    return zlib.crc32(data) & 0xFFFFFFFF


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli), as Kafka's Crc32C computes it."""
    return _crc32c(data)


def crc_finding(stored: int, computed: int) -> str:
    """The one wording of a stored checksum that is not the computed one: every generation's entries
    and producer snapshots, in dump-log, validate and read."""
    return f"stored crc {stored} does not match computed {computed}"
