"""`ktool groups delete` against real 3.9 and 4.x brokers (KRaft, no ZooKeeper): DeleteGroups through the
coordinator, read back with the release's own `kafka-consumer-groups --list`; a group with a live member
refused (exit 1, nothing deleted); an unknown group one line, exit 1; --undo commits the offsets the
journal recorded."""

from __future__ import annotations

import json
import re
import time
import uuid

from tests.support.cli import run_ktool
from tests.support.modern import commit_offsets, create_topic, run_tool

OFFSETS = {0: 4, 1: 10, 2: 7}


def _listed(cluster) -> set[str]:
    args = ["--bootstrap-server", cluster.bootstrap, "--list"]
    out = run_tool(cluster.release, "ConsumerGroupCommand", args)
    return set(out.stdout.split())


def _committed(cluster, group: str, topic: str) -> dict[int, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    wanted = [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in OFFSETS])]
    got = admin.list_consumer_group_offsets(wanted)[group].result(timeout=30)
    return {tp.partition: tp.offset for tp in got.topic_partitions if tp.offset >= 0}


def _group_with_offsets(cluster) -> tuple[str, str]:
    """A group that has only offsets (no member): committed with the Admin API, as a stopped consumer
    leaves them."""

    topic, group = f"del-{uuid.uuid4().hex[:8]}", f"g-del-{uuid.uuid4().hex[:8]}"
    create_topic(cluster, topic, partitions=3)
    commit_offsets(cluster, group, {(topic, p): o for p, o in OFFSETS.items()})
    return group, topic


def test_delete_group_then_undo_on_a_modern_broker(modern_kafka) -> None:
    group, topic = _group_with_offsets(modern_kafka)
    server = ["--bootstrap-server", modern_kafka.bootstrap]
    plan = run_ktool("groups", "delete", group, "--dry-run", "--json", *server)
    assert plan.exit_code == 0, plan.output
    row = json.loads(plan.stdout.splitlines()[0])
    assert (row["store"], row["status"], row["offsets"]) == ("kafka", "would-delete", 3)
    assert _committed(modern_kafka, group, topic) == OFFSETS

    done = run_ktool("groups", "delete", group, *server)
    assert done.exit_code == 0, done.output
    assert group not in _listed(modern_kafka)
    journal = re.search(r"journal of what is deleted: (\S+)", done.stderr).group(1)

    undo = run_ktool("groups", "delete", "--undo", journal, "--json", *server)
    assert undo.exit_code == 0, undo.output
    assert json.loads(undo.stdout.splitlines()[0])["status"] == "restored"
    assert _committed(modern_kafka, group, topic) == OFFSETS


def test_a_live_group_is_refused_and_an_unknown_one_is_one_line(modern_kafka) -> None:
    from confluent_kafka import Consumer

    group, topic = _group_with_offsets(modern_kafka)
    consumer = Consumer(
        {"bootstrap.servers": modern_kafka.bootstrap, "group.id": group, "client.id": "live-one"}
    )
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 60
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
        assert consumer.assignment()
        result = run_ktool("groups", "delete", group, "--bootstrap-server", modern_kafka.bootstrap)
        assert result.exit_code == 1, result.output
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"ktool: group {group}: live members in Kafka: ") and "live-one@" in line
        assert _committed(modern_kafka, group, topic) == OFFSETS
    finally:
        consumer.close()

    ghost = f"ghost-{uuid.uuid4().hex[:8]}"
    unknown = run_ktool("groups", "delete", ghost, "--bootstrap-server", modern_kafka.bootstrap)
    assert unknown.exit_code == 1, unknown.output
    assert unknown.stderr.splitlines() == [
        f"ktool: group {ghost}: no consumer group {ghost} in Kafka (broker {modern_kafka.bootstrap})"
    ]
