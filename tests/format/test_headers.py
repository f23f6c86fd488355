"""`iter_headers`: the one header walk (locate, scan's range splitting and time questions use it) meets
the entries the full walk decodes, with the same fields, and stops where the full walk's framing stops."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kafka_tools.format.entry_headers import EntryHeader, FrameFault, iter_headers
from kafka_tools.format.kafka07 import iter_kafka07_entries
from kafka_tools.format.problems import FATAL_KINDS, Problem, ProblemKind
from kafka_tools.format.record_batch import RecordBatch
from kafka_tools.format.segment import iter_log_entries

ROOT = Path(__file__).resolve().parents[2]
SEGMENTS = sorted(
    p
    for where in (ROOT / "fixtures", ROOT.parent.parent / "shared" / "realworld")
    if where.exists()
    for p in where.rglob("*.log")
    if p.stat().st_size < 64 << 20
)
KAFKA07 = sorted((ROOT / "fixtures").rglob("*.kafka"))


def _headers(path: Path, **kw) -> list[EntryHeader | FrameFault]:
    with open(path, "rb") as f:
        return list(iter_headers(f.fileno(), **kw))


def _expected(path: Path) -> tuple[list[tuple], Problem | None]:
    """What the full walk says, up to the first problem the header walk also stops at."""
    rows = []
    for item in iter_log_entries(path):
        if isinstance(item, Problem):
            if item.kind in FATAL_KINDS or item.kind is ProblemKind.UNKNOWN_MAGIC:
                return rows, item
            if item.kind is ProblemKind.MALFORMED_ENTRY:
                return rows, item
            continue
        if isinstance(item, RecordBatch):
            rows.append(
                (item.position, item.entry_size, 2, item.base_offset, item.last_offset, item.max_timestamp)
                + (item.records_count, item.crc)
            )
        else:
            rows.append(
                (
                    item.position,
                    item.entry_size,
                    item.magic,
                    None,
                    item.offset,
                    item.timestamp,
                    None,
                    item.crc,
                )
            )
    return rows, None


@pytest.mark.parametrize("path", SEGMENTS, ids=[str(p.relative_to(p.parents[2])) for p in SEGMENTS])
def test_headers_match_the_decoded_entries(path: Path) -> None:
    expected, stop = _expected(path)
    got = _headers(path)
    fault = got.pop() if got and type(got[-1]) is FrameFault else None
    rows = [
        (
            h.position,
            h.entry_size,
            h.magic,
            h.first_offset,
            h.last_offset,
            h.max_timestamp,
            h.records_count,
            h.crc,
        )
        for h in got
    ]
    if stop is not None and stop.kind is ProblemKind.MALFORMED_ENTRY:
        # The frame is fine, a field inside is not: the header walk steps on, the decoder stops.
        assert rows[: len(expected)] == expected
        return
    assert rows == expected
    if stop is None:
        assert fault is None or fault.kind is ProblemKind.ZERO_TAIL
    elif stop.kind is ProblemKind.ZERO_TAIL:
        assert fault is not None and fault.kind is ProblemKind.ZERO_TAIL
    else:
        assert fault is not None and (fault.position, fault.kind) == (stop.position, stop.kind)
        if fault.kind is not ProblemKind.UNKNOWN_MAGIC:
            assert fault.problem().message == stop.message


@pytest.mark.parametrize("path", KAFKA07, ids=[str(p.relative_to(p.parents[2])) for p in KAFKA07])
def test_kafka07_headers_match_the_decoded_messages(path: Path) -> None:
    expected = []
    for item in iter_kafka07_entries(path, 0):
        if isinstance(item, Problem):
            break
        expected.append((item.position, item.entry_size, item.magic))
    got = [h for h in _headers(path, kafka07=True) if type(h) is EntryHeader]
    assert [(h.position, h.entry_size, h.magic) for h in got] == expected


def test_a_range_walk_meets_the_entries_a_whole_walk_meets_there() -> None:
    path = next(p for p in SEGMENTS if "v2" in p.parts and p.stat().st_size > 4096)
    whole = [h for h in _headers(path) if type(h) is EntryHeader]
    cut = whole[len(whole) // 2].position
    end = whole[-2].position
    part = [h for h in _headers(path, start=cut, end=end) if type(h) is EntryHeader]
    assert part == [h for h in whole if cut <= h.position < end]


def test_whole_entries_come_with_their_bytes_and_large_ones_without(tmp_path: Path) -> None:
    path = next(p for p in SEGMENTS if "v2" in p.parts and p.stat().st_size > 4096)
    data = path.read_bytes()
    for h in _headers(path, whole=True, chunk=64, limit=1 << 20):
        assert type(h) is EntryHeader
        assert h.buf[h.at : h.at + h.entry_size] == data[h.position : h.position + h.entry_size]
    largest = max(h.entry_size for h in _headers(path))
    over = [h for h in _headers(path, whole=True, chunk=64, limit=64) if type(h) is EntryHeader]
    assert any(h.buf is None for h in over) and all(h.buf is None for h in over if h.entry_size > 64), largest


@pytest.mark.parametrize(
    "tail, kind",
    [
        (bytes(40), ProblemKind.ZERO_TAIL),
        (b"\x01" * 5, ProblemKind.TRUNCATED_HEADER),
        (
            (7).to_bytes(8, "big") + (10).to_bytes(4, "big") + bytes(4) + b"\x02",
            ProblemKind.SIZE_BELOW_MINIMUM,
        ),
        (
            (7).to_bytes(8, "big") + (900).to_bytes(4, "big") + bytes(4) + b"\x02" + bytes(60),
            ProblemKind.TRUNCATED_ENTRY,
        ),
        (
            (7).to_bytes(8, "big") + (20).to_bytes(4, "big") + bytes(4) + b"\x09" + bytes(19),
            ProblemKind.UNKNOWN_MAGIC,
        ),
    ],
)
def test_a_header_walk_stops_where_the_framing_is_lost(
    tmp_path: Path, tail: bytes, kind: ProblemKind
) -> None:
    """Damage after valid entries: every entry before it, then one FrameFault at its position, the same
    the full walk reports (with the same text)."""
    source = next(p for p in SEGMENTS if "v2" in p.parts and "corrupt" not in p.parts)
    good = source.read_bytes()
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(good + tail)
    got = _headers(path)
    fault = got[-1]
    assert type(fault) is FrameFault and (fault.kind, fault.position) == (kind, len(good))
    assert sum(h.entry_size for h in got[:-1]) == len(good)
    problem = next(p for p in iter_log_entries(path) if isinstance(p, Problem))
    assert (problem.kind, problem.position) == (kind, len(good))
    if kind is not ProblemKind.UNKNOWN_MAGIC:
        assert fault.problem().message == problem.message
    assert os.path.getsize(path) == len(good) + len(tail)
