"""`ktool groups list --state --type` and `groups describe --members [--verbose]` / `--state [--verbose]`
through --bootstrap-server alone, against real 3.9 and 4.x brokers: each view equals
kafka-consumer-groups (ConsumerGroupCommand) of the same release on the same groups — a classic
cooperative-sticky group, on 4.x a group of the new protocol (KIP-848: member epochs, target assignment,
group epoch, target assignment epoch), a group with committed offsets alone; a group no one knows is
exit 3 in one line in every view."""

from __future__ import annotations

import json
import re
import threading
import time
import uuid

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import create_topic, run_tool
from tests.support.servers import kafka_commit


def their_tables(cluster, *args: str, bootstrap: str | None = None) -> list[dict[str, str]]:
    """Every table ConsumerGroupCommand printed (one a group with --all-groups or several --group), as
    rows of {COLUMN: value}; `COORDINATOR (ID)` and its `host:port  (id)` are read as one word.
    `bootstrap`: another listener than the plain one (its --command-config among `args`)."""
    server = bootstrap or cluster.bootstrap
    out = run_tool(cluster.release, "ConsumerGroupCommand", ["--bootstrap-server", server, *args])
    rows, header = [], None
    for line in out.stdout.splitlines():
        line = re.sub(r"(:\d+)\s+\(", r"\1(", line.replace("COORDINATOR (ID)", "COORDINATOR(ID)"))
        if not line.strip():
            continue
        words = line.split()
        if words[0] == "GROUP":
            header = words
            continue
        assert header is not None, out.stdout
        rows.append(dict(zip(header, words, strict=True)))
    return rows


class LiveConsumer:
    """A confluent-kafka consumer polled on its own thread; `assigned` set once it owns partitions."""

    def __init__(self, bootstrap: str, group: str, topic: str, protocol: str, client_id: str) -> None:
        from confluent_kafka import Consumer

        conf = {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": protocol,
            "client.id": client_id,
            "auto.offset.reset": "earliest",
        }
        if protocol == "classic":
            conf["partition.assignment.strategy"] = "cooperative-sticky"
        self.consumer = Consumer(conf)
        self.assigned = threading.Event()
        self.stop = threading.Event()
        self.consumer.subscribe([topic], on_assign=lambda _c, parts: parts and self.assigned.set())
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _poll(self) -> None:
        while not self.stop.is_set():
            self.consumer.poll(0.2)
        self.consumer.close()

    def close(self) -> None:
        self.stop.set()
        self.thread.join(30)


def _stable(cluster, group: str, timeout: float = 60) -> None:
    """Until the group's coordinator says Stable with every member at the target assignment epoch."""
    deadline = time.monotonic() + timeout
    while True:
        result = run_ktool("groups", "describe", group, "--state", "--verbose", "--json",
                           "--bootstrap-server", cluster.bootstrap)  # fmt: skip
        state = json.loads(result.stdout.splitlines()[0]) if result.exit_code == 0 else {}
        members = run_ktool("groups", "describe", group, "--members", "--verbose", "--json",
                            "--bootstrap-server", cluster.bootstrap)  # fmt: skip
        rows = [json.loads(line) for line in members.stdout.splitlines()]
        at_target = all(r["memberEpoch"] == r["targetEpoch"] for r in rows if r["type"] == "member")
        if state.get("state") == "Stable" and state.get("members") and at_target:
            return
        assert time.monotonic() < deadline, (state, rows)
        time.sleep(0.5)


@pytest.fixture(scope="module")
def groups_of(modern_kafka):
    """On one topic of 4 partitions: a classic cooperative-sticky group of two consumers, on 4.x a
    KIP-848 group of two, and a group with committed offsets only: {kind: group id}."""
    topic = f"views-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, topic, partitions=4)
    suffix = uuid.uuid4().hex[:6]
    groups = {"classic": f"classic-{suffix}", "offsets": f"offsets-{suffix}"}
    if modern_kafka.release.major >= 4:
        groups["consumer"] = f"kip848-{suffix}"
    kafka_commit(modern_kafka.bootstrap, groups["offsets"], {(topic, 0): 0}, timeout=60)
    consumers = [
        LiveConsumer(modern_kafka.bootstrap, groups[kind], topic, kind, f"{kind}-{n}")
        for kind in ("classic", "consumer")
        if kind in groups
        for n in (1, 2)
    ]
    try:
        for c in consumers:
            assert c.assigned.wait(90)
        for kind in ("classic", "consumer"):
            if kind in groups:
                _stable(modern_kafka, groups[kind])
        yield groups
    finally:
        for c in consumers:
            c.close()


def _ours(cluster, *args: str) -> list[dict]:
    result = run_ktool("groups", *args, "--json", "--bootstrap-server", cluster.bootstrap)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def test_list_with_state_and_type_equals_kafka_consumer_groups(modern_kafka, groups_of):
    ours = {r["group"]: (r["groupType"], r["state"]) for r in _ours(modern_kafka, "list") if "groupType" in r}
    theirs = {
        r["GROUP"]: (r["TYPE"].lower(), r["STATE"])
        for r in their_tables(modern_kafka, "--list", "--state", "--type")
    }
    mine = set(groups_of.values())
    assert {g: ours[g] for g in mine} == {g: theirs[g] for g in mine}
    assert ours[groups_of["classic"]] == ("classic", "Stable")
    if "consumer" in groups_of:
        assert ours[groups_of["consumer"]] == ("consumer", "Stable")
    # The filters keep what kafka-consumer-groups' filters keep (its --state and --type take a list).
    filtered = _ours(modern_kafka, "list", "--type", "CONSUMER,classic", "--state", "Stable")
    only = {r["group"] for r in filtered if r["type"] == "group"}
    assert only & mine == {groups_of["classic"], groups_of.get("consumer", groups_of["classic"])}
    theirs_only = their_tables(modern_kafka, "--list", "--state", "Stable", "--type", "consumer,classic")
    assert {r["GROUP"] for r in theirs_only} & mine == only & mine
    listed = run_ktool("groups", "list", "--bootstrap-server", modern_kafka.bootstrap)
    header = listed.stdout.splitlines()[0]
    assert "state" in header and "type" in header and "members (ZooKeeper)" not in header


def test_members_verbose_equals_kafka_consumer_groups(modern_kafka, groups_of):
    names = [groups_of[k] for k in ("classic", "consumer") if k in groups_of]
    flags = [a for g in names for a in ("--group", g)]
    theirs = their_tables(modern_kafka, "--describe", "--members", "--verbose", *flags)
    plain = run_ktool("groups", "describe", *names, "--members", "--verbose",
                      "--bootstrap-server", modern_kafka.bootstrap)  # fmt: skip
    assert plain.exit_code == 0, plain.output
    ours = [
        r for r in _ours(modern_kafka, "describe", *names, "--members", "--verbose") if r["type"] == "member"
    ]

    def text(assignment):
        if not assignment:
            return "-"
        return ";".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(assignment.items()))

    mine = {
        (r["group"], r["consumerId"]): {
            "HOST": r["host"],
            "CLIENT-ID": r["clientId"],
            "#PARTITIONS": str(r["partitions"]),
            "CURRENT-EPOCH": "-" if r["memberEpoch"] is None else str(r["memberEpoch"]),
            "CURRENT-ASSIGNMENT": text(r["assignment"]),
            "TARGET-EPOCH": "-" if r["targetEpoch"] is None else str(r["targetEpoch"]),
            "TARGET-ASSIGNMENT": text(r["targetAssignment"]),
            # before 4.x: each topic's partitions in parentheses, topics apart (3.9 prints no names)
            "ASSIGNMENT": ", ".join(sorted(f"({','.join(map(str, ps))})" for ps in r["assignment"].values()))
            or "-",
        }
        for r in ours
    }
    their = {(r["GROUP"], r["CONSUMER-ID"]): r for r in theirs}
    assert set(mine) == set(their) and len(mine) == 2 * len(names)
    for key, row in mine.items():
        # Only the columns this release prints (3.9 has no epochs); the text table prints the same cells.
        assert {c: v for c, v in row.items() if c in their[key]} == {
            c: their[key][c] for c in row if c in their[key]
        }, key
        assert " | ".join([key[0], key[1], row["HOST"], row["CLIENT-ID"]]) in plain.stdout
    if "consumer" in groups_of:
        epochs = [r["memberEpoch"] for r in ours if r["group"] == groups_of["consumer"]]
        assert all(isinstance(e, int) and e > 0 for e in epochs)


def test_state_verbose_equals_kafka_consumer_groups(modern_kafka, groups_of):
    names = [groups_of[k] for k in ("classic", "consumer") if k in groups_of]
    flags = [a for g in names for a in ("--group", g)]
    theirs = {r["GROUP"]: r for r in their_tables(modern_kafka, "--describe", "--state", "--verbose", *flags)}
    ours = {
        r["group"]: r for r in _ours(modern_kafka, "describe", *names, "--state", "--verbose") if "state" in r
    }
    for group in names:
        r = ours[group]
        mine = {
            "COORDINATOR(ID)": f"{r['coordinator']}({r['coordinatorId']})",
            "ASSIGNMENT-STRATEGY": r["assignor"],
            "STATE": r["state"],
            "GROUP-EPOCH": "-" if r["groupEpoch"] is None else str(r["groupEpoch"]),
            "TARGET-ASSIGNMENT-EPOCH": "-" if r["assignmentEpoch"] is None else str(r["assignmentEpoch"]),
            "#MEMBERS": str(r["members"]),
        }
        assert {c: v for c, v in mine.items() if c in theirs[group]} == {
            c: theirs[group][c] for c in mine if c in theirs[group]
        }, group
    assert ours[groups_of["classic"]]["assignor"] == "cooperative-sticky"


@pytest.mark.parametrize("view", [(), ("--members",), ("--members", "--verbose"), ("--state",)])
def test_a_group_no_one_knows_is_exit_3_in_every_view(modern_kafka, groups_of, view):
    for as_json in ((), ("--json",)):
        result = run_ktool("groups", "describe", "bliling", groups_of["classic"], *view, *as_json,
                           "--bootstrap-server", modern_kafka.bootstrap)  # fmt: skip
        assert result.exit_code == 3, result.output
        assert result.stderr.splitlines() == [
            f"ktool: no consumer group 'bliling' in Kafka (broker {modern_kafka.bootstrap}): its "
            "coordinator does not know it and it has no committed offsets"
        ]
        assert groups_of["classic"] in result.stdout
        if as_json:
            assert json.loads(result.stdout.splitlines()[-1]) == {"type": "summary", "groups": 1, "failed": 1}


def test_through_kafka_alone_no_zookeeper_column_is_shown(modern_kafka, groups_of):
    result = run_ktool(
        "groups", "describe", groups_of["classic"], "--bootstrap-server", modern_kafka.bootstrap
    )
    assert result.exit_code == 0, result.output
    assert "zk offset" not in result.stdout and "kafka offset" in result.stdout
