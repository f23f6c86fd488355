"""Every cell of the exit-code matrix (kafka_tools/cli/exit_codes.py), run through the installed `ktool`
as a runbook runs it: the code, one line per problem on stderr and no traceback. A cell whose
situation needs a Kafka broker or Spark names the test that proves it instead (it must exist).

A new command is one row in MATRIX and one entry per cell here; the first test fails until both agree.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from kafka_tools.cli.exit_codes import MATRIX, SITUATIONS, readme_block
from tests.independent import ROOT
from tests.support.json_runs import GENERATED, KAFKA09, Place
from tests.support.script import run_script
from tests.support.servers import free_port

NOWHERE = "/nonexistent/ktool-test"
_RESET = ["groups", "reset-offsets", "g", "--bootstrap-server", "127.0.0.1:1"]  # the file is read first


@dataclass(frozen=True)
class Cell:
    """How to meet one situation: the arguments after `ktool` (built in a scratch Place), whether
    ZooKeeper must hold the test cluster, and text stdout must hold (the other inputs answered)."""

    args: Callable[[Place], list[str]]
    zookeeper: bool = False
    stdout_has: str = ""


def _fifo_partition(p: Place) -> Path:
    """A log dir whose one partition's segment is a FIFO (a file that cannot be read as one)."""
    part = p.tmp / "fifo-logs" / "stuck-0"
    if not part.exists():
        part.mkdir(parents=True)
        os.mkfifo(part / "00000000000000000000.log")
    return part


def _tiered(p: Place, stuck: bool = False, fifo: bool = False) -> Path:
    """A log dir with __remote_log_metadata: a finished copy, and a copy stopped an hour ago when `stuck`;
    its metadata segment a FIFO when `fifo`."""
    import time

    from kafka_tools.format.remote_log_partitioner import metadata_partition
    from tests.support.tiered import Metadata, kafka_uuid, write_metadata

    root = p.tmp / f"tiered-{stuck}-{fifo}"
    if fifo:
        part = root / "__remote_log_metadata-0"
        part.mkdir(parents=True, exist_ok=True)
        if not (part / "00000000000000000000.log").exists():
            os.mkfifo(part / "00000000000000000000.log")
        return root
    meta = Metadata("orders", kafka_uuid(1))
    now = int(time.time() * 1000) - 3_600_000
    meta.copied(kafka_uuid(2), 0, 9, now)
    if stuck:
        meta.add(kafka_uuid(3), 10, 19, now)
    write_metadata(root, metadata_partition(meta.topic_id, 0), meta.values)
    return root


def _corrupt_copy(p: Place, name: str = "v2-trailing-garbage-0") -> Path:
    return p.copy(GENERATED / "corrupt" / name, f"logs-{name}/{name}")


def _unreadable_checkpoint(p: Place) -> Path:
    logs = p.tmp / "bad-checkpoint"
    if not logs.exists():
        shutil.copytree(GENERATED / "v2/none-0", logs / "none-0")
        (logs / "replication-offset-checkpoint").write_text("0\n5\nnone 0 x\n")
    return logs


def _replicas(p: Place, other: Path) -> list[str]:
    """gzip-0 of the 0.9 fixtures and a second replica of it holding `other`'s records."""
    return [str(KAFKA09 / "gzip-0"), str(p.copy(other, f"replica-of-{other.name}/gzip-0"))]


def _kraft_with(p: Place, **changes) -> Path:
    from tests.metadata.kraft_log import SNAPSHOT_AT, write_log_dir

    root = p.tmp / ("kraft-" + "-".join(changes))
    if not root.exists():
        write_log_dir(root, log_from=SNAPSHOT_AT, snapshot_at=SNAPSHOT_AT, **changes)
    return next(root.glob("**/__cluster_metadata-0")).parent


def _kraft_fifo(p: Place) -> Path:
    logs = p.kraft()
    meta = logs / "__cluster_metadata-0"
    fifo = meta / "00000000000000099999.log"
    if not fifo.exists():
        os.mkfifo(fifo)
    return logs


def _kraft_garbage(p: Place) -> Path:
    """A KRaft log dir whose metadata log has 64 bytes of garbage in its middle (the image stops there)."""
    import random

    logs = p.kraft()
    root = p.tmp / "kraft-garbage"
    if not root.exists():
        shutil.copytree(logs, root)
        seg = next((root / "__cluster_metadata-0").glob("*.log"))
        data = bytearray(seg.read_bytes())
        middle = len(data) // 2
        data[middle : middle + 64] = random.Random(50).randbytes(64)
        seg.write_bytes(bytes(data))
    return root


def _auth_fifo(p: Place) -> Path:
    path = p.tmp / "auth-fifo"
    if not path.exists():
        os.mkfifo(path)
    return path


def _quorum(*args: str) -> list[str]:
    return ["quorum", "--broker-timeout", "2", "--bootstrap-server", f"127.0.0.1:{free_port()}", *args]


def _zk_unreachable() -> list[str]:
    return ["--zookeeper", f"127.0.0.1:{free_port()}", "--zk-timeout", "2"]


def _zk_auth_missing(p: Place) -> list[str]:
    return [*p.zk(), "--zk-auth-file", NOWHERE]


def _offsets_file(p: Place) -> Path:
    path = p.tmp / "offsets.txt"
    path.write_text("/consumers/billing/offsets/orders/0:42\n")
    return path


V2 = GENERATED / "v2"
V2_LOG = V2 / "none-0/00000000000000000000.log"
CORRUPT_LOG = GENERATED / "corrupt/v2-trailing-garbage-0/00000000000000000000.log"

OFFLINE: dict[tuple[str, str], Cell] = {
    ("dump-log", "clean"): Cell(lambda p: ["dump-log", str(V2_LOG)]),
    ("dump-log", "findings"): Cell(lambda p: ["dump-log", str(CORRUPT_LOG)]),
    ("dump-log", "missing"): Cell(lambda p: ["dump-log", NOWHERE + ".log"]),
    ("dump-log", "wrong-kind"): Cell(lambda p: ["dump-log", str(V2)]),
    ("dump-log", "unreadable"): Cell(
        lambda p: ["dump-log", str(_fifo_partition(p) / "00000000000000000000.log")]
    ),
    ("dump-log", "bad-name"): Cell(
        lambda p: ["dump-log", NOWHERE + ".log", str(V2_LOG)], stdout_has="baseOffset"
    ),
    ("validate", "clean"): Cell(lambda p: ["validate", str(V2)]),
    ("validate", "findings"): Cell(lambda p: ["validate", str(GENERATED / "corrupt/v2-trailing-garbage-0")]),
    ("validate", "missing"): Cell(lambda p: ["validate", NOWHERE]),
    ("validate", "wrong-kind"): Cell(lambda p: ["validate", "/dev/null"]),
    ("validate", "unreadable"): Cell(lambda p: ["validate", str(_fifo_partition(p))]),
    ("validate", "bad-name"): Cell(lambda p: ["validate", NOWHERE, str(V2)], stdout_has="none-0"),
    ("truncate", "clean"): Cell(lambda p: ["truncate", "--dry-run", str(V2 / "none-0")]),
    ("truncate", "findings"): Cell(
        lambda p: [
            "truncate",
            "--backup-dir",
            str(p.tmp / "b"),
            str(_corrupt_copy(p, "v2-flipped-record-byte-0")),
        ]
    ),
    ("truncate", "missing"): Cell(lambda p: ["truncate", "--dry-run", NOWHERE]),
    ("truncate", "wrong-kind"): Cell(lambda p: ["truncate", "--dry-run", "/dev/null"]),
    ("truncate", "unreadable"): Cell(lambda p: ["truncate", "--dry-run", str(_fifo_partition(p))]),
    ("truncate", "unwritable"): Cell(
        lambda p: ["truncate", "--backup-dir", "/proc/nope", str(_corrupt_copy(p))]
    ),
    ("truncate", "bad-name"): Cell(
        lambda p: ["truncate", "--dry-run", NOWHERE, str(V2 / "none-0")], stdout_has="none-0: nothing to do"
    ),
    ("replicas diff", "clean"): Cell(lambda p: ["replicas", "diff", *_replicas(p, KAFKA09 / "gzip-0")]),
    # other records at the same offsets: diverged
    ("replicas diff", "findings"): Cell(lambda p: ["replicas", "diff", *_replicas(p, KAFKA09 / "snappy-0")]),
    ("replicas diff", "missing"): Cell(
        lambda p: ["replicas", "diff", str(KAFKA09 / "gzip-0"), NOWHERE + "-0"]
    ),
    ("replicas diff", "wrong-kind"): Cell(
        lambda p: ["replicas", "diff", str(KAFKA09 / "gzip-0"), str(CORRUPT_LOG)]
    ),
    ("replicas diff", "unreadable"): Cell(
        lambda p: [
            "replicas",
            "diff",
            str(p.copy(KAFKA09 / "gzip-0", "fine/stuck-0")),
            str(_fifo_partition(p)),
        ]
    ),
    ("tiered audit", "clean"): Cell(lambda p: ["tiered", "audit", str(_tiered(p, stuck=False))]),
    ("tiered audit", "findings"): Cell(lambda p: ["tiered", "audit", str(_tiered(p, stuck=True))]),
    ("tiered audit", "missing"): Cell(lambda p: ["tiered", "audit", NOWHERE]),
    ("tiered audit", "wrong-kind"): Cell(
        lambda p: ["tiered", "audit", str(_tiered(p, stuck=False)), "--remote-dir", str(V2_LOG)]
    ),
    ("tiered audit", "unreadable"): Cell(lambda p: ["tiered", "audit", str(_tiered(p, fifo=True))]),
    ("read", "clean"): Cell(lambda p: ["read", "--earliest", str(V2 / "none-0")]),
    ("read", "findings"): Cell(lambda p: ["read", "--offset", "99999", str(V2 / "none-0")]),
    ("read", "missing"): Cell(lambda p: ["read", "--earliest", NOWHERE + "-0"]),
    ("read", "wrong-kind"): Cell(lambda p: ["read", "--earliest", str(V2_LOG)]),
    ("read", "unreadable"): Cell(lambda p: ["read", "--earliest", str(_fifo_partition(p))]),
    ("offsets-at", "clean"): Cell(lambda p: ["offsets-at", str(V2)]),
    ("offsets-at", "findings"): Cell(lambda p: ["offsets-at", "--time", "-3", str(GENERATED / "v0")]),
    ("offsets-at", "missing"): Cell(lambda p: ["offsets-at", NOWHERE]),
    ("offsets-at", "wrong-kind"): Cell(lambda p: ["offsets-at", "/dev/null"]),
    ("offsets-at", "unreadable"): Cell(lambda p: ["offsets-at", str(_fifo_partition(p).parent)]),
    ("offsets-at", "bad-name"): Cell(lambda p: ["offsets-at", NOWHERE, str(V2)], stdout_has="none:0:21"),
    ("retention", "clean"): Cell(lambda p: ["retention", str(V2)]),
    ("retention", "findings"): Cell(lambda p: ["retention", str(_unreadable_checkpoint(p))]),
    ("retention", "missing"): Cell(lambda p: ["retention", NOWHERE]),
    ("retention", "wrong-kind"): Cell(lambda p: ["retention", str(V2_LOG)]),
    ("retention", "unreadable"): Cell(lambda p: ["retention", str(_fifo_partition(p))]),
    ("retention", "unreachable"): Cell(lambda p: ["retention", str(V2), *_zk_unreachable()]),
    ("retention", "bad-name"): Cell(lambda p: ["retention", NOWHERE, str(V2)], stdout_has="none-0"),
    ("man", "clean"): Cell(lambda p: ["man", "groups", "describe"]),
    ("man", "unwritable"): Cell(lambda p: ["man", "--output-dir", "/proc/nope"]),
    ("completion", "clean"): Cell(lambda p: ["completion", "bash"]),
    ("scan", "missing"): Cell(lambda p: ["scan", NOWHERE]),
    ("scan", "wrong-kind"): Cell(lambda p: ["scan", "/dev/null"]),
    ("scan", "unreadable"): Cell(lambda p: ["scan", str(_fifo_partition(p))]),
    ("scan", "unreachable"): Cell(
        lambda p: ["scan", "--master", f"spark://127.0.0.1:{free_port()}", str(V2)]
    ),
    ("scan", "bad-name"): Cell(lambda p: ["scan", NOWHERE, str(V2)]),
    ("offsets import", "missing"): Cell(lambda p: ["offsets", "import", "--to", "kafka", NOWHERE + ".csv"]),
    ("offsets import", "wrong-kind"): Cell(lambda p: ["offsets", "import", "--to", "kafka", str(V2)]),
    ("offsets import", "unreadable"): Cell(
        lambda p: ["offsets", "import", "--to", "kafka", str(_fifo_partition(p) / "00000000000000000000.log")]
    ),
    ("offsets import", "unreachable"): Cell(
        lambda p: ["offsets", "import", "--to", "zookeeper", str(_offsets_file(p)), *_zk_unreachable()]
    ),
    ("groups reset-offsets", "missing"): Cell(lambda p: [*_RESET, "--from-file", NOWHERE + ".csv"]),
    ("groups reset-offsets", "wrong-kind"): Cell(lambda p: [*_RESET, "--from-file", str(V2)]),
    ("groups reset-offsets", "unreadable"): Cell(
        lambda p: [*_RESET, "--from-file", str(_fifo_partition(p) / "00000000000000000000.log")]
    ),
    ("groups reset-offsets", "unreachable"): Cell(
        lambda p: [
            "groups",
            "reset-offsets",
            "g",
            "--all-topics",
            "--to-earliest",
            "--bootstrap-server",
            f"127.0.0.1:{free_port()}",
        ]  # fmt: skip
    ),
}
for _name in ("topics", "brokers", "cluster-id"):
    _words = [_name, "--metadata-log"]
    OFFLINE |= {
        (f"{_name} --metadata-log", "clean"): Cell(lambda p, w=_words: [*w, str(p.kraft())]),
        (f"{_name} --metadata-log", "missing"): Cell(lambda p, w=_words: [*w, NOWHERE]),
        (f"{_name} --metadata-log", "wrong-kind"): Cell(lambda p, w=_words: [*w, str(V2)]),
        (f"{_name} --metadata-log", "unreadable"): Cell(lambda p, w=_words: [*w, str(_kraft_fifo(p))]),
    }
    if _name != "cluster-id":  # the cluster id is meta.properties', whatever the log holds
        OFFLINE[(f"{_name} --metadata-log", "findings")] = Cell(
            lambda p, w=_words: [*w, str(_kraft_garbage(p))]
        )
OFFLINE[("topics --metadata-log", "bad-name")] = Cell(
    lambda p: ["topics", "nope", "orders", "--metadata-log", str(p.kraft())], stdout_has="orders"
)
OFFLINE |= {
    ("quorum", "missing"): Cell(lambda p: _quorum("--broker-auth-file", NOWHERE)),
    ("quorum", "wrong-kind"): Cell(lambda p: _quorum("--broker-auth-file", str(V2))),
    ("quorum", "unreadable"): Cell(lambda p: _quorum("--broker-auth-file", str(_auth_fifo(p)))),
    ("quorum", "unreachable"): Cell(lambda p: _quorum()),
}
for _sub in ("show", "topics", "brokers", "diff", "check"):
    _base = ["metadata", _sub] + (["--from-offset", "0"] if _sub == "diff" else [])
    OFFLINE |= {
        (f"metadata {_sub}", "clean"): Cell(lambda p, b=_base: [*b, str(p.kraft())]),
        (f"metadata {_sub}", "findings"): Cell(
            lambda p, b=_base: [*b, str(_kraft_with(p, quorum_version=9))]
        ),
        (f"metadata {_sub}", "missing"): Cell(lambda p, b=_base: [*b, NOWHERE]),
        (f"metadata {_sub}", "wrong-kind"): Cell(lambda p, b=_base: [*b, str(V2)]),
        (f"metadata {_sub}", "unreadable"): Cell(lambda p, b=_base: [*b, str(_kraft_fifo(p))]),
    }

_ZK_READERS = {
    "brokers": ["brokers"],
    "topics": ["topics"],
    "cluster-id": ["cluster-id"],
    "groups list": ["groups", "list"],
    "groups describe": ["groups", "describe"],
    "groups rebalance-plan": ["groups", "rebalance-plan", "billing"],
    "groups watch": ["groups", "watch", "--once", "--all"],
    "offsets export": ["offsets", "export", "--group", "billing"],
}
ZOOKEEPER: dict[tuple[str, str], Cell] = {}
for _name, _words in _ZK_READERS.items():
    ZOOKEEPER |= {
        (_name, "clean"): Cell(lambda p, w=_words: [*w, *p.zk()], zookeeper=True),
        (_name, "unreadable"): Cell(lambda p, w=_words: [*w, *_zk_auth_missing(p)], zookeeper=True),
        (_name, "unreachable"): Cell(lambda p, w=_words: [*w, *_zk_unreachable()]),
    }
ZOOKEEPER |= {
    ("topics", "bad-name"): Cell(lambda p: ["topics", "nope", "orders", *p.zk()], True, "orders"),
    ("groups describe", "bad-name"): Cell(
        lambda p: ["groups", "describe", "nope", "billing", *p.zk()], True, "billing"
    ),
    ("groups rebalance-plan", "findings"): Cell(
        lambda p: ["groups", "rebalance-plan", "mixed", "--strategy", "roundrobin", *p.zk()], True
    ),
    ("groups delete", "clean"): Cell(lambda p: ["groups", "delete", "idle", *p.zk()], True),
    ("groups delete", "findings"): Cell(lambda p: ["groups", "delete", "billing", *p.zk()], True),
    ("groups delete", "unreadable"): Cell(lambda p: ["groups", "delete", "idle", *_zk_auth_missing(p)], True),
    ("groups delete", "unwritable"): Cell(
        lambda p: ["groups", "delete", "idle", "--journal-dir", "/proc/nope", *p.zk()], True
    ),
    ("groups delete", "unreachable"): Cell(lambda p: ["groups", "delete", "idle", *_zk_unreachable()]),
    ("groups delete", "bad-name"): Cell(
        lambda p: ["groups", "delete", "nope", "idle", *p.zk()], True, "idle"
    ),
    ("offsets export", "unwritable"): Cell(
        lambda p: ["offsets", "export", "--group", "billing", "--output", "/proc/nope/x.txt", *p.zk()], True
    ),
    ("migrate-offsets", "unreachable"): Cell(
        lambda p: [
            "migrate-offsets",
            "--group",
            "billing",
            "--bootstrap-server",
            "127.0.0.1:1",
            *_zk_unreachable(),
        ]
    ),
    ("migrate-offsets", "unreadable"): Cell(
        lambda p: [
            "migrate-offsets",
            "--group",
            "billing",
            "--bootstrap-server",
            "127.0.0.1:1",
            *_zk_auth_missing(p),
        ],
        True,
    ),
}

# Cells that need a Kafka broker or Spark: proven by these tests (path::name).
ELSEWHERE: dict[tuple[str, str], str] = {
    ("groups reset-offsets", "clean"): (
        "tests/consumers/test_reset_offsets_e2e.py::test_every_target_on_the_zookeeper_store"
    ),
    ("groups reset-offsets", "findings"): (
        "tests/consumers/test_reset_offsets_e2e.py::test_registered_consumers_refuse_the_reset"
    ),
    ("groups reset-offsets", "unwritable"): (
        "tests/consumers/test_reset_offsets_e2e.py::test_an_unwritable_journal_dir_is_one_line_and_nothing_written"
    ),
    ("groups watch", "findings"): (
        "tests/consumers/test_groups_watch.py::"
        "test_a_partition_held_by_a_dead_member_is_stuck_and_until_stable_times_out"
    ),
    ("migrate-offsets", "clean"): (
        "tests/consumers/test_migrate_offsets_e2e.py::"
        "test_old_consumer_offsets_migrate_and_a_kafka_consumer_resumes_exactly_there"
    ),
    (
        "migrate-offsets",
        "findings",
    ): "tests/consumers/test_migrate_offsets_e2e.py::test_live_group_is_refused_and_named",
    (
        "migrate-offsets",
        "unwritable",
    ): "tests/consumers/test_migrate_offsets_e2e.py::test_dry_run_writes_nothing",
    (
        "offsets import",
        "clean",
    ): "tests/consumers/test_offsets_files.py::test_import_to_zookeeper_and_to_kafka",
    (
        "offsets import",
        "findings",
    ): "tests/consumers/test_offsets_files.py::test_import_has_migrate_offsets_checks",
    (
        "offsets import",
        "unwritable",
    ): "tests/consumers/test_offsets_files.py::test_import_has_migrate_offsets_checks",
    (
        "scan",
        "clean",
    ): "tests/pipeline/test_scan.py::test_console_script_summary_counts_one_segment_and_one_task",
    ("scan", "findings"): "tests/pipeline/test_scan.py::test_cli_exits_1_with_validates_findings",
    ("quorum", "clean"): "tests/modern/test_cluster_live.py::test_quorum_equals_kafka_metadata_quorum",
}


def _cells() -> set[tuple[str, str]]:
    return {(c, s) for c, row in MATRIX.items() for s, code in row.items() if code is not None}


def test_every_cell_of_the_matrix_has_its_test_and_no_test_is_left_over() -> None:
    covered = set(OFFLINE) | set(ZOOKEEPER) | set(ELSEWHERE)
    assert sorted(_cells() - covered) == [], "a documented cell without a test"
    assert sorted(covered - _cells()) == [], "a test of a cell the matrix says cannot arise"
    for where in ELSEWHERE.values():
        path, _, name = where.partition("::")
        assert re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M), where


def test_the_readme_table_is_the_matrix() -> None:
    assert readme_block() in (ROOT / "README.md").read_text()
    assert list(SITUATIONS.values())[-1] == "bad name among good ones"


def _check(command: str, situation: str, cell: Cell, place: Place) -> None:
    expected = MATRIX[command][situation]
    result = run_script(*cell.args(place), timeout=120)
    assert result.returncode == expected, (
        command,
        situation,
        result.returncode,
        result.stdout[-500:],
        result.stderr,
    )
    assert "Traceback" not in result.stderr
    if expected == 3:
        lines = result.stderr.splitlines()
        assert lines and all(line.startswith("ktool: ") for line in lines), result.stderr
    if cell.stdout_has:
        assert cell.stdout_has in result.stdout, (command, situation, result.stdout)


@pytest.mark.slow  # the console script in a fresh interpreter per cell
@pytest.mark.parametrize("key", sorted(OFFLINE), ids=[f"{c}:{s}" for c, s in sorted(OFFLINE)])
def test_offline_cells(key, tmp_path) -> None:
    _check(*key, OFFLINE[key], Place(tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(ZOOKEEPER), ids=[f"{c}:{s}" for c, s in sorted(ZOOKEEPER)])
def test_zookeeper_cells(key, zk_root, tmp_path) -> None:
    from tests.zk.test_zk_reader import write_kafka09_cluster

    write_kafka09_cluster(zk_root)
    zk_root.write("/cluster/id", '{"version":"1","id":"Y2x1c3Rlci1pZA"}')
    for n, subscription in enumerate(({"orders": 1}, {"orders": 1, "other": 1})):  # round robin refuses
        member = {"version": 1, "subscription": subscription, "pattern": "static", "timestamp": "1463000000"}
        zk_root.write(f"/consumers/mixed/ids/mixed_h-{n}", json.dumps(member))
    zk_root.write("/brokers/topics/other", '{"version":1,"partitions":{"0":[0]}}')
    zk_root.write("/consumers/idle/offsets/orders/0", "5")  # a group without members (groups delete)
    _check(*key, ZOOKEEPER[key], Place(tmp_path, zk_root.connect))
