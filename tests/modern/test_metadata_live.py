"""`ktool metadata` on a live KRaft cluster (one controller, brokers 1-N), 3.9.2 and 4.4.0:

* `topics` and `brokers`, read from the controller's `__cluster_metadata-0`, equal what the Admin API
  says (DescribeCluster, DescribeTopics, DescribeConfigs); on 3.9.2 `show --at-offset N` also equals
  kafka-metadata-shell's `tree /image` of the controller's snapshot `N-…` (Maven has no metadata shell
  for 4.x: the `kafka-metadata-shell` artifact stops at 3.9);
* `check` on every broker's log dir of the healthy cluster finds nothing;
* `check --image-from <controller> <broker>` on a broker that was down while a topic of its was deleted
  and another deleted and created again under the same name flags exactly the partition directories
  the broker renames `-stray` when it starts again (3.7+), and nothing once it has.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import copy_live_dir, create_topic, run_tool


@pytest.fixture(scope="module")
def kraft(kafka_split):
    """The session's one controller and three brokers of the release (3.9.2's controller snapshots its
    metadata every second, for the metadata shell); a broker stopped here is started again."""
    yield kafka_split
    kafka_split.start_stopped()


def _admin(cluster):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def _controller_dir(cluster) -> Path:
    return next(n for n in cluster.nodes if n.roles == "controller").log_dir


def _ktool_json(*args: str) -> list[dict]:
    result = run_ktool("metadata", *args, "--json")
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _copy_controller(cluster, target: Path) -> Path:
    """The controller's meta.properties and metadata partition as they are now."""
    source = _controller_dir(cluster)
    target.mkdir(parents=True)
    shutil.copy2(source / "meta.properties", target)
    copy_live_dir(source / "__cluster_metadata-0", target / "__cluster_metadata-0")
    return target


def _wait_in_image(
    cluster, tmp_path: Path, topics: set[str], gone: set[str] = frozenset(), timeout: float = 60
) -> Path:
    """A copy of the controller's log dir once its image holds `topics` (and not `gone`)."""
    deadline = time.monotonic() + timeout
    while True:
        copy = _copy_controller(cluster, tmp_path / f"controller-{time.monotonic_ns()}")
        names = {o["topic"] for o in _ktool_json("topics", str(copy)) if o["type"] == "partition"}
        if topics <= names and not gone & names:
            return copy
        assert time.monotonic() < deadline, f"the controller's image has {sorted(names)}"
        time.sleep(0.2)


def _wait_created(dirs: list[Path], deadline: float) -> None:
    """Until each partition directory in `dirs` exists with its partition.metadata: a broker creates its
    replicas just after its metadata log has the topic."""
    while missing := [d for d in dirs if not (d / "partition.metadata").is_file()]:
        assert time.monotonic() < deadline, f"the brokers did not create {[str(d) for d in missing]}"
        time.sleep(0.1)


def _kafka_uuid(value) -> str:
    """confluent-kafka prints a Uuid in standard base64; Kafka (and ktool) in the URL-safe alphabet."""
    return str(value).replace("+", "-").replace("/", "_")


def test_topics_and_brokers_equal_the_admin_api(kraft, tmp_path):
    from confluent_kafka import TopicCollection
    from confluent_kafka.admin import ConfigResource

    topic = f"live-{uuid.uuid4().hex[:8]}"
    create_topic(kraft, topic, partitions=3, replication=2, config={"retention.ms": 123_456})
    copy = _wait_in_image(kraft, tmp_path, {topic})
    admin = _admin(kraft)

    cluster = admin.describe_cluster().result(30)
    brokers = [o for o in _ktool_json("brokers", str(copy)) if o["type"] == "broker"]
    ours = {(b["id"], b["endpoints"][0]["host"], b["endpoints"][0]["port"], b["rack"]) for b in brokers}
    assert ours == {(n.id, n.host, n.port, n.rack) for n in cluster.nodes}
    assert not any(b["fenced"] for b in brokers)

    objects = _ktool_json("topics", str(copy))
    partitions = {o["partition"]: o for o in objects if o["type"] == "partition" and o["topic"] == topic}
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
    assert {o["topicId"] for o in partitions.values()} == {_kafka_uuid(described.topic_id)}
    assert {
        p.id: (p.leader.id, [r.id for r in p.replicas], [r.id for r in p.isr]) for p in described.partitions
    } == {n: (o["leader"], o["replicas"], o["isr"]) for n, o in partitions.items()}

    shown = _ktool_json("show", str(copy))
    configs = {o["name"]: o["value"] for o in shown if o["type"] == "config" and o["resourceName"] == topic}
    resource = ConfigResource("TOPIC", topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    dynamic = {k: e.value for k, e in entries.items() if e.source == 1}  # DYNAMIC_TOPIC_CONFIG
    assert configs == dynamic == {"retention.ms": "123456"}

    # a healthy cluster: nothing to say about any broker's log dir, once each broker has applied the
    # topic (a broker creates its replicas' directories just after its metadata log has the records)
    hosted = [
        kraft.broker(r.id).log_dir / f"{topic}-{p.id}" for p in described.partitions for r in p.replicas
    ]
    _wait_created(hosted, time.monotonic() + 60)
    for broker in kraft.brokers:
        result = run_ktool("metadata", "check", str(broker.log_dir))
        assert result.exit_code == 0, result.output


# --------------------------------------------------------------------------- kafka-metadata-shell (3.9)
_FIELD = re.compile(r"(\w+)=(\[[^\]]*\]|'[^']*'|[^,()\]]+)")


def _tree(text: str) -> dict:
    """`tree /image` as nested dicts: a name ending in `:` opens a node, a line under it is its text."""
    root: dict = {}
    stack: list[tuple[int, dict]] = [(-1, root)]
    last: tuple[dict, str] | None = None
    for line in text.splitlines():
        depth = (len(line) - len(line.lstrip(" "))) // 2
        body = line.strip()
        while stack[-1][0] >= depth:
            stack.pop()
        if body.endswith(":"):
            node: dict = {}
            stack[-1][1][body[:-1]] = node
            stack.append((depth, node))
            last = (stack[-2][1], body[:-1])
        elif last is not None:
            last[0][last[1]] = body
    return root


def _fields(text: str) -> dict[str, str]:
    return {k: v.strip("'") for k, v in _FIELD.findall(text)}


def _ints(text: str) -> list[int]:
    return [int(x) for x in text.strip("[]").split(",") if x.strip()]


@pytest.mark.parametrize("kafka_release", ["3.9.2"], indirect=True)
def test_show_at_a_snapshot_equals_the_metadata_shell(kraft, tmp_path):
    topic = f"shell-{uuid.uuid4().hex[:8]}"
    create_topic(kraft, topic, partitions=2, replication=2, config={"cleanup.policy": "compact"})
    copy = _wait_in_image(kraft, tmp_path, {topic})
    shown = _ktool_json("show", str(copy))
    [ours_topic] = [o for o in shown if o["type"] == "topic" and o["name"] == topic]
    deadline = time.monotonic() + 60
    while True:  # the newest snapshot taken once the topic was in the log
        copy = _copy_controller(kraft, tmp_path / f"snapshot-{time.monotonic_ns()}")
        snapshots = sorted((copy / "__cluster_metadata-0").glob("*.checkpoint"))
        offset = int(snapshots[-1].name.split("-")[0]) if snapshots else -1
        image = _ktool_json("show", "--at-offset", str(offset), str(copy)) if offset > 0 else []
        if any(o["type"] == "topic" and o["name"] == topic for o in image):
            break
        assert time.monotonic() < deadline, "no controller snapshot holds the new topic"
        time.sleep(0.5)
    shell: dict = {}
    for _ in range(5):  # the shell loads its snapshot on a thread: a `tree` run first can see none of it
        try:  # and once in CI it never ended (300 s): a run that does not end in 60 s is another try
            args = ["-s", str(snapshots[-1]), "tree", "/image"]
            ran = run_tool(kraft.release, "MetadataShell", args, timeout=60)
        except subprocess.TimeoutExpired:
            continue
        shell = _tree(ran.stdout)
        if topic in shell.get("topics", {}).get("byName", {}):
            break

    assert topic in shell.get("topics", {}).get("byName", {}), "the metadata shell never showed the topic"
    by_name = shell["topics"]["byName"]
    ours_topics = {o["name"]: o for o in image if o["type"] == "topic"}
    assert set(by_name) == set(ours_topics) and topic in by_name
    assert ours_topics[topic]["topicId"] == by_name[topic]["id"] == ours_topic["topicId"]
    for o in (o for o in image if o["type"] == "partition"):
        theirs = _fields(by_name[o["topic"]][str(o["partition"])])
        assert (o["replicas"], o["isr"], o["directories"]) == (
            _ints(theirs["replicas"]),
            _ints(theirs["isr"]),
            theirs["directories"].strip("[]").replace(" ", "").split(","),
        )
        assert (o["leader"], o["leaderEpoch"], o["partitionEpoch"]) == (
            int(theirs["leader"]),
            int(theirs["leaderEpoch"]),
            int(theirs["partitionEpoch"]),
        )
    ours_brokers = {o["id"]: o for o in image if o["type"] == "broker"}
    shell_brokers = shell["cluster"]["brokers"]
    assert set(map(int, shell_brokers)) == set(ours_brokers)
    for broker_id, text in shell_brokers.items():
        theirs, o = _fields(text), ours_brokers[int(broker_id)]
        assert (o["epoch"], o["incarnationId"], o["fenced"], o["inControlledShutdown"]) == (
            int(theirs["epoch"]),
            theirs["incarnationId"],
            theirs["fenced"] == "true",
            theirs["inControlledShutdown"] == "true",
        )
        host, port = re.search(r"host='([^']*)', port=(\d+)", text).groups()
        assert (o["endpoints"][0]["host"], o["endpoints"][0]["port"]) == (host, int(port))
    ours_configs: dict[str, dict[str, str]] = {}
    for o in (o for o in image if o["type"] == "config"):
        ours_configs.setdefault(f"{o['resourceType'].upper()}:{o['resourceName']}", {})[o["name"]] = o[
            "value"
        ]
    assert ours_configs == shell["configs"]


# --------------------------------------------------------------------------- stray partition directories
def _stray_names(log_dir: Path) -> set[str]:
    """The directories the broker set aside, by their name before (`<topic>-<partition>.<uuid>-stray`)."""
    return {p.name.rsplit(".", 1)[0] for p in log_dir.iterdir() if p.name.endswith("-stray")}


def _flagged(findings: list[dict]) -> set[str]:
    """The partition directories the findings name (a partition.metadata names its directory)."""
    out = set()
    for f in findings:
        path = Path(f["file"])
        out.add(path.parent.name if path.name == "partition.metadata" else path.name)
    return out


def _delete(cluster, admin, names: set[str], tmp_path: Path) -> None:
    """Delete topics while a broker is down, again until the controller's image has lost them: a request
    librdkafka sent to the stopped broker (still in its metadata) is answered without error, and lost."""
    from confluent_kafka import KafkaException

    deadline = time.monotonic() + 60
    while True:
        for future in admin.delete_topics(sorted(names), request_timeout=15).values():
            try:
                future.result(30)
            except KafkaException as exc:  # deleted by an earlier round after all
                assert "UNKNOWN_TOPIC" in str(exc), exc
        try:
            _wait_in_image(cluster, tmp_path, set(), names, timeout=5)
            return
        except AssertionError:
            assert time.monotonic() < deadline, f"{sorted(names)} not deleted within 60 s"


def test_check_flags_exactly_the_directories_the_broker_makes_stray(kraft, tmp_path):
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = _admin(kraft)
    node = kraft.broker(2)
    tag = uuid.uuid4().hex[:6]
    deleted, recreated, kept = f"deleted-{tag}", f"recreated-{tag}", f"kept-{tag}"
    for name in (deleted, recreated, kept):  # one partition each, on broker 2 alone
        admin.create_topics([NewTopic(name, 1, replica_assignment=[[2]])])[name].result(30)
    _wait_created([node.log_dir / f"{name}-0" for name in (deleted, recreated, kept)], time.monotonic() + 60)

    kraft.stop_node(node)
    try:
        others = ",".join(f"127.0.0.1:{b.port}" for b in kraft.brokers if b is not node)
        admin = AdminClient({"bootstrap.servers": others})  # not one that may pick the stopped broker
        _delete(kraft, admin, {deleted, recreated}, tmp_path / "deleted")
        # on broker 2 and broker 1 (Kafka refuses an assignment to fenced brokers only)
        admin.create_topics([NewTopic(recreated, 1, replica_assignment=[[2, 1]])])[recreated].result(30)
        controller = _wait_in_image(kraft, tmp_path / "recreated", {recreated})
        # Broker 2's own image is of before it stopped: it knows nothing wrong.
        assert run_ktool("metadata", "check", str(node.log_dir)).exit_code == 0
        result = run_ktool("metadata", "check", "--json", "--image-from", str(controller), str(node.log_dir))
        assert result.exit_code == 1, result.output
        findings = [o for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "finding"]
        flagged = _flagged(findings)
        assert flagged == {f"{deleted}-0", f"{recreated}-0"}, findings
    finally:
        kraft.start_node(node)

    deadline = time.monotonic() + 60
    while _stray_names(node.log_dir) != flagged:
        assert time.monotonic() < deadline, f"the broker set aside {_stray_names(node.log_dir)}"
        time.sleep(0.2)
    _wait_created([node.log_dir / f"{recreated}-0"], deadline)  # and the new topic's partition
    result = run_ktool("metadata", "check", str(node.log_dir))  # its own image is current again
    assert result.exit_code == 0, result.output
