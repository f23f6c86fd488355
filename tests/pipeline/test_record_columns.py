"""The records table built in C (format/csrc/arrow_records.c, pipeline/record_columns.py) is the table the
pure-Python reference builds, row for row, on every fixture and ../shared/realworld segment, whole and
cut into byte ranges; its batches are bounded; every buffer it hands pyarrow is freed once pyarrow lets
go of it; and hostile input gives the reader's error, no row and no crash.

(The same table against `dump-log --json`: tests/pipeline/test_scan_in_process.py, whose in-process
scan writes the records table through this builder.)"""

from __future__ import annotations

import gc
import json
import resource
import struct
import tracemalloc
import zlib
from pathlib import Path

import pyarrow as pa
import pytest

from kafka_tools.format import accel
from kafka_tools.format.record_reader import Record, RecordDecodeError, decode_records_py
from kafka_tools.pipeline import record_columns, tables
from kafka_tools.pipeline.plan import plan_scan
from kafka_tools.pipeline.tasks import range_starts, split_ranges
from tests.independent import FIXTURES, needs_realworld, segment_files
from tests.support import hostile

pytestmark = pytest.mark.skipif(not record_columns.available(), reason="C extension not built")

SCHEMA = tables.arrow_schema(tables.RECORDS)


def _segments() -> list:
    return [spec for f in segment_files() for spec in plan_scan([f]).segments]


SEGMENTS = _segments()


def _table(spec, start=0, end=None, **bounds) -> pa.Table:
    return pa.Table.from_batches(
        list(record_columns.record_batches(spec, start, end, **bounds)), schema=SCHEMA
    )


def _reference(spec, start=0, end=None) -> pa.Table:
    saved = accel.C
    accel.C = None  # every C path off: tasks.record_chunks and pa.array, the reference
    try:
        return _table(spec, start, end)
    finally:
        accel.C = saved


def _name(spec) -> str:
    return spec.file.rpartition("fixtures/")[2] or spec.file


def test_every_fixture_and_realworld_segment_is_there() -> None:
    names = {_name(s) for s in SEGMENTS}
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert any(f"generated/v2/{codec}-0/" in n for n in names), codec
    for magic in ("v0", "v1"):
        for codec in ("none", "gzip", "snappy", "lz4"):
            assert any(f"generated/{magic}/{codec}-0/" in n for n in names), (magic, codec)
    assert any("kafka07" in n for n in names) and any("corrupt" in n for n in names)
    assert sum(_reference(s).num_rows for s in SEGMENTS) > 1000


@pytest.mark.parametrize("spec", SEGMENTS, ids=_name)
def test_records_table_from_c_equals_the_pure_python_table(spec) -> None:
    want = _reference(spec)
    got = _table(spec)
    assert got.schema == SCHEMA
    assert got.to_pylist() == want.to_pylist()
    assert got.equals(want)


@pytest.mark.parametrize("spec", [s for s in SEGMENTS if s.size > 4096 and not s.kafka07], ids=_name)
def test_records_of_byte_ranges_add_up_to_the_whole_segment(spec) -> None:
    ranges = split_ranges(range_starts(spec, 2048))
    assert len(ranges) > 1
    parts = [_table(spec, s, e) for s, e in ranges]
    assert pa.concat_tables(parts).equals(_table(spec))
    for (s, e), part in zip(ranges, parts, strict=True):
        assert part.equals(_reference(spec, s, e))


def test_batches_are_bounded_by_rows_and_bytes() -> None:
    needs_realworld()  # the fixtures alone have no segment the bounds split (their largest: one batch)
    spec = max(SEGMENTS, key=lambda s: _reference(s).num_rows)
    whole = _table(spec)
    by_rows = list(record_columns.record_batches(spec, max_rows=100))
    assert len(by_rows) > 3
    # a batch ends after the entry that reaches the bound: at most one entry's records past it
    biggest_entry = max(pa.compute.value_counts(whole["batch_position"]).field("counts").to_pylist())
    assert all(b.num_rows < 100 + biggest_entry for b in by_rows)
    assert pa.Table.from_batches(by_rows).equals(whole)
    by_bytes = list(record_columns.record_batches(spec, max_bytes=4096))
    assert len(by_bytes) > 3
    assert pa.Table.from_batches(by_bytes).equals(whole)


# ---- the builder itself: the readers' values, their errors, its memory ----------------------------


def _rows(builder) -> list[dict]:
    rows = pa.record_batch(record_columns.Exported(builder.finish("f.log", None, None))).to_pylist()
    assert all((r.pop("file"), r.pop("topic"), r.pop("partition")) == ("f.log", None, None) for r in rows)
    return rows


def _as_rows(records, position: int) -> list[dict]:
    return [
        {
            "batch_position": position,
            "offset": r.offset,
            "timestamp": r.timestamp,
            "key": r.key,
            "value": r.value,
            "headers": [{"key": k, "value": v} for k, v in r.headers],
        }
        for r in records
    ]


SECTION = b"".join(
    hostile.v2_record(offset_delta=i, ts_delta=-i, key=k, value=v, tail=t)
    for i, (k, v, t) in enumerate(
        [
            (b"k", b"v", b"\x02\x02h\x02v"),  # one header
            (None, b"value", b"\x00"),
            # two headers: a UTF-8 key with a null value, a key that is not UTF-8 with an empty value
            (b"key", None, b"\x04" + b"\x04\xc3\xa9\x01" + b"\x04\xff\xfe\x00"),
        ]
    )
)


def test_a_v2_section_gives_the_readers_records_with_headers_and_nulls() -> None:
    args = (SECTION, 3, 100, 1_000, None, 5)
    builder = accel.C.record_columns()
    assert builder.add_v2(*args, 42) == 3
    assert builder.rows == 3
    assert _rows(builder) == _as_rows(decode_records_py(*args), 42)
    assert builder.rows == 0 and _rows(builder) == []


def test_log_append_time_is_every_records_timestamp() -> None:
    args = (SECTION, 3, 100, 1_000, 777, -1)
    builder = accel.C.record_columns()
    builder.add_v2(*args, 0)
    assert [r["timestamp"] for r in _rows(builder)] == [777] * 3


@pytest.mark.parametrize(
    "section,count",
    [
        (SECTION, 4),  # fewer records than the count
        (SECTION, 2),  # stray bytes after the count
        (SECTION[:-3], 3),  # cut inside the last record
        (b"\xff" * 12, 1),  # a varint longer than 10 bytes
        (
            hostile.v2_record(tail=b"\x80\x80\x80\x80\x80\x80\x80\x80\x01"),
            1,
        ),  # a header count past the record
    ],
)
def test_a_bad_section_raises_the_readers_error_and_adds_no_row(section, count) -> None:
    builder = accel.C.record_columns()
    builder.add_records([Record(7, 8, b"k", None, (("h", None),))], 3)
    args = (section, count, 0, 0, None, -1)
    with pytest.raises(RecordDecodeError) as want:
        decode_records_py(*args)
    with pytest.raises(RecordDecodeError) as got:
        builder.add_v2(*args, 9)
    assert (str(got.value), got.value.position) == (str(want.value), want.value.position)
    assert builder.rows == 1
    builder.add_v2(SECTION, 3, 0, 0, None, -1, 10)  # the bitmaps and offsets were rolled back whole
    assert _rows(builder) == _as_rows([Record(7, 8, b"k", None, (("h", None),))], 3) + _as_rows(
        decode_records_py(SECTION, 3, 0, 0, None, -1), 10
    )


@pytest.mark.parametrize("first_null", [0, 5, 7, 8, 13, 16])
def test_nulls_from_any_row_on_and_rolled_back_keep_every_rows_value(first_null: int) -> None:
    """A column's validity bitmap starts at its first null (none is made while every value is there):
    the rows before it read back valid, a refused entry rolls it back whole, and a column with no
    null left after the rollback is exported without one."""

    def record(i: int, null: bool) -> Record:
        value = None if null else b"v%d" % i
        return Record(i, i, None if null and i % 2 else b"k%d" % i, value, (("h", value),))

    builder = accel.C.record_columns()
    want = [record(i, i >= first_null and i % 3 == first_null % 3) for i in range(first_null + 12)]
    builder.add_records(want[:first_null], 1)
    with pytest.raises(TypeError):  # a null, then a record that is refused: the entry adds no row
        builder.add_records([record(first_null, True), (1, 2, "text", None, ())], 2)
    assert builder.rows == first_null
    builder.add_records(want[first_null:], 1)
    assert _rows(builder) == _as_rows(want, 1)
    builder.add_records(want[:first_null], 1)
    with pytest.raises(TypeError):
        builder.add_records([record(first_null, True), (1, 2, "text", None, ())], 2)
    batch = pa.record_batch(record_columns.Exported(builder.finish("f.log", None, None)))
    assert batch.column("value").null_count == 0 and batch.column("value").buffers()[0] is None
    assert [r["value"] for r in batch.to_pylist()] == [r.value for r in want[:first_null]]
    for cut in (first_null, first_null + 1, first_null + 9):  # rows before, at and after the first null
        builder.add_records(want[:cut], 1)
        builder.add_records(want[cut:], 1)
        assert _rows(builder) == _as_rows(want, 1)


def _message(offset: int, key: bytes | None, value: bytes | None) -> bytes:
    """A plain magic 1 message, timestamp 5."""
    body = struct.pack(">bbq", 1, 0, 5)
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    message = struct.pack(">I", zlib.crc32(body)) + body
    return struct.pack(">qi", offset, len(message)) + message


def test_message_sets_plain_and_inner() -> None:
    plain = _message(10, b"a", b"b") + _message(11, None, b"c")
    builder = accel.C.record_columns()
    assert builder.add_messages(plain, 1000, False, 0, None) == 2
    assert builder.add_messages(plain, 2000, True, 90, 123) == 2
    rows = _rows(builder)
    second = len(_message(10, b"a", b"b"))
    assert [(r["batch_position"], r["offset"], r["timestamp"], r["key"], r["value"]) for r in rows] == [
        (1000, 10, 5, b"a", b"b"),
        (1000 + second, 11, 5, None, b"c"),
        (2000, 100, 123, b"a", b"b"),
        (2000, 101, 123, None, b"c"),
    ]
    assert all(r["headers"] == [] for r in rows)
    with pytest.raises(RecordDecodeError):
        builder.add_messages(plain + b"\x00" * 20, 0, False, 0, None)
    with pytest.raises(RecordDecodeError):
        builder.add_messages(plain, 0, True, 2**63 - 11, None)  # an offset moved past int64
    assert builder.rows == 0


def test_records_not_tuples_are_refused() -> None:
    builder = accel.C.record_columns()
    for bad in ([(1, 2, "text", None, ())], [(1, 2, None, None, [])], [("x", 2, None, None, ())], [3]):
        with pytest.raises((TypeError, OverflowError)):
            builder.add_records(bad, 0)
    assert builder.rows == 0


def test_every_exported_buffer_is_freed_when_pyarrow_lets_go() -> None:
    alive = accel.C.arrow_blocks_alive
    gc.collect()
    before = alive()
    builder = accel.C.record_columns()
    builder.add_v2(SECTION, 3, 0, 0, None, -1, 0)
    batch = pa.record_batch(record_columns.Exported(builder.finish("f.log", "topic", 3)))
    assert batch.schema == SCHEMA
    assert (
        batch.column("topic").to_pylist() == ["topic"] * 3
        and batch.column("partition").to_pylist() == [3] * 3
    )
    keys = batch.column("key")  # a column outlives its batch
    del batch
    assert alive() > before
    assert keys.to_pylist() == [b"k", None, b"key"]
    del keys
    gc.collect()
    assert alive() == before
    capsules = builder.finish("f.log", None, None)  # never imported: the capsules' destructors free them
    assert alive() == before + 2
    del capsules
    assert alive() == before


def _segment_of(tmp_path: Path, data: bytes):
    from kafka_tools.pipeline.tasks import SegmentSpec

    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    return SegmentSpec(str(path), str(path), None, None, 0, len(data), in_partition=False)


def test_many_batches_leave_no_memory_behind(tmp_path: Path) -> None:
    batches = [hostile.v2_batch(SECTION, 3, base_offset=3 * i) for i in range(300)]
    spec = _segment_of(tmp_path, b"".join(batches))
    assert len(list(record_columns.record_batches(spec, max_rows=16))) == 50  # 6 entries a batch
    alive = accel.C.arrow_blocks_alive
    gc.collect()
    before = alive()

    def run() -> int:
        return sum(b.num_rows for b in record_columns.record_batches(spec, max_rows=16))

    for _ in range(10):
        run()
    gc.collect()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        rows = sum(run() for _ in range(100))
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert rows == 100 * 900
    assert grown < 64 * 1024, grown  # Python objects: none kept a call
    assert alive() == before  # C buffers (malloc, not traced): every block released
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 32 * 1024  # KiB


def test_batches_built_in_recycled_buffers_keep_their_rows_while_others_are_built(tmp_path: Path) -> None:
    """The buffers of a batch pyarrow let go of are used again for the next batches (no page fault a
    new page, no copy a growth): a batch still held keeps its rows whatever is built after it, and
    every batch, held or dropped, has the reference's rows."""
    batches = []
    for b in range(40):  # 100 records a batch, values of 150-900 bytes: 64 KiB buffers and more
        section = b"".join(
            hostile.v2_record(
                offset_delta=i,
                key=None if i % 7 == 0 else b"k%d" % (100 * b + i),
                value=bytes([b + i & 0xFF]) * (150 + (37 * (b + i)) % 750),
                tail=b"\x02\x02h\x02v" if i % 3 else b"\x00",
            )
            for i in range(100)
        )
        batches.append(hostile.v2_batch(section, 100, base_offset=100 * b, last_offset_delta=99))
    spec = _segment_of(tmp_path, b"".join(batches))
    want = _reference(spec)
    assert want.num_rows == 4_000
    held = []
    for k, batch in enumerate(record_columns.record_batches(spec, max_rows=500)):
        if k % 2:
            held.append((k, batch))  # held while the next ones are built
        else:
            assert batch.equals(want.slice(500 * k, batch.num_rows).to_batches()[0])
            del batch  # let go of: its buffers are used again
    assert [k for k, _ in held] == [1, 3, 5, 7]
    for k, batch in held:
        assert batch.equals(want.slice(500 * k, batch.num_rows).to_batches()[0])
    for _ in range(3):  # again and again from the recycled buffers, the same table
        assert _table(spec, max_rows=700).equals(want)


def test_error_paths_leave_no_memory_behind() -> None:
    builder = accel.C.record_columns()
    bad = (SECTION[:-3], 3, 0, 0, None, -1, 0)
    for _ in range(200):
        try:
            builder.add_v2(*bad)
        except RecordDecodeError:
            pass
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(3000):
            try:
                builder.add_v2(*bad)
            except RecordDecodeError:
                pass
            try:
                builder.add_records([(1, 2, "x", None, ())], 0)
            except TypeError:
                pass
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - start < 4096
    finally:
        tracemalloc.stop()
    assert builder.rows == 0


def test_hostile_segments_give_the_reference_rows(tmp_path: Path) -> None:
    from kafka_tools.pipeline.tasks import SegmentSpec

    good = (FIXTURES / "generated/v2/none-0").glob("*.log")
    data = next(iter(good)).read_bytes()
    for n, blob in enumerate(
        [data[: len(data) // 2], data[:100] + b"\xff" * 300, data + b"\x00" * 50, bytes(range(256)) * 8]
    ):
        path = tmp_path / f"{n:020d}.log"
        path.write_bytes(blob)
        spec = SegmentSpec(str(path), str(path), None, None, n, len(blob), in_partition=False)
        assert _table(spec).equals(_reference(spec))


@pytest.mark.parametrize("spec", SEGMENTS, ids=_name)
def test_batches_rows_counted_in_c_equal_the_decoded_rows(spec) -> None:
    """The `batches` table's record count and smallest timestamp, read by the C reader without a Record
    each (tasks._v2_stats), are those of the decoded records; a batch that cannot be decoded keeps
    the decoder's own error text."""
    from kafka_tools.pipeline.tasks import batch_chunks

    got = [c for c in batch_chunks(spec)]
    saved = accel.C
    accel.C = accel.without("record_stats")
    try:
        want = [c for c in batch_chunks(spec)]
    finally:
        accel.C = saved
    assert got == want


def test_a_tasks_part_file_appears_whole_and_a_rerun_replaces_it(tmp_path: Path) -> None:
    """A Spark task writes its part of the records table under a temporary name and renames it when
    complete (job.LocalFiles, its main stage): a task run twice leaves one part, never a half-written one."""
    import pyarrow.parquet as pq

    from kafka_tools.pipeline.arrow_files import TableFile

    spec = next(s for s in SEGMENTS if "generated/v2/none-0/" in s.file)
    table_dir = tmp_path / "records"
    table_dir.mkdir()  # as the driver makes it before the tasks run
    for attempt in range(2):
        part = TableFile(str(tmp_path), "records", "parquet", part=7)
        for batch in record_columns.record_batches(spec):
            part.add(batch)
        assert [p.name for p in table_dir.iterdir() if not p.name.endswith(".tmp")] == (
            ["part-00007.snappy.parquet"] if attempt else []
        )
        written = part.close()
    assert sorted(p.name for p in table_dir.iterdir()) == ["part-00007.snappy.parquet"]  # no _SUCCESS yet
    assert written.rows == _table(spec).num_rows
    assert pq.read_table(table_dir).equals(_table(spec))


def test_a_task_part_never_makes_the_staging_directory_again(tmp_path):
    """The driver makes OUT/records before the tasks run; a task that outlives an abandoned scan (its
    master lost, the staging directory removed) gets one clear error and leaves nothing behind."""
    from kafka_tools.errors import InputError
    from kafka_tools.pipeline.arrow_files import TableFile

    gone = tmp_path / "_ktool-staging-gone"
    with pytest.raises(InputError, match="cannot write the records table to .*staging directory is gone"):
        TableFile(str(gone), "records", "parquet", part=3)
    assert list(tmp_path.iterdir()) == []


def test_a_table_written_on_a_writer_thread_is_the_same_file_and_its_errors_come_back(tmp_path: Path) -> None:
    """`TableFile(background=True)` (the in-process scan's records table, encoded while the next batch
    is decoded) writes the table the plain writer writes, row groups included; a batch the writer
    refuses fails the next `add` or `close`, not silently on its thread."""
    import pyarrow.parquet as pq

    from kafka_tools.pipeline.arrow_files import TableFile

    spec = next(s for s in SEGMENTS if "generated/v2/none-0/" in s.file)
    files = {}
    for background in (False, True):
        out = tmp_path / str(background)
        table = TableFile(str(out), "records", "parquet", background=background)
        for batch in record_columns.record_batches(spec, max_rows=7):
            table.add(batch)
        assert table.close().rows == _table(spec).num_rows
        files[background] = pq.ParquetFile(out / "records" / "part-00000.snappy.parquet")
    assert files[True].metadata.num_row_groups == files[False].metadata.num_row_groups > 1
    assert files[True].read().equals(files[False].read())
    assert files[True].read().equals(_table(spec))

    table = TableFile(str(tmp_path / "bad"), "records", "parquet", background=True)
    wrong = pa.record_batch({"x": [1]})  # not the table's schema: the writer raises on its thread
    table.add(wrong)
    with pytest.raises(ValueError, match="schema"):
        table.close()


def test_a_per_range_table_reads_back_with_its_own_types_and_rows(tmp_path: Path) -> None:
    """A table whose batches each come from one segment (`per_range=True`: file and topic handed to
    the writer as one-value dictionaries, the batches' own left empty: `record_batches(where=False)`)
    reads back as the plain writer's file: the same rows and the table's own types (strings, not
    dictionaries), a segment outside a partition directory (no topic: nulls) included; as JSON lines
    too; a batch without its file and topic is refused, not written wrong."""
    import shutil

    import pyarrow.parquet as pq

    from kafka_tools.pipeline.arrow_files import TableFile

    spec = next(s for s in SEGMENTS if "generated/v2/none-0/" in s.file)
    loose = tmp_path / "00000000000000000000.log"  # no partition directory: topic and partition null
    shutil.copyfile(spec.path, loose)
    specs = [spec, plan_scan([loose]).segments[0]]
    assert specs[1].topic is None and specs[0].topic is not None
    read = {}
    for per_range in (False, True):
        out = tmp_path / str(per_range)
        table = TableFile(str(out), "records", "parquet", per_range=per_range)
        for s in specs:
            for batch in record_columns.record_batches(s, max_rows=5, where=not per_range):
                table.add(batch, s.where)
        table.close()
        read[per_range] = pq.read_table(out / "records" / "part-00000.snappy.parquet")
    want = pa.concat_tables([_table(s) for s in specs])
    assert next(record_columns.record_batches(spec, where=False)).column("file")[0].as_py() == ""
    table = TableFile(str(tmp_path / "json"), "records", "json", per_range=True)
    for s in specs:
        for batch in record_columns.record_batches(s, max_rows=5, where=False):
            table.add(batch, s.where)
    table.close()
    lines = (tmp_path / "json" / "records" / "part-00000.json").read_text().splitlines()
    assert [json.loads(line)["file"] for line in lines] == want.column("file").to_pylist()
    assert [json.loads(line)["topic"] for line in lines] == want.column("topic").to_pylist()
    assert read[True].schema == SCHEMA
    assert read[True].equals(want) and read[False].equals(want)
    assert set(read[True].column("topic").to_pylist()) == {specs[0].topic, None}

    table = TableFile(str(tmp_path / "refused"), "records", "parquet", per_range=True)
    with pytest.raises(ValueError, match="file and topic"):
        table.add(next(record_columns.record_batches(spec)))
