"""Kafka-only work: every command whose data lives in Kafka runs with `--bootstrap-server` alone.

KRaft and Kafka 4.x clusters have no ZooKeeper, so `groups list`, `groups describe` (with lag) and
`offsets export --from kafka` / `offsets import --to kafka` must not ask for one. Proven against the real
Kafka 0.9.0.1 broker (``kafka09_cluster``) through the installed `ktool` console script, with no
ZooKeeper setting anywhere (the caller's are hidden) and no `--broker-version`: ktool finds out itself
that the broker is too old for ApiVersions (there is no ZooKeeper registration to read its version from).

The ground truth is a real librdkafka consumer of group `live` (a member the coordinator knows, its
assignment and its commits) and what a Kafka client reads back from `__consumer_offsets`.
"""

from __future__ import annotations

import csv
import io
import json
import time

import pytest

from tests.support.script import run_script
from tests.support.servers import (
    LIBRDKAFKA_09,
    kafka_commit,
    kafka_committed,
    key_for_partition,
    rdkafka_logger,
)

TOPIC = "kfk"
COUNTS = [3, 5, 2]  # messages per partition: the log end offsets
LIVE = "live"
COMMITTED = {(TOPIC, 0): 2, (TOPIC, 1): 5, (TOPIC, 2): 0}  # what group `live` commits


@pytest.fixture(scope="module")
def cluster(kafka09_cluster):
    broker = kafka09_cluster.broker
    broker.create_topic(TOPIC, partitions=len(COUNTS))
    lines = []
    for p, n in enumerate(COUNTS):
        key = key_for_partition(p, len(COUNTS))
        lines += [f"{key}:{TOPIC}-{p}-{i}" for i in range(n)]
    broker.produce(TOPIC, lines, key_separator=":", acks=1)
    return kafka09_cluster


@pytest.fixture(scope="module")
def live_member(cluster):
    """A real consumer in group `live` (JoinGroup/SyncGroup with the 0.9 coordinator), owning every
    partition of the topic and having committed COMMITTED; it stays in the group for the module."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": cluster.bootstrap,
            **LIBRDKAFKA_09,
            "group.id": LIVE,
            "client.id": "ktool-test",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 10000,  # 0.9's group.max.session.timeout.ms is 30 s
        },
        logger=rdkafka_logger(),
    )
    consumer.subscribe([TOPIC])
    deadline = time.monotonic() + 60
    while len(consumer.assignment()) < len(COUNTS):
        assert time.monotonic() < deadline, "the consumer never got its partitions"
        consumer.poll(0.5)
    consumer.commit(offsets=[TopicPartition(t, p, o) for (t, p), o in COMMITTED.items()], asynchronous=False)
    assert {k: v for k, (v, _) in kafka_committed(cluster.bootstrap, LIVE, COMMITTED).items()} == COMMITTED
    yield consumer
    consumer.close()


def bootstrap_only(cluster, *args: str):
    return run_script(*args, "--bootstrap-server", cluster.bootstrap)


def json_lines(text: str) -> list[dict]:
    """The objects before the summary line that ends every --json stream."""
    objs = [json.loads(line) for line in text.splitlines() if line.strip()]
    assert not objs or objs[-1]["type"] == "summary", text
    return objs[:-1]


def test_groups_list_needs_no_zookeeper(cluster, live_member) -> None:
    res = bootstrap_only(cluster, "groups", "list", "--json")
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    groups = {g["group"]: g for g in json_lines(res.stdout)}
    assert groups[LIVE] == {
        "type": "group",
        "group": LIVE,
        "offsetsIn": "kafka",
        "members": None,
        "protocolType": "consumer",
        "state": "Stable",  # as the 0.9 coordinator describes it (DescribeGroups: no ListGroups v4)
        "groupType": "classic",
    }


def test_groups_describe_with_lag_needs_no_zookeeper(cluster, live_member) -> None:
    res = bootstrap_only(cluster, "groups", "describe", LIVE, "--json")
    assert res.returncode == 0, res.stderr
    objects = json_lines(res.stdout)
    rows = {(o["topic"], int(o["partition"])): o for o in objects if o["type"] == "partition"}
    assert set(rows) == set(COMMITTED)
    member_id = live_member.memberid()
    for (t, p), row in rows.items():
        assert row["owner"] == member_id
        assert row["kafkaOffset"] == COMMITTED[(t, p)]
        assert row["zookeeperOffset"] is None
        assert (row["logStartOffset"], row["logEndOffset"]) == (0, COUNTS[p])
        assert row["lag"] == COUNTS[p] - COMMITTED[(t, p)]
    members = [o for o in objects if o["type"] == "member"]
    assert [m["consumerId"].split(" ")[0] for m in members] == [member_id]
    assert members[0]["subscription"] == {TOPIC: len(COUNTS)}
    summary = objects[-1]
    assert summary["offsetsIn"] == "kafka" and summary["members"] == 1
    assert summary["lag"] == sum(COUNTS) - sum(COMMITTED.values())

    # Without a group named: every group the brokers coordinate; the text table says the same.
    text = bootstrap_only(cluster, "groups", "describe")
    assert text.returncode == 0, text.stderr
    assert f"group {LIVE}: offsets in kafka, 1 live member\n" in text.stdout


def test_offsets_export_and_import_through_kafka_alone(cluster, live_member, tmp_path) -> None:
    res = bootstrap_only(cluster, "offsets", "export", "--from", "kafka", "--group", LIVE, "--format", "csv")
    assert res.returncode == 0, res.stderr
    assert list(csv.reader(io.StringIO(res.stdout))) == [
        [LIVE, t, str(p), str(o)] for (t, p), o in sorted(COMMITTED.items())
    ]

    wanted = {(TOPIC, 0): 1, (TOPIC, 2): 2}
    path = tmp_path / "in.txt"
    path.write_text("".join(f"/consumers/imported/offsets/{t}/{p}:{o}\n" for (t, p), o in wanted.items()))
    journals = tmp_path / "journals"
    res = bootstrap_only(
        cluster, "offsets", "import", str(path), "--to", "kafka", "--journal-dir", str(journals), "--json"
    )
    assert res.returncode == 0, res.stderr
    assert {(r["topic"], r["partition"]): r["status"] for r in json_lines(res.stdout)} == {
        k: "verified" for k in wanted
    }
    got = kafka_committed(cluster.bootstrap, "imported", [(TOPIC, p) for p in range(len(COUNTS))])
    assert {k: v for k, (v, _) in got.items() if v is not None} == wanted
    assert len(list(journals.glob("*.json"))) == 1

    back = bootstrap_only(cluster, "offsets", "export", "--from", "kafka", "--group", "imported")
    assert back.returncode == 0 and back.stdout == path.read_text(), back.stderr


def test_a_group_with_only_commits_is_described_from_kafka(cluster) -> None:
    kafka_commit(cluster.bootstrap, "offsets-only", {(TOPIC, 1): 4})
    res = bootstrap_only(cluster, "groups", "describe", "offsets-only", "--json")
    assert res.returncode == 0, res.stderr
    objects = json_lines(res.stdout)
    rows = [o for o in objects if o["type"] == "partition"]
    assert [(r["topic"], r["partition"], r["kafkaOffset"], r["lag"], r["owner"]) for r in rows] == [
        (TOPIC, 1, 4, COUNTS[1] - 4, None)  # a partition number is a number
    ]
    assert objects[-1]["notes"] == ["no live members: the group's coordinator has no consumer in it"]


def test_what_needs_zookeeper_says_so_in_one_line(cluster, tmp_path) -> None:
    res = bootstrap_only(cluster, "offsets", "export", "--group", "g")  # --from zookeeper, the default
    assert res.returncode == 2
    assert res.stderr.startswith("ktool: no ZooKeeper to talk to: give --zookeeper")
    assert res.stderr.endswith("; --from zookeeper reads /consumers in ZooKeeper\n")
    assert res.stderr.count("\n") == 1
    neither = run_script("groups", "list")
    assert neither.returncode == 2
    assert "give --bootstrap-server host:port for the groups and offsets in Kafka" in neither.stderr
