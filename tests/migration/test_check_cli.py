"""`ktool kraft-migration check`: what blocks or risks a migration, each once with its reason."""

from __future__ import annotations

import json

from tests.migration.cluster_states import write_kraft, write_znodes, znodes
from tests.support.cli import run_ktool

CLUSTER_ID = "Y2x1c3Rlci1pZC1jbHVzdA"  # what tests/metadata/kraft_log.py writes in meta.properties


def _registration(version: int) -> str:
    doc = {
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}, "endpoints": ["PLAINTEXT://127.0.0.1:9092"],
        "jmx_port": -1, "port": 9092, "host": "127.0.0.1", "version": version, "timestamp": "1700000000000",
    }  # fmt: skip
    if version >= 5:
        doc["features"] = {}
    return json.dumps(doc)


def _ready_cluster(zk_root) -> None:
    docs = {k: v for k, v in znodes().items() if k != "/migration"}
    write_znodes(zk_root, docs)
    zk_root.write("/cluster/id", json.dumps({"version": "1", "id": CLUSTER_ID}))
    for bid in (1, 2):
        zk_root.write(f"/brokers/ids/{bid}", _registration(5))
    zk_root.write("/controller", '{"version":2,"brokerid":1,"timestamp":"1","kraftControllerEpoch":-1}')


def _check(zk_root, *args):
    return run_ktool("kraft-migration", "check", "--zookeeper", zk_root.connect, *args)


def test_a_ready_cluster_exits_0(zk_root, tmp_path):
    _ready_cluster(zk_root)
    result = _check(zk_root, str(write_kraft(tmp_path)))
    assert result.exit_code == 0, result.stdout + result.stderr
    assert result.stdout == "ready to migrate: nothing blocking or risky found\n"


def test_each_blocking_or_risky_condition_is_one_finding(zk_root, tmp_path):
    _ready_cluster(zk_root)
    zk_root.write("/admin/delete_topics/orders")
    zk_root.write("/admin/reassign_partitions", '{"version":1,"partitions":[{"topic":"orders","partition":1,'
                  '"replicas":[3,1]}]}')  # fmt: skip
    zk_root.write("/admin/preferred_replica_election", '{"version":1,"partitions":[]}')
    zk_root.zk.set("/brokers/ids/2", _registration(4).encode())
    result = _check(zk_root, "--json")
    assert result.exit_code == 1, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(o["severity"], o["kind"], o["file"]) for o in lines[:-1]] == [
        ("warning", "topic-pending-deletion", "/admin/delete_topics/orders"),
        ("error", "reassignment-in-flight", "/admin/reassign_partitions"),
        ("warning", "preferred-election-in-flight", "/admin/preferred_replica_election"),
        ("error", "broker-too-old", "/brokers/ids/2"),
    ]
    assert lines[-1] == {
        "type": "summary",
        "findings": 4,
        "errors": 2,
        "warnings": 2,
        "infos": 0,
        "ready": False,
    }


def test_a_controller_formatted_with_another_cluster_id_is_blocking(zk_root, tmp_path):
    _ready_cluster(zk_root)
    zk_root.zk.set("/cluster/id", json.dumps({"version": "1", "id": "b3RoZXJvdGhlcm90aGVyb3"}).encode())
    result = _check(zk_root, str(write_kraft(tmp_path)))
    assert result.exit_code == 1
    assert result.stdout.splitlines()[0] == (
        f"ERROR {tmp_path}/controller/meta.properties: cluster-id-mismatch: meta.properties has cluster.id "
        f"{CLUSTER_ID}, ZooKeeper b3RoZXJvdGhlcm90aGVyb3: the KRaft controllers must be formatted with "
        "ZooKeeper's cluster id, or the brokers refuse them"
    )


def test_a_migration_under_way_is_said_but_not_blocking(zk_root, tmp_path):
    _ready_cluster(zk_root)
    zk_root.write("/migration", '{"version":0,"kraft_controller_id":3000,"kraft_controller_epoch":2,'
                  '"kraft_metadata_offset":14,"kraft_metadata_epoch":1}')  # fmt: skip
    zk_root.zk.set("/controller", b'{"version":2,"brokerid":3000,"timestamp":"1","kraftControllerEpoch":2}')
    result = _check(zk_root, "--json")
    assert result.exit_code == 0, result.stdout
    kinds = [json.loads(line)["kind"] for line in result.stdout.splitlines()[:-1]]
    assert kinds == ["migration-begun", "kraft-controller-active"]


def test_a_log_dir_never_formatted_is_a_usage_error(zk_root, tmp_path):
    _ready_cluster(zk_root)
    result = _check(zk_root, str(tmp_path))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and "no meta.properties" in result.stderr


def test_a_controller_quorum_that_does_not_answer_is_blocking(zk_root, tmp_path):
    from tests.support.servers import free_port

    _ready_cluster(zk_root)
    port = free_port("127.0.0.1")  # nothing listens there
    result = _check(zk_root, "--bootstrap-controller", f"127.0.0.1:{port}")
    assert result.exit_code == 1, result.stdout + result.stderr
    assert result.stdout.splitlines()[0].startswith(
        f"ERROR controllers 127.0.0.1:{port}: controller-quorum-unreachable: the controller quorum does not "
        f"answer DescribeQuorum (broker 127.0.0.1:{port}: cannot connect ("
    )
