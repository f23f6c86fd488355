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

from kafka_tools.format.internal_topics import decode_consumer_offsets
from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.reads.dump import dump_file
from kafka_tools.log.reads.dump_events import DumpOptions, EntryEvent, FileEnd
from kafka_tools.log.reads.internal_records import kafka_type_name
from kafka_tools.log.validate import validate_paths
from kafka_tools.pipeline import ScanOptions, ScanPlan, ScanResult, plan_scan
from kafka_tools.pipeline.local import scan_in_process
from tests.independent import FIXTURES, REALWORLD, ROOT
from tests.support.script import run_script

GENERATED = FIXTURES / "generated"
KAFKA09 = FIXTURES / "kafka-0.9.0.1/logdir"
PATHS = [GENERATED / d for d in ("v0", "v1", "v2", "kafka07", "corrupt")] + [KAFKA09]
SPLIT = 2048  # tiny fixtures: split them anyway, so that ranges of one segment meet again
PACK = 64 * 1024

LIGHT_JVM = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"  # the tests' Spark JVMs (drivers, executors)

# Every test here needs Spark: the session fixture, a standalone cluster, or a scan in a subprocess.
pytestmark = pytest.mark.spark


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
    # C1 and the serial collector, as the test brokers and the standalone cluster's daemons: the session's
    # JVM runs seconds of work on small inputs, and C2's compiler threads were CPU spent for nothing
    conf = {"spark.sql.shuffle.partitions": "2", "spark.driver.extraJavaOptions": LIGHT_JVM}
    handle = start(SparkSettings(master="local[2]", conf=conf))
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
    progress: list[tuple[int, int, int, int]]


@pytest.fixture(scope="module")
def scanned(spark, tmp_path_factory) -> Scanned:
    from kafka_tools.pipeline.job import run_scan
    from tests.metadata.kraft_log import story, write_log_dir

    # A KRaft log built here, the story told twice: 4 KB, so that SPLIT cuts it into several ranges
    # also where ../shared/realworld (whose KRaft logs are larger) is absent.
    kraft = write_log_dir(tmp_path_factory.mktemp("kraft") / "kraft-logdir", entries=story() * 2)
    paths = PATHS + [kraft] + ([REALWORLD] if REALWORLD.is_dir() else [])
    out = tmp_path_factory.mktemp("scan") / "tables"
    options = ScanOptions(
        out=str(out),
        records=True,
        offsets_topic=True,
        cluster_metadata=True,
        split_bytes=SPLIT,
        pack_bytes=PACK,
    )
    plan = plan_scan(paths)
    calls: list[tuple[int, int, int, int]] = []
    result = run_scan(spark, plan, options, progress=lambda *counts: calls.append(counts))
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


def test_cluster_metadata_table_is_the_single_process_decode(scanned: Scanned, spark) -> None:
    """`--cluster-metadata`: one row per KRaft record, decoded in ranges by the executors, equal to
    what `ktool metadata` reads from each segment in one process."""
    from kafka_tools.metadata.load import iter_file_records
    from kafka_tools.pipeline.metadata_records import fields_json

    rows = spark.read.parquet(str(scanned.out / "metadata")).collect()
    got = sorted(
        (r["file"], r["offset"], r["is_control"], r["record_type"], r["version"], r["known"], r["fields"])
        for r in rows
        if r["error"] is None
    )
    expected, undecodable = [], []
    specs = [s for s in scanned.plan.segments if s.topic == "__cluster_metadata"]
    for spec in specs:
        findings: list = []
        for offset, control, m in iter_file_records(Path(spec.path), findings):
            expected.append(
                (
                    spec.file,
                    offset,
                    control,
                    kafka_type_name(m.type_name),  # the name dump-log prints
                    m.version,
                    m.known,
                    fields_json(m.type_name, m.fields),
                )
            )
        undecodable += [(spec.file, f.offset) for f in findings if f.kind == "record-undecodable"]
    assert got == sorted(expected)
    assert sorted((r["file"], r["offset"]) for r in rows if r["error"]) == sorted(undecodable)
    assert len(specs) >= 1 and len(got) >= 30
    assert any(r["record_type"] == "PARTITION_CHANGE_RECORD" for r in rows)
    assert not any("SALT" in (r["fields"] or "") or "salt" in (r["fields"] or "") for r in rows)
    assert sum(r["ranges"] > 1 for r in scanned.result.segments if "__cluster_metadata" in r["file"]) >= 1


def test_tables_read_back(scanned: Scanned, spark) -> None:
    from kafka_tools.pipeline import tables

    result = scanned.result
    written = {t.name: t for t in result.tables}
    assert set(written) == {"segments", "batches", "records", "offsets", "metadata", "findings"}
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


def test_spark_progress_is_one_count_of_tasks_and_bytes(scanned: Scanned) -> None:
    assert scanned.progress
    done, total, nbytes, bytes_total = scanned.progress[-1]
    assert 0 < done == total >= scanned.result.tasks
    assert all(d <= t for d, t, _, _ in scanned.progress)
    # --records: every range decoded twice, so every segment byte counted twice, once finished
    assert nbytes == bytes_total == 2 * scanned.plan.bytes
    seen = [b for _, _, b, _ in scanned.progress]
    assert seen == sorted(seen)


def test_spark_and_one_process_agree(scanned: Scanned) -> None:
    options = ScanOptions(offsets_topic=True, split_bytes=SPLIT, pack_bytes=PACK)
    local = scan_in_process(scanned.plan, options)
    assert local.segments == scanned.result.segments
    assert local.partitions == scanned.result.partitions
    assert local.committed == scanned.result.committed


def _parquet_rows(path: str | Path) -> list[str]:
    import pyarrow.parquet as pq

    return sorted(repr(tuple(r.values())) for r in pq.read_table(path).to_pylist())


def test_in_process_tables_are_sparks_row_for_row(scanned: Scanned, spark, tmp_path: Path) -> None:
    """Without --master a small input is scanned in this process, its tables written with pyarrow: the
    same tables, columns, Spark types and rows as the Spark job's."""
    from dataclasses import replace

    out = tmp_path / "tables"
    local = scan_in_process(scanned.plan, replace(scanned.options, out=str(out)))
    assert local.segments == scanned.result.segments and local.committed == scanned.result.committed
    assert {t.name: t.rows for t in local.tables} == {t.name: t.rows for t in scanned.result.tables}
    for t in scanned.result.tables:
        mine = out / t.name
        assert spark.read.parquet(str(mine)).schema == spark.read.parquet(t.path).schema, t.name
        assert _parquet_rows(mine) == _parquet_rows(t.path), t.name
    assert sum(t.rows or 0 for t in local.tables) >= 3000


def test_compression_is_every_tables_codec_and_spark_reads_them(spark, tmp_path: Path) -> None:
    """`--compression lz4` on Spark: the table Spark's writer makes (batches), the records parts the
    tasks write and the small tables the driver writes with pyarrow (segments, findings) all in
    parquet's LZ4_RAW, read back by Spark as the in-process scan's snappy tables."""
    from kafka_tools.pipeline.job import run_scan

    plan = plan_scan([GENERATED / "v2"])
    options = ScanOptions(
        out=str(tmp_path / "lz4"), records=True, split_bytes=SPLIT, pack_bytes=PACK, compression="lz4"
    )
    result = run_scan(spark, plan, options)
    scan_in_process(plan, ScanOptions(out=str(tmp_path / "snappy"), records=True, split_bytes=SPLIT))
    assert {t.name for t in result.tables} == {"batches", "records", "segments", "findings"}
    for t in result.tables:
        parts = sorted(Path(t.path).glob("part-*"))
        assert parts and all(p.name.endswith(".lz4raw.parquet") for p in parts), t.name
        assert _parquet_rows(t.path) == _parquet_rows(tmp_path / "snappy" / t.name), t.name
        assert spark.read.parquet(t.path).count() == t.rows, t.name


# -- the command ------------------------------------------------------------------------------------


def ktool(*args: str) -> tuple[int, str, str]:
    from kafka_tools.cli.main import cli

    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_cli_json_and_json_tables(spark, tmp_path: Path) -> None:
    out = tmp_path / "t"
    code, stdout, stderr = ktool(
        "scan", "--json", "--master", "local[2]", "--out", str(out), "--format", "json", "--records",
        "--offsets-topic", str(KAFKA09),
    )  # fmt: skip
    assert code == 0, stderr
    from kafka_tools.render.contract import problems

    assert problems("scan", stdout.splitlines()) == []  # the --json contract of every command
    objs = [json.loads(line) for line in stdout.splitlines()]
    kinds = defaultdict(list)
    for o in objs:
        kinds[o["type"]].append(o)
    assert objs[-1]["type"] == "summary" and objs[-1]["errors"] == 0 and objs[-1]["corrupt"] is False
    assert {p["dir"] for p in kinds["partition"]} == {
        "__consumer_offsets-0",
        "gzip-0",
        "lz4-0",
        "plain-0",
        "segmented-0",
        "snappy-0",
    }
    plain = next(p for p in kinds["partition"] if p["dir"] == "plain-0")
    assert (plain["topic"], plain["partition"]) == ("plain", 0)  # the partition an integer, as everywhere
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
    code, stdout, _ = ktool("scan", "--master", "local[2]", str(GENERATED / "v2"))
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
        code == 3 and stderr == f"ktool: --out {tmp_path}/plain/tables: cannot write there: not a directory\n"
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


def test_out_on_a_hadoop_filesystem_is_checked_and_its_swap_finished_there(spark, tmp_path: Path) -> None:
    from kafka_tools.errors import UsageError
    from kafka_tools.pipeline import out_swap
    from kafka_tools.pipeline.output import prepare_out_dir

    (tmp_path / "segments").mkdir()
    (tmp_path / "segments" / "part-0.parquet").write_bytes(b"old")
    uri = f"file://{tmp_path}"
    assert prepare_out_dir(ScanOptions(out="hdfs://namenode/x"), None).existing == []  # before Spark: not yet
    with pytest.raises(UsageError, match="already holds segments"):
        _hadoop(spark, ScanOptions(out=uri))
    assert _hadoop(spark, ScanOptions(out=uri, overwrite=True)).existing == ["segments"]
    assert (tmp_path / "segments" / "part-0.parquet").read_bytes() == b"old"  # kept until the new one is in
    # A scan killed through Hadoop's FileSystem: one unfinished staging directory, one recorded swap.
    (tmp_path / "_ktool-staging-000000000000" / "batches").mkdir(parents=True)
    staging = tmp_path / "_ktool-staging-111111111111"
    (staging / "segments").mkdir(parents=True)
    (staging / "segments" / "part-0.parquet").write_bytes(b"new")
    (staging / "_ktool-swap").mkdir()
    (staging / "_ktool-swap" / "new.segments").touch()
    (staging / "_ktool-swap" / "old.segments").touch()
    prepared = _hadoop(spark, ScanOptions(out=uri, overwrite=True))
    assert prepared.existing == ["segments"] and len(prepared.said) == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["segments"]
    assert (tmp_path / "segments" / "part-0.parquet").read_bytes() == b"new"
    # And a swap run through it from the start.
    staging.mkdir()
    (staging / "segments").mkdir()
    (staging / "segments" / "part-0.parquet").write_bytes(b"newer")
    files = out_swap.HadoopFiles(spark)
    out_swap.swap(files, uri, f"{uri}/{staging.name}", ["segments"], ["segments"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["segments"]
    assert (tmp_path / "segments" / "part-0.parquet").read_bytes() == b"newer"


def test_a_spark_scan_that_fails_keeps_the_earlier_tables_and_one_that_finishes_replaces_them(
    spark, tmp_path: Path, monkeypatch
) -> None:
    from kafka_tools.errors import InputError
    from kafka_tools.pipeline import job
    from tests.pipeline.test_scan_overwrite import tables_of

    out = tmp_path / "t"
    scan_in_process(plan_scan([KAFKA09]), ScanOptions(out=str(out), records=True, offsets_topic=True))
    before = tables_of(out)
    real = job.write_driver_tables

    def full_disk(*args, **kwargs):  # the tasks' tables written into the staging directory, then this
        raise InputError("cannot write the segments table: No space left on device")

    monkeypatch.setattr(job, "write_driver_tables", full_disk)
    options = ScanOptions(out=str(out), overwrite=True, split_bytes=SPLIT)
    with pytest.raises(InputError, match="No space left"):
        job.run_scan(spark, plan_scan([KAFKA09 / "plain-0"]), options)
    assert tables_of(out) == before  # every earlier table, whole, and no staging directory
    monkeypatch.setattr(job, "write_driver_tables", real)
    result = job.run_scan(spark, plan_scan([KAFKA09 / "plain-0"]), options)
    assert result.replaced == ["segments", "batches", "findings", "records", "offsets"]
    assert sorted(tables_of(out)) == ["batches", "findings", "segments"]
    assert len(tables_of(out)["batches"]) == 30


def _hadoop(spark, options: ScanOptions):
    """`prepare_out_dir` on Hadoop's FileSystem (a file:// --out is otherwise handled as a local path)."""
    from kafka_tools.pipeline import output

    return output._prepare_hadoop(options, spark)


def test_interrupt_is_one_line_exit_130_and_no_log_left(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("java is not installed")
    import signal

    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    env["PYTHONPATH"] = str(ROOT)
    env["TMPDIR"] = str(tmp_path)  # where Spark's log would stay behind
    out = tmp_path / "t"
    target = REALWORLD if REALWORLD.is_dir() else KAFKA09
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kafka_tools",  # the program's own entry: its signal deadline armed, as the console script's
            "scan",
            "--master",
            "local[2]",
            "--no-progress",
            "--records",
            "--out",
            str(out),
        ]
        + [str(target)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not list(out.glob("_ktool-staging-*/batches")) and proc.poll() is None:
        time.sleep(0.05)  # Spark creates the first table's directory as its job starts
        if time.monotonic() > deadline:
            break
    tree = _descendants(proc.pid)  # Spark's JVM among them
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    ended = time.monotonic() - sent
    if proc.returncode == 0:
        pytest.skip("the scan finished before the interrupt arrived")
    assert (proc.returncode, stderr) == (130, "ktool: interrupted\n")
    # ktool's promise is 1 s (its deadline); 2 s is what tests/cli/test_signals.py allows a loaded machine.
    # The JVM ends when its stdin does, with ktool: its shutdown hooks took 0.4 s at a load of 10.
    assert ended <= 2.0, f"ktool ended {ended:.2f} s after the signal"
    assert tree, "the scan started no JVM"
    assert _gone(tree, within=5) == [], "Spark's JVM outlived ktool by 5 s"
    assert not list(tmp_path.glob("ktool-spark-*.log"))
    assert list(out.iterdir()) == []  # no table, complete or not: they are moved in at the very end


def _descendants(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children = [int(c) for c in f.read().split()]
        except OSError:
            continue
        for child in children:
            found += [child, *_descendants(child)]
    return found


def _gone(pids: list[int], within: float) -> list[int]:
    """The processes of `pids` still alive (not zombies) after waiting up to `within` s for them."""
    deadline = time.monotonic() + within
    while True:
        alive = []
        for pid in pids:
            try:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                        alive.append(pid)
            except OSError:
                pass
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


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
    env["PYTHONPATH"] = str(ROOT)
    return {**env, **extra}


def test_missing_java_is_one_line_and_exit_3(tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    code, stderr, _ = _run_fresh(
        ["scan", "--master", "local[1]", str(GENERATED / "v2")],
        _no_java_env(tmp_path, JAVA_HOME="/nonexistent"),
    )
    assert code == 3
    assert stderr.strip().splitlines() == [
        "ktool: Java not found: JAVA_HOME=/nonexistent has no bin/java (Spark needs Java 17 or newer)"
    ]
    code, stderr, _ = _run_fresh(
        ["scan", "--master", "local[1]", str(GENERATED / "v2")], _no_java_env(tmp_path)
    )
    assert code == 3 and stderr.strip().splitlines() == [
        "ktool: Java not found: Spark needs Java 17 or newer (install it, or set JAVA_HOME)"
    ]
    # Without --master a small input needs no Java at all: it is scanned in this process.
    code, stderr, _ = _run_fresh(["scan", str(GENERATED / "v2")], _no_java_env(tmp_path))
    assert (code, stderr) == (0, "")


def test_unreachable_master_is_one_line_and_exit_3_quickly() -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("java is not installed")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    env["PYTHONPATH"] = str(ROOT)
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


def _has_extension() -> bool:
    from kafka_tools.pipeline.shipped import built_extension

    return built_extension() is not None


def test_installed_in_a_virtualenv_not_activated_workers_run_ktools_python(tmp_path: Path) -> None:
    """ktool installed into a virtualenv and run as `venv/bin/ktool`, not activated (as pipx runs it),
    with a `python3` first on PATH that has none of ktool's dependencies: Spark's Python workers must
    run ktool's interpreter, and nothing but ktool's output reaches the terminal."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        _unavailable("java is not on PATH")
    pytest.importorskip("wheel", reason="pip builds ktool without build isolation (no network in tests)")
    root = ROOT
    src = tmp_path / "src"  # built from a copy: the build leaves nothing in the checkout
    shutil.copytree(
        root / "kafka_tools", src / "kafka_tools", ignore=shutil.ignore_patterns("*.so", "__pycache__")
    )
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(root / name, src / name)
    venv, bare = tmp_path / "venv", tmp_path / "bare"
    # ktool's dependencies come from the site-packages this interpreter was installed with; the
    # `python3` of `bare` sees none of them.
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", venv], check=True
    )
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", bare], check=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", venv / "bin/python", "install", "-q", "--no-deps"]
        + ["--no-build-isolation", "--no-index", src],
        check=True,
        capture_output=True,
    )
    assert subprocess.run([bare / "bin/python3", "-c", "import crc32c"], capture_output=True).returncode
    env = {"HOME": os.environ.get("HOME", str(tmp_path)), "TMPDIR": str(tmp_path)}
    env["PATH"] = os.pathsep.join(
        [str(bare / "bin"), os.path.dirname(shutil.which("java") or ""), "/usr/bin:/bin"]
    )
    if os.environ.get("JAVA_HOME"):
        env["JAVA_HOME"] = os.environ["JAVA_HOME"]
    proc = subprocess.run(
        [venv / "bin/ktool", "scan", "--json", "--master", "local[2]", str(GENERATED / "v2")],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert (proc.returncode, proc.stderr) == (0, "")
    summary = json.loads(proc.stdout.splitlines()[-1])
    assert summary["decoders"] == (["c"] if _has_extension() else ["python"])
    expected = scan_in_process(plan_scan([GENERATED / "v2"]), ScanOptions())
    assert (summary["segments"], summary["records"]) == (
        expected.summary.segments,
        sum(p.records for p in expected.partitions),
    )
    assert not list(tmp_path.glob("ktool-spark-*.log"))


# -- a real standalone cluster: a master and two workers started from the pyspark install ----------------


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("java is not installed")
    from tests.support.spark_cluster import StandaloneCluster

    with StandaloneCluster(workers=2, cores=1) as c:
        yield c


def _cluster_scan(cluster, *args: str) -> subprocess.Popen:
    """`ktool scan --master spark://…` in a fresh interpreter (this one holds the local session). The
    executors' Python is this interpreter; ktool itself reaches them as the zip the driver ships."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT", "PYSPARK_PYTHON")}
    env["PYTHONPATH"] = str(ROOT)
    cmd = [sys.executable, "-c", _MAIN, "scan", "--json", "--no-progress", "--master", cluster.url]
    cmd += ["--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=512m"]
    cmd += [
        "--conf",
        f"spark.driver.extraJavaOptions={LIGHT_JVM}",
        "--conf",
        f"spark.executor.extraJavaOptions={LIGHT_JVM}",
    ]
    return subprocess.Popen(
        cmd + list(args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _generated(tmp_path_factory, batches: int = 4000):
    """Gzip batches, seconds of work per 1 MiB task for pure-Python executors: by default ~17 MB, 1.6
    million records, a job that outlasts the master watch's 3 probes once its first task runs."""
    from tests.support.logs import write_log_dir

    root = tmp_path_factory.mktemp("gen") / "logdir"
    return write_log_dir(root, partitions=4, segments=2, batches=batches, codec=1)


# Byte ranges of 1 MiB, decoded by the pure-Python decoder: tasks long enough to be caught running.
SLOW = ("--split-size", "1", "--conf", "spark.executorEnv.KTOOL_PURE_PYTHON=1")


def _when_tasks_run(cluster, proc: subprocess.Popen, timeout: float = 240) -> int:
    """Wait until a Python worker runs under a worker (a task has started there); that worker's index."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        for i in range(len(cluster.workers)):
            if cluster.workers[i].poll() is None and cluster.python_workers_of(i):
                return i
        time.sleep(0.05)
    raise AssertionError(f"no task started on the cluster (ktool exited {proc.poll()})")


def test_cluster_scan_with_a_worker_killed_gives_the_local_runs_tables(
    cluster, scanned: Scanned, spark, tmp_path_factory, tmp_path: Path
) -> None:
    """One run on the cluster, over the fixtures (the local run's input) and a generated log dir; a
    worker is SIGKILLed as soon as a task runs on it. Spark runs its lost tasks again elsewhere: the
    tables are the local run's, row for row, and the summary counts the failed attempts."""
    from pyspark.sql.functions import col

    # 8 segments of 0.43 MB (a batch is 540 bytes), 160,000 records: 8 tasks of 20,000 records in pure
    # Python, about a second each, back to back on each executor, so the kill meets a running task; the
    # one worker left runs the rest alone (the default 17 MB made this test 91 s of CI, 1,500 batches a
    # segment 50 + 30 s of CPU)
    gen = _generated(tmp_path_factory, batches=800)
    out = tmp_path / "t"
    paths = [*map(str, scanned.paths), str(gen.path)]
    proc = _cluster_scan(cluster, "--out", str(out), "--records", "--offsets-topic", *SLOW, *paths)
    victim = _when_tasks_run(cluster, proc)
    cluster.kill_worker(victim)  # SIGKILL: the worker, its executor and its Python workers
    stdout, stderr = proc.communicate(timeout=600)
    cluster.start_worker(victim)  # back for the next test
    assert (proc.returncode, stderr) == (1, "")  # the corrupt fixtures: findings, exit 1
    objs = [json.loads(line) for line in stdout.splitlines()]
    summary = objs[-1]
    assert summary["master"] == cluster.url and summary["retriedTasks"] >= 1
    assert summary["decoders"] == ["python"]  # KTOOL_PURE_PYTHON on the executors: reported
    _, ref, _ = ktool("validate", "--json", *paths)
    assert [o for o in objs if o["type"] == "finding"] == [
        json.loads(line) for line in ref.splitlines() if '"type":"finding"' in line
    ]
    fixtures = ~col("file").startswith(str(gen.path))
    local = {t.name: t.path for t in scanned.result.tables}
    for name in ("batches", "records", "offsets", "findings", "segments"):
        mine, theirs = spark.read.parquet(str(out / name)), spark.read.parquet(local[name])
        if name == "segments":  # the split sizes differ: so do the ranges
            mine, theirs = mine.drop("ranges"), theirs.drop("ranges")
        if name != "offsets":
            mine = mine.filter(fixtures)
        assert mine.columns == theirs.columns and mine.count() == theirs.count() > 0, name
        assert mine.exceptAll(theirs).count() == 0 == theirs.exceptAll(mine).count(), name
    expected = scan_in_process(plan_scan([gen.path]), ScanOptions(split_bytes=1 << 20))
    segments = [r.asDict() for r in spark.read.parquet(str(out / "segments")).filter(~fixtures).collect()]
    assert sorted(segments, key=lambda r: r["file"]) == sorted(expected.segments, key=lambda r: r["file"])
    for name, column in (("batches", "position"), ("records", "offset")):
        rows = spark.read.parquet(str(out / name)).filter(~fixtures)
        distinct = rows.select("file", column).distinct().count()
        assert rows.count() == distinct == sum(r[name] for r in expected.segments), name  # each once
    assert gen.records == sum(r["records"] for r in expected.segments)
    assert (out / "segments" / "_SUCCESS").exists() and not list(out.glob("_ktool-staging-*"))


def test_a_master_gone_mid_scan_is_one_line_exit_3_and_no_table(cluster, tmp_path_factory, tmp_path) -> None:
    gen = _generated(tmp_path_factory)
    out = tmp_path / "t"
    cluster.wait_for_workers(1)
    proc = _cluster_scan(cluster, "--out", str(out), "--records", *SLOW, str(gen.path))
    _when_tasks_run(cluster, proc)
    cluster.kill_master()
    _, stderr = proc.communicate(timeout=300)
    assert (proc.returncode, stderr) == (
        3,
        f"ktool: Spark master {cluster.url} went away during the scan; the job was cancelled\n",
    )
    assert list(out.iterdir()) == []  # no table: neither a half-written one nor complete ones


def test_the_shipped_zip_and_extension_are_what_an_executor_runs(tmp_path: Path) -> None:
    """As on an executor without ktool: the zip first on sys.path, the C extension in Spark's files
    directory. The decoder found is the shipped extension; without it, the pure-Python one."""
    pytest.importorskip("pyspark")
    from kafka_tools.pipeline.session import package_zip
    from kafka_tools.pipeline.shipped import built_extension

    extension = built_extension()
    if extension is None:
        pytest.skip("ktool was installed without its C extension")
    zipped = package_zip()
    files = tmp_path / "spark-files"
    files.mkdir()
    shutil.copy(extension, files)
    probe = f"""
import os, sys
# A machine without ktool installed: no editable-install finder, no checkout on the path.
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in str(getattr(f, "__module__", ""))]
sys.path[:] = [p for p in sys.path if not os.path.isdir(os.path.join(p or ".", "kafka_tools"))]
sys.path.insert(0, {zipped!r})
from pyspark.files import SparkFiles
SparkFiles._root_directory, SparkFiles._is_running_on_worker = sys.argv[1], True
import kafka_tools.pipeline
from kafka_tools.format import accel, record_batch
from kafka_tools.pipeline.shipped import decoder_name
print(kafka_tools.pipeline.__file__, getattr(accel.C, "__file__", None), decoder_name(), sep="\\n")
"""
    try:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "KTOOL_PURE_PYTHON")}
        run = lambda d: subprocess.run(  # noqa: E731
            [sys.executable, "-c", probe, str(d)], env=env, cwd=tmp_path, capture_output=True, text=True
        )
        proc = run(files)
        got = proc.stdout.splitlines()
        assert got[0].startswith(zipped) and got[1].startswith(str(files)) and got[2] == "the C extension"
        (tmp_path / "empty").mkdir()
        assert run(tmp_path / "empty").stdout.splitlines()[1:] == ["None", "the pure-Python decoder"]
    finally:
        os.unlink(zipped)


# -- questions: --key, --key-regex, --value-contains, --producer-id, --time-from/--time-to, --topic; --sql ---


@pytest.fixture(scope="module")
def questioned(tmp_path_factory):
    from tests.support.logs import write_log_dir

    gen = write_log_dir(
        tmp_path_factory.mktemp("q") / "logdir", partitions=2, segments=10, batches=20, codec=1
    )
    return gen, [gen.path, *PATHS]


def _every_record(paths) -> list[tuple]:
    """(file, topic, offset, timestamp, key, value, producer id) of every record, read with kafka-python."""
    from tests.independent import read_with_kafka_python

    out = []
    for spec in plan_scan(paths).segments:
        if spec.kafka07 or spec.topic == "__consumer_offsets":
            continue
        try:
            batches = read_with_kafka_python(Path(spec.path))
        except Exception:  # noqa: BLE001 - a corrupt fixture kafka-python cannot read: leave it out
            continue
        for b in batches:
            for r in b.records:
                out.append((spec.file, spec.topic, r.offset, r.timestamp, r.key, r.value))
    return out


def test_questions_find_what_a_walk_over_every_record_finds(spark, questioned) -> None:
    import re

    from kafka_tools.pipeline.job import run_questions
    from kafka_tools.pipeline.questions import make_question
    from tests.support.logs import T0

    gen, paths = questioned
    plan = plan_scan(paths)
    clean = [p for p in paths if "corrupt" not in str(p)]
    every = _every_record(clean)
    hour = 3_600_000
    cases = [
        (make_question(keys=("k7",)), lambda r: r[4] == b"k7"),
        (make_question(key_regex=r"^k1\d$"), lambda r: r[4] is not None and re.match(rb"^k1\d$", r[4])),
        (make_question(value_contains="value-3-"), lambda r: r[5] is not None and b"value-3-" in r[5]),
        (
            make_question(keys=("k7",), time_from=str(T0 + 8 * hour), time_to=str(T0 + 9 * hour - 1)),
            lambda r: r[4] == b"k7" and T0 + 8 * hour <= r[3] <= T0 + 9 * hour - 1,
        ),
        (make_question(keys=("k7",), topics=("gen",)), lambda r: r[4] == b"k7" and r[1] == "gen"),
    ]
    for question, wanted in cases:
        answer = run_questions(spark, plan_scan(clean), question, ScanOptions(split_bytes=SPLIT), limit=None)
        got = sorted((m["file"], m["offset"]) for m in answer.matches)
        assert got == sorted((r[0], r[2]) for r in every if wanted(r)) and got, question
    # The time window of one hour of ten: nine segments of ten in each partition are not decoded.
    window = make_question(keys=("k7",), time_from=str(T0 + 9 * hour))
    answer = run_questions(spark, plan_scan([gen.path]), window, ScanOptions(), limit=None)
    assert answer.segments_decoded == 2 and answer.batches_decoded == 2 * gen.batches
    assert len(answer.matches) == 2 * gen.batches  # k7 once a batch
    assert answer.matches == sorted(answer.matches, key=lambda m: (m["topic"], m["partition"], m["offset"]))
    only = run_questions(spark, plan, make_question(keys=("k7",), topics=("gen",)), ScanOptions(), limit=None)
    assert (
        only.segments == 2 * gen.segments
        and only.segments_skipped_by_topic == len(plan.segments) - only.segments
    )


def test_cli_question_json_and_sql(spark, questioned) -> None:
    from tests.support.logs import T0

    gen, _ = questioned
    code, stdout, stderr = ktool(
        "scan", "--json", "--key", "k7", "--time-from", str(T0 + 9 * 3_600_000), "--limit", "3", str(gen.path)
    )
    assert (code, stderr) == (0, "")
    objs = [json.loads(line) for line in stdout.splitlines()]
    assert [o["type"] for o in objs] == ["match"] * 3 + ["summary"]
    first = objs[0]
    assert set(first) == {
        "type", "topic", "partition", "offset", "timestamp", "key", "valueSize", "valuePreview",
        "producerId", "file", "position",
    }  # fmt: skip
    assert (first["topic"], first["partition"], first["key"]) == ("gen", 0, "k7")
    assert (
        first["offset"] == 9 * gen.batches * gen.records_per_batch + 7
        and first["timestamp"] >= T0 + 9 * 3_600_000
    )
    assert objs[-1]["truncated"] is True and objs[-1]["segmentsDecoded"] == 2
    code, _, stderr = ktool("scan", "--key-regex", "(", str(gen.path))
    assert code == 2 and stderr.startswith("ktool: --key-regex '(': ")
    code, _, stderr = ktool("scan", "--topic", "gen", str(gen.path))
    assert code == 2 and "--topic narrows a question" in stderr
    query = "SELECT topic, count(*) AS n, max(offset) AS last FROM records GROUP BY topic ORDER BY topic"
    code, stdout, stderr = ktool("scan", "--json", "--sql", query, str(KAFKA09))
    assert (code, stderr) == (0, "")
    objs = [json.loads(line) for line in stdout.splitlines()]
    assert [o["type"] for o in objs] == ["row"] * (len(objs) - 1) + ["summary"]
    assert objs[-1] == {
        "type": "summary",
        "rows": len(objs) - 1,
        "columns": ["topic", "n", "last"],
        "errors": 0,
    }
    got = {o["row"]["topic"]: (o["row"]["n"], o["row"]["last"]) for o in objs[:-1]}
    expected: dict[str, list[int]] = defaultdict(list)
    for spec in plan_scan([KAFKA09]).segments:
        expected[spec.topic] += _dump_log(spec.file)[2]
    assert got == {t: (len(offs), max(offs)) for t, offs in expected.items()}
    # the query answers over damaged data too; the damage the scan found is still counted
    damaged = GENERATED / "corrupt" / "v2-flipped-record-byte-0"
    code, stdout, stderr = ktool("scan", "--json", "--sql", "SELECT kind FROM findings", str(damaged))
    objs = [json.loads(line) for line in stdout.splitlines()]
    assert code == 1 and "crc-mismatch" in [o["row"]["kind"] for o in objs[:-1]]
    assert objs[-1]["errors"] >= 1 and stderr.startswith("ktool: corrupt: ")
    code, _, stderr = ktool("scan", "--sql", "SELECT nope FROM segments", str(KAFKA09 / "plain-0"))
    assert code == 2 and stderr.startswith("ktool: --sql: ") and len(stderr.splitlines()) == 1


# -- bad input on the executors' side: one line, exit 3, Java's stack traces only in Spark's log ------------


def test_a_worker_without_a_compression_library_is_one_line_and_exit_3(tmp_path: Path) -> None:
    """The executors' Python lacks zstandard (a stub that fails to import, as on a machine without
    it); the v2 fixtures hold zstd batches. (Not python-snappy: snappy is decoded in C first.)"""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("java is not installed")
    stub = tmp_path / "stub" / "zstandard"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'zstandard'\", name='zstandard')\n"
    )
    python = tmp_path / "python"
    python.write_text(f'#!/bin/sh\nPYTHONPATH={tmp_path / "stub"}:$PYTHONPATH exec {sys.executable} "$@"\n')
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT", "PYSPARK_PYTHON")}
    env["PYTHONPATH"] = str(ROOT)
    log = tmp_path / "spark.log"
    args = [
        "scan",
        "--master",
        "local[1]",
        "--spark-log",
        str(log),
        "--conf",
        f"spark.pyspark.python={python}",
        str(GENERATED / "v2"),
    ]
    code, stderr, _ = _run_fresh(args, env, timeout=300)
    assert code == 3 and stderr == (
        "ktool: an executor's Python has no module 'zstandard': install ktool's dependencies on every worker "
        "(crc32c, lz4, python-snappy, zstandard, pyarrow), or point spark.pyspark.python at a Python that "
        "has them\n"
    )
    assert "ModuleNotFoundError" in log.read_text()  # the whole story stays in the log named


def test_a_segment_the_executors_cannot_see_is_one_line_and_exit_3(spark, tmp_path: Path) -> None:
    """A path that exists on the driver only (the executors of a cluster without shared storage):
    listed here, gone where the task opens it."""
    from kafka_tools.errors import InputError
    from kafka_tools.pipeline.job import run_scan

    shutil.copytree(GENERATED / "v2" / "gzip-0", tmp_path / "gzip-0")
    plan = plan_scan([tmp_path / "gzip-0"])
    logs = list((tmp_path / "gzip-0").glob("*.log"))
    assert logs
    for f in logs:
        f.unlink()
    with pytest.raises(InputError) as err:
        run_scan(spark, plan, ScanOptions())
    assert str(err.value).startswith("an executor could not read its input: FileNotFoundError: ")
    assert str(err.value).endswith("(every worker must see the segments at the driver's path, or give URIs)")
    assert "\n" not in str(err.value)


def test_a_master_that_does_not_resolve_is_one_line_and_exit_3() -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("java is not installed")
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_GATEWAY_PORT"}
    env["PYTHONPATH"] = str(ROOT)
    code, stderr, _ = _run_fresh(
        ["scan", "--master", "spark://no-such-host.invalid:7077", str(GENERATED / "v2")], env
    )
    assert code == 3 and len(stderr.splitlines()) == 1
    assert stderr.startswith(
        "ktool: Spark master spark://no-such-host.invalid:7077 unreachable (no-such-host.invalid:7077: "
    )


# -- progress: one bar on a terminal, nothing when stderr is piped ----------------------------------------


def test_on_a_terminal_one_bar_counts_tasks_and_bytes(tmp_path: Path) -> None:
    """stderr on a pseudo-terminal (stdout piped, as `ktool scan --json … | jq` runs): the bar is drawn,
    and its last state counts every task and every segment byte."""
    import pty
    import re

    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        _unavailable("java is not installed")
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYSPARK_GATEWAY_PORT", "FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR", "TERM")
    }
    env.update(PYTHONPATH=str(ROOT), COLUMNS="160", TERM="xterm")
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", _MAIN, "scan", "--json", str(GENERATED / "v2")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the process closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    stdout = proc.stdout.read().decode() if proc.stdout else ""
    assert proc.wait(timeout=300) == 0
    summary = json.loads(stdout.splitlines()[-1])
    assert summary["type"] == "summary"
    screen = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(chunks).decode(errors="replace"))
    from rich.filesize import decimal

    n, size = summary["tasks"], decimal(summary["bytes"])
    assert re.search(rf"scanning .* {n}/{n} tasks {re.escape(size)} of {re.escape(size)}", screen), screen
