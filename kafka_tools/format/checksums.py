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


# CRC-32C over zeros without reading them (a hole in a sparse file): the CRC register, between its
# pre- and post-inversion, is linear over GF(2), and a zero byte moves it by a fixed 32x32 matrix.
# A matrix is kept as its 32 columns (ints); the powers 1, 2, 4, … of the one-byte move are made once.
_CASTAGNOLI = 0x82F63B78  # the polynomial, bit-reflected, as Kafka's Crc32C uses it
_ZERO_BYTE_POWERS: list[list[int]] = []


def _times(matrix: list[int], vector: int) -> int:
    out = 0
    column = 0
    while vector:
        if vector & 1:
            out ^= matrix[column]
        vector >>= 1
        column += 1
    return out


def _zero_byte_power(k: int) -> list[int]:
    """The register's move over 2**k zero bytes."""
    if not _ZERO_BYTE_POWERS:
        bit = [_CASTAGNOLI] + [1 << (i - 1) for i in range(1, 32)]  # one zero bit
        byte = bit
        for _ in range(3):  # 2, 4, 8 bits
            byte = [_times(byte, column) for column in byte]
        _ZERO_BYTE_POWERS.append(byte)
    while len(_ZERO_BYTE_POWERS) <= k:
        last = _ZERO_BYTE_POWERS[-1]
        _ZERO_BYTE_POWERS.append([_times(last, column) for column in last])
    return _ZERO_BYTE_POWERS[k]


def crc32c_zeros(value: int, count: int) -> int:
    """`crc32c(bytes(count), value)` without making or reading the zeros: a few hundred operations
    whatever `count` is (a 511 MiB hole in a producer snapshot costs nothing to check)."""
    register = value ^ 0xFFFFFFFF
    k = 0
    while count:
        if count & 1:
            register = _times(_zero_byte_power(k), register)
        count >>= 1
        k += 1
    return register ^ 0xFFFFFFFF
