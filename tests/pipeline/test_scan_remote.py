"""`ktool scan` of URIs on a real standalone cluster (a master and a worker started from the pyspark
install): segments read by Spark (`remote.RemoteFiles`, the road of hdfs:// and s3a:// inputs, whose
workers share no filesystem with the driver), their tables the same, row for row, as the in-process
scan of the same files by path (records, batches, KRaft metadata, offsets; a question's matches); and
the segments' tables built on the Arrow road — Spark's `binaryFile` source into
`mapInArrow`, the `records` rows made in C — never as pickled Python rows (the plans in Spark's
event log say which road a table took).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_tools.pipeline import ScanOptions, plan_scan
from kafka_tools.pipeline.local import answer_in_process, scan_in_process
from kafka_tools.pipeline.questions import make_question
from tests.independent import FIXTURES, REALWORLD, ROOT

GENERATED = FIXTURES / "generated"
PATHS = [GENERATED / d for d in ("v0", "v1", "v2", "kafka07", "corrupt")] + [
    FIXTURES / "kafka-0.9.0.1/logdir"
]
PATHS += [REALWORLD / d for d in ("kafka-2.x-logdir", "kraft") if (REALWORLD / d).is_dir()]
# The driver, in a fresh interpreter (so that a session of this one's tests cannot be reused): URIs
# are planned as the CLI plans hdfs:// ones (`plan_remote`; the CLI reads a file:// URI as a path).
_DRIVER = """
import json, sys
from kafka_tools.pipeline import ScanOptions
from kafka_tools.pipeline.job import run_questions, run_scan
from kafka_tools.pipeline.questions import make_question
from kafka_tools.pipeline.remote import plan_remote
from kafka_tools.pipeline.session import SparkSettings, start

asked = json.loads(sys.argv[1])
handle = start(SparkSettings(master=asked["master"], conf=asked["conf"]))
plan = plan_remote(handle.spark, asked["uris"])
if "question" in asked:
    question = make_question(*asked["question"])
    answer = run_questions(handle.spark, plan, question, ScanOptions(), asked["limit"])
    got = {"matches": answer.matches, "batches": answer.batches, "decoded": answer.batches_decoded}
else:
    options = ScanOptions(out=asked["out"], records=True, cluster_metadata=True, offsets_topic=True)
    result = run_scan(handle.spark, plan, options)
    got = {"decoders": result.decoders, "rows": {t.name: t.rows for t in result.tables}}
handle.spark.stop()
print(json.dumps({"master": handle.master, **got}, default=repr))
"""

# a standalone cluster, ktool on it in a subprocess
pytestmark = [pytest.mark.spark, pytest.mark.spark_cluster]


@pytest.fixture(scope="module")
def cluster():
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        if os.environ.get("CI"):
            pytest.fail("java is not installed (prerequisites must be installed in CI)", pytrace=False)
        pytest.skip("java is not installed")
    from tests.support.spark_cluster import StandaloneCluster

    with StandaloneCluster(workers=1, cores=2) as c:
        yield c


def _uris() -> list[str]:
    return [f"file://{p.resolve()}" for p in PATHS]


def _on_cluster(cluster, events: Path, conf: dict | None = None, **asked) -> dict:
    """The driver above over the fixtures' URIs on `cluster`, Spark's event log (the plans of its
    jobs) written under `events`; what it printed."""
    events.mkdir()
    conf = (conf or {}) | {
        "spark.pyspark.python": sys.executable,
        "spark.executor.memory": "512m",
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": f"file://{events}",
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
    }
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_GATEWAY_PORT", "PYSPARK_PYTHON")}
    env["PYTHONPATH"] = str(ROOT)
    asked = {"master": cluster.url, "conf": conf, "uris": _uris(), **asked}
    proc = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(asked)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.splitlines()[-1])


def _plans(events: Path) -> list[str]:
    """The physical plans of the SQL executions Spark's event log holds."""
    plans = []
    for log in events.iterdir():  # one file (not rolled, not compressed)
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("Event", "").endswith("SparkListenerSQLExecutionStart"):
                plans.append(event["physicalPlanDescription"])
    return plans


def _arrow_road(plan: str) -> bool:
    """Segments read by the binaryFile source, rows made by Python as Arrow batches; no Python rows
    (an RDD of pickled rows shows as `Scan ExistingRDD`)."""
    return "MapInArrow" in plan and "binaryFile" in plan and "ExistingRDD" not in plan


def _rows(directory: Path) -> list[dict]:
    """A table's rows, `file` as a path (a URI's `file:` dropped), in one order (any total order: the
    lists are compared as multisets)."""
    import pyarrow.parquet as pq

    rows = pq.read_table(directory).to_pylist()
    for row in rows:
        row["file"] = row["file"].removeprefix("file:")
    return sorted(rows, key=repr)


def test_tables_of_uris_are_the_in_process_ones(cluster, tmp_path: Path) -> None:
    """Every segment in one task, one Arrow batch of files (Spark's input split as large as the input):
    the same partition's name in several log dirs (gzip-0 of v2 and of Kafka 0.9) side by side."""
    out = tmp_path / "remote"
    one_split = {"spark.sql.files.minPartitionNum": "1"}
    got = _on_cluster(cluster, tmp_path / "events", conf=one_split, out=str(out))
    assert got["master"] == cluster.url and got["decoders"] == ["the C extension"]

    local = tmp_path / "local"
    plan = plan_scan([p.resolve() for p in PATHS])
    options = ScanOptions(out=str(local), records=True, cluster_metadata=True, offsets_topic=True)
    expected = scan_in_process(plan, options)
    for name in ("records", "batches", "metadata", "offsets"):
        mine, theirs = _rows(out / name), _rows(local / name)
        assert len(mine) == len(theirs) == got["rows"][name] > 0, name
        assert mine == theirs, name
    records = _rows(out / "records")
    assert len(records) == sum(p.records for p in expected.partitions)
    assert any(r["headers"] for r in records)  # v2 headers came through
    # The segments' tables took the Arrow road (the records table: its rows made in C); `offsets`, a
    # replay grouped by partition, is still pickled rows.
    plans = _plans(tmp_path / "events")
    writes = [p for p in plans if any(f"/{name}, " in p for name in ("records", "batches", "metadata"))]
    assert len(writes) == 3 and all(_arrow_road(p) for p in writes), writes


def test_a_question_over_uris_is_answered_as_in_process(cluster, tmp_path: Path) -> None:
    """`--key-regex` (Python's `re` over the distinct keys) with a time window: the matches and the
    counts of the in-process answer over the same files by path."""
    asked = [[], "consumer|[0-9]$", None, None, None, "9999999999999", []]
    got = _on_cluster(cluster, tmp_path / "events", question=asked, limit=100000)
    assert got["master"] == cluster.url

    question = make_question(*asked)
    answer = answer_in_process(plan_scan([p.resolve() for p in PATHS]), question, ScanOptions(), 100000)
    expected = json.loads(json.dumps(answer.matches, default=repr))
    for match in got["matches"]:
        match["file"] = match["file"].removeprefix("file:")
    assert len(got["matches"]) == len(expected) > 10
    assert got["matches"] == expected
    assert (got["batches"], got["decoded"]) == (answer.batches, answer.batches_decoded)
    plans = _plans(tmp_path / "events")
    assert plans and all(_arrow_road(p) for p in plans), plans


def test_local_copies_of_one_partition_from_two_log_dirs_stay_apart(tmp_path: Path) -> None:
    from kafka_tools.pipeline.remote import local_copy
    from kafka_tools.pipeline.tasks import SegmentSpec

    specs = [SegmentSpec(f"hdfs://nn/{d}/gzip-0/00000000000000000000.log", "", "gzip", 0, 0, 1) for d in "ab"]
    with local_copy(specs, [b"a", memoryview(b"b")]) as local:
        assert [Path(s.path).read_bytes() for s in local] == [b"a", b"b"]
        assert [Path(s.path).parent.name for s in local] == ["gzip-0", "gzip-0"]
        assert [s.file for s in local] == [s.file for s in specs]
    assert not any(Path(s.path).exists() for s in local)
