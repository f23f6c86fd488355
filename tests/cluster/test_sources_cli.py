"""`ktool topics`, `brokers`, `cluster-id` offline from a KRaft log dir (--metadata-log; a
`__cluster_metadata-0` log written by tests/metadata/kraft_log.py, whose story the test knows): the
statuses and filters the live view has, and the one line when no source is given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.metadata.kraft_log import DIR1, DIR2, ORDERS, broker, change, config, partition, write_log_dir
from tests.support.cli import run_ktool

LONELY = "bG9uZWx5bG9uZWx5bG9uZQ"
DIR3 = "ZGlyZWN0b3J5M2RpcmVjdA"


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    """Brokers 1-3, 3 fenced; `orders` (min.insync.replicas 3): partition 0's ISR shrunk to 1,2,
    partition 1 reassigned to gain broker 4; `lonely` led by the fenced broker 3."""
    entries = [
        ("meta", "FeatureLevelRecord", 0, {"name": "metadata.version", "featureLevel": 21}),
        broker(1, 10, DIR1),
        broker(2, 11, DIR2),
        broker(3, 12, DIR3),
        ("meta", "UnfenceBrokerRecord", 0, {"id": 1, "epoch": 10}),
        ("meta", "UnfenceBrokerRecord", 0, {"id": 2, "epoch": 11}),
        ("meta", "TopicRecord", 0, {"name": "orders", "topicId": ORDERS}),
        partition(ORDERS, 0, [1, 2, 3], [DIR1, DIR2, DIR3]),
        partition(ORDERS, 1, [2, 3, 1], [DIR2, DIR3, DIR1]),
        config("min.insync.replicas", "3"),
        ("meta", "TopicRecord", 0, {"name": "lonely", "topicId": LONELY}),
        partition(LONELY, 0, [3], [DIR3]),
        change(ORDERS, 0, isr=[1, 2]),
        change(ORDERS, 1, replicas=[2, 3, 1, 4], addingReplicas=[4]),
    ]
    return write_log_dir(tmp_path / "kraft", entries)


def _partitions(*args: str) -> dict[tuple[str, int], list[str]]:
    result = run_ktool("topics", *args, "--json")
    assert result.exit_code == 0, result.output
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    return {(o["topic"], o["partition"]): o["statuses"] for o in objs if o["type"] == "partition"}


def test_topics_from_a_metadata_log_have_the_live_statuses_and_filters(log_dir: Path) -> None:
    source = ("--metadata-log", str(log_dir))
    assert _partitions(*source) == {
        ("lonely", 0): ["offline"],  # its leader, broker 3, is fenced
        ("orders", 0): ["under-min-isr", "under-replicated"],
        ("orders", 1): ["reassigning"],  # ISR 2,3,1 is the whole replication factor: 4 is being added
    }
    assert list(_partitions("--unavailable-partitions", *source)) == [("lonely", 0)]
    assert list(_partitions("--under-min-isr-partitions", *source)) == [("orders", 0)]
    assert list(_partitions("--under-replicated-partitions", "--unavailable-partitions", *source)) == [
        ("lonely", 0),
        ("orders", 0),
    ]
    text = run_ktool("topics", "orders", *source)
    assert text.exit_code == 0, text.output
    assert "2,3,1,4 +4" in text.stdout and "under-min-isr,under-replicated" in text.stdout
    missing = run_ktool("topics", "orders", "nope", *source)
    assert missing.exit_code == 3 and missing.stderr.startswith("ktool: no topic nope in the metadata log")
    # `metadata topics` is the same view
    same = run_ktool("metadata", "topics", str(log_dir), "--json")
    objs = [json.loads(line) for line in same.stdout.splitlines()]
    assert {(o["topic"], o["partition"]): o["statuses"] for o in objs if o["type"] == "partition"} == (
        _partitions(*source)
    )


def test_brokers_and_cluster_id_from_a_metadata_log(log_dir: Path) -> None:
    result = run_ktool("brokers", "--metadata-log", str(log_dir), "--json")
    assert result.exit_code == 0, result.output
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(o["id"], o["host"], o["state"]) for o in objs if o["type"] == "broker"] == [
        (1, "kafka1", "unfenced"),
        (2, "kafka2", "unfenced"),
        (3, "kafka3", "fenced"),
    ]
    cid = run_ktool("cluster-id", "--metadata-log", str(log_dir))
    assert (
        cid.exit_code == 0
        and cid.stdout.strip() == (log_dir / "meta.properties").read_text().split("cluster.id=")[1].split()[0]
    )


def test_no_source_names_all_three_and_sizes_want_a_broker(log_dir: Path) -> None:
    for command in ("topics", "brokers", "cluster-id"):
        result = run_ktool(command)
        assert result.exit_code == 2, result.output
        (line,) = result.stderr.strip().splitlines()
        assert "--zookeeper" in line and "--bootstrap-server" in line and "--metadata-log" in line
    sizes = run_ktool("topics", "--sizes", "--metadata-log", str(log_dir))
    assert sizes.exit_code == 2 and "--bootstrap-server" in sizes.stderr
    quorum = run_ktool("quorum")
    assert quorum.exit_code == 2 and "--bootstrap-server" in quorum.stderr
