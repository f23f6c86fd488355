"""kraft.c's second table (`_speedups.kraft_decode_remote`) gives exactly what the pure-Python reference
gives for `__remote_log_metadata` values: the same RemoteLogMetadataRecord for every apiKey encoded from
Kafka 4.4.0's schemas, and the same error (message and position) for every truncation and for random
byte flips. The KRaft table, configured beside it, still decodes KRaft records (two tables, one
interpreter, neither overwriting the other)."""

from __future__ import annotations

import random

import pytest

from kafka_tools.format import remote_log_metadata as rlm
from kafka_tools.format.kraft import decoder
from kafka_tools.format.kraft.decoder import MetadataDecodeError
from tests.format.kraft_encoder import _uvarint, frame, load_schemas, sample
from tests.independent import FIXTURES

REMOTE = load_schemas(FIXTURES / "remote-log-metadata-schemas")

pytestmark = pytest.mark.skipif(not rlm.HAS_SPEEDUPS, reason="the C extension is not built")


def _outcome(decode, value: bytes):
    try:
        return decode(value)
    except MetadataDecodeError as exc:
        return ("error", exc.message, exc.position)


def _same(value: bytes) -> None:
    c = _outcome(rlm.decode_remote_log_metadata, value)
    py = _outcome(rlm.decode_remote_log_metadata_py, value)
    assert c == py, value.hex()
    if not isinstance(c, tuple):
        assert type(c) is rlm.RemoteLogMetadataRecord
        assert [type(v) for v in c.fields.values()] == [type(v) for v in py.fields.values()]


def _values() -> list[bytes]:
    out = []
    for _name, schema in sorted(REMOTE.items()):
        for seed in range(4):
            data = sample(schema, 0, seed, nulls=seed % 2 == 1)
            if seed == 2 and "txnIndexEmpty" in data:
                data.pop("txnIndexEmpty")  # as a 3.x broker writes it: no tagged field
            out.append(frame(schema, 0, data))
    return out


def test_every_record_type_decodes_the_same_in_c() -> None:
    values = _values()
    assert len(values) == 16
    for value in values:
        _same(value)
        record = rlm.decode_remote_log_metadata(value)
        assert record.known and record.fields


def test_every_truncation_and_byte_flip_fails_the_same_in_c() -> None:
    rng = random.Random(44)
    for value in _values():
        for cut in range(len(value)):
            _same(value[:cut])
        for _ in range(40):
            damaged = bytearray(value)
            damaged[rng.randrange(len(value))] = rng.randrange(256)
            _same(bytes(damaged))
        _same(value + b"\x00")


def test_unknown_api_keys_versions_and_frames_are_the_same_in_c() -> None:
    for value in (
        _uvarint(1) + _uvarint(9) + _uvarint(0) + b"\x00",
        _uvarint(1) + _uvarint(0) + _uvarint(5) + b"\x00",
        _uvarint(1) + _uvarint(300) + _uvarint(0),
        b"\x00\x00\x00",
        b"\x02\x01\x00",
        b"",
        b"\x01",
        b"\x01\xff\xff\xff\xff\x7f",
    ):
        _same(value)
    record = rlm.decode_remote_log_metadata(_uvarint(1) + _uvarint(9) + _uvarint(0))
    assert (record.known, record.type_name, record.api_key) == (False, "Unknown", 9)


def test_the_kraft_table_is_not_replaced_by_the_remote_one() -> None:
    # apiKey 0 is RegisterBrokerRecord in KRaft and RemoteLogSegmentMetadataRecord here
    value = frame(
        REMOTE["RemoteLogSegmentMetadataRecord"], 0, sample(REMOTE["RemoteLogSegmentMetadataRecord"], 0, 1)
    )
    assert rlm.decode_remote_log_metadata(value).type_name == "RemoteLogSegmentMetadataRecord"
    kraft = _outcome(decoder.decode_metadata_record, value)
    assert kraft == _outcome(decoder.decode_metadata_record_py, value)
    assert isinstance(kraft, tuple) or kraft.type_name == "RegisterBrokerRecord"
    assert _outcome(decoder.decode_metadata_record, b"\x02\x00\x00") == (
        "error",
        "unknown metadata frame version 2 (expected 1)",
        0,
    )
    assert _outcome(rlm.decode_remote_log_metadata, b"\x02\x00\x00") == (
        "error",
        "unknown remote log metadata frame version 2 (expected 1)",
        0,
    )
