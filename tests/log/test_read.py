"""`ktool read`: records from an offset or a time, located by segment name, `.index` and a forward scan.

Partitions are written with kafka-python's builders (v0, v1, v2; every codec; offsets inside compressed
wrappers and batches) with indexes built as the broker builds them; what `read` prints is checked
against what was written, for every offset, and against the bundled 0.9.0.1 broker's files."""

from __future__ import annotations

import json
import os
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.independent import FIXTURES, REALWORLD, needs_realworld, read_with_kafka_python
from tests.support.cli import run_ktool

sys.path.insert(0, str(FIXTURES))
from make_fixtures import legacy_plain, legacy_wrapper, v2_batch  # noqa: E402

T0 = 1_700_000_000_000
CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


@dataclass(frozen=True)
class Written:
    offset: int
    timestamp: int
    key: bytes
    value: bytes


def build_partition(
    root: Path,
    magic: int,
    codec: str,
    segments: int = 3,
    batches: int = 6,
    per_batch: int = 4,
    first_offset: int = 0,
    topic: str = "t",
) -> tuple[Path, list[Written]]:
    """A partition dir of `segments` segments of `batches` batches (or wrappers; plain v0/v1: runs of
    messages), each with an `.index` entry per batch (the batch's last offset, its position) and a
    `.timeindex` (v1, v2), as the broker writes them with a small index.interval.bytes."""
    part = root / f"{topic}-0"
    part.mkdir(parents=True)
    written: list[Written] = []
    offset = first_offset
    for _ in range(segments):
        base = offset
        log, index, timeindex = bytearray(), bytearray(), bytearray()
        max_ts = -1
        for _ in range(batches):
            items = []
            for _ in range(per_batch):
                ts = T0 + offset * 10
                key, value = b"k%d" % offset, (b"value %d " % offset) * 6
                items.append((offset, ts, key, value))
                written.append(Written(offset, ts if magic else -1, key, value))
                offset += 1
            if magic == 2:
                data = v2_batch(items[0][0], [(ts, k, v, []) for _, ts, k, v in items], codec=CODECS[codec])
            elif codec == "none":
                data = legacy_plain(magic, [(o, ts if magic else None, k, v) for o, ts, k, v in items])
            else:
                data = legacy_wrapper(
                    magic, CODECS[codec], [(o, ts if magic else None, k, v) for o, ts, k, v in items]
                )
            # plain messages: the entry names the first message at the position, else the batch's last offset
            entry_offset = items[0][0] if magic < 2 and codec == "none" else items[-1][0]
            index += struct.pack(">ii", entry_offset - base, len(log))
            max_ts = max(max_ts, items[-1][1])
            timeindex += struct.pack(">qi", max_ts, items[-1][0] - base)
            log += data
        (part / f"{base:020d}.log").write_bytes(log)
        (part / f"{base:020d}.index").write_bytes(index)
        if magic:
            (part / f"{base:020d}.timeindex").write_bytes(timeindex)
    return part, written


def read_json(*args: str) -> tuple[int, list[dict], str]:
    result = run_ktool("read", "--json", *args)
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    if objs:  # the summary ends the stream; the records are what the tests compare
        assert objs[-1]["type"] == "summary" and sum(o["type"] == "summary" for o in objs) == 1
        objs = objs[:-1]
    return result.exit_code, objs, result.stderr


def shown(objs: list[dict]) -> list[tuple[int, str, str]]:
    """(offset, key, value) of every record or message a consumer would get (not wrappers)."""
    out = []
    for o in objs:
        if o["type"] == "record" or (o["type"] == "message" and (o["inner"] or o["compressCodec"] == "none")):
            out.append((o["offset"], o.get("key"), o.get("value")))
    return out


def expected(written: list[Written], start: int, count: int | None = None) -> list[tuple[int, str, str]]:
    rows = [(w.offset, w.key.decode(), w.value.decode()) for w in written if w.offset >= start]
    return rows[:count] if count is not None else rows


GENERATIONS = [(2, c) for c in CODECS] + [(m, c) for m in (0, 1) for c in ("none", "gzip", "snappy", "lz4")]


@pytest.mark.parametrize(("magic", "codec"), GENERATIONS)
def test_read_prints_from_the_offset_exactly_in_every_generation_and_codec(tmp_path, magic, codec) -> None:
    part, written = build_partition(tmp_path, magic, codec)
    for w in written:
        code, objs, err = read_json(str(part), "--offset", str(w.offset), "--count", "3")
        assert code == 0, err
        assert err == ""
        assert shown(objs) == expected(written, w.offset, 3)
    code, objs, _ = read_json(str(part), "--offset", "9")
    assert code == 0
    assert shown(objs) == expected(written, 9)  # to the log end, across segments


@pytest.mark.parametrize(("magic", "codec"), [(2, "zstd"), (1, "gzip"), (0, "snappy"), (0, "none")])
def test_offsets_past_the_log_end_or_below_its_start_exit_1_with_the_valid_range(
    tmp_path, magic, codec
) -> None:
    part, written = build_partition(tmp_path, magic, codec, first_offset=100)
    end = written[-1].offset + 1
    for offset in (end, end + 1000, 0, 99):
        result = run_ktool("read", str(part), "--offset", str(offset))
        assert result.exit_code == 1
        assert result.stdout == ""
        assert result.stderr.strip() == (
            f"ktool: {part}: offset {offset} is out of range: valid offsets are 100 to {end - 1} "
            f"(log start offset 100, log end offset {end})"
        )


def test_log_start_offset_comes_from_the_checkpoint(tmp_path) -> None:
    part, written = build_partition(tmp_path, 2, "none")
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\nt 0 30\n")
    result = run_ktool("read", str(part), "--offset", "29")
    assert result.exit_code == 1
    assert "valid offsets are 30 to 71" in result.stderr
    code, objs, _ = read_json(str(part), "--earliest", "-n", "2")
    assert (code, shown(objs)) == (0, expected(written, 30, 2))


@pytest.mark.parametrize(("magic", "codec"), [(2, "lz4"), (1, "none"), (0, "gzip")])
def test_latest_prints_the_last_records(tmp_path, magic, codec) -> None:
    part, written = build_partition(tmp_path, magic, codec)
    code, objs, _ = read_json(str(part), "--latest")
    assert (code, shown(objs)) == (0, expected(written, written[-1].offset))
    code, objs, _ = read_json(str(part), "--latest", "--count", "6")
    assert (code, shown(objs)) == (0, expected(written, written[-6].offset))


def test_latest_on_an_empty_partition_says_so(tmp_path) -> None:
    part = tmp_path / "t-0"
    part.mkdir()
    (part / "00000000000000000042.log").write_bytes(b"")
    (part / "00000000000000000042.index").write_bytes(b"")
    result = run_ktool("read", str(part), "--latest")
    assert result.exit_code == 1
    assert result.stderr.strip() == f"ktool: {part}: the partition is empty (log start = log end = 42)"


@pytest.mark.parametrize(("magic", "codec"), [(2, "none"), (2, "gzip"), (1, "snappy"), (1, "none")])
def test_timestamp_starts_at_the_first_record_at_or_after_it(tmp_path, magic, codec) -> None:
    part, written = build_partition(tmp_path, magic, codec)
    for w in written[::5]:
        for t in (w.timestamp, w.timestamp - 3):
            code, objs, err = read_json(str(part), "--timestamp", str(t), "-n", "2")
            assert code == 0, err
            assert shown(objs) == expected(written, w.offset, 2)
    iso = "2023-11-14T22:13:20.150Z"  # T0 + 150 ms: offset 15
    code, objs, _ = read_json(str(part), "--timestamp", iso, "-n", "1")
    assert shown(objs) == expected(written, 15, 1)
    result = run_ktool("read", str(part), "--timestamp", str(written[-1].timestamp + 1))
    assert result.exit_code == 1
    assert "no record has a timestamp at or after" in result.stderr


def test_timestamp_on_message_format_v0_is_a_clear_error(tmp_path) -> None:
    part, _ = build_partition(tmp_path, 0, "gzip")
    result = run_ktool("read", str(part), "--timestamp", str(T0))
    assert result.exit_code == 1
    assert "message format v0 has no timestamps" in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


def _damage(part: Path, how: str) -> None:
    idx = sorted(part.glob("*.index"))[1]
    data = idx.read_bytes()
    if how == "missing":
        idx.unlink()
    elif how == "empty":
        idx.write_bytes(b"")
    elif how == "not-increasing":
        idx.write_bytes(data[8:16] + data[:8] + data[16:])
    elif how == "past-the-segment":
        log_size = idx.with_suffix(".log").stat().st_size
        idx.write_bytes(data[:-8] + struct.pack(">ii", 23, log_size + 100))
    elif how == "preallocated-zeros":
        idx.write_bytes(data + bytes(8 * 1000))  # a crash: the preallocated tail stays (not an error)
    elif how == "zeros-then-data":
        idx.write_bytes(data[:16] + bytes(16) + data[32:])
    elif how == "stale":
        # entries of another life of the segment: plausible, increasing, each at the next batch
        rel = [struct.unpack_from(">ii", data, i) for i in range(0, len(data), 8)]
        idx.write_bytes(
            b"".join(struct.pack(">ii", r, p) for (r, _), (_, p) in zip(rel, rel[1:], strict=False))
        )
    elif how == "cut":
        idx.write_bytes(data[:-3])


@pytest.mark.parametrize(
    "how",
    [
        "missing",
        "empty",
        "not-increasing",
        "past-the-segment",
        "zeros-then-data",
        "stale",
        "cut",
        "preallocated-zeros",
    ],
)
def test_an_index_not_to_be_trusted_gives_the_same_records_and_one_warning(tmp_path, how) -> None:
    part, written = build_partition(tmp_path, 2, "gzip", batches=40)  # segments over 4096 bytes
    assert sorted(part.glob("*.log"))[1].stat().st_size > 4096
    _damage(part, how)
    second = [w for w in written if 160 <= w.offset < 320]
    for w in second[4::7]:  # past the first entry, so that the index is consulted
        code, objs, err = read_json(str(part), "--offset", str(w.offset), "-n", "5")
        assert code == 0
        assert shown(objs) == expected(written, w.offset, 5)
        warnings = err.splitlines()
        if how == "preallocated-zeros":
            assert warnings == []
        else:
            assert len(warnings) == 1, warnings
            assert "00000000000000000160.index" in warnings[0]
            assert "scanning the segment" in warnings[0]


def test_a_truncated_batch_is_one_line_and_never_shown(tmp_path) -> None:
    part, written = build_partition(tmp_path, 2, "none")
    last = sorted(part.glob("*.log"))[-1]
    data = last.read_bytes()
    last.write_bytes(data[:-20])
    code, objs, err = read_json(str(part), "--offset", str(written[-8].offset))
    assert code == 1
    assert shown(objs) == expected(written, written[-8].offset, 4)  # the cut batch's records are not
    assert err.count("\n") == 1 and "truncated batch" in err and "Traceback" not in err


def test_a_batch_larger_than_the_chunk_is_read_with_the_chunk_doubled(tmp_path) -> None:
    part, written = build_partition(tmp_path, 2, "none", per_batch=40)  # batches of ~2.6 KB
    code, objs, err = read_json(str(part), "--offset", "50", "--chunk-bytes", "64", "-n", "100")
    assert (code, err) == (0, "")
    assert shown(objs) == expected(written, 50, 100)


def test_the_old_max_bytes_spelling_is_chunk_bytes_with_a_note(tmp_path) -> None:
    part, written = build_partition(tmp_path, 2, "none", per_batch=40)
    code, objs, err = read_json(str(part), "--offset", "50", "--max-bytes", "64", "-n", "100")
    assert code == 0 and shown(objs) == expected(written, 50, 100)
    assert err == "ktool: --max-bytes is now --chunk-bytes (the old spelling goes in a later release)\n"
    assert "--max-bytes" not in run_ktool("read", "--help").stdout  # hidden: dump-log's means a cap
    small = run_ktool("read", str(part), "--offset", "0", "--max-bytes", "10")
    assert small.exit_code == 2 and "'--max-bytes': 10 is not in the range x>=64" in small.stderr
    both = run_ktool("read", str(part), "--offset", "0", "--max-bytes", "64", "--chunk-bytes", "64")
    assert both.exit_code == 2 and "--max-bytes is the old spelling of --chunk-bytes" in both.stderr


def test_timestamp_takes_the_one_grammar_of_times(tmp_path) -> None:
    part, written = build_partition(tmp_path, 2, "none")
    for word, flag in (
        ("-1", "--latest"),
        ("latest", "--latest"),
        ("-2", "--earliest"),
        ("earliest", "--earliest"),
    ):
        assert read_json(str(part), "--timestamp", word) == read_json(str(part), flag), word
    largest = max(r.timestamp for r in written)
    first_largest = next(r.offset for r in written if r.timestamp == largest)
    code, objs, _ = read_json(str(part), "--timestamp", "max-timestamp", "-n", "1")
    assert code == 0 and [o[0] for o in shown(objs)] == [first_largest]
    assert read_json(str(part), "--timestamp", "-3", "-n", "1") == (code, objs, "")
    bad = run_ktool("read", str(part), "--timestamp", "-5")
    assert bad.exit_code == 2 and "expected -1 (latest), -2 (earliest), -3 (max-timestamp)" in bad.stderr


def test_bad_names_and_unreadable_paths_are_one_line(tmp_path) -> None:
    part, _ = build_partition(tmp_path, 2, "none")
    (part / "garbage.log").write_bytes(b"x")
    result = run_ktool("read", str(part), "--offset", "0")
    assert result.exit_code == 3
    assert (
        result.stderr.strip()
        == f"ktool: {part / 'garbage.log'}: not a segment file name (expected digits.log)"
    )
    result = run_ktool("read", str(tmp_path / "nope-0"), "--offset", "0")
    assert result.exit_code == 3 and result.stderr.count("\n") == 1
    result = run_ktool("read", str(part), "--offset", "1", "--earliest")
    assert result.exit_code == 2
    result = run_ktool("read", str(part))
    assert result.exit_code == 2


def test_a_gap_between_segments_reads_from_the_next_offset_with_a_note(tmp_path) -> None:
    part, written = build_partition(tmp_path, 2, "none")
    second = sorted(part.glob("*.log"))[1]
    second.unlink()
    second.with_suffix(".index").unlink()
    code, objs, err = read_json(str(part), "--offset", "30", "-n", "2")
    assert code == 0
    assert shown(objs) == expected(written, 48, 2)
    assert "offset 30 is not in the log" in err and "reading from offset 48" in err


def tree_state(root: Path) -> dict[str, tuple[int, int, int]]:
    return {
        str(p): (p.stat().st_size, p.stat().st_mtime_ns, p.stat().st_mode) for p in sorted(root.rglob("*"))
    }


def test_read_never_writes_in_the_log_dir(tmp_path) -> None:
    part, _ = build_partition(tmp_path, 1, "gzip")
    before = tree_state(tmp_path)
    for args in (
        ["--offset", "7"],
        ["--earliest"],
        ["--latest"],
        ["--timestamp", str(T0 + 100)],
        ["--offset", "999"],
    ):
        run_ktool("read", str(part), *args)
    assert tree_state(tmp_path) == before


# -- the bundled files of a real Kafka 0.9.0.1 broker, 0.7 files, the realworld log dir ------------------


def test_read_matches_what_the_09_broker_was_sent() -> None:
    sent = json.loads((FIXTURES / "kafka-0.9.0.1" / "messages.json").read_text())["topics"]
    logdir = FIXTURES / "kafka-0.9.0.1" / "logdir"
    for topic, messages in sent.items():
        part = logdir / f"{topic}-0"
        if not part.is_dir():
            continue
        for m in messages[:: max(1, len(messages) // 12)]:
            code, objs, err = read_json(str(part), "--offset", str(m["offset"]), "-n", "1")
            assert code == 0, err
            assert shown(objs) == [(m["offset"], m.get("key"), m["value"])]


def test_read_of_a_segmented_09_partition_opens_the_segment_by_its_index() -> None:
    part = FIXTURES / "kafka-0.9.0.1" / "logdir" / "segmented-0"
    code, objs, err = read_json(str(part), "--offset", "150", "-n", "60")
    assert (code, err) == (0, "")
    assert [o for o, _, _ in shown(objs)] == list(range(150, 200))
    files = {o["file"] for o in objs}
    assert all(Path(f).name >= "00000000000000000144.log" for f in files)


def test_kafka07_offsets_are_byte_positions_and_a_non_boundary_is_named(tmp_path) -> None:
    part = FIXTURES / "generated" / "kafka07" / "events-0"
    segs = sorted(part.glob("*.kafka"))
    code, objs, _ = read_json(str(part), "--earliest", "-n", "3")
    assert code == 0
    offsets = [o["offset"] for o in objs if o["type"] == "message"]
    assert offsets[0] == int(segs[0].stem)
    code, objs2, _ = read_json(str(part), "--offset", str(offsets[1]), "-n", "1")
    assert [o["offset"] for o in objs2] == [offsets[1]]
    result = run_ktool("read", str(part), "--offset", str(offsets[1] + 1))
    assert result.exit_code == 1
    assert f"the nearest valid offsets are {offsets[1]} and {offsets[2]}" in result.stderr


def test_kafka07_compressed_wrappers_show_their_inner_messages() -> None:
    part = FIXTURES / "generated" / "kafka07" / "compressed-0"
    code, objs, err = read_json(str(part), "--earliest")
    assert code == 0, err
    dumped = run_ktool("dump-log", "--json", "--print-data-log", *map(str, sorted(part.glob("*.kafka"))))
    want = [o for o in map(json.loads, dumped.stdout.splitlines()) if o["type"] == "message"]
    assert objs == want


def test_realworld_partitions_read_as_kafka_python_decodes_them() -> None:
    needs_realworld()
    logdir = REALWORLD / "kafka-2.x-logdir"
    for part in sorted(p for p in logdir.iterdir() if p.is_dir() and not p.name.startswith("__"))[:4]:
        ref = [
            r for seg in sorted(part.glob("*.log")) for b in read_with_kafka_python(seg) for r in b.records
        ]
        if not ref:
            continue
        code, objs, err = read_json(str(part), "--offset", str(ref[len(ref) // 2].offset))
        assert code == 0, err
        want = [r for r in ref if r.offset >= ref[len(ref) // 2].offset]
        assert [(o["offset"], o["value"]) for o in objs if o["type"] == "record"] == [
            (r.offset, None if r.value is None else r.value.decode()) for r in want
        ]


def test_read_path_imports_nothing_heavy() -> None:
    """`ktool read --offset` must stay light: no rich, kazoo, pyspark or confluent_kafka on its path."""
    import subprocess

    code = (
        "import sys; from kafka_tools.cli.read import read; from kafka_tools.log.reads import read as r; "
        "import kafka_tools.render.dump_text, kafka_tools.render.dump_json; "
        "print(','.join(m for m in ('rich', 'kazoo', 'pyspark', 'confluent_kafka') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ}
    )
    assert out.stdout.strip() == ""


def test_kafka07_latest_is_the_last_message() -> None:
    part = FIXTURES / "generated" / "kafka07" / "events-0"
    dumped = run_ktool("dump-log", "--json", *map(str, sorted(part.glob("*.kafka"))))
    offsets = [o["offset"] for o in map(json.loads, dumped.stdout.splitlines()) if o["type"] == "message"]
    code, objs, err = read_json(str(part), "--latest", "-n", "2")
    assert (code, err) == (0, "")
    assert [o["offset"] for o in objs] == offsets[-2:]


def test_an_unreadable_segment_is_one_line_exit_3(tmp_path) -> None:
    part, _ = build_partition(tmp_path, 2, "none")
    last = sorted(part.glob("*.log"))[-1]
    last.unlink()
    last.symlink_to(tmp_path / "unmounted-disk" / last.name)  # a dangling link
    result = run_ktool("read", str(part), "--offset", "50")
    assert result.exit_code == 3
    assert result.stderr.count("\n") == 1 and str(last) in result.stderr
    assert "Traceback" not in result.stderr
    code, objs, _ = read_json(str(part), "--offset", "2", "-n", "2")  # the other segments still read
    assert code == 0 and [o for o, _, _ in shown(objs)] == [2, 3]


def test_consumer_offsets_records_are_decoded_as_dump_log_decodes_them() -> None:
    part = FIXTURES / "kafka-0.9.0.1" / "logdir" / "__consumer_offsets-0"
    dumped = run_ktool("dump-log", "--print-data-log", *map(str, sorted(part.glob("*.log"))))
    lines = [line for line in dumped.stdout.splitlines() if line.startswith("offset: ")]
    result = run_ktool("read", str(part), "--offset", "3")
    assert result.exit_code == 0
    assert result.stdout.splitlines() == lines[3:]
    assert '"type":"offset_commit"' in result.stdout


def test_a_batch_over_the_read_limit_is_reported_not_read(tmp_path) -> None:
    from kafka_tools.errors import FindingsError
    from kafka_tools.log.reads.locate import SegmentReader

    part, _ = build_partition(tmp_path, 2, "none", per_batch=40)  # batches of ~2.6 KB
    log = sorted(part.glob("*.log"))[0]
    with SegmentReader(str(log), chunk=64, limit=1024) as reader:
        with pytest.raises(
            FindingsError, match=r"position 0: batch of \d+ bytes is over the read limit of 1024"
        ):
            next(reader.frames(0))
    with SegmentReader(str(log), chunk=64, limit=1 << 20) as reader:  # doubled from 64 until it fits
        assert [f.last_offset for f in reader.frames(0)] == [39 + 40 * i for i in range(6)]


@pytest.mark.parametrize("partition", ["v2/zstd-0", "v2/transactions-0", "v1/gzip-0", "v0/snappy-0"])
def test_read_json_objects_are_dump_logs(partition) -> None:
    part = FIXTURES / "generated" / partition
    dumped = run_ktool("dump-log", "--json", "--print-data-log", *map(str, sorted(part.glob("*.log"))))
    control = {o["position"] for o in map(json.loads, dumped.stdout.splitlines()) if o.get("isControl")}
    want = [
        o
        for o in map(json.loads, dumped.stdout.splitlines())
        if o["type"] in ("batch", "record", "message")
        and o.get("batchPosition", o.get("position")) not in control
    ]
    code, objs, err = read_json(str(part), "--earliest")
    assert code == 0, err
    assert objs == want


def test_a_log_dir_or_a_file_named_for_a_partition_is_one_line_and_exit_3(tmp_path) -> None:
    """The exit-code table: a path of the wrong kind is an input that cannot be read (3, one line), not
    a usage error (2): `ktool read DATA` (the log dir above the partition) once exited 2."""
    part, _ = build_partition(tmp_path / "data", 2, "none")
    segment = sorted(part.glob("*.log"))[0]
    other = tmp_path / "notes"
    other.mkdir()
    cases = {
        part.parent: f"{part.parent}: a log dir, not a partition directory (expected topic-N)",
        other: f"{other}: not a partition directory (expected topic-N)",
        segment: f"{segment}: not a directory (expected a partition directory, topic-N)",
    }
    for path, line in cases.items():
        result = run_ktool("read", str(path), "--earliest")
        assert (result.exit_code, result.stdout, result.stderr) == (3, "", f"ktool: {line}\n"), path
