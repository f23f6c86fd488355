"""The one Python record reader (RecordReader) walking a v2 records section as a stream (stream_check,
for payloads that inflate past 8 MiB) says what it says over the section held whole, and what the C
reader says: the same first and last offset deltas and count, or the same error at the same position —
on real sections cut into pieces anywhere, and on garbage, including the sums past int64 and the stray
bytes after the last record."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_tools.format import accel, stream_check
from kafka_tools.format.byte_stream import ByteStream
from kafka_tools.format.message_set import parse_message
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.record_reader import RecordDecodeError, RecordReader, decode_records_py
from kafka_tools.format.segment import iter_log_entries
from tests.independent import FIXTURES
from tests.support import hostile

SECTIONS = [
    bytes(b.payload)
    for p in sorted((FIXTURES / "generated" / "v2").glob("*/*.log"))
    for b in iter_log_entries(p)
    if isinstance(b, RecordBatch) and not b.is_compressed and b.records_count
][:20]


def _batch(count: int, base_offset: int = 100, base_timestamp: int = 1_700_000_000_000, append: bool = False):
    return SimpleNamespace(
        records_count=count,
        base_offset=base_offset,
        base_timestamp=base_timestamp,
        attributes=8 if append else 0,
    )


def _whole(section: bytes, b, decode=decode_records_py) -> tuple:
    try:
        records = decode(
            section, b.records_count, b.base_offset, b.base_timestamp, 5 if b.attributes else None, -1
        )
    except RecordDecodeError as exc:
        return ("error", str(exc), exc.position)
    deltas = [r.offset - b.base_offset for r in records]
    return ("ok", deltas[0] if deltas else None, deltas[-1] if deltas else None, len(deltas))


def _streamed(section: bytes, b, cut: int) -> tuple:
    pieces = iter([section[cut:]]) if cut < len(section) else iter([])
    log_append = 5 if b.attributes else None
    reader = RecordReader(
        ByteStream(section[:cut], pieces), b.records_count, b.base_offset, b.base_timestamp, log_append, -1
    )
    try:
        first, last, count, _ = reader.check()
    except RecordDecodeError as exc:
        return ("error", str(exc), exc.position)
    return ("ok", first, last, count)


def _agree(section: bytes, b, cut: int) -> tuple:
    """The Python reader whole, the same reader streamed (cut at `cut`), and the C reader: one answer."""
    want = _whole(section, b)
    assert _streamed(section, b, cut) == want, ("streamed", cut)
    if accel.C is not None:
        assert _whole(section, b, accel.C.decode_records) == want, "C"
    return want


def test_real_sections_agree_wherever_the_stream_is_cut() -> None:
    assert len(SECTIONS) >= 5
    for section in SECTIONS:
        for n in (1, 2, 3, 50):
            b = _batch(n)
            for cut in sorted({0, 1, len(section) // 2, len(section)}):
                _agree(section, b, cut)


HOSTILE = [
    (hostile.v2_record(offset_delta=1), _batch(1, base_offset=2**63 - 1)),
    (hostile.v2_record(ts_delta=-1), _batch(1, base_timestamp=-(2**63))),
    (hostile.v2_record(ts_delta=-1), _batch(1, base_timestamp=-(2**63), append=True)),
    (hostile.v2_record(tail=hostile.zigzag(8460809781839223477)), _batch(1)),
    (hostile.v2_record() + b"\x00", _batch(1)),
    (hostile.v2_record() + b"\x00\x00", _batch(1)),
]


def test_hostile_sections_agree() -> None:
    for section, b in HOSTILE:
        _agree(section, b, 1)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.integers(0, 5), st.integers(-(2**63), 2**63 - 1), st.integers(0, 200))
def test_garbage_agrees(data: bytes, count: int, base_offset: int, cut: int) -> None:
    b = _batch(count, base_offset=base_offset)
    _agree(data, b, min(cut, len(data)))


# ---- v0/v1: a wrapper's inner set, streamed and whole ----------------------------------------------

INNER = st.lists(st.tuples(st.integers(-3, 40), st.binary(max_size=8)), max_size=5)


def _inner_outcome(entry, monkeypatch, whole: bool) -> tuple:
    monkeypatch.setattr(stream_check, "WHOLE_LIMIT", 8 << 20 if whole else 0)
    try:
        s = stream_check.inner_stats(entry)
    except RecordDecodeError as exc:
        return ("error", str(exc), exc.position)
    return ("ok", s.first_offset, s.last_offset, s.count)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    inner=INNER,
    offset=st.sampled_from([0, 7, 2**62, 2**63 - 1]),
    tail=st.binary(max_size=30),
    c_on=st.booleans(),
)
def test_wrapper_inner_sets_agree_streamed_and_whole(inner, offset, tail, c_on, monkeypatch) -> None:
    if not c_on:
        monkeypatch.setattr(accel, "C", None)
    data = b"".join(hostile.v1_message(o, v) for o, v in inner) + tail
    wrapper = parse_message(hostile.v1_gzip_wrapper(offset, data), 0, 0, 1 << 20)
    whole = _inner_outcome(wrapper, monkeypatch, whole=True)
    assert _inner_outcome(wrapper, monkeypatch, whole=False) == whole
    try:
        messages = wrapper.inner_messages()
    except RecordDecodeError as exc:
        assert whole == ("error", str(exc), exc.position)
    else:
        assert whole == ("ok", messages[0].offset, messages[-1].offset, len(messages))
