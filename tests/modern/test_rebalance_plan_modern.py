"""Proof (issue 52): `groups rebalance-plan --bootstrap-server` predicts the assignment real consumers end
up with, on Kafka 4.4.0 and 3.9.2, for each assignor ktool plans: classic groups of Java consumers
(kafka-clients: range, roundrobin, sticky, cooperative-sticky; tests/support/kafka_modern/clients/
GroupMember.java) and of confluent-kafka (librdkafka: range, roundrobin, cooperative-sticky; it has no
eager sticky); consumer groups (KIP-848) of both on the broker's uniform and range, on 4.4.0 only (3.9's
consumer groups are early access, off unless the broker is told, and its uniform predates the rule ktool
models: the plan is 4.x's).

Seeded random memberships: members join with random subscriptions (uniform too: unequal ones take the
broker's heterogeneous builder), leave, and topics grow. Before a member leaves, the plan with
`--remove-member` predicts the assignment after it; before partitions are added, the plan with
`--partitions` predicts it; after a member joins and the group settles, the plan of the live group moves
nothing (a join is not predicted: the newcomer's member id, which decides its place, is not known
before). CI runs 3 steps per case; the exhaustive tier 20. librdkafka has no eager sticky.

Racks (KIP-881): on two brokers with broker.rack r1 and r2 (a topic's partitions spread over both), Java
consumers with client.rack r1 and r2 in range, sticky (equal subscriptions) and cooperative-sticky
(unequal ones) groups: the plan of the settled group moves nothing and the plan before a member leaves
is what the group ends up with; for range, where the rack-blind ranges differ from what the consumers
hold, the racks decided.
"""

from __future__ import annotations

import json
import random
import signal
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import ModernCluster, create_topic, group_member_command

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]
FAST_GROUPS = {
    # members leave by closing; a long session keeps a consumer starved of CPU on a loaded machine in
    "group.consumer.session.timeout.ms": 30000,
    "group.consumer.min.session.timeout.ms": 6000,
    "group.consumer.heartbeat.interval.ms": 1000,
    "group.consumer.min.heartbeat.interval.ms": 1000,
    "group.initial.rebalance.delay.ms": 0,
}
CASES = [
    ("classic", "java", "range"),
    ("classic", "java", "roundrobin"),
    ("classic", "java", "sticky"),
    ("classic", "java", "cooperative-sticky"),
    ("classic", "librdkafka", "range"),
    ("classic", "librdkafka", "roundrobin"),
    ("classic", "librdkafka", "cooperative-sticky"),  # librdkafka has no eager sticky: its client refuses it
    # consumer groups on 3.9 are early access (KIP-848 preview, off by default): proved on 4.x only
    *(
        pytest.param("consumer", client, assignor, marks=pytest.mark.kafka4_only)
        for client in ("java", "librdkafka")
        for assignor in ("uniform", "range")
    ),
]


@pytest.fixture(scope="module")
def cluster(kafka_release, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("kafka-plans")
    with ModernCluster(kafka_release, "combined", workdir, properties=FAST_GROUPS) as started:
        yield started


@pytest.fixture(scope="module")
def java_member(cluster) -> list[str]:
    return group_member_command(cluster.release)


class RdMember:
    """A confluent-kafka consumer in this process (its callbacks run in poll, which `pump` calls)."""

    def __init__(self, group: Group, topics: tuple[str, ...], index: int, rack: str | None = None) -> None:
        from confluent_kafka import Consumer

        conf = {
            "bootstrap.servers": group.bootstrap,
            "group.id": group.name,
            "group.protocol": group.protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "topic.metadata.refresh.interval.ms": 1000,
        }
        if group.protocol == "classic":
            conf.update(
                {
                    "partition.assignment.strategy": group.assignor,
                    "session.timeout.ms": 30000,
                    "heartbeat.interval.ms": 1000,
                }
            )
        else:
            conf["group.remote.assignor"] = group.assignor
        if rack:
            conf["client.rack"] = rack
        self.consumer = Consumer(conf)
        self.consumer.subscribe(list(topics))
        self.topics = topics

    @property
    def id(self) -> str:
        return self.consumer.memberid() or ""

    def pump(self) -> None:
        self.consumer.poll(0.02)

    def owned(self) -> set[tuple[str, int]]:
        return {(tp.topic, tp.partition) for tp in self.consumer.assignment()}

    def leave(self) -> None:
        self.consumer.close()


class JavaMember:
    """A kafka-clients consumer as a process (GroupMember.java), its callbacks read on a thread."""

    def __init__(self, group: Group, topics: tuple[str, ...], index: int, rack: str | None = None) -> None:
        client_id = f"consumer-{group.name}-{index}"  # kafka-clients' default form: the plan names Java
        args = [
            group.bootstrap,
            group.name,
            ",".join(topics),
            group.protocol,
            client_id,
            group.assignor,
            "30000",
            rack or "",
        ]
        self.proc = subprocess.Popen(
            [*group.java, *args],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        self.topics = topics
        self.log: list[dict] = []
        self.id = ""
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                entry = json.loads(line)
                self.id = entry["member"]
                self.log.append(entry)

    def pump(self) -> None:
        assert self.proc.poll() is None, f"Java member exited {self.proc.returncode}"

    def owned(self) -> set[tuple[str, int]]:
        now: set[tuple[str, int]] = set()
        for entry in list(self.log):
            parts = {tuple(p) for p in entry["partitions"]}
            now = now | parts if entry["event"] == "assigned" else now - parts
        return now

    def leave(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # closes the consumer: it leaves the group
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


class Group:
    """The consumers of one group, all of one client library."""

    def __init__(
        self, cluster: ModernCluster, protocol: str, client: str, assignor: str, java, run: str = ""
    ) -> None:
        self.bootstrap, self.protocol, self.client, self.assignor = (
            cluster.bootstrap,
            protocol,
            client,
            assignor,
        )
        self.name = f"plans-{protocol}-{client}-{assignor}{run}"  # one group and topics per test
        self.java = java
        self.topics = {f"{self.name}-a": 5, f"{self.name}-b": 3, f"{self.name}-c": 4}
        for topic, count in self.topics.items():
            create_topic(cluster, topic, partitions=count)
        self.members: dict[str, RdMember | JavaMember] = {}
        self.pending: list[RdMember | JavaMember] = []
        self.joined = 0

    def join(self, topics: tuple[str, ...], rack: str | None = None) -> None:
        kind = JavaMember if self.client == "java" else RdMember
        self.joined += 1
        self.pending.append(kind(self, topics, self.joined, rack))

    def leave(self, member_id: str) -> None:
        self.members.pop(member_id).leave()

    def pump(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            for member in [*self.members.values(), *self.pending]:
                member.pump()
            for member in list(self.pending):
                if member.id:
                    self.members[member.id] = member
                    self.pending.remove(member)
            if self.client == "java":
                time.sleep(0.05)

    def owners(self) -> dict[tuple[str, int], str]:
        return {tp: member_id for member_id, m in self.members.items() for tp in m.owned()}

    def settle(self, timeout: float = 180) -> dict[tuple[str, int], str]:
        """The owners once every subscribed partition has exactly one and nothing changed for 2 s."""
        deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
        while time.monotonic() < deadline:
            self.pump(0.3)
            joined = [*self.members.values(), *self.pending]
            wanted = {(t, p) for m in joined for t in m.topics for p in range(self.topics[t])}
            owners = self.owners()
            total = sum(len(m.owned()) for m in self.members.values())
            settled = not self.pending and set(owners) == wanted and total == len(wanted)
            settled = settled and self._reconciled()
            if owners != last or not settled:
                last, since = owners, time.monotonic()
            elif time.monotonic() - since > 2:
                return owners
        held = {m: sorted(member.owned()) for m, member in self.members.items()}
        raise AssertionError(
            f"group {self.name} did not settle: {len(self.pending)} pending, wanted {sorted(wanted)}, "
            f"held {held}"
        )

    def _reconciled(self) -> bool:
        """A consumer group: every member at the target assignment's epoch, holding its target (every
        partition owned once is not enough: a partition moves only after its owner revokes it)."""
        if self.protocol != "consumer":
            return True
        from kafka_tools.broker.group_requests import consumer_group_describe

        host, port = self.bootstrap.rsplit(":", 1)
        described = consumer_group_describe((host, int(port)), self.name, 10)
        return described is not None and all(
            m.member_epoch == described.assignment_epoch and set(m.assignment) == set(m.target_assignment)
            for m in described.members
        )

    def close(self) -> None:
        for member in [*self.members.values(), *self.pending]:
            member.leave()


def plan(cluster: ModernCluster, group: str, *what_if: str) -> tuple[dict, dict]:
    result = run_ktool(
        "groups", "rebalance-plan", "--bootstrap-server", cluster.bootstrap, group, "--json", *what_if
    )
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.output.splitlines()]
    proposed = {(o["topic"], o["partition"]): o["proposedOwner"] for o in rows if o["type"] == "assignment"}
    return {tp: owner for tp, owner in proposed.items() if owner is not None}, rows[-2]


def grow(cluster: ModernCluster, topic: str, count: int) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})  # kept: its futures die with it
    admin.create_partitions([NewPartitions(topic, count)])[topic].result(timeout=60)


def leave_as_planned(cluster: ModernCluster, group: Group, rng: random.Random, step) -> tuple[str, dict]:
    """A random member leaves; the plan made before with `--remove-member` is what the group settles on.
    (The member, the owners after.)"""
    leaving = rng.choice(sorted(group.members))
    predicted, summary = plan(cluster, group.name, "--remove-member", leaving)
    group.leave(leaving)
    owners = group.settle()
    assert predicted == owners, (step, summary, predicted, owners)
    return leaving, owners


def prove(cluster: ModernCluster, java: list[str], protocol: str, client: str, assignor: str, steps: int):
    rng = random.Random(f"{protocol}-{client}-{assignor}")
    group = Group(cluster, protocol, client, assignor, java, f"-{steps}")
    names = sorted(group.topics)
    checked = []
    try:
        for step in range(steps):
            if len(group.members) < 2 or (len(group.members) < 4 and rng.random() < 0.45):
                topics = tuple(sorted(rng.sample(names, rng.randint(1, len(names)))))
                group.join(topics)
                owners = group.settle()
                predicted, summary = plan(cluster, group.name)
                assert summary["moves"] == 0 and predicted == owners, (step, summary, predicted, owners)
                checked.append(("joined", topics))
            elif rng.random() < 0.25:
                topic = rng.choice(names)
                count = group.topics[topic] + rng.randint(1, 2)
                predicted, summary = plan(cluster, group.name, "--partitions", f"{topic}={count}")
                grow(cluster, topic, count)
                group.topics[topic] = count
                owners = group.settle()
                assert predicted == owners, (step, summary, predicted, owners)
                checked.append(("grew", topic, count))
            else:
                checked.append(("left", leave_as_planned(cluster, group, rng, step)[0]))
    finally:
        group.close()
    return checked


def _java_or_none(cluster: ModernCluster, protocol: str, client: str, request) -> list[str]:
    return request.getfixturevalue("java_member") if client == "java" else []


@pytest.mark.parametrize(("protocol", "client", "assignor"), CASES)
def test_the_plan_predicts_what_real_consumers_end_up_with(cluster, protocol, client, assignor, request):
    java = _java_or_none(cluster, protocol, client, request)
    assert len(prove(cluster, java, protocol, client, assignor, steps=3)) == 3


@pytest.mark.exhaustive
@pytest.mark.parametrize(("protocol", "client", "assignor"), CASES)
def test_the_plan_predicts_20_seeded_steps_of_real_consumers(cluster, protocol, client, assignor, request):
    java = _java_or_none(cluster, protocol, client, request)
    checked = prove(cluster, java, protocol, client, assignor, steps=20)
    print(cluster.release.version, protocol, client, assignor, [c[0] for c in checked])
    assert len(checked) == 20


def _metadata_topics(bootstrap: str, topics: list[str]) -> list[str]:
    """The topics of a Metadata v1 response to a request for `topics`, in the broker's order."""
    from kafka_tools.broker.wire import Connection, Reader, string

    host, port = bootstrap.rsplit(":", 1)
    conn = Connection(host, int(port), 10)
    try:
        data = conn.ask(3, 1, struct.pack(">i", len(topics)) + b"".join(string(t) for t in topics))
    finally:
        conn.close()
    assert data is not None
    reader = Reader(data)
    reader.array(lambda r: (r.take(">i"), r.string(), r.take(">i"), r.nullable_string()))  # brokers
    reader.take(">i")  # controller

    def partition(r: Reader) -> None:
        r.take(">hii")
        r.array(lambda r: r.take(">i"))
        r.array(lambda r: r.take(">i"))

    def topic(r: Reader) -> str:
        r.take(">h")
        name = r.string()
        r.take(">b")
        r.array(partition)
        return name

    return reader.array(topic)


def test_the_brokers_metadata_lists_topics_in_the_order_ktool_computes(cluster):
    """librdkafka's cooperative-sticky deals unowned partitions in the order its leader's Metadata response
    lists the topics: a Scala Set's, as format/java_hash.scala_set_order computes it."""
    from kafka_tools.format.java_hash import scala_set_order

    rng = random.Random("metadata-order")
    names = [
        f"order-{word}" for word in ("orders", "billing", "clicks", "audit", "users", "events", "x", "pay")
    ]
    for name in names:
        create_topic(cluster, name, partitions=1)
    for _ in range(10):
        asked = rng.sample(names, rng.randint(2, len(names)))
        assert _metadata_topics(cluster.bootstrap, asked) == scala_set_order(asked), asked


RACKED = {1: {"broker.rack": "r1"}, 2: {"broker.rack": "r2"}}


@pytest.fixture(scope="module")
def racked_cluster(kafka_release, tmp_path_factory):
    """Two brokers on racks r1 and r2: a topic of one replica per partition has partitions on each."""
    workdir = tmp_path_factory.mktemp("kafka-racks")
    with ModernCluster(
        kafka_release, "split", workdir, brokers=2, properties=FAST_GROUPS, node_properties=RACKED
    ) as started:
        yield started


def rack_blind_range(group: Group) -> dict[tuple[str, int], str]:
    """What kafka-clients' range would give the group's members without racks."""
    from kafka_tools.consumers.classic_member import ClassicMember
    from kafka_tools.consumers.member_order import JAVA
    from kafka_tools.consumers.range_assignor import range_assign

    members = [ClassicMember(member_id, m.topics) for member_id, m in group.members.items()]
    assignment = range_assign(members, group.topics, JAVA)
    return {tp: member for member, tps in assignment.items() for tp in tps}


# the rack paths are kafka-clients' (the consumers' own library): CI proves them on 4.4.0's clients, the
# exhaustive tier on 3.9.2's as well (a two-broker cluster a release: about 2 core-minutes)
@pytest.mark.kafka4_in_ci
@pytest.mark.parametrize("assignor", ["range", "sticky", "cooperative-sticky"])
@pytest.mark.own_cluster
def test_the_plan_with_racks_predicts_what_java_consumers_end_up_with(racked_cluster, assignor):
    java = group_member_command(racked_cluster.release)
    rng = random.Random(f"racks-{assignor}")
    group = Group(racked_cluster, "classic", "java", assignor, java, "-racks")
    names = sorted(group.topics)
    rack_decided = 0
    try:
        for rack in ("r1", "r2", "r1", "r2"):
            # sticky: equal subscriptions (ConstrainedAssignmentBuilder); range and cooperative-sticky
            # random ones (cooperative-sticky: GeneralAssignmentBuilder)
            topics = tuple(names) if assignor == "sticky" else tuple(sorted(rng.sample(names, 2)))
            group.join(topics, rack)
            owners = group.settle()
            predicted, summary = plan(racked_cluster, group.name)
            assert summary["moves"] == 0 and predicted == owners, (rack, summary, predicted, owners)
            assert any(r.startswith("racks: members send r1") for r in summary["reasons"]), summary
            rack_decided += assignor == "range" and rack_blind_range(group) != owners
        owners = leave_as_planned(racked_cluster, group, rng, "leave")[1]
        rack_decided += assignor == "range" and rack_blind_range(group) != owners
    finally:
        group.close()
    assert assignor != "range" or rack_decided > 0


@pytest.mark.own_cluster
def test_librdkafkas_range_with_racks_that_decide_is_refused_in_one_line(racked_cluster):
    group = Group(racked_cluster, "classic", "librdkafka", "range", [], "-racks")
    try:
        group.join(tuple(sorted(group.topics)), "r1")
        group.join(tuple(sorted(group.topics)), "r2")
        group.settle()
        result = run_ktool(
            "groups", "rebalance-plan", "--bootstrap-server", racked_cluster.bootstrap, group.name
        )
    finally:
        group.close()
    assert result.exit_code == 1, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "librdkafka's range assignor, whose rack-aware path" in lines[0], result.output


@pytest.mark.exhaustive
@pytest.mark.parametrize("assignor", ["range", "sticky", "cooperative-sticky"])
@pytest.mark.own_cluster
def test_the_plan_with_racks_predicts_20_seeded_steps(racked_cluster, assignor):
    """20 seeded joins (a random rack each; sticky with equal subscriptions, the others random ones)
    and leaves, each planned before and checked after."""
    java = group_member_command(racked_cluster.release)
    rng = random.Random(f"racks-20-{assignor}")
    group = Group(racked_cluster, "classic", "java", assignor, java, "-racks20")
    names = sorted(group.topics)
    steps = []
    try:
        for step in range(20):
            if len(group.members) < 2 or (len(group.members) < 4 and rng.random() < 0.5):
                random_topics = tuple(sorted(rng.sample(names, rng.randint(1, len(names)))))
                group.join(tuple(names) if assignor == "sticky" else random_topics, rng.choice(["r1", "r2"]))
                owners = group.settle()
                predicted, summary = plan(racked_cluster, group.name)
                assert summary["moves"] == 0 and predicted == owners, (step, summary, predicted, owners)
                assert any(r.startswith("racks: members send") for r in summary["reasons"]), summary
                steps.append("joined")
            else:
                leave_as_planned(racked_cluster, group, rng, step)
                steps.append("left")
    finally:
        group.close()
    print(racked_cluster.release.version, assignor, steps)
    assert len(steps) == 20
