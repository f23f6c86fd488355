"""`ktool groups watch --bootstrap-server` on a real Kafka 4.x (KRaft, no ZooKeeper) with real consumers
of both protocols: KIP-848 consumer groups (`group.protocol=consumer`) and classic cooperative-sticky
groups. A member joins, a member is SIGKILLed (its session times out), partitions are added; the watch
tells each change once, in order, with the owners the consumers themselves report in their assignment
callbacks (tests/support/group_member.py, and a Java consumer of kafka-clients with
group.protocol=consumer: tests/support/kafka_modern/clients/GroupMember.java), and `--until-stable`
exits 0 only after every consumer has its final assignment.

One cluster for the module, with short sessions so that a killed member leaves in seconds: the broker's
group.consumer.session.timeout.ms (KIP-848 consumers cannot set theirs) and classic members' own
session.timeout.ms of 6 s."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import ModernCluster, create_topic, group_member_command
from tests.support.servers import kafka_commit
from tests.support.watch import WatchProcess

pytestmark = pytest.mark.server
ROOT = Path(__file__).resolve().parents[2]
FAST_GROUPS = {
    "group.consumer.session.timeout.ms": 6000,
    "group.consumer.min.session.timeout.ms": 6000,
    "group.consumer.heartbeat.interval.ms": 1000,
    "group.consumer.min.heartbeat.interval.ms": 1000,
    "group.initial.rebalance.delay.ms": 0,
}


@pytest.fixture(scope="module")
def cluster(kafka4_release, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("kafka-watch")
    with ModernCluster(kafka4_release, "combined", workdir, properties=FAST_GROUPS) as started:
        # __consumer_offsets made and loaded once, before any test times its groups
        create_topic(started, "warm-up")
        kafka_commit(started.bootstrap, "warm-up", {("warm-up", 0): 0}, timeout=60)
        yield started


@pytest.fixture(scope="module")
def java_member(cluster) -> list[str]:
    """The command that runs GroupMember.java (kafka-clients of the cluster's release), compiled once."""
    return group_member_command(cluster.release)


class Member:
    """A consumer as a process (tests/support/group_member.py, or GroupMember.java when `java` is its
    command); its callbacks read on a thread (a line that is not JSON, a Java client's log, skipped)."""

    def __init__(
        self, cluster, group: str, topic: str, protocol: str, client_id: str, java: list[str] | None = None
    ) -> None:
        command = java or [sys.executable, "-m", "tests.support.group_member"]
        self.proc = subprocess.Popen(
            [*command, cluster.bootstrap, group, topic, protocol, client_id],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
        self.log: list[dict] = []
        self.id: str | None = None
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if not line.startswith("{"):
                continue
            entry = json.loads(line)
            self.id = entry["member"]
            self.log.append(entry)

    def owned(self) -> set[tuple[str, int]]:
        """What the consumer owns after its callbacks so far (both protocols hand increments here)."""
        now: set[tuple[str, int]] = set()
        for entry in list(self.log):
            parts = {tuple(p) for p in entry["partitions"]}
            now = now | parts if entry["event"] == "assigned" else now - parts
        return now

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)


def _until(what: str, check, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.1)


def _owner_timelines(members: list[Member]) -> dict[tuple[str, int], list[tuple[float, str | None]]]:
    """Per partition, (time, owner) from the consumers' own callbacks: an owner on assignment, None on
    revocation or loss."""
    out: dict[tuple[str, int], list[tuple[float, str | None]]] = {}
    for m in members:
        for entry in m.log:
            for p in entry["partitions"]:
                owner = entry["member"] if entry["event"] == "assigned" else None
                out.setdefault(tuple(p), []).append((entry["t"], owner))
    return {tp: sorted(line) for tp, line in out.items()}


def _changes(owners: list[str | None]) -> list[str]:
    """Successive distinct owners, nobody left out (a poll may fall between a revoke and an assign)."""
    out: list[str] = []
    for owner in owners:
        if owner is not None and (not out or out[-1] != owner):
            out.append(owner)
    return out


@pytest.mark.parametrize(
    ("protocol", "client"), [("consumer", "librdkafka"), ("classic", "librdkafka"), ("consumer", "java")]
)
def test_watch_tells_join_kill_and_new_partitions_as_the_consumers_see_them(
    cluster, protocol, client, request
):
    java = request.getfixturevalue("java_member") if client == "java" else None
    watch_join_kill_grow(cluster, protocol, java)


def watch_join_kill_grow(cluster: ModernCluster, protocol: str, java: list[str] | None) -> None:
    """The story on `cluster` (test_groups_watch_39.py tells it on 3.9 too): a joins; the watch starts;
    b joins (`--until-stable` exits 0 once both own their share); b is SIGKILLed; the topic grows from
    4 to 6 partitions. Each event once, in order, with the owners the consumers report."""
    topic, group = f"watched-{uuid.uuid4().hex[:8]}", f"w-{protocol}-{uuid.uuid4().hex[:6]}"
    create_topic(cluster, topic, partitions=4)
    members: list[Member] = []
    try:
        a = Member(cluster, group, topic, protocol, "a", java)
        members.append(a)
        _until("a's assignment", lambda: len(a.owned()) == 4)
        with WatchProcess(group, "--bootstrap-server", cluster.bootstrap, "--json", "--interval", "0.5",
                          "--lag-interval", "3600") as watch:  # fmt: skip
            watch.event("member-joined", timeout=60, member=a.id, initial=True)
            b = Member(cluster, group, topic, protocol, "b", java)
            members.append(b)
            _until("b's member id", lambda: b.id is not None or b.proc.poll() is not None)
            joined = watch.expect("b joining", lambda e: e.get("event") == "member-joined"
                                  and e["member"] != a.id, timeout=60)  # fmt: skip
            # `--until-stable` while b's rebalance goes on: exit 0 only once both own their final share.
            stable = run_ktool("groups", "watch", group, "--until-stable", "--timeout", "90", "--json",
                               "--interval", "0.5", "--bootstrap-server", cluster.bootstrap)  # fmt: skip
            exited = time.time()
            assert stable.exit_code == 0, stable.output
            lines = [json.loads(x) for x in stable.output.splitlines() if x.startswith("{")]
            state = next(e for e in lines if e.get("event") == "group-state")
            said = {(o["topic"], o["partition"]): o["owner"] for o in state["owners"]}
            # The coordinator moves a member to its new epoch (a consumer group) or the group to Stable (a
            # classic one) before the client runs its assigned callback: new partitions need no ack
            # (KIP-848), and a follower's SyncGroup answer goes out as the group turns Stable. So a
            # callback may come after the exit, but only to take up what the watch said was final: no
            # revocation, and the owners the consumers end with are the watch's.
            _until("both consumers' callbacks", lambda: len(a.owned()) == 2 and len(b.owned()) == 2)
            late = [e for m in members for e in m.log if e["t"] > exited]
            assert all(e["event"] == "assigned" for e in late), (exited, late)
            reported = {tp: m.id for m in members for tp in m.owned()}
            assert said == reported and len(reported) == 4, (said, reported)
            assert joined["member"] == b.id and joined["host"]
            watch.expect("the group settled with b", lambda e: e.get("event") == "rebalance-finished"
                         and b.id in e["members"], timeout=60)  # fmt: skip

            b.kill()
            left = watch.event("member-left", timeout=60, member=b.id)
            _until("a's partitions back", lambda: len(a.owned()) == 4)
            watch.expect("a owning all again", lambda e: e.get("event") == "rebalance-finished"
                         and e["members"] == [a.id], timeout=60)  # fmt: skip

            from confluent_kafka.admin import AdminClient, NewPartitions

            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            admin.create_partitions([NewPartitions(topic, 6)])[topic].result(30)
            added = watch.event("partitions-added", timeout=60, topic=topic)
            assert (added["from"], added["to"]) == (4, 6)
            _until("a owning the new partitions", lambda: len(a.owned()) == 6)
            finished = watch.expect("the new partitions owned", lambda e: e.get("event")
                                    == "rebalance-finished" and e["partitions"] == 6, timeout=60)  # fmt: skip
            assert finished["matchesPlan"] is True
            watch.proc.send_signal(signal.SIGTERM)
            assert watch.wait(30) == 143
            events = [e for e in watch.seen + watch.rest() if e["type"] == "event"]
    finally:
        for m in members:
            m.kill()

    story = "\n".join(json.dumps(e) for e in events)
    kinds = [e["event"] for e in events]
    # Each thing once, in order.
    assert [e["member"] for e in events if e["event"] == "member-joined"] == [a.id, b.id], story
    assert [e.get("initial") for e in events if e["event"] == "member-joined"] == [True, None], story
    assert [e["member"] for e in events if e["event"] == "member-left"] == [b.id], story
    assert kinds.index("member-left") > kinds.index("member-joined") and left["_readAt"] < added["_readAt"]
    assert kinds.count("partitions-added") == 1
    starts = [i for i, k in enumerate(kinds) if k == "rebalance-started"]
    ends = [i for i, k in enumerate(kinds) if k == "rebalance-finished"]
    assert len(starts) == len(ends) >= 3 and all(s < e for s, e in zip(starts, ends, strict=True)), story
    assert all(e < s for e, s in zip(ends, starts[1:], strict=False)), story  # never two at once
    if protocol == "consumer":
        epochs = [e["to"] for e in events if e["event"] == "group-epoch"]
        assert epochs == sorted(set(epochs)) and len(epochs) >= 4, (
            story
        )  # start, b in, b out, new partitions  # each epoch told once, rising
    # The owners the watch told are the owners the consumers reported, change by change.
    told: dict[tuple[str, int], list[str | None]] = {(topic, p): [a.id] for p in range(4)}  # at the start
    for e in events:
        if e["event"] == "owner-changed":
            told.setdefault((e["topic"], e["partition"]), []).append(e["to"])
    for tp, line in _owner_timelines(members).items():
        assert _changes(told.get(tp, [])) == _changes([o for _, o in line]), (tp, line, story)
    assert set(told) == {(topic, p) for p in range(6)}


def test_a_group_that_never_appears_is_exit_1_at_the_timeout(cluster):
    result = run_ktool("groups", "watch", "bliling", "--until-stable", "--timeout", "2", "--json",
                       "--bootstrap-server", cluster.bootstrap)  # fmt: skip
    assert result.exit_code == 1, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    # as on ZooKeeper: the lag cannot be read (said once), the group is never stable
    assert [e["event"] for e in events if e["type"] == "event"] == [
        "lag-unavailable",
        "timeout",
        "group-state",
    ]
    assert events[0]["message"].startswith("no consumer group 'bliling' in Kafka")
    assert events[-2]["stable"] is False and events[-2]["members"] == []


def test_an_unreachable_broker_is_one_line_and_exit_3(tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = run_ktool("groups", "watch", "g", "--bootstrap-server", f"127.0.0.1:{port}")
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == [
        f"ktool: broker 127.0.0.1:{port}: connection refused (is a broker listening there?)"
    ]


def test_watch_all_follows_every_classic_and_consumer_group_the_brokers_list(cluster):
    topic, group = f"all-{uuid.uuid4().hex[:8]}", f"all-{uuid.uuid4().hex[:6]}"
    create_topic(cluster, topic, partitions=2)
    member = Member(cluster, group, topic, "consumer", "all-a")
    try:
        _until("the member's assignment", lambda: len(member.owned()) == 2)
        result = run_ktool(
            "groups", "watch", "--all", "--once", "--json", "--bootstrap-server", cluster.bootstrap
        )
    finally:
        member.kill()
    assert result.exit_code == 0, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    appeared = {e["group"] for e in events if e.get("event") == "group-appeared"}
    assert {group, "warm-up"} <= appeared
    state = next(e for e in events if e.get("event") == "group-state" and e["group"] == group)
    assert state["stable"] is True and state["members"] == [member.id] and state["owned"] == 2
