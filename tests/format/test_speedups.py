"""The C record decoder must be indistinguishable from the pure-Python reference: same records on every
valid section, the same error (message and position) on every broken one, and no crash on any input."""

from __future__ import annotations

import pickle
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_tools.format import accel
from kafka_tools.format import record_reader as rr
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError, decode_records_py
from kafka_tools.format.segment import iter_log_entries
from tests.format.test_decoder_vs_kafka_python import SEGMENTS
from tests.independent import REALWORLD
from tests.support import hostile

pytestmark = pytest.mark.skipif(not rr.HAS_SPEEDUPS, reason="C extension not built")


def _run(fn, data: bytes, count: int, log_append: int | None = None, base_sequence: int = -1):
    try:
        return ("ok", fn(data, count, 100, 1_700_000_000_000, log_append, base_sequence))
    except RecordDecodeError as exc:
        return ("error", str(exc), exc.position)


def _sections():
    for path in SEGMENTS:
        for entry in iter_log_entries(path):
            if isinstance(entry, RecordBatch) and not entry.is_compressed:
                yield entry


def test_c_and_python_agree_on_every_real_batch() -> None:
    checked = 0
    for batch in _sections():
        args = (
            batch.payload,
            batch.records_count,
            batch.base_offset,
            batch.base_timestamp,
            None,
            batch.base_sequence,
        )
        assert rr.decode_records(*args) == decode_records_py(*args)
        checked += 1
    assert checked > (100 if REALWORLD.is_dir() else 30)  # the fixtures alone hold 36 v2 batches


def test_c_and_python_agree_on_every_truncation_of_a_real_batch() -> None:
    batch = next(b for b in _sections() if b.records_count > 2)
    for cut in range(len(batch.payload)):
        data = batch.payload[:cut]
        assert _run(rr.decode_records, data, batch.records_count) == _run(
            decode_records_py, data, batch.records_count
        )


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300), st.integers(min_value=0, max_value=2**31 - 1), st.sampled_from([None, 5]))
def test_c_and_python_agree_on_garbage(data: bytes, count: int, log_append: int | None) -> None:
    assert _run(rr.decode_records, data, count, log_append, 7) == _run(
        decode_records_py, data, count, log_append, 7
    )


# ---- inputs that once reached undefined behaviour or an uncaught error in C -----------------------

INT64_MAX = 2**63 - 1


@pytest.mark.parametrize(
    ("section", "count", "base_offset", "base_timestamp", "log_append", "message"),
    [
        # a header count whose double wraps in 64 bits: was MemoryError from a huge tuple
        (hostile.v2_record(tail=hostile.zigzag(8460809781839223477)), 1, 0, 0, None, "header count"),
        (hostile.v2_record(tail=hostile.zigzag(2**62)), 1, 0, 0, None, "header count"),
        # sums past int64: C wrapped (undefined behaviour), Python printed a 65-bit offset
        (
            bytes.fromhex("0c000002010100"),
            1,
            INT64_MAX,
            0,
            None,
            "offset delta 1 takes the offset past int64",
        ),
        (hostile.v2_record(offset_delta=-1), 1, -(2**63), 0, None, "offset delta -1"),
        (hostile.v2_record(ts_delta=1), 1, 0, INT64_MAX, None, "timestamp delta 1"),
        (hostile.v2_record(ts_delta=-(2**63)), 1, 0, -1, None, "timestamp delta"),
        # a zero header count after fields that ran past the record: the record's length is wrong
        (hostile.v2_record(key=b"k" * 3, tail=b"\x80\x00")[:-6] + b"kkkkk\x00", 1, 0, 0, None, None),
    ],
)
def test_c_and_python_agree_on_sums_and_counts_past_int64(
    section: bytes, count: int, base_offset: int, base_timestamp: int, log_append, message
) -> None:
    py = _outcome(decode_records_py, section, count, base_offset, base_timestamp, log_append, -1)
    c = _outcome(rr.decode_records, section, count, base_offset, base_timestamp, log_append, -1)
    assert c == py
    checked = _outcome(
        accel.C.format_payload, section, count, base_offset, base_timestamp, log_append, -1, "", False, True
    )
    assert checked == (py if py[0] == "error" else ("ok", len(py[1])))
    if message is not None:
        assert py[0] == "error" and message in py[1], py


def test_a_log_append_time_batch_never_sums_timestamps() -> None:
    section = hostile.v2_record(ts_delta=1)
    want = _outcome(decode_records_py, section, 1, 0, INT64_MAX, 5, -1)
    assert want[0] == "ok" and want[1][0].timestamp == 5
    assert _outcome(rr.decode_records, section, 1, 0, INT64_MAX, 5, -1) == want


@pytest.mark.parametrize(("base_sequence", "delta"), [(2**31 - 1, 1), (5, -(2**63)), (2**31 - 1, 2**63 - 1)])
def test_sequence_wraps_to_31_bits_the_same(base_sequence: int, delta: int) -> None:
    section = hostile.v2_record(offset_delta=delta)
    c = rr.decode_records(section, 1, 0, 0, None, base_sequence)
    assert c == decode_records_py(section, 1, 0, 0, None, base_sequence)
    assert c[0].sequence == (base_sequence + delta) & 0x7FFFFFFF


def _outcome(fn, *args):
    try:
        return ("ok", fn(*args))
    except RecordDecodeError as exc:
        return ("error", str(exc), exc.position)


def test_c_before_configure_raises_instead_of_crashing() -> None:
    code = (
        "from kafka_tools.format import _speedups as s\n"
        "for call in (lambda: s.decode_records(b'', 0, 0, 0, None, -1),\n"
        "             lambda: s.format_payload(b'', 0, 0, 0, None, -1, '', False, True)):\n"
        "    try:\n"
        "        call()\n"
        "    except RuntimeError as exc:\n"
        "        print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["_speedups.configure() was not called"] * 2


def test_format_records_runs_no_python_code_on_a_record() -> None:
    class Sneaky:
        def __index__(self) -> int:
            records.clear()
            return 1

    records = [rr.Record(Sneaky(), 0, None, None, (), -1, 7), rr.Record(1, 0, None, None, (), -1, 7)]
    with pytest.raises(TypeError):
        accel.C.format_records(records, "CreateTime", False)
    assert len(records) == 2


# ---- what the C reader makes: Records as the namedtuple makes them, header keys shared ----------------


def _headers(*pairs: tuple[bytes, bytes | None]) -> bytes:
    out = hostile.zigzag(len(pairs))
    for key, value in pairs:
        out += hostile.zigzag(len(key)) + key
        out += hostile.zigzag(-1) if value is None else hostile.zigzag(len(value)) + value
    return out


def test_header_keys_read_the_same_however_often_and_in_whatever_order_they_repeat() -> None:
    # More distinct ASCII keys than the reader keeps decoded, keys that only start alike, a non-ASCII
    # key, an invalid UTF-8 key (replaced) and an empty one, repeated in varying orders, with values
    # that repeat, change, are empty, null, or long.
    keys = [b"k%d" % i for i in range(12)] + [b"k1x", "schlüssel".encode(), b"\xff\xfebad", b""]
    values = [b"v", b"v", None, b"", b"w", b"x" * 70, b"x" * 70, None]
    section = b""
    count = 0
    for round_ in range(4):
        for i, key in enumerate(keys if round_ % 2 else reversed(keys)):
            other = keys[(i * 7 + round_) % len(keys)]
            headers = _headers(
                (key, b"v"), (other, values[count % len(values)]), (key, values[i % len(values)])
            )
            section += hostile.v2_record(count, 0, b"key", b"value", headers)
            count += 1
    c = rr.decode_records(section, count, 0, 0, None, -1)
    assert c == decode_records_py(section, count, 0, 0, None, -1)
    assert {k for rec in c for k, _ in rec.headers} == {k.decode("utf-8", "replace") for k in keys}


def test_a_record_reads_its_fields_as_the_namedtuple_does() -> None:
    section = hostile.v2_record(3, 4, b"key", None, _headers((b"h", b"1")))
    (rec,) = rr.decode_records(section, 1, 10, 1000, None, 5)
    assert isinstance(rec, tuple) and type(rec) is rr.Record
    assert (rec.offset, rec.timestamp, rec.key, rec.value, rec.headers, rec.sequence, rec.size) == tuple(rec)
    assert rec == (13, 1004, b"key", None, (("h", b"1"),), 8, len(section))
    assert rec._replace(offset=1).offset == 1 and rec._asdict()["key"] == b"key"
    assert rr.Record(1, 2, None, None, ()).size == 0  # the defaults
    with pytest.raises(AttributeError):
        rec.offset = 5
    assert pickle.loads(pickle.dumps(rec)) == rec
    # The C paths read the fields as slots of the tuple (what makes a loop over records fast).
    assert all(type(rr.Record.__dict__[name]).__name__ == "member_descriptor" for name in rr.Record._fields)


def test_a_record_type_with_more_than_its_items_is_still_made_whole() -> None:
    # A tuple subclass with a __dict__ cannot be made as a bare tuple: the reader falls back to its
    # tp_alloc (zeroed), and the records are the same.
    code = (
        "from kafka_tools.format import _speedups as s, record_reader as rr\n"
        "from tests.support import hostile\n"
        "class Wide(tuple):\n"
        "    pass\n"
        "s.configure(Wide, rr.RecordDecodeError)\n"
        "section = hostile.v2_record(1, 2, b'k', b'v') * 3\n"
        "out = s.decode_records(section, 3, 10, 100, None, -1)\n"
        "assert [type(r) for r in out] == [Wide] * 3, out\n"
        "out[0].note = 'a dict'\n"
        "print([tuple(r)[:4] for r in out])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str([(11, 102, b"k", b"v")] * 3)
