"""The C interpreter of the KRaft table (`_speedups.kraft_decode_metadata`) gives exactly what the
pure-Python reference gives: the same MetadataRecord for every type and version round-tripped through
the tests' encoder and for every record of the real KRaft logs, and the same error (message and
position) for every truncation and for random byte flips."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from kafka_tools.format.kraft import decoder
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.segment import iter_log_entries
from tests.format import kraft_encoder as enc
from tests.independent import REALWORLD

pytestmark = [
    pytest.mark.skipif(not decoder.HAS_SPEEDUPS, reason="the C extension is not built"),
    pytest.mark.skipif(not enc.SCHEMA_DIR.is_dir(), reason="../shared/kraft-schemas is absent"),
]


def _outcome(decode, value: bytes):
    try:
        return decode(value)
    except decoder.MetadataDecodeError as exc:
        return ("error", exc.message, exc.position)


def _same(value: bytes) -> None:
    c = _outcome(decoder.decode_metadata_record, value)
    py = _outcome(decoder.decode_metadata_record_py, value)
    assert c == py, value.hex()
    if not isinstance(c, tuple):
        assert type(c) is decoder.MetadataRecord
        assert [type(v) for v in c.fields.values()] == [type(v) for v in py.fields.values()]


def _values() -> list[bytes]:
    schemas = enc.load_schemas()
    out = []
    for i, s in enumerate(s for s in schemas.values() if s.kind == "metadata"):
        for v in s.versions:
            for seed, nulls in ((i, False), (i + 500, True)):
                out.append(enc.frame(s, v, enc.sample(s, v, seed, nulls=nulls)))
    return out


def test_every_round_tripped_record_decodes_the_same_in_c() -> None:
    values = _values()
    assert len(values) > 60
    for value in values:
        _same(value)


def test_every_truncation_and_byte_flip_fails_the_same_in_c() -> None:
    rng = random.Random(7)
    for value in _values():
        for cut in range(len(value)):
            _same(value[:cut])
        for _ in range(20):
            damaged = bytearray(value)
            damaged[rng.randrange(len(value))] = rng.randrange(256)
            _same(bytes(damaged))
        _same(value + b"\x00")


def test_unknown_types_versions_and_frames_are_the_same_in_c() -> None:
    for value in (
        b"\x01\x7f\x00\x00",
        b"\x01\x02\x09",
        b"\x02\x02\x00",
        b"",
        b"\x01",
        b"\x01\xff\xff\xff\xff\x7f",
    ):
        _same(value)


def _real_values() -> list[bytes]:
    kraft = REALWORLD / "kraft"
    files = sorted(kraft.glob("*/__cluster_metadata-0/*.log")) + sorted(kraft.glob("*/*.checkpoint"))
    out = []
    for path in files:
        for entry in iter_log_entries(Path(path)):
            if isinstance(entry, RecordBatch) and not entry.is_control:
                out += [r.value for r in entry.records()]
    return out


@pytest.mark.skipif(not (REALWORLD / "kraft").is_dir(), reason="../shared/realworld/kraft is absent")
def test_every_record_of_the_real_kraft_logs_decodes_the_same_in_c() -> None:
    values = _real_values()
    assert len(values) > 3000
    for value in values:
        _same(value)
