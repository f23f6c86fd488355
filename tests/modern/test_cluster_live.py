"""`ktool topics`, `brokers`, `cluster-id` and `quorum` on a live KRaft cluster (one controller, brokers
1-3; 3.9.2 and 4.4.0), each view equal to Kafka's own tool on the same cluster at the same moment:

* `topics --bootstrap-server` and its three filters against kafka-topics `--describe` (and the same
  filters), healthy, with a reassignment held in progress by a 1 B/s throttle, and after broker 3 is
  SIGKILLed with min.insync.replicas above what is left of the ISR;
* `topics --metadata-log` on a copy of the controller's log dir: the same partitions as the brokers say;
* `quorum` against kafka-metadata-quorum `describe --status` and `--replication`;
* an unreachable broker and a TLS client against a plaintext port: one line, exit 3.

"The same moment": ktool is run before and after Kafka's tool, and the comparison is made when both of
ktool's answers are the same (the cluster did not change in between), asked again until then.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import copy_live_dir, create_topic, run_tool, run_tool_batch
from tests.support.servers import free_port

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def cluster(kafka_split):
    """The session's one controller and three brokers of the release; broker 3, which a test kills, is
    started again after the module."""
    create_topic(kafka_split, "orders", partitions=3, replication=3, config={"min.insync.replicas": 2})
    create_topic(kafka_split, "strict", partitions=2, replication=3, config={"min.insync.replicas": 3})
    yield kafka_split
    kafka_split.start_stopped()


def _ktool(*args: str) -> list[dict]:
    result = run_ktool(*args, "--json")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _ids(text: str) -> list[int] | None:
    text = text.strip()
    if text == "N/A":
        return None
    return [int(n) for n in text.split(",") if n]


def _kafka_topics(cluster, *args: str) -> dict[tuple[str, int], dict]:
    """kafka-topics --describe's partition lines, by (topic, partition), in ktool's field names."""
    return _kafka_topics_each(cluster, [args])[0]


def _kafka_topics_each(cluster, arg_lists: list[tuple[str, ...]]) -> list[dict[tuple[str, int], dict]]:
    """`_kafka_topics` for each argument list, kafka-topics run on them in one JVM."""
    outs = run_tool_batch(
        cluster.release,
        "TopicCommand",
        [["--bootstrap-server", cluster.bootstrap, "--describe", *args] for args in arg_lists],
    )
    return [_describe_rows(out) for out in outs]


def _describe_rows(out: str) -> dict[tuple[str, int], dict]:
    rows = {}
    for line in out.splitlines():
        if not line.startswith("\t"):
            continue
        fields = dict(
            part.split(": ", 1) if ": " in part else (part.rstrip(":"), "")
            for part in line.strip().split("\t")
        )
        rows[(fields["Topic"], int(fields["Partition"]))] = {
            "leader": None if fields["Leader"] == "none" else int(fields["Leader"]),
            "replicas": _ids(fields["Replicas"]),
            "isr": _ids(fields["Isr"]),
            "addingReplicas": _ids(fields.get("Adding Replicas", "")),
            "removingReplicas": _ids(fields.get("Removing Replicas", "")),
            "elr": _ids(fields.get("Elr", "N/A")),
            "lastKnownElr": _ids(fields.get("LastKnownElr", "N/A")),
        }
    return rows


def _ours(objs: list[dict]) -> dict[tuple[str, int], dict]:
    keys = ("leader", "replicas", "isr", "addingReplicas", "removingReplicas", "elr", "lastKnownElr")
    return {(o["topic"], o["partition"]): {k: o[k] for k in keys} for o in objs if o["type"] == "partition"}


def _same_moment(ours: Callable[[], object], theirs: Callable[[], object], timeout: float = 60) -> tuple:
    """(ours, theirs) once ktool answered the same before and after Kafka's tool and both agree, or the
    last try (the assertion then shows the difference)."""
    deadline = time.monotonic() + timeout
    while True:
        before = ours()
        got = theirs()
        after = ours()
        if (before == after == got) or time.monotonic() > deadline:
            return after, got
        time.sleep(0.5)


FILTERS = ("--under-replicated-partitions", "--under-min-isr-partitions", "--unavailable-partitions")


def _existing(cluster) -> list[str]:
    return [t for t in ("orders", "strict", "moving", "lonely") if t in _topic_names(cluster)]


def _topic_names(cluster) -> set[str]:
    return {
        o["topic"]
        for o in _ktool("topics", "--bootstrap-server", cluster.bootstrap)
        if o["type"] == "partition"
    }


def _compare_all(cluster) -> None:
    """`topics` and each of its filters against kafka-topics' (its four runs in one JVM), at one moment."""
    names = _existing(cluster)
    flag_sets = [(), *((f,) for f in FILTERS)]
    ours, theirs = _same_moment(
        lambda: [
            _ours(_ktool("topics", *names, *flags, "--bootstrap-server", cluster.bootstrap))
            for flags in flag_sets
        ],
        lambda: _kafka_topics_each(cluster, [("--topic", "|".join(names), *flags) for flags in flag_sets]),
    )
    for flags, mine, kafkas in zip(flag_sets, ours, theirs, strict=True):
        assert mine == kafkas, f"ktool topics {' '.join(flags)}"


def test_topics_equal_kafka_topics_describe_and_its_filters(cluster) -> None:
    _compare_all(cluster)
    text = run_ktool("topics", "orders", "--bootstrap-server", cluster.bootstrap)
    assert text.exit_code == 0, text.output
    assert "min isr" in text.stdout and "elr" in text.stdout


def test_brokers_and_cluster_id_equal_describe_cluster(cluster) -> None:
    objs = _ktool("brokers", "--bootstrap-server", cluster.bootstrap)
    brokers = [(o["id"], o["port"]) for o in objs if o["type"] == "broker"]
    assert brokers == [(n.node_id, n.port) for n in cluster.brokers]
    (cid,) = [o["clusterId"] for o in objs if o["type"] == "cluster"]
    assert cid == cluster.cluster_id
    result = run_ktool("cluster-id", "--bootstrap-server", cluster.bootstrap)
    assert (result.exit_code, result.stdout.strip()) == (0, cluster.cluster_id)


def _quorum_tool(cluster) -> dict:
    status, replication = run_tool_batch(
        cluster.release,
        "MetadataQuorumCommand",
        [
            ["--bootstrap-server", cluster.bootstrap, "describe", part]
            for part in ("--status", "--replication")
        ],
    )
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    rows = [line.split() for line in replication.splitlines()[1:] if line.strip()]
    zero = "AAAAAAAAAAAAAAAAAAAAAA"
    return {
        "clusterId": fields["ClusterId"].strip(),
        "leaderId": int(fields["LeaderId"]),
        "leaderEpoch": int(fields["LeaderEpoch"]),
        "voters": sorted(int(n) for n in re.findall(r'"id": (\d+)', fields["CurrentVoters"])),
        "observers": sorted(int(n) for n in re.findall(r'"id": (\d+)', fields["CurrentObservers"])),
        "replicas": sorted((int(r[0]), None if r[1] == zero else r[1], r[-1]) for r in rows),
        "highWatermark": int(fields["HighWatermark"]),
    }


def test_quorum_equals_kafka_metadata_quorum(cluster) -> None:
    def ours() -> dict:
        objs = _ktool("quorum", "--bootstrap-server", cluster.bootstrap)
        (q,) = [o for o in objs if o["type"] == "quorum"]
        replicas = sorted(
            (o["nodeId"], o["directoryId"], o["status"]) for o in objs if o["type"] == "replica"
        )
        return {
            "clusterId": q["clusterId"],
            "leaderId": q["leaderId"],
            "leaderEpoch": q["leaderEpoch"],
            "voters": sorted(v["id"] for v in q["voters"]),
            "observers": sorted(v["id"] for v in q["observers"]),
            "replicas": replicas,
            "highWatermark": q["highWatermark"],
        }

    from kafka_tools.render.contract import problems

    result = run_ktool("quorum", "--bootstrap-server", cluster.bootstrap, "--json")
    assert problems("quorum", result.stdout.splitlines()) == []
    before = ours()
    theirs = _quorum_tool(cluster)
    after = ours()
    # the high watermark moves on (the controller appends a no-op record every 500 ms): between ours
    assert before["highWatermark"] <= theirs["highWatermark"] <= after["highWatermark"]
    strip = lambda d: {k: v for k, v in d.items() if k != "highWatermark"}  # noqa: E731
    assert strip(after) == strip(theirs)
    assert theirs["observers"] == [1, 2, 3] and theirs["voters"] == [100]


def _create_on(cluster, topic: str, broker: int) -> None:
    """A one-partition topic whose one replica is on `broker` (confluent-kafka 2.16's NewTopic refuses a
    replica assignment), once the brokers have its leader."""
    args = ["--bootstrap-server", cluster.bootstrap, "--create", "--topic", topic]
    run_tool(cluster.release, "TopicCommand", [*args, "--replica-assignment", str(broker)])
    deadline = time.monotonic() + 30
    while topic not in _topic_names(cluster):
        assert time.monotonic() < deadline, f"{topic} not created"
        time.sleep(0.2)


def _log_dirs_tool(cluster, topics: str) -> dict[tuple[str, int], dict[str, int]]:
    """kafka-log-dirs --describe: each partition's size on each broker (its current log, not a future one)."""
    out = run_tool(
        cluster.release,
        "LogDirsCommand",
        ["--bootstrap-server", cluster.bootstrap, "--describe", "--topic-list", topics],
    ).stdout
    answer = json.loads(out.strip().splitlines()[-1])
    sizes: dict[tuple[str, int], dict[str, int]] = {}
    for broker in answer["brokers"]:
        for log_dir in broker["logDirs"]:
            for p in log_dir["partitions"]:
                if p["isFuture"]:
                    continue
                topic, _, index = p["partition"].rpartition("-")
                sizes.setdefault((topic, int(index)), {})[str(broker["broker"])] = p["size"]
    return sizes


def test_sizes_equal_kafka_log_dirs(cluster) -> None:
    _produce(cluster, "orders", 300, 100)

    def ours() -> dict:
        objs = _ktool("topics", "orders", "--sizes", "--bootstrap-server", cluster.bootstrap)
        return {(o["topic"], o["partition"]): o["sizes"] for o in objs if o["type"] == "partition"}

    mine, theirs = _same_moment(ours, lambda: _log_dirs_tool(cluster, "orders"))
    assert mine == theirs
    assert sum(mine[("orders", 0)].values()) > 0 and set(mine[("orders", 0)]) == {"1", "2", "3"}
    text = run_ktool("topics", "orders", "--sizes", "--bootstrap-server", cluster.bootstrap)
    assert text.exit_code == 0 and "size" in text.stdout.splitlines()[0], text.output


def _produce(cluster, topic: str, count: int, size: int) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 20})
    for n in range(count):
        producer.produce(topic, value=b"x" * size, key=str(n).encode())
        if n % 500 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0


def _reassign(cluster, tmp_path: Path, plan: dict, *args: str) -> str:
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan))
    return run_tool(
        cluster.release,
        "ReassignPartitionsCommand",
        ["--bootstrap-server", cluster.bootstrap, "--reassignment-json-file", str(path), *args],
    ).stdout


def test_a_reassignment_in_progress_shows_as_kafka_topics_shows_it(cluster, tmp_path) -> None:
    _create_on(cluster, "moving", 1)
    _produce(cluster, "moving", 2000, 1000)
    plan = {"version": 1, "partitions": [{"topic": "moving", "partition": 0, "replicas": [2, 1]}]}
    _reassign(cluster, tmp_path, plan, "--execute", "--throttle", "1")
    try:
        ours, theirs = _same_moment(
            lambda: _ours(_ktool("topics", "moving", "--bootstrap-server", cluster.bootstrap)),
            lambda: _kafka_topics(cluster, "--topic", "moving"),
        )
        assert ours == theirs
        assert ours[("moving", 0)]["addingReplicas"] == [2]  # held by the 1 B/s throttle
        (row,) = _ktool("topics", "moving", "--bootstrap-server", cluster.bootstrap)[:1]
        assert "reassigning" in row["statuses"]
        copy = _wait_for_image(cluster, tmp_path, lambda objs: _ours(objs) == ours)
        assert _ours(_ktool("topics", "moving", "--metadata-log", str(copy))) == ours
    finally:
        _reassign(cluster, tmp_path, plan, "--cancel")


def _controller_copy(cluster, target: Path) -> Path:
    source = next(n for n in cluster.nodes if n.roles == "controller").log_dir
    target.mkdir(parents=True)
    shutil.copy2(source / "meta.properties", target)
    copy_live_dir(source / "__cluster_metadata-0", target / "__cluster_metadata-0")
    return target


def _wait_for_image(cluster, tmp_path: Path, done: Callable[[list[dict]], bool], timeout: float = 30) -> Path:
    """A copy of the controller's log dir once its image says what `done` waits for."""
    deadline = time.monotonic() + timeout
    while True:
        copy = _controller_copy(cluster, tmp_path / f"controller-{time.monotonic_ns()}")
        objs = _ktool("topics", "--metadata-log", str(copy))
        if done(objs) or time.monotonic() > deadline:
            return copy
        time.sleep(0.3)


def test_a_killed_broker_and_min_isr_above_the_isr_match_kafka_topics_online_and_offline(
    cluster, tmp_path
) -> None:
    """Broker 3 SIGKILLed: `strict` (min.insync.replicas 3) goes under min ISR, `lonely` (one replica, on
    broker 3) offline; every filter equals kafka-topics', and the metadata log says the same offline."""
    _create_on(cluster, "lonely", 3)
    cluster.stop_node(cluster.broker(3), kill=True)
    deadline = time.monotonic() + 60
    while True:  # until the controller fenced it: `lonely` has no leader
        # (until then a request librdkafka sends to broker 3 finds it gone and times out: asked again)
        result = run_ktool(
            "topics",
            "lonely",
            "strict",
            "--json",
            "--broker-timeout",
            "3",
            "--bootstrap-server",
            cluster.bootstrap,
        )
        objs = [json.loads(line) for line in result.stdout.splitlines()] if result.exit_code == 0 else []
        parts = {(o["topic"], o["partition"]): o for o in objs if o["type"] == "partition"}
        if (
            parts
            and parts[("lonely", 0)]["leader"] is None
            and all(3 not in p["isr"] for (topic, _), p in parts.items() if topic == "strict")
        ):
            break
        assert time.monotonic() < deadline, result.output
        time.sleep(0.5)
    _compare_all(cluster)
    objs = _ktool("topics", "--under-min-isr-partitions", "--bootstrap-server", cluster.bootstrap)
    flagged = {(o["topic"], o["partition"]) for o in objs if o["type"] == "partition"}
    assert {("strict", 0), ("strict", 1), ("lonely", 0)} <= flagged
    assert not any(t == "orders" for t, _ in flagged)
    live = _ours(_ktool("topics", "orders", "strict", "lonely", "--bootstrap-server", cluster.bootstrap))
    copy = _wait_for_image(
        cluster, tmp_path, lambda objs: {k: v for k, v in _ours(objs).items() if k[0] != "moving"} == live
    )
    offline = _ktool("topics", "orders", "strict", "lonely", "--metadata-log", str(copy))
    assert _ours(offline) == live
    # (the cluster is the session's: other modules' topics are left out)
    unavailable = _ktool("topics", "orders", "strict", "lonely", "--unavailable-partitions", "--metadata-log",
                         str(copy))  # fmt: skip
    assert [(o["topic"], o["partition"]) for o in unavailable if o["type"] == "partition"] == [("lonely", 0)]


def test_an_unreachable_broker_and_tls_to_a_plaintext_port_are_one_line_exit_3(cluster) -> None:
    for args in (
        ("topics", "--bootstrap-server", f"127.0.0.1:{free_port('127.0.0.1')}"),
        ("quorum", "--bootstrap-server", f"127.0.0.1:{free_port('127.0.0.1')}"),
        ("brokers", "--broker-tls", "--broker-timeout", "3", "--bootstrap-server", cluster.bootstrap),
    ):
        result = run_ktool(*args)
        assert result.exit_code == 3, (args, result.output)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("ktool: ") and "Traceback" not in result.output, lines
    result = run_ktool("quorum")
    assert result.exit_code == 2 and "--bootstrap-server" in result.stderr
