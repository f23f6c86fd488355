"""`ktool scan` on Spark `local[2]`: the same findings as `ktool validate`, the same records and offsets
as `ktool dump-log --deep-iteration`, the same committed offsets as an independent replay with
kafka-python, tables that read back; and one clear line when Java or the master is missing.

One SparkSession serves the whole session (started once, ~10 s); the CLI reuses it as ktool reuses an
active session. The failure cases run ktool in a fresh interpreter, where no session is active.
"""

from __future__ import annotations

import base64
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner
from kafka.record import MemoryRecords

from kafka_tools.dump import DumpOptions, EntryEvent, FileEnd, dump_file
from kafka_tools.format.internal_topics import decode_consumer_offsets
from kafka_tools.pipeline import ScanOptions, ScanPlan, ScanResult, plan_scan
from kafka_tools.pipeline.local import scan_in_process
from kafka_tools.validate import ValidateOptions, validate_paths
from tests.independent import FIXTURES, REALWORLD
from tests.support.script import run_script

GENERATED = FIXTURES / "generated"
KAFKA09 = FIXTURES / "kafka-0.9.0.1/logdir"
PATHS = [GENERATED / d for d in ("v0", "v1", "v2", "kafka07", "corrupt")] + [KAFKA09]
SPLIT = 2048  # tiny fixtures: split them anyway, so that ranges of one segment meet again
PACK = 64 * 1024


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (prerequisites must be installed in CI)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def spark():
    try:
        import pyspark  # noqa: F401
    except ImportError:
        _unavailable("pyspark is not installed (pip install -e '.[test]')")
    from kafka_tools.errors import InputError
    from kafka_tools.pipeline.session import SparkSettings, java_command, start

    try:
        java_command()
    except InputError as exc:
        _unavailable(str(exc))
    handle = start(SparkSettings(master="local[2]", conf={"spark.sql.shuffle.partitions": "2"}))
    yield handle.spark
    handle.spark.stop()
    if handle.log_path:
        Path(handle.log_path).unlink(missing_ok=True)


@dataclass
class Scanned:
    paths: list[Path]
    plan: ScanPlan
    options: ScanOptions
    result: ScanResult
    out: Path
    progress: list[tuple[int, int]]


@pytest.fixture(scope="module")
def scanned(spark, tmp_path_factory) -> Scanned:
    from kafka_tools.pipeline.job import run_scan

    paths = PATHS + ([REALWORLD] if REALWORLD.is_dir() else [])
    out = tmp_path_factory.mktemp("scan") / "tables"
    options = ScanOptions(out=str(out), records=True, offsets_topic=True, split_bytes=SPLIT, pack_bytes=PACK)
    plan = plan_scan(paths)
    calls: list[tuple[int, int]] = []
    result = run_scan(spark, plan, options, progress=lambda done, total: calls.append((done, total)))
    return Scanned(paths, plan, options, result, out, calls)


def _finding_keys(findings) -> list[tuple]:
    return sorted((f.file, f.kind, f.position, f.severity.value, f.repairable) for f in findings)


def test_findings_are_validates(scanned: Scanned) -> None:
    expected = validate_paths(scanned.paths, ValidateOptions())
    assert _finding_keys(scanned.result.validation.all_findings()) == _finding_keys(expected.all_findings())
    assert scanned.result.summary == expected.summary()
    assert scanned.result.summary.errors >= 15  # the corrupt fixtures are in


def _dump_log(path: str) -> tuple[int, int, list[int]]:
    """(entries, records, record offsets) as `ktool dump-log --deep-iteration` gives them."""
    offsets: list[int] = []
    end = None
    for event in dump_file(path, DumpOptions(deep_iteration=True)):
        if isinstance(event, EntryEvent) and event.records:
            offsets += [r.offset for r in event.records]
        elif isinstance(event, FileEnd):
            end = event
    assert end is not None
    return end.entries, end.records, offsets


def test_counts_and_offsets_are_dump_logs(scanned: Scanned, spark) -> None:
    by_file: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for row in (
        spark.read.parquet(str(scanned.out / "records")).select("file", "batch_position", "offset").collect()
    ):
        by_file[row["file"]].append((row["batch_position"], row["offset"]))
    rows = {r["file"]: r for r in scanned.result.segments}
    split = 0
    for spec in scanned.plan.segments:
        entries, records, offsets = _dump_log(spec.file)
        row = rows[spec.file]
        assert (row["batches"], row["records"]) == (entries, records), spec.file
        assert [o for _, o in sorted(by_file[spec.file])] == offsets, spec.file
        if offsets:  # an undecodable batch still has offsets in its header: they count too
            assert row["first_offset"] <= min(offsets) <= max(offsets) <= row["last_offset"], spec.file
        split += row["ranges"] > 1
    assert split >= 10  # segments decoded in several ranges came out whole, in order, once
    per_partition = {p.path: p.records for p in scanned.result.partitions}
    for rep in scanned.result.validation.partitions:
        assert per_partition[str(rep.partition.path)] == sum(
            _dump_log(str(s.log))[1] for s in rep.partition.segments
        )


def test_tables_read_back(scanned: Scanned, spark) -> None:
    from kafka_tools.pipeline import tables

    result = scanned.result
    written = {t.name: t for t in result.tables}
    assert set(written) == {"segments", "batches", "records", "offsets", "findings"}
    for name, t in written.items():
        df = spark.read.parquet(t.path)
        assert df.columns == tables.names(tables.TABLES[name]), name
        assert df.count() == t.rows, name
    segments = [r.asDict() for r in spark.read.parquet(written["segments"].path).collect()]
    assert sorted(segments, key=lambda r: r["file"]) == sorted(result.segments, key=lambda r: r["file"])
    assert written["batches"].rows == sum(r["batches"] for r in result.segments)
    assert written["records"].rows == sum(r["records"] for r in result.segments)
    assert written["findings"].rows == result.summary.errors + result.summary.warnings + result.summary.infos
    loaded = spark.read.parquet(written["offsets"].path).filter("loaded").collect()
    assert sorted((r["group"], r["topic"], r["partition"], r["offset"]) for r in loaded) == sorted(
        (c.group, c.topic, c.partition, c.offset) for c in result.committed
    )


def independent_commits(plan: ScanPlan) -> dict[tuple[str, str, int], int]:
    """The last offset commit per key, tombstones deleting, read with kafka-python's MemoryRecords and
    ktool's schema decoder (the fixtures hold no transactional commits)."""
    state: dict[tuple[str, str, int], int] = {}
    segments = sorted(
        (s for s in plan.segments if s.topic == "__consumer_offsets"),
        key=lambda s: (s.partition, s.base_offset),
    )
    for spec in segments:
        records = MemoryRecords(Path(spec.path).read_bytes())
        while records.has_next():
            batch = records.next_batch()
            if batch is None:
                break
            for r in batch:
                d = decode_consumer_offsets(r.key, r.value)
                if d.record_type != "offset_commit":
                    continue
                key = (d.key["group"], d.key["topic"], d.key["partition"])
                if d.is_tombstone:
                    state.pop(key, None)
                else:
                    state[key] = d.value["offset"]
    return state


def test_committed_offsets_are_what_the_broker_would_load(scanned: Scanned) -> None:
    committed = {(c.group, c.topic, c.partition): c.offset for c in scanned.result.committed}
    assert committed == independent_commits(scanned.plan)
    assert committed[("ktool-old-consumer", "plain", 0)] == 30
    if REALWORLD.is_dir():
        # first_topic holds 11, 12 and 18 records: the application read them all.
        got = {p: committed[("my-first-application", "first_topic", p)] for p in range(3)}
        assert got == {0: 11, 1: 12, 2: 18}


def test_spark_progress_is_one_count_of_tasks(scanned: Scanned) -> None:
    assert scanned.progress
    done, total = scanned.progress[-1]
    assert 0 < done == total >= scanned.result.tasks
    assert all(d <= t for d, t in scanned.progress)


def test_spark_and_one_process_agree(scanned: Scanned) -> None:
    options = ScanOptions(offsets_topic=True, split_bytes=SPLIT, pack_bytes=PACK)
    local = scan_in_process(scanned.plan, options)
    assert local.segments == scanned.result.segments
    assert local.partitions == scanned.result.partitions
    assert local.committed == scanned.result.committed


# -- the command ------------------------------------------------------------------------------------


def ktool(*args: str) -> tuple[int, str, str]:
    from kafka_tools.cli.main import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_cli_json_and_json_tables(spark, tmp_path: Path) -> None:
    out = tmp_path / "t"
    code, stdout, stderr = ktool(
        "scan", "--json", "--out", str(out), "--format", "json", "--records", "--offsets-topic", str(KAFKA09)
    )
    assert code == 0, stderr
    objs = [json.loads(line) for line in stdout.splitlines()]
    kinds = defaultdict(list)
    for o in objs:
        kinds[o["type"]].append(o)
    assert objs[-1]["type"] == "summary" and objs[-1]["errors"] == 0 and objs[-1]["corrupt"] is False
    assert {p["partition"] for p in kinds["partition"]} == {
        "__consumer_offsets-0",
        "gzip-0",
        "lz4-0",
        "plain-0",
        "segmented-0",
        "snappy-0",
    }
    plain = next(p for p in kinds["partition"] if p["partition"] == "plain-0")
    assert (plain["records"], plain["firstOffset"], plain["lastOffset"], plain["status"]) == (
        30,
        0,
        29,
        "clean",
    )
    assert {(c["group"], c["topic"], c["offset"]) for c in kinds["commit"]} >= {
        ("ktool-old-consumer", "plain", 30)
    }
    tables = {t["name"]: t for t in kinds["table"]}
    assert set(tables) == {"segments", "batches", "records", "offsets", "findings"}
    rows = [json.loads(line) for f in sorted((out / "records").glob("part-*.json")) for line in f.open()]
    assert len(rows) == tables["records"]["rows"] == objs[-1]["records"]
    first = min(
        (r for r in rows if r["file"].endswith("plain-0/00000000000000000000.log")), key=lambda r: r["offset"]
    )
    _, _, offsets = _dump_log(str(KAFKA09 / "plain-0/00000000000000000000.log"))
    events = [
        e for e in dump_file(KAFKA09 / "plain-0/00000000000000000000.log", DumpOptions(deep_iteration=True))
    ]
    record = next(e.records[0] for e in events if isinstance(e, EntryEvent))
    assert first["offset"] == offsets[0] and base64.b64decode(first["value"]) == record.value


def test_cli_exits_1_with_validates_findings(spark) -> None:
    corrupt = str(GENERATED / "corrupt")
    code, stdout, _ = ktool("scan", "--json", corrupt)
    assert code == 1
    got = [json.loads(line) for line in stdout.splitlines() if '"type":"finding"' in line]
    _, ref, _ = ktool("validate", "--json", corrupt)
    expected = [json.loads(line) for line in ref.splitlines() if '"type":"finding"' in line]
    assert got == expected and len(got) >= 15


def test_cli_text_shows_a_table_per_partition(spark) -> None:
    code, stdout, _ = ktool("scan", str(GENERATED / "v2"))
    assert code == 0
    assert "segmented-0" in stdout and "gzip,none" in stdout
    assert "clean: 10 segments" in stdout
    assert re.search(r"\b(1 task|\d+ tasks) on local\[2\]", stdout), stdout


def test_console_script_summary_counts_one_segment_and_one_task(spark, tmp_path: Path) -> None:
    shutil.copytree(GENERATED / "v2" / "none-0", tmp_path / "none-0")
    res = run_script("scan", "--master", "local[1]", str(tmp_path), timeout=600)
    assert res.returncode == 0, res.stderr
    assert re.search(r"^clean: 1 segment, 4 batches, \d+ bytes$", res.stdout, re.M), res.stdout
    assert re.search(r", 1 task on local\[1\]", res.stdout), res.stdout


def test_cli_refuses_to_write_over_tables_before_spark_starts(tmp_path: Path, monkeypatch) -> None:
    import kafka_tools.pipeline.session as session

    def no_spark(settings):
        raise AssertionError("Spark started although the command had to be refused")

    monkeypatch.setattr(session, "spark_session", no_spark)
    (tmp_path / "records").mkdir()
    code, _, stderr = ktool("scan", "--out", str(tmp_path), str(GENERATED / "v2"))
    assert (
        code == 2
        and stderr == f"ktool: {tmp_path} already holds records: choose another --out or add --overwrite\n"
    )
    code, _, stderr = ktool("scan", "--records", str(GENERATED / "v2"))
    assert code == 2 and "--records writes a table: give --out DIR" in stderr
    (tmp_path / "plain").write_text("not a directory")
    code, _, stderr = ktool("scan", "--out", str(tmp_path / "plain/tables"), str(GENERATED / "v2"))
    assert (
        code == 3 and stderr == f"ktool: --out {tmp_path}/plain/tables: cannot write there: Not a directory\n"
    )


def test_overwrite_leaves_no_table_of_an_earlier_scan(spark, tmp_path: Path) -> None:
    out = tmp_path / "t"
    code, _, stderr = ktool("scan", "--out", str(out), "--records", "--offsets-topic", str(KAFKA09))
    assert code == 0, stderr
    assert sorted(p.name for p in out.iterdir()) == ["batches", "findings", "offsets", "records", "segments"]
    code, _, stderr = ktool(
        "scan", "--out", str(out), "--overwrite", "--format", "json", str(KAFKA09 / "plain-0")
    )
    assert code == 0, stderr
    assert "removed the earlier segments, batches, findings, records, offsets tables" in stderr
    assert sorted(p.name for p in out.iterdir()) == ["batches", "findings", "segments"]
    rows = [json.loads(line) for f in sorted((out / "segments").glob("part-*.json")) for line in f.open()]
    assert [r["file"].rsplit("/", 2)[-2] for r in rows] == ["plain-0"]
    # JSON tables keep every column, null or not (Spark's writer drops nulls unless told otherwise).
    assert rows[0]["first_invalid_position"] is None and rows[0]["records"] == 30


def test_out_on_a_hadoop_filesystem_is_checked_and_cleared_there(spark, tmp_path: Path) -> None:
    from kafka_tools.errors import UsageError
    from kafka_tools.pipeline.job import prepare_out_dir

    (tmp_path / "segments").mkdir()
    (tmp_path / "segments" / "part-0.parquet").write_bytes(b"old")
    uri = f"file://{tmp_path}"
    assert prepare_out_dir(ScanOptions(out="hdfs://namenode/x"), None) == []  # before Spark: not yet
    with pytest.raises(UsageError, match="already holds segments"):
        _hadoop(spark, ScanOptions(out=uri))
    assert _hadoop(spark, ScanOptions(out=uri, overwrite=True)) == ["segments"]
    assert not (tmp_path / "segments").exists()


def _hadoop(spark, options: ScanOptions) -> list[str]:
    """`prepare_out_dir` on Hadoop's FileSystem (a file:// --out is otherwise handled as a local path)."""
    from kafka_tools.pipeline import job

    return job._prepare_hadoop(options, spark)


def test_interrupt_is_one_line_exit_130_and_no_log_left(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("java is not installed")
    import signal

    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    env["TMPDIR"] = str(tmp_path)  # where Spark's log would stay behind
    out = tmp_path / "t"
    target = REALWORLD if REALWORLD.is_dir() else KAFKA09
    proc = subprocess.Popen(
        [sys.executable, "-c", _MAIN, "scan", "--no-progress", "--records", "--out", str(out), str(target)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not (out / "batches").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # Spark creates the first table's directory as its job starts
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the scan finished before the interrupt arrived")
    assert (proc.returncode, stderr) == (130, "ktool: interrupted\n")
    assert not list(tmp_path.glob("ktool-spark-*.log"))


# -- failing clearly, in a fresh interpreter ----------------------------------------------------------

_MAIN = "from kafka_tools.cli.main import main\nmain()\n"


def _run_fresh(args: list[str], env: dict[str, str], timeout: float = 60) -> tuple[int, str, float]:
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", _MAIN, *args], env=env, capture_output=True, text=True, timeout=timeout
    )
    return proc.returncode, proc.stderr, time.monotonic() - t0


def _no_java_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_GATEWAY_PORT")}
    env["PATH"] = str(tmp_path)  # no java on it (ktool runs by absolute path)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    return {**env, **extra}


def test_missing_java_is_one_line_and_exit_3(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    code, stderr, _ = _run_fresh(
        ["scan", str(GENERATED / "v2")], _no_java_env(tmp_path, JAVA_HOME="/nonexistent")
    )
    assert code == 3
    assert stderr.strip().splitlines() == [
        "ktool: Java not found: JAVA_HOME=/nonexistent has no bin/java (Spark needs Java 17 or newer)"
    ]
    code, stderr, _ = _run_fresh(["scan", str(GENERATED / "v2")], _no_java_env(tmp_path))
    assert code == 3 and stderr.strip().splitlines() == [
        "ktool: Java not found: Spark needs Java 17 or newer (install it, or set JAVA_HOME)"
    ]


def test_unreachable_master_is_one_line_and_exit_3_quickly() -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("java is not installed")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    code, stderr, seconds = _run_fresh(
        ["scan", "--master", f"spark://127.0.0.1:{port}", str(GENERATED / "v2")], env
    )
    assert code == 3
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"ktool: Spark master spark://127.0.0.1:{port} unreachable"
    )
    assert seconds < 30


def test_uris_are_read_through_spark(spark, tmp_path: Path) -> None:
    """A file:// URI given to `plan_remote` takes the hdfs:// / s3a:// road: listed by Hadoop's
    FileSystem in the JVM, each segment read whole with binaryFiles and checked on its own."""
    from kafka_tools.pipeline.job import run_scan
    from kafka_tools.pipeline.remote import plan_remote

    uris = [
        f"file://{(GENERATED / 'v2').resolve()}",
        f"file://{KAFKA09.resolve()}",
        f"file://{GENERATED.resolve()}/corrupt",
    ]
    plan = plan_remote(spark, uris)
    result = run_scan(spark, plan, ScanOptions(out=str(tmp_path / "t"), records=True, offsets_topic=True))
    files = [spec.file.removeprefix("file:") for spec in plan.segments]
    expected = validate_paths(files, ValidateOptions())  # each segment as a file given on its own
    strip = lambda keys: sorted((k[0].removeprefix("file:"), *k[1:]) for k in keys)  # noqa: E731
    assert strip(_finding_keys(result.validation.all_findings())) == strip(
        _finding_keys(expected.all_findings())
    )
    for spec, row in zip(plan.segments, result.segments, strict=True):
        entries, records, _ = _dump_log(spec.file.removeprefix("file:"))
        assert (row["batches"], row["records"]) == (entries, records), spec.file
    assert {t.name: t.rows for t in result.tables}["records"] == sum(r["records"] for r in result.segments)
    committed = {(c.group, c.topic, c.partition): c.offset for c in result.committed}
    assert committed == independent_commits(plan_scan([KAFKA09]))
    assert {p.name for p in result.partitions} >= {"segmented-0", "gzip-0", "__consumer_offsets-0"}
    assert len([p for p in result.partitions if p.name == "gzip-0"]) == 2  # v2's and Kafka 0.9's
