"""`groups watch --bootstrap-server` on Kafka 3.9 (KRaft) as on 4.x (test_groups_watch_modern.py, whose
story it tells again): a classic cooperative-sticky group — a member joins, one is SIGKILLed, partitions
are added; each event once, in order, with the owners the consumers report.

3.9's new consumer protocol (KIP-848) is early access, off unless the brokers list `consumer` in
group.coordinator.rebalance.protocols (3.9's default: `classic` alone, Kafka's GroupCoordinatorConfig;
its ApiVersions still lists ConsumerGroupHeartbeat): a confluent-kafka consumer with
group.protocol=consumer keeps running and is never assigned anything, no group forms, and the watch
says the group never appears (exit 1 at --timeout) — what the last test here shows."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.modern.test_groups_watch_modern import FAST_GROUPS, Member, watch_join_kill_grow
from tests.support.cli import run_ktool
from tests.support.modern import ModernCluster, create_topic
from tests.support.servers import kafka_commit

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def cluster(kafka39_release, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("kafka39-watch")
    with ModernCluster(kafka39_release, "combined", workdir, properties=FAST_GROUPS) as started:
        create_topic(started, "warm-up")
        kafka_commit(started.bootstrap, "warm-up", {("warm-up", 0): 0}, timeout=60)
        yield started


def test_watch_on_3_9_tells_join_kill_and_new_partitions_of_a_classic_group(cluster):
    watch_join_kill_grow(cluster, "classic", None)


def test_on_3_9_a_consumer_protocol_member_forms_no_group_and_the_watch_says_it_never_appears(cluster):
    topic, group = f"early-{uuid.uuid4().hex[:8]}", f"early-{uuid.uuid4().hex[:6]}"
    create_topic(cluster, topic, partitions=2)
    member = Member(cluster, group, topic, "consumer", "early")
    try:
        watched = run_ktool("groups", "watch", group, "--until-stable", "--timeout", "10", "--json",
                            "--interval", "0.5", "--bootstrap-server", cluster.bootstrap)  # fmt: skip
        assert member.proc.poll() is None and member.log == []  # running, never assigned anything
    finally:
        member.kill()
    assert watched.exit_code == 1, watched.output
    events = [json.loads(line) for line in watched.stdout.splitlines()]
    assert [e["event"] for e in events if e["type"] == "event"][-2:] == ["timeout", "group-state"]
    assert events[-2]["stable"] is False and events[-2]["members"] == []
    listed = run_ktool("groups", "list", "--json", "--bootstrap-server", cluster.bootstrap)
    assert group not in listed.stdout
