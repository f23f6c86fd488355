"""A question's matches filtered on columns built in C (pipeline/question_columns.py) are the rows and
counts of the pure-Python reference (questions.match_chunks: a Record each, `record_matches`), on every
fixture and ../shared/realworld segment (every magic and codec), whole and in byte ranges, for every
kind of question (keys, a regex Python's `re` and RE2 read differently, value bytes, producer id,
time windows that only a header or only a record can decide), and on hostile input."""

from __future__ import annotations

import re
import struct
import zlib
from pathlib import Path

import pytest

from kafka_tools.format import accel
from kafka_tools.pipeline import record_columns, tables
from kafka_tools.pipeline.question_columns import match_batches
from kafka_tools.pipeline.questions import MatchCounts, Question, make_question, match_chunks
from kafka_tools.pipeline.tasks import SegmentSpec, range_starts, split_ranges
from tests.independent import FIXTURES, needs_realworld
from tests.pipeline.test_record_columns import SEGMENTS, _name
from tests.support import hostile

pytestmark = pytest.mark.skipif(not record_columns.available(), reason="C extension not built")

NAMES = tables.names(tables.MATCHES)


def _reference(spec, question: Question, start=0, end=None) -> tuple[list[dict], MatchCounts]:
    items: list = []
    rows = []
    for cols in match_chunks(spec, start, end, question, sink=items.append):
        for values in zip(*(cols[n] for n in NAMES[3:]), strict=True):
            rows.append(dict(zip(NAMES, (spec.file, spec.topic, spec.partition, *values), strict=True)))
    ((_, _, counts),) = items
    return rows, counts


def _columns(spec, question: Question, start=0, end=None, **bounds) -> tuple[list[dict], MatchCounts]:
    items: list = []
    rows = []
    for batch in match_batches(spec, start, end, question, sink=items.append, **bounds):
        assert batch.schema == tables.arrow_schema(tables.MATCHES) and batch.num_rows
        rows += batch.to_pylist()
    ((file, where, counts),) = items
    assert (file, where) == (spec.file, start)
    return rows, counts


def _questions(spec) -> list[Question]:
    """Questions about what this segment holds (its records read by the reference), and some that
    match nothing or everything."""
    every, _ = _reference(spec, Question())
    out = [
        make_question(keys=("k1", "nope")),
        make_question(key_regex=r"\d$"),
        make_question(key_regex=r"(\d)\1"),  # a backreference: RE2 has none
        Question(key_regex=re.compile(rb"[\x80-\xff]")),  # a byte class over keys that are not UTF-8
        make_question(value_contains="1"),
        make_question(value_contains=""),  # every value that is not null
        Question(value_contains=b"\xff"),
        make_question(producer_id=-1),
        make_question(time_to="0"),  # header says: no timestamps never match; record: -1 <= 0
        make_question(time_from="-5"),
        make_question(time_from="0", time_to="9999999999999"),
    ]
    if every:
        mid = every[len(every) // 2]
        stamps = sorted(r["timestamp"] for r in every)
        median = stamps[len(stamps) // 2]
        keys = tuple(sorted({r["key"].decode("utf-8", "replace") for r in every if r["key"] is not None})[:3])
        out += [
            make_question(keys=keys or ("x",)),
            make_question(time_from=str(median)),
            make_question(time_to=str(median)),
            make_question(time_from=str(median), time_to=str(stamps[-1])),
            make_question(producer_id=mid["producer_id"] if mid["producer_id"] is not None else 0),
            Question(value_contains=(mid["value_preview"] or "")[2:6].encode(), time_from=stamps[0]),
            Question(keys=(mid["key"] or b"",), key_regex=re.compile(rb"."), time_to=median),
        ]
    return out


@pytest.mark.parametrize("spec", SEGMENTS, ids=_name)
def test_matches_from_columns_are_the_references_rows_and_counts(spec) -> None:
    for question in _questions(spec):
        want = _reference(spec, question)
        got = _columns(spec, question)
        assert got == want, question


def test_the_questions_find_something_of_every_kind() -> None:
    """The comparisons above are not all of empty answers."""
    needs_realworld()  # the fixtures alone give 5,894 of the 10,000 rows
    found = {}
    for spec in SEGMENTS:
        for n, question in enumerate(_questions(spec)):
            found[n] = found.get(n, 0) + len(_reference(spec, question)[0])
    assert sum(found.values()) > 10_000
    assert [n for n, rows in found.items() if not rows] == [8]  # --time-to 0: no record is that old


@pytest.mark.parametrize("spec", [s for s in SEGMENTS if s.size > 4096 and not s.kafka07], ids=_name)
def test_matches_of_byte_ranges_are_the_references(spec) -> None:
    ranges = split_ranges(range_starts(spec, 2048))
    assert len(ranges) > 1
    for question in _questions(spec)[-7:] or _questions(spec):
        for s, e in ranges:
            assert _columns(spec, question, s, e) == _reference(spec, question, s, e), (question, s)


def test_small_batches_give_the_same_matches() -> None:
    spec = max(SEGMENTS, key=lambda s: len(_reference(s, Question())[0]))
    for question in _questions(spec):
        assert _columns(spec, question, max_rows=7) == _reference(spec, question), question


def test_without_the_c_builder_the_reference_answers() -> None:
    spec = next(s for s in SEGMENTS if "generated/v2/gzip-0/" in s.file)
    question = make_question(key_regex=r"\d$")
    saved = accel.C
    accel.C = None
    try:
        got = _columns(spec, question)
    finally:
        accel.C = saved
    assert got == _reference(spec, question) and got[0]


def test_previews_of_long_and_undecodable_values_are_pythons() -> None:
    import pyarrow as pa

    from kafka_tools.pipeline.question_columns import previews
    from kafka_tools.pipeline.questions import preview

    values = [
        b"short",
        None,
        b"\xc3\xa9" * 40,  # 80 bytes, 40 characters: whole
        b"x" * 64,
        b"y" * 65,  # cut at 64 characters, "…"
        b"z" * 300,  # past the 256 bytes looked at
        "é".encode() * 128,  # 256 bytes exactly, 128 characters
        b"a" + "€".encode() * 90,  # a character cut at byte 256: Python's escapes
        b"\xff\xfe",  # not UTF-8
        "é".encode() * 32,
        b"",
    ]
    for chosen in (
        values,
        values[:7],
        values[9:],
        [values[3], values[10]],
        [values[8]],
        [values[7]],
        [values[2]],
    ):
        assert previews(pa.array(chosen, pa.binary())).to_pylist() == [preview(v) for v in chosen]


def _message(offset: int, timestamp: int, key: bytes | None, value: bytes, magic: int = 1) -> bytes:
    body = struct.pack(">bb", magic, 0) + (struct.pack(">q", timestamp) if magic else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def _spec(tmp_path: Path, name: str, data: bytes) -> SegmentSpec:
    path = tmp_path / name
    path.write_bytes(data)
    return SegmentSpec(str(path), str(path), None, None, 0, len(data), in_partition=False)


def test_runs_of_plain_messages_are_admitted_message_by_message(tmp_path: Path) -> None:
    """A run of plain messages is walked in C as one entry; its messages' own headers decide: a magic 0
    message (no timestamp) or a magic 1 one with -1 never matches a time window, even `--time-to` alone,
    and only the messages a header admits count as decoded."""
    messages = [
        _message(0, 5, b"a", b"v0", magic=0),
        _message(1, -1, b"b", b"v1"),
        _message(2, 10, b"c", b"v2"),
        _message(3, 20, None, b"v3"),
        _message(4, 30, b"e", b"v4", magic=0),
    ]
    batch = hostile.v2_batch(hostile.v2_record(key=b"k"), 1, base_offset=5, base_timestamp=-3)
    spec = _spec(tmp_path, "00000000000000000000.log", b"".join(messages) + batch + b"".join(messages[:3]))
    for question in (
        make_question(time_to="15"),
        make_question(time_from="-10"),
        make_question(time_from="10"),
        make_question(time_from="-10", time_to="10"),
        make_question(value_contains="v"),
        make_question(producer_id=-1),
    ):
        want = _reference(spec, question)
        assert _columns(spec, question) == want, question
        assert _columns(spec, question, max_rows=2) == want, question


def test_hostile_segments_give_the_references_answer(tmp_path: Path) -> None:
    good = next(iter((FIXTURES / "generated/v2/none-0").glob("*.log"))).read_bytes()
    blobs = [good[: len(good) // 2], good[:100] + b"\xff" * 300, good + b"\x00" * 50, bytes(range(256)) * 8]
    for n, blob in enumerate(blobs):
        spec = _spec(tmp_path, f"{n:020d}.log", blob)
        for question in _questions(spec) + [make_question(keys=("k1",), time_from="0")]:
            assert _columns(spec, question) == _reference(spec, question), (n, question)


def test_value_contains_over_the_data_buffer_is_pythons_in() -> None:
    """`contains` searches the value column's bytes as one buffer: a hit across two values is no hit,
    a null value never holds anything, a slice of a column is searched within its own values."""
    import random

    import pyarrow as pa

    from kafka_tools.pipeline.question_columns import contains

    rng = random.Random(7)
    values = [None, b"", b"ab", b"ba", b"aab", b"b", b"abab", None, b"a", b"bab", b""]
    values += [
        bytes(rng.choice(b"ab") for _ in range(rng.randrange(6))) if rng.random() > 0.1 else None
        for _ in range(300)
    ]
    column = pa.array(values, pa.binary())
    for needle in (b"ab", b"a", b"bb", b"aba", b"", b"abab", b"c"):
        for lo, hi in ((0, len(values)), (3, 9), (5, 200), (len(values) - 1, len(values))):
            got = contains(column.slice(lo, hi - lo), needle).to_pylist()
            assert got == [v is not None and needle in v for v in values[lo:hi]], (needle, lo, hi)


def test_a_limited_answer_is_the_head_of_the_whole_answer(tmp_path: Path) -> None:
    """`--limit N` in one process: the first N matches in (topic, partition, offset, file) order, sorted
    as Arrow before any row is made a dict; nulls (a file given on its own) first, as Spark sorts."""
    from kafka_tools.pipeline import ScanOptions, plan_scan
    from kafka_tools.pipeline.local import answer_in_process

    loose = tmp_path / "loose" / "00000000000000000000.log"  # not in a partition dir: no topic, nulls first
    loose.parent.mkdir()
    loose.write_bytes((FIXTURES / "generated/v1/none-0/00000000000000000000.log").read_bytes())
    plan = plan_scan([FIXTURES / "generated/v2", FIXTURES / "kafka-0.9.0.1/logdir", loose])
    assert any(s.topic is None for s in plan.segments)
    for question in (make_question(key_regex="."), make_question(value_contains="e"), Question(time_from=0)):
        whole = answer_in_process(plan, question, ScanOptions(split_bytes=2048))
        assert len(whole.matches) > 100 and not whole.truncated
        assert whole.matches[0]["topic"] is None
        for limit in (0, 1, 7, 100, len(whole.matches) - 1, len(whole.matches)):
            part = answer_in_process(plan, question, ScanOptions(split_bytes=2048), limit=limit)
            assert part.matches == whole.matches[:limit], (question, limit)
            assert part.truncated == (limit < len(whole.matches))
            assert (part.batches, part.batches_decoded) == (whole.batches, whole.batches_decoded)
