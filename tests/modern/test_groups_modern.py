"""`ktool groups list/describe` with --bootstrap-server alone (no ZooKeeper) against real 3.9 and 4.x
brokers, for classic groups and, on 4.x, groups of the new consumer protocol (KIP-848,
``group.protocol=consumer``): offsets, log end, lag and owners equal `kafka-consumer-groups` of the
same release (ConsumerGroupCommand), and every group is listed as a consumer group."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import create_topic, run_tool
from tests.support.servers import kafka_commit

COMMITTED = {0: 4, 1: 10, 2: 7}


def kafka_consumer_groups(cluster, *args: str) -> list[dict[str, str]]:
    """ConsumerGroupCommand's table as rows of {column: value}."""
    out = run_tool(cluster.release, "ConsumerGroupCommand", ["--bootstrap-server", cluster.bootstrap, *args])
    lines = [line.split() for line in out.stdout.splitlines() if line.strip()]
    header = lines[0]
    return [dict(zip(header, row, strict=True)) for row in lines[1:]]


@pytest.fixture
def live_group(modern_kafka, request):
    """A group with one live member of ``request.param``'s protocol, offsets COMMITTED on a 3-partition
    topic of 10 messages a partition: (group, topic, client id)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, group = f"groups-{uuid.uuid4().hex[:8]}", f"g-{request.param}-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, topic, partitions=3)
    producer = Producer({"bootstrap.servers": modern_kafka.bootstrap})
    for i in range(30):
        producer.produce(topic, f"m{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    client_id = f"client-{request.param}"
    consumer = Consumer(
        {
            "bootstrap.servers": modern_kafka.bootstrap,
            "group.id": group,
            "group.protocol": request.param,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "client.id": client_id,
        }
    )
    consumer.subscribe([topic])
    got, deadline = 0, time.monotonic() + 90
    while got < 30 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        got += msg is not None and msg.error() is None
    assert got == 30
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in COMMITTED.items()], asynchronous=False)
    try:
        yield group, topic, client_id
    finally:
        consumer.close()


def _check(modern_kafka, live_group) -> None:
    group, topic, client_id = live_group
    result = run_ktool("groups", "describe", group, "--json", "--bootstrap-server", modern_kafka.bootstrap)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    ours = {
        r["partition"]: (r["kafkaOffset"], r["logEndOffset"], r["lag"], r["owner"])
        for r in rows
        if r["type"] == "partition"
    }
    theirs = {
        int(r["PARTITION"]): (
            int(r["CURRENT-OFFSET"]),
            int(r["LOG-END-OFFSET"]),
            int(r["LAG"]),
            r["CONSUMER-ID"],
        )
        for r in kafka_consumer_groups(modern_kafka, "--describe", "--group", group)
        if r["TOPIC"] == topic
    }
    assert ours == theirs
    assert {p: o for p, (o, *_rest) in ours.items()} == COMMITTED
    members = [r for r in rows if r["type"] == "member"]
    assert len(members) == 1 and f"({client_id}@/127.0.0.1)" in members[0]["consumerId"]
    assert members[0]["subscription"] == {topic: 3}

    listed = run_ktool("groups", "list", "--json", "--bootstrap-server", modern_kafka.bootstrap)
    assert listed.exit_code == 0, listed.output
    kinds = {
        r["group"]: r.get("protocolType") for r in map(json.loads, listed.stdout.splitlines()) if "group" in r
    }
    theirs_listed = {r["GROUP"] for r in kafka_consumer_groups(modern_kafka, "--list", "--state")}
    assert group in theirs_listed and kinds[group] == "consumer"


@pytest.mark.parametrize("live_group", ["classic"], indirect=True)
def test_classic_group_equals_kafka_consumer_groups(modern_kafka, live_group):
    _check(modern_kafka, live_group)


@pytest.mark.parametrize("kafka_release", ["4.4.0"], indirect=True)
@pytest.mark.parametrize("live_group", ["consumer"], indirect=True)
def test_kip848_group_equals_kafka_consumer_groups(modern_kafka, live_group):
    """A group of the new protocol: its member id is the broker's (a Uuid), its type `consumer`."""
    _check(modern_kafka, live_group)


def test_a_group_no_one_knows_is_not_found_and_one_with_offsets_alone_is(modern_kafka):
    """A typo (`bliling`) is no empty group: exit 3 and one line naming it, text and --json (whose
    summary counts it failed), as a group missing from ZooKeeper is; the other names are still shown. A
    group that only committed offsets (no member ever: 3.9's coordinator calls it Dead, 4.4's Empty)
    exists, as 4.4's kafka-consumer-groups says."""
    topic, kept = f"typo-{uuid.uuid4().hex[:8]}", f"kept-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, topic, partitions=1)
    kafka_commit(modern_kafka.bootstrap, kept, {(topic, 0): 0}, timeout=60)
    if modern_kafka.release.version.startswith("4."):  # 3.9's tool says "not found" or shows it, by timing
        theirs = run_tool(
            modern_kafka.release,
            "ConsumerGroupCommand",
            ["--bootstrap-server", modern_kafka.bootstrap, "--describe", "--group", kept],
        )
        assert f"{kept} {topic} 0 0" in " ".join(theirs.stdout.split()), theirs.stdout

    for as_json in ((), ("--json",)):
        result = run_ktool(
            "groups", "describe", "bliling", kept, *as_json, "--bootstrap-server", modern_kafka.bootstrap
        )
        assert result.exit_code == 3, result.output
        assert result.stderr.splitlines() == [
            f"ktool: no consumer group 'bliling' in Kafka (broker {modern_kafka.bootstrap}): its "
            "coordinator does not know it and it has no committed offsets"
        ]
        if as_json:
            rows = [json.loads(line) for line in result.stdout.splitlines()]
            assert [r["group"] for r in rows if r["type"] == "group"] == [kept]
            assert [(r["topic"], r["kafkaOffset"]) for r in rows if r["type"] == "partition"] == [(topic, 0)]
            assert rows[-1] == {"type": "summary", "groups": 1, "failed": 1}
        else:
            assert "bliling" not in result.stdout and kept in result.stdout
