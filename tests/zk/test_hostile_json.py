"""JSON nested 100,000 deep where Kafka writes a few levels (a broker registration, a partition state, a
consumer subscription in the real ZooKeeper 3.8; KRaft's quorum-state on disk): one line naming the
znode or the file and exit 3 (a znode), or a finding naming the file (a log dir) -- never a
RecursionError traceback, never a silently skipped group."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kafka_tools import bounded_json
from kafka_tools.errors import EXIT_ENVIRONMENT, EXIT_FINDINGS
from tests.support.cli import run_ktool
from tests.zk.test_zk_reader import write_kafka09_cluster

DEEP = b'{"a":' * 100_000 + b"1" + b"}" * 100_000
DEEP_LIST = b"[" * 100_000 + b"]" * 100_000
MEMBER = "billing_host1-1463000000000-1a2b3c4d"
SUBSCRIPTION = f"/consumers/billing/ids/{MEMBER}"
STATE = "/brokers/topics/orders/partitions/0/state"
UNREACHABLE = "127.0.0.1:1"  # a broker nobody listens on: the znode must be read (and refused) first

# command, the znode given hostile data
ZK_PAIRS = [
    (("brokers",), "/brokers/ids/1"),
    (("brokers", "--json"), "/brokers/ids/1"),
    (("topics",), STATE),
    (("topics", "--json"), "/brokers/topics/orders"),
    (("groups", "describe", "billing"), SUBSCRIPTION),
    (("groups", "describe", "--json"), SUBSCRIPTION),
    (("groups", "describe", "billing"), STATE),
    (("groups", "rebalance-plan", "billing"), SUBSCRIPTION),
    (("groups", "rebalance-plan", "billing"), "/brokers/topics/orders"),
    (("offsets", "export", "--group", "billing"), SUBSCRIPTION),
    (("offsets", "export", "--all-groups", "--format", "csv"), SUBSCRIPTION),
    (
        ("migrate-offsets", "--group", "billing", "--dry-run", "--bootstrap-server", UNREACHABLE),
        SUBSCRIPTION,
    ),
    (
        ("migrate-offsets", "--group", "billing", "--dry-run", "--bootstrap-server", UNREACHABLE),
        "/brokers/topics/orders",
    ),
]


@pytest.mark.parametrize("deep", [DEEP, DEEP_LIST], ids=["objects", "lists"])
@pytest.mark.parametrize("args, znode", ZK_PAIRS, ids=[f"{' '.join(a[:2])}-{z}" for a, z in ZK_PAIRS])
def test_a_deeply_nested_znode_is_one_line_naming_it(zk_root, args, znode, deep) -> None:
    write_kafka09_cluster(zk_root)
    zk_root.zk.set(znode, deep)
    result = run_ktool(*args, "--zookeeper", zk_root.connect)
    assert result.exit_code == EXIT_ENVIRONMENT, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert lines == [f"ktool: malformed znode {znode}: JSON nested deeper than 64 levels"], result.stderr


@pytest.mark.parametrize("deep", [DEEP, DEEP_LIST], ids=["objects", "lists"])
def test_groups_watch_reports_a_deeply_nested_registration_as_a_malformed_znode_event(zk_root, deep) -> None:
    """`groups watch` reports what it cannot parse as an event and keeps watching the rest."""
    write_kafka09_cluster(zk_root)
    zk_root.zk.set(SUBSCRIPTION, deep)
    result = run_ktool("groups", "watch", "billing", "--once", "--json", "--zookeeper", zk_root.connect)
    assert result.exit_code == 0, (result.exit_code, result.stdout[-2000:], result.stderr)
    events = [json.loads(line) for line in result.stdout.splitlines()]
    bad = [e for e in events if e.get("event") == "malformed-znode"]
    assert [(e["path"], e["message"]) for e in bad] == [
        (SUBSCRIPTION, f"malformed znode {SUBSCRIPTION}: JSON nested deeper than 64 levels")
    ], bad


def test_the_same_znodes_read_back_when_they_are_what_kafka_writes(zk_root) -> None:
    """The cap is not in the way of Kafka's own JSON: the untouched cluster reads and exports."""
    write_kafka09_cluster(zk_root)
    result = run_ktool("offsets", "export", "--group", "billing", "--zookeeper", zk_root.connect)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "/consumers/billing/offsets/orders/0:42",
        "/consumers/billing/offsets/orders/1:7",
    ]


# --------------------------------------------------------------------------- quorum-state on disk


@pytest.fixture
def kraft_dir(tmp_path: Path) -> Path:
    from tests.metadata.kraft_log import write_log_dir

    logs = write_log_dir(tmp_path / "logs")
    (logs / "__cluster_metadata-0" / "quorum-state").write_bytes(DEEP)
    return logs


def _findings(stdout: str) -> list[dict]:
    return [o for o in map(json.loads, stdout.splitlines()) if o.get("type") == "finding"]


@pytest.mark.parametrize(
    "args",
    [("metadata", "show", "--json"), ("metadata", "check", "--json"), ("validate", "--json")],
    ids=["metadata show", "metadata check", "validate"],
)
def test_a_deeply_nested_quorum_state_is_a_finding_naming_the_file(kraft_dir: Path, args) -> None:
    quorum = kraft_dir / "__cluster_metadata-0" / "quorum-state"
    result = run_ktool(*args, str(kraft_dir))
    assert result.exit_code == EXIT_FINDINGS, (result.exit_code, result.stdout[-2000:], result.stderr)
    found = [f for f in _findings(result.stdout) if f["file"] == str(quorum)]
    assert found, result.stdout[-2000:]
    assert any("nested deeper than 64" in json.dumps(f) for f in found), found


def test_dump_log_of_a_deeply_nested_quorum_state_says_so_in_one_line(kraft_dir: Path) -> None:
    quorum = kraft_dir / "__cluster_metadata-0" / "quorum-state"
    result = run_ktool("dump-log", str(quorum))
    assert result.exit_code == EXIT_FINDINGS, (result.exit_code, result.stdout, result.stderr)
    text = result.stdout + result.stderr
    assert "JSON nested deeper than 64 levels" in text and "Traceback" not in text
    assert len(text.splitlines()) <= 3, text


# --------------------------------------------------------------------------- the reader itself


def test_the_reader_caps_depth_and_size_and_counts_no_brackets_inside_strings() -> None:
    assert bounded_json.loads(b'{"a":' * 64 + b"1" + b"}" * 64) is not None
    with pytest.raises(bounded_json.JsonRejected, match="nested deeper than 64"):
        bounded_json.loads(b"[" * 65 + b"]" * 65)
    text = json.dumps({"k": "[" * 10_000 + '\\"{' * 100})
    assert bounded_json.loads(text) == json.loads(text)
    with pytest.raises(bounded_json.JsonRejected, match="more than the 100 ktool reads"):
        bounded_json.loads(b'"' + b"x" * 200 + b'"', max_bytes=100)
    with pytest.raises(bounded_json.JsonRejected, match="invalid JSON") as info:
        bounded_json.loads('{"a":\n  nope}')
    assert info.value.pos == 8
