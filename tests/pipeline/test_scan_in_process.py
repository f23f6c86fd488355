"""`ktool scan` without Spark: a small local input is scanned in this process and its tables written
with pyarrow. The same rows as `ktool dump-log --json`, the same tables whichever format, no Java needed.
(The in-process tables equal to the Spark job's row for row: tests/pipeline/test_scan.py.)"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from kafka_tools.pipeline import ScanOptions, plan_scan
from kafka_tools.pipeline.local import scan_in_process
from tests.independent import FIXTURES, REALWORLD
from tests.support.script import run_script

GENERATED = FIXTURES / "generated"
KAFKA09 = FIXTURES / "kafka-0.9.0.1/logdir"
PATHS = [GENERATED / d for d in ("v0", "v1", "v2", "kafka07", "corrupt")] + [KAFKA09]


def ktool(*args: str) -> tuple[int, str, str]:
    from kafka_tools.cli.main import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _b64(value: str | None) -> bytes | None:
    return None if value is None else base64.b64decode(value)


def dump_log_records(file: str) -> list[tuple]:
    """(offset, timestamp, key size, value size, key, value, headers) of every record `ktool dump-log
    --json` prints (a 0.7 message has neither key nor timestamp: -1); a control record's key and value
    are printed decoded: "control" stands for them."""
    code, stdout, stderr = ktool(
        "dump-log", "--json", "--print-data-log", "--key-decoder", "base64", "--value-decoder", "base64",
        "--no-offsets-decoder", "--no-transaction-log-decoder", "--no-cluster-metadata-decoder", file,
    )  # fmt: skip
    assert code in (0, 1), stderr
    rows = []
    for o in map(json.loads, stdout.splitlines()):
        if o["type"] == "record" or (o["type"] == "message" and o.get("compressCodec") == "none"):
            headers = [(h["key"], _b64(h["value"])) for h in o.get("headers") or []]
            if "control" in o:
                key = value = "control"
            else:
                key, value = _b64(o.get("key")), _b64(o.get("value"))
            sizes = (o.get("keySize", -1), o["valueSize"])
            rows.append((o["offset"], o.get("timestamp", -1), *sizes, key, value, headers))
    return rows


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> tuple[Path, object]:
    paths = PATHS + ([REALWORLD] if REALWORLD.is_dir() else [])
    out = tmp_path_factory.mktemp("inproc") / "tables"
    plan = plan_scan(paths)
    options = ScanOptions(out=str(out), records=True, offsets_topic=True, split_bytes=2048)
    return out, plan, scan_in_process(plan, options)


def test_records_table_is_dump_logs_json(tables) -> None:
    out, plan, result = tables
    by_file: dict[str, list[tuple]] = {}
    for r in pq.read_table(out / "records").to_pylist():
        headers = [(h["key"], h["value"]) for h in r["headers"] or []]
        row = (r["offset"], r["timestamp"], _size(r["key"]), _size(r["value"]), r["key"], r["value"], headers)
        by_file.setdefault(r["file"], []).append(row)
    compared = 0
    for spec in plan.segments:
        expected = dump_log_records(spec.file)
        control = {e[0] for e in expected if e[4] == "control"}
        got = [
            (*r[:4], "control", "control", r[6]) if r[0] in control else r for r in by_file.get(spec.file, [])
        ]
        assert sorted(got, key=repr) == sorted(expected, key=repr), spec.file
        compared += len(expected)
    assert compared >= 900
    assert sum(len(v) for v in by_file.values()) == sum(r["records"] for r in result.segments)


def dump_log_entries(file: str) -> list[dict]:
    """The `batches` row of each entry `ktool dump-log --json --deep-iteration` prints (a v2 batch, or
    a magic 0/1/0.7 message that is not inside a wrapper), in file order, its records' timestamps and
    offsets under "_timestamps" and "_offsets"."""
    code, stdout, stderr = ktool(
        "dump-log", "--json", "--deep-iteration",
        "--no-offsets-decoder", "--no-transaction-log-decoder", "--no-cluster-metadata-decoder", file,
    )  # fmt: skip
    assert code in (0, 1), stderr
    rows: list[dict] = []
    for o in map(json.loads, stdout.splitlines()):
        common = {
            "position": o.get("position"),
            "magic": o.get("magic"),
            "codec": o.get("compressCodec"),
            "crc": o.get("crc"),
            "computed_crc": o.get("computedCrc"),
            "is_valid": o.get("isValid"),
            "_timestamps": [],
            "_offsets": [],
        }
        if o["type"] == "batch":
            rows.append(
                {
                    **common,
                    "base_offset": o["baseOffset"],
                    "last_offset": o["lastOffset"],
                    "count": o["count"],
                    "size": o["size"],
                    "timestamp_type": o["timestampType"],
                    "max_timestamp": o["maxTimestamp"],
                    "partition_leader_epoch": o["partitionLeaderEpoch"],
                    "producer_id": o["producerId"],
                    "producer_epoch": o["producerEpoch"],
                    "base_sequence": o["baseSequence"],
                    "is_transactional": o["isTransactional"],
                    "is_control": o["isControl"],
                }
            )
        elif o["type"] == "message" and not o["inner"]:
            kafka07 = "nextOffset" in o  # its size field counts from the magic byte: 4 bytes of frame
            rows.append(
                {
                    **common,
                    "last_offset": o["offset"],
                    "size": o["size"] + (4 if kafka07 else 12),
                    "_timestamp": o.get("timestamp", -1),
                }
            )
        elif o["type"] == "record" or o["type"] == "message":  # a v2 record, a wrapper's inner message
            rows[-1]["_timestamps"].append(o.get("timestamp", -1))
            rows[-1]["_offsets"].append(o["offset"])
    return rows


def test_batches_table_is_dump_logs_json(tables) -> None:
    """Every column of the `batches` table, entry by entry, as `dump-log --json --deep-iteration` prints
    the entry and its records (record counts and timestamps from the records it prints)."""
    out, plan, result = tables
    by_file: dict[str, list[dict]] = {}
    for r in pq.read_table(out / "batches").to_pylist():
        by_file.setdefault(r["file"], []).append(r)
    compared = undecodable = 0
    for spec in plan.segments:
        got = sorted(by_file.get(spec.file, []), key=lambda r: r["position"])
        expected = dump_log_entries(spec.file)
        assert len(got) == len(expected), spec.file
        for row, want in zip(got, expected, strict=True):
            stamps, offsets = want.pop("_timestamps"), want.pop("_offsets")
            if want["magic"] != 2:
                plain = not offsets  # a plain message is its own record
                stamp = want.pop("_timestamp")
                want["records"] = want["count"] = 1 if plain else len(offsets)
                want["base_offset"] = want["last_offset"] if plain else offsets[0]
                want["min_timestamp"], want["max_timestamp"] = (
                    (stamp, stamp) if plain else (min(stamps), max(stamps))
                )
            else:
                want["records"] = len(stamps)
                want["min_timestamp"] = min(stamps) if stamps else None
            if row["decode_error"] is not None:  # dump-log prints no record of it
                undecodable += 1
                assert not stamps, spec.file
                want["records"] = None
            assert {k: row[k] for k in want} == want, (spec.file, row["position"])
            compared += 1
    assert compared >= 400 and undecodable >= 1


def test_tables_are_the_same_in_json_and_parquet(tables, tmp_path: Path) -> None:
    out, plan, _ = tables
    options = ScanOptions(out=str(tmp_path), fmt="json", records=True, offsets_topic=True, split_bytes=2048)
    result = scan_in_process(plan, options)
    for t in result.tables:
        parquet = pq.read_table(out / t.name)
        binary = {f.name for f in parquet.schema if str(f.type) == "binary"}
        lines = [json.loads(line) for f in sorted(Path(t.path).glob("part-*.json")) for line in f.open()]
        for row in lines:
            for name in binary:
                row[name] = _b64(row[name])
            if row.get("headers"):
                row["headers"] = [{"key": h["key"], "value": _b64(h["value"])} for h in row["headers"]]
        assert len(lines) == t.rows == parquet.num_rows, t.name
        assert sorted(map(repr, lines)) == sorted(map(repr, parquet.to_pylist())), t.name
        assert lines and list(lines[0]) == parquet.column_names or not lines, t.name


@pytest.mark.slow  # the console script twice, pyarrow imported in each
def test_the_console_script_scans_a_small_log_dir_without_java(tmp_path: Path) -> None:
    res = run_script("scan", "--json", str(KAFKA09), env={"JAVA_HOME": "/nonexistent", "PATH": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout.splitlines()[-1])
    assert summary["type"] == "summary" and summary["master"] == "in-process"
    assert summary["records"] == 338 and summary["startupSeconds"] is None
    text = run_script("scan", str(KAFKA09), env={"JAVA_HOME": "/nonexistent", "PATH": str(tmp_path)})
    assert (
        "in this process, without Spark (input at most 1024 MiB; --master local[*] for Spark)" in text.stdout
    )


def test_above_the_threshold_and_with_sql_or_a_master_spark_is_started(monkeypatch) -> None:
    import kafka_tools.pipeline.plan as plan
    import kafka_tools.pipeline.session as session

    asked: list[str] = []
    light: list[bool] = []

    def no_spark(settings):
        asked.append(settings.master)
        light.append(settings.light_jvm)
        raise RuntimeError("Spark asked for")

    monkeypatch.setattr(session, "spark_session", no_spark)
    for args in (["--master", "local[1]"], ["--sql", "SELECT 1"]):
        with pytest.raises(RuntimeError, match="Spark asked for"):
            ktool("scan", *args, str(KAFKA09))
    monkeypatch.setattr(plan, "IN_PROCESS_BYTES", 1000)
    with pytest.raises(RuntimeError, match="Spark asked for"):
        ktool("scan", str(KAFKA09))
    assert asked == ["local[1]", "local[*]", "local[*]"]
    # The JVM's C2 compiler is left out where Python does the work (local segments into parquet); SQL
    # is the JVM's own work.
    assert light == [True, False, True]


def test_a_question_on_a_small_input_is_answered_here(monkeypatch) -> None:
    import kafka_tools.pipeline.session as session

    monkeypatch.setattr(session, "spark_session", lambda settings: pytest.fail("Spark started"))
    code, stdout, stderr = ktool("scan", "--json", "--key", "k07", str(KAFKA09))
    assert (code, stderr) == (0, "")
    objs = [json.loads(line) for line in stdout.splitlines()]
    assert objs[-1]["master"] == "in-process"
    assert ("plain", 7) in {(o["topic"], o["offset"]) for o in objs[:-1]}
    assert {o["key"] for o in objs[:-1]} == {"k07"}


def test_records_come_in_batches_bounded_by_bytes_and_add_up_to_the_whole(monkeypatch) -> None:
    from kafka_tools.pipeline import tasks

    spec = next(s for s in plan_scan([GENERATED / "v2"]).segments if "none-0" in s.file)
    whole = list(tasks.record_chunks(spec))
    monkeypatch.setattr(tasks, "CHUNK_BYTES", 200)
    parts = list(tasks.record_chunks(spec))
    assert len(whole) == 1 and len(parts) > 2
    for part in parts[:-1]:
        size = sum(len(v) for c in ("key", "value") for v in part[c] if v)
        biggest = max(len(v or b"") + len(k or b"") for k, v in zip(part["key"], part["value"], strict=True))
        assert 200 <= size < 200 + biggest * len(part["key"])  # one batch's records past the bound, no more
    assert {k: [v for p in parts for v in p[k]] for k in whole[0]} == whole[0]


def test_a_headers_column_without_headers_is_the_same_arrow_array() -> None:
    import pyarrow as pa

    from kafka_tools.pipeline import tables

    headers = tables.arrow_schema(tables.RECORDS).field("headers").type
    for values in ([], [()], [()] * 1000, [(), (("k", b"v"),), ()]):
        assert tables.arrow_column("headers", headers, values).equals(pa.array(values, headers))


def test_help_says_the_threshold_the_code_uses() -> None:
    from kafka_tools.pipeline.plan import IN_PROCESS_BYTES

    code, stdout, _ = ktool("scan", "--help")
    said = " ".join(stdout.split())
    assert code == 0 and f"at most {IN_PROCESS_BYTES // 2**30} GiB" in said and "there is no --sql" in said


def test_checkpoints_are_read_when_planned_before_any_segment(tmp_path: Path) -> None:
    """A running broker writes checkpoints and segments: the scan reads the checkpoints first, as
    validate does, so a checkpoint rewritten while the segments are read cannot name offsets the
    segments were read without."""
    import shutil

    logs = tmp_path / "logs"
    shutil.copytree(KAFKA09, logs)
    plan = plan_scan([logs])
    checkpoint = logs / "replication-offset-checkpoint"
    checkpoint.write_text(checkpoint.read_text().replace("plain 0 30", "plain 0 9999"))
    result = scan_in_process(plan, ScanOptions())
    assert [f for f in result.validation.all_findings() if f.file == str(checkpoint)] == []
    later = scan_in_process(plan_scan([logs]), ScanOptions())
    past = [f for f in later.validation.all_findings() if f.file == str(checkpoint)]
    assert [f.kind for f in past] == ["checkpoint-past-log-end"] and "9999" in past[0].message


@pytest.mark.slow  # a scan into 2 KiB ranges, every table written, per codec
@pytest.mark.parametrize("codec", ["zstd", "lz4", "none"])
def test_compression_changes_the_codec_and_nothing_else(tables, tmp_path: Path, codec: str) -> None:
    """`--compression`: every parquet table in that codec (LZ4 as parquet's LZ4_RAW, the one Spark and
    pyarrow both read), its part files named as Spark's writer names them, the rows the snappy ones hold."""
    out, plan, _ = tables
    options = ScanOptions(
        out=str(tmp_path), records=True, offsets_topic=True, split_bytes=2048, compression=codec
    )
    result = scan_in_process(plan, options)
    want = {"zstd": "ZSTD", "lz4": "LZ4", "none": "UNCOMPRESSED"}[codec]  # pyarrow says LZ4 for LZ4_RAW
    suffix = {"zstd": ".zstd.parquet", "lz4": ".lz4raw.parquet", "none": ".parquet"}[codec]
    for t in result.tables:
        parts = sorted(Path(t.path).glob("part-*"))
        assert [p.name for p in parts] == [f"part-{k:05d}{suffix}" for k in range(len(parts))], t.name
        for part in parts:
            meta = pq.ParquetFile(part).metadata
            assert {meta.row_group(g).column(c).compression for g in range(meta.num_row_groups)
                    for c in range(meta.num_columns)} <= {want}, t.name  # fmt: skip
        read = pa.concat_tables(pq.read_table(p) for p in parts)
        assert read.equals(pq.read_table(out / t.name)), t.name


def test_compression_of_json_tables_is_a_usage_error(tmp_path: Path) -> None:
    code, stdout, stderr = ktool(
        "scan", "--out", str(tmp_path / "t"), "--format", "json", "--compression", "zstd", str(KAFKA09)
    )
    assert (code, stdout) == (2, "")
    assert stderr.strip().endswith("--compression is the parquet tables' codec: not with --format json")
    assert not (tmp_path / "t").exists()


def test_a_light_jvm_compiles_with_c1_only_and_a_users_java_options_win(monkeypatch) -> None:
    """`SparkSettings.light_jvm` (a local master writing parquet from local segments): the JVM is started
    with `-XX:TieredStopAtLevel=1`; a user's own spark.driver.extraJavaOptions replaces it; a cluster's
    JVMs are left alone."""
    import os

    from kafka_tools.pipeline.session import LIGHT_JIT, SparkSettings, spark_conf

    for name in ("PYSPARK_PYTHON", "PYTHONPATH"):  # spark_conf sets them for the workers: restored after
        monkeypatch.setenv(name, os.environ.get(name, ""))
    key = "spark.driver.extraJavaOptions"
    assert spark_conf(SparkSettings(master="local[2]", light_jvm=True))[key] == LIGHT_JIT
    assert key not in spark_conf(SparkSettings(master="local[2]"))
    assert key not in spark_conf(SparkSettings(master="spark://127.0.0.1:7077", light_jvm=True))
    mine = SparkSettings(master="local[2]", conf={key: "-Xss4m"}, light_jvm=True)
    assert spark_conf(mine)[key] == "-Xss4m"


def test_lanes_are_consecutive_ranges_of_about_equal_bytes() -> None:
    from kafka_tools.pipeline.local import MAX_LANES, split_lanes

    plan = plan_scan(PATHS)
    ranges = plan.ranges(2048)
    size = {(i, start): (plan.segments[i].size if end is None else end) - start for i, start, end in ranges}
    for lanes in range(1, MAX_LANES + 2):
        got = split_lanes(plan, ranges, lanes)
        assert len(got) == min(lanes, MAX_LANES, len(ranges)) and all(got), lanes
        assert [r for lane in got for r in lane] == ranges, lanes
        shares = [sum(size[i, start] for i, start, _ in lane) for lane in got]
        biggest = max(size.values())
        assert max(shares) - min(shares) <= 2 * biggest, (lanes, shares)
    assert split_lanes(plan, ranges[:2], 4) == [ranges[:1], ranges[1:2]]


@pytest.mark.slow  # two whole scans per format
@pytest.mark.parametrize("fmt", ["parquet", "json"])
def test_lanes_write_the_rows_one_lane_writes_in_its_order(monkeypatch, tmp_path: Path, fmt: str) -> None:
    """On several cores the records and batches tables are written by lanes, one part file each: the
    parts read in their names' order hold the one-lane table's rows in its order, and the result (the
    segments, findings, totals) is the same."""
    from kafka_tools.pipeline import local

    plan = plan_scan(PATHS)
    got = {}
    for lanes in (1, 3):
        monkeypatch.setattr(local, "cores", lambda lanes=lanes: lanes)
        out = tmp_path / str(lanes)
        options = ScanOptions(out=str(out), fmt=fmt, records=True, offsets_topic=True, split_bytes=2048)
        result = scan_in_process(plan, options)
        parts = {t.name: sorted(Path(t.path).glob("part-*")) for t in result.tables}
        assert len(parts["records"]) == len(parts["batches"]) == lanes
        assert all(len(p) == 1 for name, p in parts.items() if name not in ("records", "batches"))
        if fmt == "parquet":
            rows = {name: [r for p in ps for r in pq.read_table(p).to_pylist()] for name, ps in parts.items()}
        else:
            rows = {name: [json.loads(line) for p in ps for line in p.open()] for name, ps in parts.items()}
        assert {t.name: t.rows for t in result.tables} == {name: len(r) for name, r in rows.items()}
        got[lanes] = (rows, result.segments, sorted(map(repr, result.validation.all_findings())))
    assert got[1] == got[3]
    assert len(got[1][0]["records"]) > 1000


def test_a_lane_that_fails_stops_the_scan_and_leaves_no_table(monkeypatch, tmp_path: Path) -> None:
    from kafka_tools.errors import InputError
    from kafka_tools.pipeline import local

    plan = plan_scan(PATHS)
    ranges = plan.ranges(2048)
    bad = plan.segments[ranges[-1][0]].file  # in the last lane
    walked = []
    real = local.range_batches

    def range_batches(spec, start, end, **kw):
        walked.append(spec.file)
        if spec.file == bad:
            raise InputError(f"{spec.file}: unreadable")
        return real(spec, start, end, **kw)

    monkeypatch.setattr(local, "range_batches", range_batches)
    monkeypatch.setattr(local, "cores", lambda: 2)
    out = tmp_path / "tables"
    with pytest.raises(InputError, match="unreadable"):
        scan_in_process(plan, ScanOptions(out=str(out), records=True, split_bytes=2048))
    assert walked.count(bad) == 1
    assert not out.exists() or list(out.iterdir()) == []


_LANE_IMPORTS = """
import sys, threading
from pathlib import Path
loads = []
lane = lambda: threading.current_thread() is not threading.main_thread()
sys.addaudithook(lambda event, args: event == "import" and lane() and loads.append(args[0]))
from kafka_tools.pipeline import ScanOptions, plan_scan, local
local.cores = lambda: 2
paths = [Path(p) for p in sys.argv[1:-1]]
local.scan_in_process(plan_scan(paths), ScanOptions(out=sys.argv[-1], records=True, split_bytes=2048))
print(sorted(set(loads)))
"""


def test_no_lane_imports_a_module(tmp_path: Path) -> None:
    """A Ctrl-C waits for the lanes (threads) to stop: a lane importing pyarrow's lazy imports (pandas,
    seconds under load) held it back 3.6 s once (issue 51). They are imported before the lanes start,
    in the main thread, where a signal interrupts the import. A fresh interpreter: nothing imported."""
    import subprocess
    import sys

    out = tmp_path / "tables"
    done = subprocess.run(
        [sys.executable, "-c", _LANE_IMPORTS, *map(str, PATHS), str(out)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]", f"imported in a lane: {done.stdout}"


def test_a_lane_told_to_stop_stops_within_its_range(monkeypatch) -> None:
    """A signal or a failed lane sets `stop`: a lane stops at its next batch, not at the end of its
    range (up to 128 MiB of decoding and writing)."""
    import threading

    from kafka_tools.pipeline import local

    plan = plan_scan(PATHS)
    stop = threading.Event()
    given = []

    def range_batches(spec, start, end, **kw):
        yield from local.range_batches.real(spec, start, end, **kw)  # the real walk
        for _ in range(1000):
            yield "batches", given[-1]

    def add(batch, where):
        given.append(batch)
        if len(given) == 3:
            stop.set()

    range_batches.real = local.range_batches
    monkeypatch.setattr(local, "range_batches", range_batches)
    writer = type("Writer", (), {"add": staticmethod(add)})()
    lane = [r for r in plan.ranges(1 << 30) if plan.segments[r[0]].size][:1]
    local._walk_lane(plan, lane, [None] * len(plan.segments), writer, None, lambda *a: None, stop)
    assert len(given) == 3


def test_a_scan_without_pyarrow_is_one_line_exit_3_saying_how_to_install_it(tmp_path: Path) -> None:
    """pyarrow is not in ktool's plain install (~170 MB): `ktool scan` without it says how to get it,
    under the distribution name users install (not `ktool`, someone else's project on PyPI), and the
    extra it names brings it."""
    import subprocess
    import sys

    import tomllib

    from tests.independent import ROOT

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    said = (
        f"ktool scan needs pyarrow: pip install '{project['name']}[scan]' (in ktool's checkout: pip install"
        " -e '.[scan]'), or pip install pyarrow"
    )
    blocked = "import sys\nsys.modules['pyarrow'] = None\nfrom kafka_tools.cli.main import main\nmain()\n"
    for args in (["--out", str(tmp_path / "t")], []):
        done = subprocess.run(
            [sys.executable, "-c", blocked, "scan", "--no-progress", *args, str(KAFKA09)],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
        assert (done.returncode, done.stdout, done.stderr) == (3, "", f"ktool: {said}\n")
    extras = project["optional-dependencies"]
    assert any(req.startswith("pyarrow") for req in extras["scan"])


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_a_record_the_decoder_cannot_read_is_a_finding_in_the_table_summary_and_exit_code(
    tmp_path: Path, codec: str
) -> None:
    """A batch whose CRC is right but whose record 3 has an impossible length: `scan --records` decodes
    the records, so it finds what `validate --deep` and `dump-log` find, counted everywhere."""
    from tests.log.test_damaged_batch_records import write_partition

    part = write_partition(tmp_path, codec)
    code, out, err = ktool("scan", "--records", str(part), "--out", str(tmp_path / "out"))
    assert code == 1, (out, err)
    findings = pq.read_table(tmp_path / "out" / "findings").to_pylist()
    assert [f["kind"] for f in findings] == ["records-undecodable"]
    assert "corrupt: 1 error" in out + err
    code, out, _ = ktool("scan", "--records", "--json", str(part), "--out", str(tmp_path / "out2"))
    summary = json.loads(out.splitlines()[-1])
    assert code == 1 and summary["type"] == "summary" and summary["errors"] == 1 and summary["corrupt"]


def test_a_partition_whose_name_is_not_utf8_is_scanned_and_named_with_escapes(tmp_path: Path) -> None:
    import os
    import shutil

    raw = os.fsencode(tmp_path) + b"/t\xe9st\xff-0"
    shutil.copytree(GENERATED / "v2" / "none-0", os.fsdecode(raw))
    code, out, err = ktool("scan", "--json", os.fsdecode(raw), "--out", str(tmp_path / "out"))
    assert code == 0, err
    objs = [json.loads(line) for line in out.splitlines()]
    (part,) = [o for o in objs if o["type"] == "partition"]
    assert part["dir"] == "t\\xe9st\\xff-0" and part["topic"] == "t\\xe9st\\xff"
    files = set(pq.read_table(tmp_path / "out" / "batches").column("file").to_pylist())
    assert files == {f"{tmp_path}/t\\xe9st\\xff-0/00000000000000000000.log"}
    assert "\\udc" not in out
