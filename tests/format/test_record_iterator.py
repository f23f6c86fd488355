"""`iter_records`, the records of a batch one at a time: the records `records()` gives, in order, on
every batch (compressed or not); on a damaged section the records before the damage, then the error
`records()` raises (text and file position), C or pure Python; and a record a caller keeps is never
changed by the ones made after it (the C iterator refills a Record in place only when nothing else
holds it)."""

from __future__ import annotations

import gc
import gzip
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_tools.format import accel
from kafka_tools.format import record_reader as rr
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError, decode_records_py
from kafka_tools.format.segment import iter_log_entries
from tests.format.test_decoder_vs_kafka_python import SEGMENTS
from tests.independent import FIXTURES
from tests.support import hostile

pytestmark = pytest.mark.skipif(not rr.HAS_SPEEDUPS, reason="C extension not built")

V2_SEGMENTS = sorted((FIXTURES / "generated" / "v2").glob("*/*.log"))


def _batches():
    for path in [*V2_SEGMENTS, *SEGMENTS]:
        for entry in iter_log_entries(path):
            if isinstance(entry, RecordBatch):
                yield entry


def _iterated(fn, *args) -> tuple:
    """(records yielded, the error's (text, position) or None)."""
    got = []
    try:
        for r in fn(*args):
            got.append(r)
    except RecordDecodeError as exc:
        return got, (str(exc), exc.position)
    return got, None


def _outcome(fn, *args) -> tuple:
    try:
        return fn(*args), None
    except RecordDecodeError as exc:
        return None, (str(exc), exc.position)


def test_every_real_batch_gives_the_records_of_records() -> None:
    codecs = set()
    for batch in _batches():
        want = batch.records()
        assert list(batch.iter_records()) == want
        kept = [r for r in batch.iter_records()]  # every record kept: none refilled under the caller
        assert kept == want
        codecs.add(batch.codec)
    assert codecs >= {0, 1, 2, 3, 4}, codecs  # the fixtures hold every codec


def test_records_kept_while_iterating_never_change() -> None:
    section = b"".join(hostile.v2_record(offset_delta=i, key=b"k%d" % i, value=b"v" * i) for i in range(50))
    want = decode_records_py(section, 50, 1000, 5, None, -1)
    for keep_every in (1, 2, 3, 7):
        kept = []
        seen = []
        for i, r in enumerate(accel.C.iter_records(section, 50, 1000, 5, None, -1)):
            seen.append((r.offset, r.key, r.value))  # fields kept, the record let go
            if i % keep_every == 0:
                kept.append(r)
            gc.collect(0)  # the young generation holds what the loop let go (a full collection: 14 s)
        assert seen == [(r.offset, r.key, r.value) for r in want]
        assert kept == want[::keep_every]


def test_a_record_let_go_is_refilled_and_reads_as_the_next() -> None:
    section = b"".join(hostile.v2_record(offset_delta=i, key=b"k%d" % i) for i in range(6))
    ids = []
    for r in accel.C.iter_records(section, 6, 0, 0, None, -1):
        ids.append(id(r))
        assert r.key == b"k%d" % r.offset and r.size == len(hostile.v2_record(key=b"k0"))
    assert len(set(ids)) <= 3  # two Records take turns once the loop lets each go


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=0, max_value=2**31 - 1), st.sampled_from([None, 5]))
def test_c_iterator_and_python_agree_on_garbage(data: bytes, count: int, log_append: int | None) -> None:
    args = (data, count, 100, 1_700_000_000_000, log_append, 7)
    records, error = _iterated(accel.C.iter_records, *args)
    want, want_error = _outcome(decode_records_py, *args)
    assert error == want_error
    if error is None:
        assert records == want
    else:  # the records before the damage: what the section up to their end decodes to
        assert len(records) <= count
        end = sum(r.size for r in records)
        assert records == decode_records_py(data[:end], len(records), *args[2:])


def _three() -> bytes:
    return b"".join(hostile.v2_record(offset_delta=i, key=b"k") for i in range(3))


@pytest.mark.parametrize(
    ("section", "count", "before"),
    [
        (_three() + b"\x02", 4, 3),  # a record cut short after three good ones
        (_three() + b"\x00", 3, 3),  # a stray byte after the last record
        (hostile.v2_record(tail=hostile.zigzag(2**62)), 1, 0),  # an impossible header count
        (b"\xff" * 11, 1, 0),  # a varint longer than 10 bytes
    ],
)
def test_a_damaged_batch_gives_the_records_before_it_then_the_error_of_records(
    section: bytes, count: int, before: int
) -> None:
    for attributes in (0, 1):  # uncompressed; gzip (the error said to be inside the payload)
        payload = gzip.compress(section) if attributes else section
        data = hostile.v2_batch(payload, count, 40, attributes=attributes)
        (batch,) = list(_entries_of(data))
        with pytest.raises(RecordDecodeError) as whole:
            batch.records()
        got, error = _iterated(batch.iter_records)
        assert error == (str(whole.value), whole.value.position)
        assert [r.offset for r in got] == list(range(40, 40 + before))


@pytest.mark.parametrize("attributes", [0, 1])
def test_the_pure_python_reference_gives_the_records_before_the_damage_too(monkeypatch, attributes) -> None:
    section = _three() + b"\x02"
    payload = gzip.compress(section) if attributes else section
    (batch,) = list(_entries_of(hostile.v2_batch(payload, 4, 40, attributes=attributes)))
    want = _iterated(batch.iter_records)
    monkeypatch.setattr(accel, "C", None)
    got = _iterated(batch.iter_records)
    assert got == want
    assert [r.offset for r in got[0]] == [40, 41, 42]


def _entries_of(data: bytes):
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "00000000000000000000.log"
        path.write_bytes(data)
        yield from iter_log_entries(path)


def test_pure_python_iter_records_is_records(monkeypatch) -> None:
    batches = list(_batches())
    monkeypatch.setattr(accel, "C", None)
    for batch in batches:
        assert list(batch.iter_records()) == batch.records()


def test_every_entry_kind_iterates_its_records() -> None:
    legacy = sorted((FIXTURES / "generated").glob("v[01]/*/*.log"))
    assert legacy
    for path in legacy:
        for entry in iter_log_entries(path):
            assert list(entry.iter_records()) == entry.records()


def test_wrong_arguments_are_refused() -> None:
    with pytest.raises(TypeError):
        accel.C.iter_records(b"", 0, 0, 0, None)
    with pytest.raises(TypeError):
        accel.C.iter_records(b"", 0, 0, 0, None, -1, None, None)
    assert list(accel.C.iter_records(b"", 0, 0, 0, None, -1, None)) == []


def test_an_error_fix_that_asks_for_more_records_gets_none() -> None:
    section = hostile.v2_record(key=b"k") + b"\x02"  # one good record, then one cut short
    asked = []

    def fix(exc: RecordDecodeError) -> RecordDecodeError:
        asked.append(next(it, "none"))  # the walk has stopped: no record, no second error
        return RecordDecodeError(f"fixed: {exc}", exc.position + 1000)

    it = accel.C.iter_records(section, 2, 0, 0, None, -1, fix)
    got, error = _iterated(lambda: it)
    assert len(got) == 1 and asked == ["none"]
    assert error is not None and error[0].startswith("fixed: record 1: ") and error[1] >= 1000
    assert list(it) == []


def _headers(*pairs: tuple[bytes, bytes | None]) -> bytes:
    out = hostile.zigzag(len(pairs))
    for k, v in pairs:
        out += hostile.zigzag(len(k)) + k + (hostile.zigzag(-1) if v is None else hostile.zigzag(len(v)) + v)
    return out


def test_header_values_taking_turns_and_large_records_read_as_python_reads_them() -> None:
    # a header key whose short values take turns (more of them than the C reader keeps a key's
    # pairs), a null value, a long one, and records from a few bytes to past 4 KiB (sizes as ints)
    sources = [b"web", b"ios", b"android", b"backend", b"cli", b"web", b"", b"ios"]
    records = []
    for i in range(120):
        value = b"x" * (i * 53 % 6000)
        tail = _headers(
            (b"source", sources[i % len(sources)]),
            (b"retry", None),
            (b"trace-id", bytes([i]) * 16),
            (b"long", b"y" * (70 + i % 3)),
        )
        if not i % 5:  # every fifth record without headers
            tail = b"\x00"
        records.append(hostile.v2_record(offset_delta=i, key=b"k%d" % i, value=value, tail=tail))
    section = b"".join(records)
    want = decode_records_py(section, 120, 10, 5, None, -1)
    assert max(r.size for r in want) > 4096
    assert accel.C.decode_records(section, 120, 10, 5, None, -1) == want
    assert list(accel.C.iter_records(section, 120, 10, 5, None, -1)) == want
    assert [r.headers for r in want[1:4]] == [
        (("source", s), ("retry", None), ("trace-id", bytes([i]) * 16), ("long", b"y" * (70 + i % 3)))
        for i, s in ((1, b"ios"), (2, b"android"), (3, b"backend"))
    ]


@pytest.mark.parametrize("c_snappy", [True, False])
def test_two_compressed_batches_read_at_once_each_give_their_own_records(c_snappy, monkeypatch) -> None:
    # each batch's section is its own: a second batch started while the first is still being read
    # does not change what the first gives (C snappy decoder, or cramjam's blocks into a bytearray)
    cramjam = pytest.importorskip("cramjam")
    if not c_snappy:
        monkeypatch.setattr(accel, "C", accel.without("snappy_decompress"))
    batches = []
    for base in (0, 100):
        section = b"".join(
            hostile.v2_record(offset_delta=i, key=b"k%d" % (base + i), value=bytes([base + i]) * 200)
            for i in range(50)
        )
        payload = bytes(cramjam.snappy.compress_raw(section))
        batches.append(hostile.v2_batch(payload, 50, base, attributes=2, last_offset_delta=49))
    first, second = list(_entries_of(b"".join(batches)))
    want = first.records() + second.records()
    a = first.iter_records()
    got = [next(a)]
    b = second.iter_records()
    got_b = [next(b)]
    got += list(a)  # the first batch's buffer is still held by its iterator when the second starts
    got_b += list(b)
    assert got + got_b == want
    again = [r for batch in (first, second) for r in batch.iter_records()]  # one after the other
    assert again == want
