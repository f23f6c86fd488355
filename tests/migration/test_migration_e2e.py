"""A real migration (KIP-866) on loopback: Kafka 3.9.2 in ZooKeeper mode with a topic, configs, quotas,
a SCRAM user and ACLs; a KRaft controller with `zookeeper.metadata.migration.enable`; the broker
restarted with the migration flags, until the controller logs "Completed migration of metadata from
ZooKeeper to KRaft". Then `diff` during dual write and `check` against what is made real in ZooKeeper.
The broker starts on IBP 3.3 (below the migration's minimum) and is restarted on 3.9 with the migration
flags: `check --bootstrap-server --bootstrap-controller` in between reports it, and the controller quorum.
One cluster for the module (about a minute to start); each test takes seconds."""

from __future__ import annotations

import json
import time
import uuid

import pytest

from tests.support.cli import run_ktool

pytestmark = pytest.mark.server

COMPLETED = "Completed migration of metadata from ZooKeeper to KRaft"  # 3.9 spells it so
SCRAM = "salt=c2FsdHNhbHQ=,stored_key=c3RvcmVka2V5,server_key=c2VydmVya2V5,iterations=4096"


def _zk(connect: str):
    from kazoo.client import KazooClient

    zk = KazooClient(connect)
    zk.start(timeout=10)
    return zk


def _wait_for_line(path, line: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.is_file() and line in path.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"{path}: no {line!r} within {timeout}s")


@pytest.fixture(scope="module")
def migrated(kafka39_release, zookeeper_server, tmp_path_factory):
    from tests.support.modern import FAST_START, ModernCluster, Node, create_topic
    from tests.support.servers import free_port

    connect = f"{zookeeper_server.connect_string}/migration-{uuid.uuid4().hex[:8]}"
    workdir = tmp_path_factory.mktemp("kraft-migration")
    cluster = ModernCluster(
        kafka39_release,
        "zookeeper",
        workdir,
        zookeeper=connect,
        jvm_options=FAST_START,
        properties={"inter.broker.protocol.version": "3.3"},  # below 3.4: check reports it
    )
    with cluster:
        create_topic(cluster, "orders", partitions=2, config={"retention.ms": 3600000})
        zk = _zk(connect)
        try:
            # quotas, a SCRAM user and ACLs as ConfigCommand --zookeeper and AclAuthorizer write them
            user = {"producer_byte_rate": "1048576", "SCRAM-SHA-256": SCRAM}
            acl = {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}
            for path, doc in (
                ("/config/users/alice", {"version": 1, "config": user}),
                ("/config/clients/<default>", {"version": 1, "config": {"consumer_byte_rate": "2048"}}),
                ("/kafka-acl/Topic/orders", {"version": 1, "acls": [acl]}),
            ):
                zk.create(path, json.dumps(doc).encode(), makepath=True)
            cluster_id = json.loads(zk.get("/cluster/id")[0])["id"]
        finally:
            zk.stop()
            zk.close()
        before = run_ktool("kraft-migration", "check", "--zookeeper", connect)
        controller = Node(3000, "controller", workdir / "controller-3000", None, free_port("127.0.0.1"))
        cluster.cluster_id = cluster_id  # the controller is formatted with ZooKeeper's cluster id
        cluster.controller_properties = {
            "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": connect,
        }
        cluster.add_node(controller)
        controller_address = f"127.0.0.1:{controller.controller_port}"
        live = _check_live(connect, cluster.bootstrap, controller_address)
        cluster.properties |= {
            "zookeeper.metadata.migration.enable": "true",
            "controller.quorum.voters": f"3000@127.0.0.1:{controller.controller_port}",
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "inter.broker.protocol.version": "3.9",
        }
        cluster.reconfigure(cluster.brokers[0])  # the broker restarted with the migration flags
        _wait_for_line(controller.server_log, COMPLETED, 180)
        yield cluster, connect, controller, before, live


def _check_live(connect: str, bootstrap: str, controllers: str, timeout: float = 60.0):
    """`check --json` with the brokers and controllers until the quorum has a leader (the controller was
    just started) or `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        result = run_ktool(
            "kraft-migration", "check", "--json", "--zookeeper", connect, "--bootstrap-server", bootstrap,
            "--bootstrap-controller", controllers,
        )  # fmt: skip
        kinds = [json.loads(line).get("kind") for line in result.stdout.splitlines()]
        if "controller-quorum" in kinds and "leader -1" not in result.stdout or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def _diff(connect, controller, timeout: float = 30.0):
    """`diff --json` until in step or `timeout`: dual write reaches ZooKeeper a moment after KRaft."""
    deadline = time.monotonic() + timeout
    while True:
        result = run_ktool(
            "kraft-migration", "diff", "--json", "--zookeeper", connect, str(controller.log_dir)
        )
        if result.exit_code != 1 or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def test_check_passes_before_the_migration(migrated):
    before = migrated[3]
    assert before.exit_code == 0, before.stdout + before.stderr
    assert before.stdout.endswith("ready to migrate: nothing blocking or risky found\n")


def test_check_live_reports_a_broker_on_an_older_ibp_and_the_controller_quorum(migrated):
    cluster, _, controller, _, live = migrated
    assert live.exit_code == 1, live.stdout + live.stderr
    got = [json.loads(line) for line in live.stdout.splitlines()]
    broker = cluster.brokers[0]
    # what the brokers and controllers say (ZooKeeper's /migration may or may not be there yet)
    live_only = [o for o in got[:-1] if o["file"].startswith(("broker ", "controllers "))]
    assert [(o["severity"], o["kind"], o["file"]) for o in live_only] == [
        ("error", "ibp-too-old", f"broker {broker.node_id} (127.0.0.1:{broker.port})"),
        ("info", "controller-quorum", f"controllers 127.0.0.1:{controller.controller_port}"),
    ]
    assert live_only[0]["actual"] == "3.3", live_only[0]  # as server.properties sets it
    assert live_only[1]["message"].startswith("the controller quorum answers: leader 3000, epoch ")
    assert live_only[1]["message"].endswith("voters 3000; zookeeper.metadata.migration.enable=true on 3000")
    assert [o["kind"] for o in got[:-1] if o not in live_only] in ([], ["migration-waiting"])
    assert (got[-1]["errors"], got[-1]["warnings"]) == (1, 0)


def test_check_live_after_the_roll_to_ibp_3_9_and_a_port_that_is_no_controller(migrated):
    cluster, connect, controller, _, _ = migrated
    result = run_ktool(
        "kraft-migration", "check", "--zookeeper", connect, "--bootstrap-server", cluster.bootstrap,
        "--bootstrap-controller", cluster.bootstrap,
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert not [line for line in lines if "ibp-" in line], result.stdout  # 3.9 everywhere now
    assert [line.split(": ")[1] for line in lines if line.startswith("ERROR")] == [
        "controller-quorum-unreachable"
    ], result.stdout
    assert "no DescribeQuorum (not a KRaft controller" in result.stdout


def test_diff_is_clean_during_dual_write_while_configs_change(migrated):
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    cluster, connect, controller, _, _ = migrated
    first = _diff(connect, controller)
    assert first.exit_code == 0, first.stdout + first.stderr
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    entry = ConfigEntry("retention.ms", "7200000", incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("topic", "orders", incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(timeout=30)
    result = _diff(connect, controller)
    assert result.exit_code == 0, result.stdout + result.stderr
    summary = json.loads(result.stdout.splitlines()[-1])
    assert summary["migrationState"] == "MIGRATION"
    assert (
        summary["compared"]["scram"] == 1
        and summary["compared"]["acl"] == 1
        and summary["compared"]["quota"] == 2
    )
    zk = _zk(connect)
    try:  # the change went through KRaft and was written back to ZooKeeper
        assert json.loads(zk.get("/config/topics/orders")[0])["config"]["retention.ms"] == "7200000"
    finally:
        zk.stop()
        zk.close()


def test_drift_seeded_behind_the_controller_is_reported_exactly(migrated):
    _, connect, controller, _, _ = migrated
    first = _diff(connect, controller)
    assert first.exit_code == 0, first.stdout + first.stderr
    zk = _zk(connect)
    config_path, state_path = "/config/topics/orders", "/brokers/topics/orders/partitions/1/state"
    saved = {p: zk.get(p)[0] for p in (config_path, state_path)}
    try:
        config = json.loads(saved[config_path])
        zk.set(
            config_path, json.dumps({**config, "config": {**config["config"], "retention.ms": "1"}}).encode()
        )
        zk.set(state_path, json.dumps({**json.loads(saved[state_path]), "isr": []}).encode())
        result = run_ktool(
            "kraft-migration", "diff", "--json", "--zookeeper", connect, str(controller.log_dir)
        )
        assert result.exit_code == 1, result.stdout + result.stderr
        got = [json.loads(line) for line in result.stdout.splitlines()[:-1]]
        assert [
            (o["kind"], o["subject"], o["field"], o["side"], o["zookeeper"], o["repaired"]) for o in got
        ] == [
            ("partition", "orders-1", "isr", "both", [], True),
            ("config", "topic orders", "retention.ms", "both", "1", True),
        ]
    finally:
        for path, data in saved.items():
            zk.set(path, data)
        zk.stop()
        zk.close()


def test_check_reports_a_topic_pending_deletion_and_a_reassignment_in_flight(migrated):
    _, connect, _, _, _ = migrated
    zk = _zk(connect)
    made = ["/admin/delete_topics/orders", "/admin/reassign_partitions"]
    try:
        zk.create(made[0], b"", makepath=True)
        zk.create(made[1], b'{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[0]}]}')
        result = run_ktool("kraft-migration", "check", "--json", "--zookeeper", connect)
    finally:
        for path in made:
            zk.delete(path)
        zk.stop()
        zk.close()
    assert result.exit_code == 1, result.stdout + result.stderr
    kinds = [(o["severity"], o["kind"]) for o in map(json.loads, result.stdout.splitlines()[:-1])]
    assert kinds == [
        ("warning", "topic-pending-deletion"),
        ("error", "reassignment-in-flight"),
        ("info", "migration-begun"),
        ("info", "kraft-controller-active"),
    ]
