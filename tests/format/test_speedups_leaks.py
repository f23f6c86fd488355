"""Every error path of the C extension, run many times, keeps nothing: the memory tracemalloc sees
(Python objects and the extension's PyMem buffers) does not grow with the number of calls. A reference
kept on an error path, or a buffer not freed, grows it by at least a few bytes a call."""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from kafka_tools.format import accel
from kafka_tools.format import record_reader as rr
from kafka_tools.format.kraft import decoder as kraft
from kafka_tools.format.record_reader import RecordDecodeError
from tests.support import hostile

pytestmark = [
    pytest.mark.skipif(not rr.HAS_SPEEDUPS, reason="C extension not built"),
    pytest.mark.slow,  # every error path thousands of times
]
C = accel.C
CALLS = 3000
INT64_MAX = 2**63 - 1


def _growth(call) -> int:
    """Bytes still held after CALLS more calls than a warm-up's. What lived before is frozen out of the
    collections (gc.freeze): a full collection then costs what the calls made, not the whole process's
    heap (in CI's offline lane, thousands of tests' objects: 48 s of CPU for this file, 11 s alone)."""
    for _ in range(300):
        call()
    gc.freeze()  # the warm-up's garbage too: held, the same before and after
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(CALLS):
            call()
        gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.unfreeze()


def _quiet(fn, *args, errors=(RecordDecodeError, ValueError, TypeError, OverflowError)):
    def call():
        try:
            fn(*args)
        except errors:
            pass

    return call


REC = hostile.v2_record(key=b"k", value=b"v", tail=b"\x02\x02h\x02v")  # one header
Z = hostile.zigzag


def _raw(body: bytes) -> bytes:
    """A record of these bytes after its length (attributes, deltas, fields: as given)."""
    return Z(len(body)) + body


SECTIONS = {  # each: (section, count, base offset, base timestamp) and the error it must give
    "ok": (REC * 3, 3, 0, 0, None),
    "bad-length": (b"\x02" + REC, 1, 0, 0, "length 1 is impossible"),
    "past-end": (_raw(b"\x00\x00\x00" + Z(50) + b"abc"), 1, 0, 0, "runs past the end"),
    "too-long": (b"\xff" * 11, 1, 0, 0, "varint longer than 10 bytes"),
    "bad-key": (_raw(b"\x00\x00\x00" + Z(-5) + b"\x00\x00\x00"), 1, 0, 0, "key length -5"),
    "bad-value": (_raw(b"\x00\x00\x00\x01" + Z(-7) + b"\x00\x00"), 1, 0, 0, "value length -7"),
    "header-count": (hostile.v2_record(tail=Z(8460809781839223477)), 1, 0, 0, "header count"),
    "header-key": (hostile.v2_record(tail=b"\x02" + Z(60) + b"xxxx"), 1, 0, 0, "header key length 60"),
    "header-value": (hostile.v2_record(tail=b"\x02\x02h" + Z(60) + b"xx"), 1, 0, 0, "header value length 60"),
    "second-header-fails": (
        hostile.v2_record(tail=b"\x04\x02h\x02v\x02h" + Z(60) + b"xx"),
        1,
        0,
        0,
        "header value length 60",
    ),
    "mismatch": (hostile.v2_record(tail=b"\x00\x00"), 1, 0, 0, "fields do not end"),
    "offset-overflow": (hostile.v2_record(offset_delta=1), 1, INT64_MAX, 0, "offset delta 1"),
    "timestamp-overflow": (hostile.v2_record(ts_delta=1), 1, 0, INT64_MAX, "timestamp delta 1"),
    "stray": (REC + b"\x00", 1, 0, 0, "1 stray byte"),
    "records-then-failure": (REC * 5 + b"\x02", 6, 0, 0, "record 5: "),
}


def test_each_case_takes_its_error_path() -> None:
    for case, (data, count, base_offset, base_ts, error) in SECTIONS.items():
        try:
            C.decode_records(data, count, base_offset, base_ts, None, 5)
            said = None
        except RecordDecodeError as exc:
            said = str(exc)
        assert (said is None) if error is None else (said is not None and error in said), (case, said)


@pytest.mark.parametrize("case", sorted(SECTIONS))
def test_record_reader_error_paths_keep_nothing(case: str) -> None:
    data, count, base_offset, base_ts, _ = SECTIONS[case]
    args = (data, count, base_offset, base_ts, None, 5)
    assert _growth(_quiet(C.decode_records, *args)) < 4096
    assert _growth(_quiet(lambda: list(C.iter_records(*args)))) < 4096
    assert _growth(_quiet(lambda: list(C.iter_records(*args, _moved)))) < 4096
    assert _growth(_quiet(lambda: next(C.iter_records(*args), None))) < 4096  # let go mid-way
    for extra in (
        ("CreateTime", True, True),
        ("CreateTime", True, False),
        ("CreateTime", True, False, '"f"', 9),
    ):
        assert _growth(_quiet(C.format_payload, *args, *extra)) < 4096, extra


def _moved(exc: RecordDecodeError) -> RecordDecodeError:
    """An iter_records `fix`: the error as its batch would say it."""
    return RecordDecodeError(f"batch: {exc}", exc.position + 61)


def test_format_records_error_paths_keep_nothing() -> None:
    good = rr.decode_records(REC * 3, 3, 0, 0, None, -1)
    bad_header = [*good, rr.Record(1, 2, b"k", b"v", (("h", b"v"), (b"not str", b"v")), -1, 9)]
    bad_int = [*good, rr.Record(2**64, 2, b"k", b"v", (), -1, 9)]
    for records in (good, bad_header, bad_int, [*good, "nope"]):
        assert _growth(_quiet(C.format_records, records, "CreateTime", True)) < 4096


def test_message_walks_keep_nothing() -> None:
    good = hostile.v1_message(0, b"a") + hostile.v1_message(1, b"b")
    wrapper = hostile.v1_gzip_wrapper(5, good)
    for buf in (good, good + b"\x00" * 30, wrapper, good[:-1]):
        assert _growth(_quiet(C.scan_messages, buf, 0, len(buf), len(buf), None, 0, 100)) < 4096
        assert _growth(_quiet(C.scan_inner, buf)) < 4096
        for json_out in (False, True):
            fmt = _quiet(C.format_messages, buf, 0, json_out, True, '"f"', 7, 2**62 + 5, 9)
            assert _growth(fmt) < 4096
    shifted = _quiet(C.format_messages, good, 0, False, True, "", 7, INT64_MAX, None)  # offset past int64
    assert _growth(shifted) < 4096


@pytest.mark.skipif(not kraft.HAS_SPEEDUPS, reason="KRaft table not in C")
def test_kraft_error_paths_keep_nothing() -> None:
    # a PartitionRecord v0 cut short at every length, and garbage after a whole one
    value = bytes.fromhex("01030000000000")
    for cut in (
        b"",
        b"\x01",
        b"\x02",
        b"\x01\x03",
        value,
        value + b"\x00" * 40,
        b"\x01\x03\x00" + b"\xff" * 30,
    ):
        call = _quiet(kraft.decode_metadata_record, cut, errors=(kraft.MetadataDecodeError,))
        assert _growth(call) < 4096, cut.hex()


@pytest.mark.skipif(not kraft.HAS_SPEEDUPS, reason="KRaft table not in C")
def test_remote_log_metadata_error_paths_and_records_keep_nothing() -> None:
    # kraft.c's second table: a RemoteLogSegmentMetadataUpdateRecord cut short, with garbage after it, an
    # unknown apiKey (a record without a frame_version slot) and a whole record (its values dropped)
    from kafka_tools.format import remote_log_metadata as rlm
    from tests.format.kraft_encoder import frame, load_schemas, sample
    from tests.independent import FIXTURES

    schema = load_schemas(FIXTURES / "remote-log-metadata-schemas")["RemoteLogSegmentMetadataUpdateRecord"]
    value = frame(schema, 0, sample(schema, 0, 1))
    for cut in (b"", b"\x01", value[:30], value + b"\x00", b"\x01\x09\x00", value):
        call = _quiet(rlm.decode_remote_log_metadata, cut, errors=(kraft.MetadataDecodeError,))
        assert _growth(call) < 4096, cut.hex()


def test_record_iterators_give_their_type_back() -> None:
    """Each iterator holds its (heap) type once and gives it back once: a reference too many a call
    grows no memory tracemalloc sees, only the type's count, until it would wrap."""
    import sys

    data, count, base_offset, base_ts, _ = SECTIONS[sorted(SECTIONS)[0]]
    args = (data, count, base_offset, base_ts, None, 5)
    kind = type(C.iter_records(*args))
    before = sys.getrefcount(kind)
    for _ in range(CALLS):
        _quiet(lambda: list(C.iter_records(*args)))()
    gc.collect()
    assert sys.getrefcount(kind) - before < 10
