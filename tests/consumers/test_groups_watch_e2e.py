"""`ktool groups watch` against real Kafka 0.9.0.1 high-level consumers (``kafka-console-consumer.sh
--zookeeper``, tests/support/servers.OldConsumer) of a real 0.9.0.1 broker.

The watch runs as a subprocess with --json, read line by line. Consumers join one by one, one is killed
with SIGKILL (its ephemeral znodes go when its 6 s ZooKeeper session expires), one leaves cleanly; each
join and leave is reported, and each rebalance finishes with owners that match the range plan and,
accumulated from the watch's own `owner-changed` events, equal the real consumers' /owners. Then
`--until-stable` exits 0; then an /owners node held by a dead member (created with kazoo) blocks a new
consumer's rebalance, and the watch reports the partition as stuck with the consumer that should own it.
"""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.support.script import run_script
from tests.support.servers import OldConsumer
from tests.support.watch import WatchProcess, range_plan

TOPIC = "watched"
PARTITIONS = 6


@pytest.fixture(scope="module")
def topic(kafka09_cluster):
    kafka09_cluster.broker.create_topic(TOPIC, partitions=PARTITIONS)
    return TOPIC


def zk_owners(zk, group: str) -> dict[tuple[str, int], str]:
    from kazoo.exceptions import NoNodeError

    out = {}
    base = f"/consumers/{group}/owners/{TOPIC}"
    try:
        names = zk.get_children(base)
    except NoNodeError:
        return {}
    for name in names:
        try:
            out[(TOPIC, int(name))] = zk.get(f"{base}/{name}")[0].decode()
        except NoNodeError:
            pass
    return out


class Story:
    """The watch's events, with the owners they add up to."""

    def __init__(self, watch: WatchProcess) -> None:
        self.watch = watch
        self.owners: dict[tuple[str, int], str] = {}
        self.applied = 0

    def settled(self, members: list[str], timeout: float = 90.0) -> dict:
        """The `rebalance-finished` whose members are `members` and whose owners match the plan."""
        want = sorted(members)
        done = self.watch.expect(
            f"rebalance finished for {want}",
            lambda e: e.get("event") == "rebalance-finished" and e["members"] == want and e["matchesPlan"],
            timeout,
        )
        for e in self.watch.seen[self.applied :]:
            if e.get("event") == "owner-changed":
                if e["to"] is None:
                    self.owners.pop((e["topic"], e["partition"]), None)
                else:
                    self.owners[(e["topic"], e["partition"])] = e["to"]
        self.applied = len(self.watch.seen)
        return done


def test_real_consumers_join_crash_and_leave_and_each_rebalance_is_reported(kafka09_cluster, topic, tmp_path):
    cluster = kafka09_cluster
    group = f"watch-{uuid.uuid4().hex[:6]}"
    cluster.zk.ensure_path(f"/consumers/{group}")
    consumers: dict[str, OldConsumer] = {}

    def start(name: str) -> OldConsumer:
        c = OldConsumer(
            cluster.connect, group, name, whitelist=TOPIC, workdir=tmp_path / name, home=cluster.broker.home
        )
        consumers[name] = c
        return c.start()

    args = [group, "--zookeeper", cluster.connect, "--json", "--grace", "5"]
    try:
        with WatchProcess(*args) as watch:
            story = Story(watch)
            watch.event("broker-joined", broker=0)
            members: list[str] = []
            for name in ("c1", "c2", "c3"):
                c = start(name)
                watch.event("member-joined", timeout=60, member=c.registered_id)
                members.append(c.registered_id)
                story.settled(members)
                plan = range_plan(members, TOPIC, PARTITIONS)
                assert story.owners == plan
                assert zk_owners(cluster.zk, group) == plan  # the real consumers' ownership

            consumers["c2"].kill()  # SIGKILL: registration and owners stay until the session expires
            t0 = time.monotonic()
            left = watch.event("member-left", timeout=60, member=consumers["c2"].registered_id)
            assert time.monotonic() - t0 >= 3  # not before its (6 s) session timed out
            assert left["group"] == group
            members.remove(consumers["c2"].registered_id)
            story.settled(members)
            assert story.owners == range_plan(members, TOPIC, PARTITIONS) == zk_owners(cluster.zk, group)

            consumers["c3"].stop()  # clean: the shutdown hook closes its session
            watch.event("member-left", timeout=60, member=consumers["c3"].registered_id)
            members.remove(consumers["c3"].registered_id)
            story.settled(members)
            assert story.owners == range_plan(members, TOPIC, PARTITIONS) == zk_owners(cluster.zk, group)

            result = run_script(
                "groups", "watch", group, "--zookeeper", cluster.connect, "--json", "--until-stable"
            )
            assert result.returncode == 0, result.stderr
            state = json.loads(result.stdout.splitlines()[-2])  # before the summary
            assert state.get("event") == "group-state" and state["stable"] and state["verified"]
            owners = {(o["topic"], o["partition"]): o["owner"] for o in state["owners"]}
            assert owners == zk_owners(cluster.zk, group) == range_plan(members, TOPIC, PARTITIONS)

            # A dead member's owner node blocks the next rebalance: c1 leaves, the node is created, c4 joins.
            consumers["c1"].stop()
            watch.event("member-left", timeout=60, member=consumers["c1"].registered_id)
            story.settled([])
            dead = f"{group}_dead-0"
            cluster.zk.create(f"/consumers/{group}/owners/{TOPIC}/0", dead.encode(), makepath=True)
            c4 = start("c4")
            watch.event("member-joined", timeout=60, member=c4.registered_id)
            stuck = watch.event("partition-stuck", timeout=60, partition=0)
            assert stuck["owner"] == dead and stuck["expectedOwner"] == f"{c4.registered_id}-0"
            assert stuck["topic"] == TOPIC and stuck["unownedForMs"] >= 5000
    finally:
        for c in consumers.values():
            c.stop(timeout=15)


def log_ends(cluster, topic: str) -> dict[int, int]:
    """The broker's own answer (`GetOffsetShell --time -1`: topic:partition:offset)."""
    text = cluster.broker.run_tool(
        "kafka.tools.GetOffsetShell", "--broker-list", cluster.bootstrap, "--topic", topic, "--time", "-1"
    )
    return {int(line.rsplit(":", 2)[1]): int(line.rsplit(":", 2)[2]) for line in text.split()}


def test_lag_status_from_zookeeper_offsets_and_the_brokers_log_end(kafka09_cluster, topic):
    """No live member and offsets that do not move: STOP where there is lag, OK where there is none;
    a commit up to the log end turns the partition OK."""
    cluster = kafka09_cluster
    lagging = f"lagging-{uuid.uuid4().hex[:6]}"
    cluster.broker.produce(TOPIC, [f"m{i}" for i in range(60)])
    ends = log_ends(cluster, TOPIC)
    assert sum(ends.values()) >= 60
    for p in range(PARTITIONS):
        cluster.zk.create(f"/consumers/{lagging}/offsets/{TOPIC}/{p}", b"0", makepath=True)
    args = [lagging, "--zookeeper", cluster.connect, "--bootstrap-server", cluster.bootstrap, "--json"]
    with WatchProcess(*args, "--lag-interval", "0.5") as watch:
        first = {}
        while len(first) < PARTITIONS:
            e = watch.event("lag-status", timeout=60)
            if e["status"] != "OK" or e["previous"] is not None:
                first.setdefault(e["partition"], e)
            elif ends[e["partition"]] == 0:
                first[e["partition"]] = e
        for p, e in first.items():
            assert e["logEnd"] == ends[p] and e["offset"] == 0 and e["lag"] == ends[p]
            assert e["status"] == ("STOP" if ends[p] else "OK"), e
        busy = max(ends, key=ends.get)
        cluster.zk.set(f"/consumers/{lagging}/offsets/{TOPIC}/{busy}", str(ends[busy]).encode())
        caught_up = watch.event("lag-status", timeout=60, partition=busy)
        assert (caught_up["previous"], caught_up["status"], caught_up["lag"]) == ("STOP", "OK", 0)


def test_lag_status_reads_offsets_stored_in_kafka(kafka09_cluster, topic):
    """A group with offsets.storage=kafka: its owners topic in ZooKeeper, its offsets in Kafka only."""
    from tests.support.servers import kafka_commit

    cluster = kafka09_cluster
    group = f"kstored-{uuid.uuid4().hex[:6]}"
    cluster.broker.produce(TOPIC, [f"k{i}" for i in range(30)])
    ends = log_ends(cluster, TOPIC)
    committed = {(TOPIC, p): ends[p] // 2 for p in range(PARTITIONS)}
    cluster.zk.ensure_path(f"/consumers/{group}/owners/{TOPIC}")
    kafka_commit(cluster.bootstrap, group, committed)
    args = [group, "--zookeeper", cluster.connect, "--bootstrap-server", cluster.bootstrap, "--json"]
    with WatchProcess(*args, "--lag-interval", "0.5") as watch:
        seen = {}
        while len(seen) < PARTITIONS:
            e = watch.event("lag-status", timeout=60)
            seen[e["partition"]] = e
    for p, e in seen.items():
        assert e["offset"] == committed[(TOPIC, p)] and e["logEnd"] == ends[p]
        assert e["lag"] == ends[p] - committed[(TOPIC, p)]
