"""CRC-32C from the C extension (hardware or slicing by 8) equals the `crc32c` package, and
`checksums.crc32c` uses the extension whenever it is built."""

from __future__ import annotations

import random

import crc32c as package
import pytest

from kafka_tools.format import accel, checksums

C = accel.C
needs_c = pytest.mark.skipif(C is None or not hasattr(C, "crc32c"), reason="C extension not built")

# RFC 3720 (iSCSI) B.4 test vectors, and the usual "123456789" check value.
KNOWN = [
    (b"123456789", 0xE3069283),
    (bytes(32), 0x8A9136AA),
    (b"\xff" * 32, 0x62A8AB43),
    (bytes(range(32)), 0x46DD794E),
    (bytes(range(31, -1, -1)), 0x113FDB5C),
    (b"", 0),
]

# Lengths around the block sizes of the hardware path (3 x 256 and 3 x 8192 bytes), odd ones, large.
LENGTHS = [1, 7, 8, 9, 63, 767, 768, 769, 1536, 24575, 24576, 24577, 49152 + 13, 300_001]


@needs_c
@pytest.mark.parametrize("software", [False, True])
def test_known_vectors(software: bool) -> None:
    for data, want in KNOWN:
        assert C.crc32c(data, 0, software) == want
        assert package.crc32c(data) == want


@needs_c
@pytest.mark.parametrize("software", [False, True])
def test_random_inputs_equal_the_package(software: bool) -> None:
    rng = random.Random(27)
    for n in LENGTHS:
        for skew in (0, 1, 3, 5):  # unaligned starts: memoryview slices of a batch in a mapped file
            data = rng.randbytes(n + skew)
            view = memoryview(data)[skew:]
            assert C.crc32c(view, 0, software) == package.crc32c(view), (n, skew)


@needs_c
def test_continues_from_a_value_like_the_package() -> None:
    data = random.Random(1).randbytes(100_000)
    for cut in (0, 1, 4095, 50_000, 99_999):
        head = C.crc32c(data[:cut])
        assert C.crc32c(data[cut:], head) == package.crc32c(data)


@needs_c
def test_checksums_uses_the_extension() -> None:
    assert checksums.crc32c is C.crc32c


@needs_c
def test_rejects_what_is_not_bytes() -> None:
    with pytest.raises(TypeError):
        C.crc32c("text")


@pytest.mark.skipif(C is None or not hasattr(C, "crc32"), reason="C extension not built")
def test_message_crc32_equals_zlib() -> None:
    """CRC32 of magic 0/1 messages (PCLMULQDQ folding where the CPU has it, else slicing by 8): every
    length around the 16-byte folds, unaligned starts, and the long ones zlib takes."""
    import zlib

    rng = random.Random(32)
    for n in [*range(0, 200), 255, 256, 257, 4095, 4096, 70_000]:
        for skew in (0, 1, 7):
            data = rng.randbytes(n + skew)
            view = memoryview(data)[skew:]
            assert C.crc32(view) == zlib.crc32(view), (n, skew)
    assert C.crc32(b"123456789") == 0xCBF43926


def test_crc32c_over_zeros_is_computed_without_them() -> None:
    """A sparse producer snapshot's holes are checked by `crc32c_zeros`, never read: it must be what
    CRC-32C over real zeros gives, from any starting value and for any count."""
    rng = random.Random(49)
    for count in [0, 1, 2, 3, 7, 8, 9, 100, 4095, 4096, 65_537, 1 << 20]:
        value = rng.getrandbits(32)
        assert checksums.crc32c_zeros(value, count) == checksums.crc32c(bytes(count), value), count
