"""The two checksums of Kafka's formats: CRC32 (messages v0/v1, Kafka 0.7) and CRC-32C (v2 batches).

CRC-32C comes from the C extension (SSE4.2's crc32 instruction, or slicing by 8 where the CPU lacks
it); the `crc32c` package is the fallback when the extension is not built or `KTOOL_PURE_PYTHON=1` is
set, imported only then: its import reads `importlib.metadata`, a third of a small command's start-up.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable

from kafka_tools.format import accel


def _pick_crc32c() -> Callable[[bytes | memoryview], int]:
    if accel.C is not None and hasattr(accel.C, "crc32c"):
        return accel.C.crc32c
    from crc32c import crc32c as package_crc32c

    return package_crc32c


def crc32(data: bytes | memoryview) -> int:
    """CRC32 (IEEE), as java.util.zip.CRC32 computes it."""
    return zlib.crc32(data) & 0xFFFFFFFF


crc32c: Callable[[bytes | memoryview], int] = _pick_crc32c()
"""CRC-32C (Castagnoli), as Kafka's Crc32C computes it."""


def crc_finding(stored: int, computed: int) -> str:
    """The one wording of a stored checksum that is not the computed one: every generation's entries
    and producer snapshots, in dump-log, validate and read."""
    return f"stored crc {stored} does not match computed {computed}"
