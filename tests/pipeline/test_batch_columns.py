"""The `batches` table built in C (pipeline/batch_columns.py, format/csrc/batch_columns.c) against the
Python rows it replaces (`tasks.batch_chunks` with every C path off, the reference): row for row on
every fixture and real-world segment, on hand-made segments mixing what C takes with what it hands to
the Python walk (compressed, damaged, legacy, unreadable records, a torn tail), in byte ranges, and
the segment totals folded from it."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import pyarrow as pa
import pytest

from kafka_tools.format import accel
from kafka_tools.pipeline import batch_columns, tables
from kafka_tools.pipeline.plan import plan_scan
from kafka_tools.pipeline.tasks import SegmentTotals, batch_chunks, range_starts, split_ranges
from tests.independent import segment_files
from tests.support import hostile

pytestmark = pytest.mark.skipif(not batch_columns.available(), reason="C extension not built")

SCHEMA = tables.arrow_schema(tables.BATCHES)


def _segments() -> list:
    return [spec for f in segment_files() for spec in plan_scan([f]).segments]


SEGMENTS = _segments()


def _table(spec, start=0, end=None, max_rows=65536) -> pa.Table:
    return pa.Table.from_batches(list(batch_columns.batch_batches(spec, start, end, max_rows)), schema=SCHEMA)


def _reference(spec, start=0, end=None) -> pa.Table:
    saved = accel.C
    accel.C = None  # every C path off: the Python rows
    try:
        cols = list(batch_chunks(spec, start, end))
    finally:
        accel.C = saved
    return pa.Table.from_batches(
        [tables.arrow_batch(tables.BATCHES, c, constants=spec.where) for c in cols], schema=SCHEMA
    )


@pytest.mark.parametrize("spec", SEGMENTS, ids=lambda s: s.file)
def test_every_segment_gives_the_python_rows(spec) -> None:
    want = _reference(spec)
    assert _table(spec).equals(want)
    assert _table(spec, max_rows=2).equals(want)  # batches of at most 2 rows add up to the same


def _damaged_copies(good: bytes, tmp_path: Path, seed: int, copies: int = 100):
    """(case, path) for `copies` seeded copies of `good` with 1-4 bytes changed (every fifth cut
    short), each written in turn to one segment file of a partition `damaged-0`: a failure replays."""
    import random

    part = tmp_path / "damaged-0"
    part.mkdir()
    path = part / "00000000000000000000.log"
    rng = random.Random(seed)
    for case in range(copies):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if case % 5 == 0:
            data = data[: rng.randrange(len(data))]
        path.write_bytes(bytes(data))
        yield case, path


def _mixed(tmp_path: Path) -> Path:
    """A segment C walks in pieces: plain batches (one with LogAppendTime, one transactional control
    batch, one empty), then a gzip batch, a batch whose CRC does not match, plain again, a batch whose
    records cannot be read, plain again, and a torn tail."""
    section = b"".join(hostile.v2_record(offset_delta=i, ts_delta=5 - i, key=b"k%d" % i) for i in range(3))
    c = hostile.v2_batch
    gz = c(gzip.compress(section), 3, base_offset=12, attributes=1)
    bad_crc = bytearray(c(section, 3, base_offset=15))
    bad_crc[34] ^= 0xFF  # the base timestamp's last byte: the records still read
    parts = [
        c(section, 3, base_offset=0),
        c(section, 3, base_offset=3, attributes=0x08),  # LogAppendTime
        c(section, 3, base_offset=6, attributes=0x30),  # transactional, control
        c(b"", 0, base_offset=9),  # no records: min_timestamp null
        gz,
        bytes(bad_crc),
        c(section, 3, base_offset=18),
        c(section, 4, base_offset=21),  # fewer records than the count: a decode error
        c(section, 3, base_offset=25),
        c(section, 3, base_offset=28)[:40],  # torn
    ]
    part = tmp_path / "mixed-0"
    part.mkdir()
    path = part / "00000000000000000000.log"
    path.write_bytes(b"".join(parts))
    return path


def test_a_segment_mixing_what_c_takes_and_what_it_hands_back_gives_the_python_rows(tmp_path: Path) -> None:
    spec = plan_scan([_mixed(tmp_path)]).segments[0]
    want = _reference(spec)
    got = _table(spec)
    assert got.equals(want)
    assert want.num_rows == 9  # every entry but the torn one
    assert set(want.column("codec").to_pylist()) == {"none", "gzip"}
    assert want.column("is_valid").to_pylist().count(False) == 1
    assert want.column("decode_error").null_count == 8
    assert want.column("timestamp_type").to_pylist()[1] == "LogAppendTime"
    assert want.column("is_control").to_pylist()[2] is True
    assert want.column("min_timestamp").to_pylist()[3] is None
    for rows in (1, 2, 3):
        assert _table(spec, max_rows=rows).equals(want)


def test_legacy_and_hostile_segments_give_the_python_rows(tmp_path: Path) -> None:
    legacy = tmp_path / "legacy-0"
    legacy.mkdir()
    plain = hostile.v1_message(0, b"a") + hostile.v1_message(1, b"b")
    (legacy / "00000000000000000000.log").write_bytes(plain + hostile.v1_gzip_wrapper(3, plain) + plain)
    paths = [legacy / "00000000000000000000.log"]
    paths += [hostile.write(tmp_path, name) for name in hostile.CASES]
    for path in paths:
        spec = plan_scan([path]).segments[0]
        assert _table(spec).equals(_reference(spec)), path


def test_byte_ranges_add_up_to_the_whole_and_each_is_the_python_rows() -> None:
    spec = max((s for s in SEGMENTS if not s.kafka07), key=lambda s: s.size)
    starts = range_starts(spec, max(spec.size // 5, 1))
    assert len(starts) > 2
    parts = [_table(spec, start, end) for start, end in split_ranges(starts)]
    for (start, end), part in zip(split_ranges(starts), parts, strict=True):
        assert part.equals(_reference(spec, start, end))
    assert pa.concat_tables(parts).equals(_reference(spec))


def test_totals_from_arrow_are_the_totals_from_lists(tmp_path: Path) -> None:
    for spec in [plan_scan([_mixed(tmp_path)]).segments[0], *SEGMENTS[:20]]:
        got, want = SegmentTotals(), SegmentTotals()
        for batch in batch_columns.batch_batches(spec, max_rows=3):
            got.add_arrow(batch)
        for cols in batch_chunks(spec):
            want.add_columns(cols)
        assert got == want, spec.file


def test_a_segment_past_its_header_is_not_read_past_the_file(tmp_path: Path) -> None:
    """A batch whose length points past the end of the file: C stops before it, the Python walk reports
    a frame fault (no row), nothing read out of bounds."""
    part = tmp_path / "long-0"
    part.mkdir()
    batch = bytearray(hostile.v2_batch(hostile.v2_record(), 1))
    good = bytes(batch)
    struct.pack_into(">i", batch, 8, 1 << 30)
    (part / "00000000000000000000.log").write_bytes(good + bytes(batch))
    spec = plan_scan([part / "00000000000000000000.log"]).segments[0]
    assert _table(spec).equals(_reference(spec))
    assert _table(spec).num_rows == 1


@pytest.mark.slow  # 150 damaged copies, each walked by C and by both Python references
def test_damaged_copies_of_a_mixed_segment_give_the_python_rows(tmp_path: Path) -> None:
    """Bytes flipped, the file cut anywhere, a damaged records section under a matching CRC: whatever
    C takes or hands back, the rows are the Python walk's (seeded, so a failure replays)."""
    import random

    good = _mixed(tmp_path).read_bytes()
    part = tmp_path / "damaged-0"
    part.mkdir()
    path = part / "00000000000000000000.log"
    rng = random.Random(26)
    for case in range(150):
        data = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            at = rng.randrange(len(data))
            data[at] = rng.randrange(256) if rng.random() < 0.7 else data[at] ^ 0x80
        if case % 5 == 0:
            data = data[: rng.randrange(len(data))]
        if case % 2:  # records C reads: a damaged section in a batch whose CRC matches
            section = bytearray(b"".join(hostile.v2_record(offset_delta=i, key=b"k") for i in range(3)))
            section[rng.randrange(len(section))] = rng.randrange(256)
            data = hostile.v2_batch(bytes(section), rng.randint(0, 4)) + bytes(data)
        path.write_bytes(bytes(data))
        spec = plan_scan([path]).segments[0]
        assert _table(spec, max_rows=2).equals(_reference(spec)), f"case {case}"


def test_the_records_of_mixed_and_damaged_segments_are_the_python_records(tmp_path: Path) -> None:
    """The records table's C walk over runs of uncompressed v2 batches (RecordColumns.add_v2_run),
    handing the other entries to the Python walk and back: the reference's records, batch limits
    of 1-3 rows included, on the mixed segment and damaged copies of it."""

    from kafka_tools.pipeline import record_columns

    schema = tables.arrow_schema(tables.RECORDS)

    def records(spec, **bounds):
        return pa.Table.from_batches(list(record_columns.record_batches(spec, **bounds)), schema=schema)

    def reference(spec):
        saved = accel.C
        accel.C = None
        try:
            return records(spec)
        finally:
            accel.C = saved

    good = _mixed(tmp_path).read_bytes()
    spec = plan_scan([tmp_path / "mixed-0" / "00000000000000000000.log"]).segments[0]
    want = reference(spec)
    assert want.num_rows == 3 * 6 + 3  # the plain batches, the gzip one, the one with a bad CRC
    for rows in (1, 2, 3, 65536):
        assert records(spec, max_rows=rows).equals(want)
    assert records(spec, max_bytes=5).equals(want)
    for case, path in _damaged_copies(good, tmp_path, seed=27):
        spec = plan_scan([path]).segments[0]
        assert records(spec, max_rows=2).equals(reference(spec)), f"case {case}"


# -- both tables in one walk (batch_columns.range_batches: what the in-process scan runs) ---------------

RECORDS_SCHEMA = tables.arrow_schema(tables.RECORDS)


def _both(spec, start=0, end=None, **bounds) -> tuple[pa.Table, pa.Table]:
    got: dict[str, list] = {"batches": [], "records": []}
    for name, batch in batch_columns.range_batches(spec, start, end, **bounds):
        got[name].append(batch)
    records = pa.Table.from_batches(got["records"], schema=RECORDS_SCHEMA)
    return pa.Table.from_batches(got["batches"], schema=SCHEMA), records


def _records_reference(spec, start=0, end=None) -> pa.Table:
    from kafka_tools.pipeline import record_columns

    saved = accel.C
    accel.C = None  # every C path off: the Python records
    try:
        batches = list(record_columns.record_batches(spec, start, end))
    finally:
        accel.C = saved
    table = pa.Table.from_batches(batches, schema=RECORDS_SCHEMA)
    empty = pa.array([""] * table.num_rows, pa.string())  # the one walk leaves file and topic to the writer
    return table.set_column(0, "file", empty).set_column(1, "topic", empty)


@pytest.mark.parametrize("spec", SEGMENTS, ids=lambda s: s.file)
def test_one_walk_gives_both_tables_python_rows_on_every_segment(spec) -> None:
    batches, records = _both(spec)
    assert batches.equals(_reference(spec))
    assert records.equals(_records_reference(spec))


@pytest.mark.slow  # every bound, byte range and damaged copy walked against both references
def test_one_walk_over_mixed_damaged_and_legacy_segments_gives_both_tables_python_rows(
    tmp_path: Path,
) -> None:
    """C reads a plain batch's records once for both tables and hands any other entry to both Python
    walks: the references' rows whatever the limits (1-3 rows, a few bytes), on the mixed segment,
    legacy and hostile ones, byte ranges, and damaged copies of the mixed one."""

    mixed_path = _mixed(tmp_path)
    mixed = plan_scan([mixed_path]).segments[0]
    want = (_reference(mixed), _records_reference(mixed))
    assert want[0].num_rows == 9 and want[1].num_rows == 21
    for bounds in ({}, {"max_rows": 1}, {"max_rows": 2, "max_record_rows": 2}, {"max_record_rows": 3}):
        got = _both(mixed, **bounds)
        assert got[0].equals(want[0]) and got[1].equals(want[1]), bounds
    got = _both(mixed, max_record_bytes=5)
    assert got[1].equals(want[1])
    legacy = tmp_path / "legacy-0"
    legacy.mkdir()
    plain = hostile.v1_message(0, b"a") + hostile.v1_message(1, b"b")
    (legacy / "00000000000000000000.log").write_bytes(plain + hostile.v1_gzip_wrapper(3, plain) + plain)
    paths = [legacy / "00000000000000000000.log"] + [hostile.write(tmp_path, name) for name in hostile.CASES]
    for path in paths:
        spec = plan_scan([path]).segments[0]
        got = _both(spec, max_rows=2, max_record_rows=2)
        assert got[0].equals(_reference(spec)) and got[1].equals(_records_reference(spec)), path
    spec = max((s for s in SEGMENTS if not s.kafka07), key=lambda s: s.size)
    for start, end in split_ranges(range_starts(spec, max(spec.size // 5, 1))):
        got = _both(spec, start, end)
        assert got[0].equals(_reference(spec, start, end))
        assert got[1].equals(_records_reference(spec, start, end))
    good = mixed_path.read_bytes()
    for case, path in _damaged_copies(good, tmp_path, seed=28):
        spec = plan_scan([path]).segments[0]
        got = _both(spec, max_rows=2, max_record_rows=2)
        assert got[0].equals(_reference(spec)), f"case {case}"
        assert got[1].equals(_records_reference(spec)), f"case {case}"
