"""`scan --time-from`'s hop over entry headers (questions.newest_timestamp) stops where the decoder
would question an entry: a v2 length under the 49 bytes of a batch header (it took any length from 14),
a v1 message under 22; then the range is walked entry by entry and the damage is reported there."""

from __future__ import annotations

import struct
from pathlib import Path

from kafka_tools.pipeline.questions import newest_timestamp
from tests.support import hostile


def _write(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return str(path)


def test_valid_entries_are_hopped(tmp_path: Path) -> None:
    batch = hostile.v2_batch(hostile.v2_record(), 1, base_timestamp=1_700_000_000_123)
    v1 = hostile.v1_message(1, b"x", timestamp=1_700_000_000_456)
    assert newest_timestamp(_write(tmp_path, batch + v1 + batch)) == (3, 1_700_000_000_456)


def test_a_v2_length_below_a_batch_header_is_not_hopped(tmp_path: Path) -> None:
    short = struct.pack(">qi", 5, 20) + b"\x00\x00\x00\x00\x02" + bytes(15)  # magic 2, 20 bytes: no batch
    batch = hostile.v2_batch(hostile.v2_record(), 1)
    assert newest_timestamp(_write(tmp_path, batch + short + batch)) is None


def test_a_v1_size_below_its_minimum_is_not_hopped(tmp_path: Path) -> None:
    short = struct.pack(">qi", 5, 16) + b"\x00\x00\x00\x00\x01" + bytes(11)  # magic 1 needs 22
    assert newest_timestamp(_write(tmp_path, short)) is None
