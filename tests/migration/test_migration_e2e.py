"""The 3.9 operations guide's migration (KIP-866) run for real on loopback, `check` and `diff` at each
phase: Kafka 3.9.2 in ZooKeeper mode with a topic, configs, quotas, SCRAM users, ACLs and a delegation
token (created over SASL/SCRAM: the diff compares it and never shows its HMAC), the brokers on
IBP 3.3 (below the migration's minimum: `check --bootstrap-server` reports it); KRaft controllers with
`zookeeper.metadata.migration.enable` (`check --bootstrap-controller` sees the quorum and the flag); the
brokers restarted one by one on IBP 3.9 with the migration flags, until "Completed migration of metadata
from ZooKeeper to KRaft"; dual write (`diff` in step while topics, configs, quotas, ACLs and SCRAM users
change through the Admin API; drift seeded in ZooKeeper reported exactly; an old copy of the log; the
active controller SIGKILLed while changes go on, in step again once it is back); the brokers rolled to
KRaft (still in step); the migration finalized (the controllers restarted without the flag: `diff`
passes while KRaft moves on alone, and names what ZooKeeper alone holds).

One cluster per shape: CI runs one broker and one controller through every phase (96 to 143 s at load
20); the full run of three brokers and three controllers is `exhaustive` (238 to 402 s at load 20 to 35).
The tests run in order: each is a phase."""

from __future__ import annotations

import json
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.cli import Result, run_ktool
from tests.support.modern import FAST_START, ModernCluster, Node, copy_live_dir, create_topic, run_tool
from tests.support.servers import free_port

pytestmark = pytest.mark.server

COMPLETED = "Completed migration of metadata from ZooKeeper to KRaft"  # 3.9 spells it so
SCRAM = "salt=c2FsdHNhbHQ=,stored_key=c3RvcmVka2V5,server_key=c2VydmVya2V5,iterations=4096"
# what the guide sets on each ZooKeeper-mode broker for the migration (controller.quorum.voters aside)
MIGRATION_FLAGS = {
    "zookeeper.metadata.migration.enable": "true",
    "controller.listener.names": "CONTROLLER",
    "listener.security.protocol.map": ",".join(
        f"{name}:{name if name != 'CONTROLLER' else 'PLAINTEXT'}"
        for name in ("PLAINTEXT", "SASL_PLAINTEXT", "CONTROLLER")
    ),
    "inter.broker.protocol.version": "3.9",
}
# A delegation token is created by a SASL-authenticated user (SCRAM here) and needs the secret key on the
# brokers and, in KRaft, the controllers
ADMIN_PASSWORD, VIEWER_PASSWORD = "admin-secret", "viewer-secret"  # a super user and one who is not
TOKENS = {"delegation.token.secret.key": "migration-proof-secret"}
SASL = {
    "sasl.enabled.mechanisms": "SCRAM-SHA-256",
    "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config":
        "org.apache.kafka.common.security.scram.ScramLoginModule required;",
    **TOKENS,
}  # fmt: skip
# ACLs need an authorizer: ZooKeeper's on ZooKeeper-mode brokers, KRaft's on controllers and KRaft brokers
OPEN = {"super.users": "User:ANONYMOUS;User:admin", "allow.everyone.if.no.acl.found": "true"}
ZK_AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer", **OPEN}
KRAFT_AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    **OPEN,
}


def _zk(connect: str):
    from kazoo.client import KazooClient

    zk = KazooClient(connect)
    zk.start(timeout=10)
    return zk


def _scram_sha_256(password: str, iterations: int = 4096) -> str:
    """A SCRAM-SHA-256 credential as ScramCredentialUtils writes it in /config/users/U (RFC 5802)."""
    import base64
    import hashlib
    import hmac
    import os

    salt = os.urandom(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha256).digest()
    server_key = hmac.new(salted, b"Server Key", hashlib.sha256).digest()
    b64 = base64.b64encode
    return (
        f"salt={b64(salt).decode()},stored_key={b64(hashlib.sha256(client_key).digest()).decode()},"
        f"server_key={b64(server_key).decode()},iterations={iterations}"
    )


def _create_delegation_token(cluster: ModernCluster, workdir: Path) -> tuple[str, str]:
    """kafka-delegation-tokens.sh --create as the SCRAM user admin: the token's id and HMAC (its password,
    which ktool must never print)."""
    config = workdir / "admin.properties"
    config.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="admin" password="{ADMIN_PASSWORD}";\n'
    )
    made = run_tool(
        cluster.release, "DelegationTokenCommand",
        ["--bootstrap-server", cluster.bootstrap_of("SASL_PLAINTEXT"), "--create", "--max-life-time-period",
         "-1", "--renewer-principal", "User:bob", "--command-config", str(config)],
        timeout=180,
    )  # fmt: skip
    # the table DelegationTokenCommand prints: TOKENID HMAC OWNER …, one row
    row = [line.split() for line in made.stdout.splitlines() if line.strip()][-1]
    return row[0], row[1]


def _wait_for_line(paths: list[Path], line: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(p.is_file() and line in p.read_text(errors="replace") for p in paths):
            return
        time.sleep(0.5)
    raise AssertionError(f"{paths}: no {line!r} within {timeout}s")


@dataclass
class Migration:
    cluster: ModernCluster
    connect: str  # ZooKeeper, with the cluster's chroot
    controllers: list[Node]
    before: Result  # check, ZooKeeper only, before any controller
    live: Result  # check with the brokers (on IBP 3.3) and the controllers, before the brokers' restart
    token: tuple[str, str]  # a delegation token's id and HMAC, made in ZooKeeper mode

    @property
    def log_dirs(self) -> list[str]:
        return [str(c.log_dir) for c in self.controllers]


# CI: one broker and one controller through every phase; the guide's full run (three brokers rolled one
# by one, three controllers, the active one killed) once by hand: tests/run.sh --exhaustive
SHAPES = [
    pytest.param((1, 1), id="1-broker"),
    pytest.param((3, 3), id="3-brokers", marks=pytest.mark.exhaustive),
]


@pytest.fixture(scope="module", params=SHAPES)
def migrated(request, kafka39_release, zookeeper_server, tmp_path_factory):

    brokers, controllers = request.param
    chroot = f"/migration-{uuid.uuid4().hex[:8]}"
    connect = f"{zookeeper_server.connect_string}{chroot}"
    workdir = tmp_path_factory.mktemp("kraft-migration")
    zk = _zk(zookeeper_server.connect_string)
    try:  # SCRAM users there before the brokers start: admin creates a delegation token
        for user, password in (("admin", ADMIN_PASSWORD), ("viewer", VIEWER_PASSWORD)):
            doc = {"version": 1, "config": {"SCRAM-SHA-256": _scram_sha_256(password)}}
            zk.create(f"{chroot}/config/users/{user}", json.dumps(doc).encode(), makepath=True)
    finally:
        zk.stop()
        zk.close()
    cluster = ModernCluster(
        kafka39_release,
        "zookeeper",
        workdir,
        brokers=brokers,
        zookeeper=connect,
        jvm_options=FAST_START,
        listeners={"SASL_PLAINTEXT": "SASL_PLAINTEXT"},
        properties={
            "inter.broker.protocol.version": "3.3",
            **ZK_AUTHORIZER,
            **SASL,
        },  # IBP below 3.4: check says so
    )
    with cluster:
        create_topic(cluster, "orders", partitions=2, config={"retention.ms": 3600000})
        token = _create_delegation_token(cluster, workdir)
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
        quorum = [
            Node(3000 + i, "controller", workdir / f"controller-{3000 + i}", None, free_port("127.0.0.1"))
            for i in range(controllers)
        ]
        cluster.cluster_id = cluster_id  # the controllers are formatted with ZooKeeper's cluster id
        cluster.controller_properties = {
            "zookeeper.metadata.migration.enable": "true",
            "zookeeper.connect": connect,
            **KRAFT_AUTHORIZER,
            **TOKENS,
        }
        cluster.add_nodes(quorum)
        addresses = ",".join(f"127.0.0.1:{c.controller_port}" for c in quorum)
        live = _check_live(connect, cluster.bootstrap, addresses)
        cluster.properties |= MIGRATION_FLAGS | {"controller.quorum.voters": cluster.voters}
        for broker in cluster.brokers:  # each broker restarted with the migration flags, one at a time
            cluster.reconfigure(broker)
        _wait_for_line([c.server_log for c in quorum], COMPLETED, 240)
        yield Migration(cluster, connect, quorum, before, live, token)


def _check_live(connect: str, bootstrap: str, controllers: str, timeout: float = 90.0) -> Result:
    """`check --json` with the brokers and controllers until the quorum has a leader (the controllers were
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


def _diff(m: Migration, *log_dirs: str, timeout: float = 60.0) -> Result:
    """`diff --json` until it passes or `timeout`: dual write reaches ZooKeeper a moment after KRaft."""
    deadline = time.monotonic() + timeout
    while True:
        result = run_ktool(
            "kraft-migration", "diff", "--json", "--zookeeper", m.connect, *(log_dirs or m.log_dirs)
        )
        if result.exit_code != 1 or time.monotonic() > deadline:
            return result
        time.sleep(0.5)


def _objects(result: Result) -> tuple[list[dict], dict]:
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return lines[:-1], lines[-1]


def _admin(m: Migration):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": m.cluster.bootstrap, "log_level": 0})


def _set_topic_config(m: Migration, topic: str, key: str, value: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    entry = ConfigEntry(key, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource("topic", topic, incremental_configs=[entry])
    admin = _admin(m)  # held until the answer: a client collected first fails its futures
    admin.incremental_alter_configs([resource])[resource].result(timeout=60)


def _churn(m: Migration, tag: str) -> None:
    """One of each change through the Admin API: a topic with a config, an ACL on it, a SCRAM user and
    a user quota (ConfigCommand --bootstrap-server: confluent-kafka has no AlterClientQuotas)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    topic, user = f"t-{tag}", f"u-{tag}"
    create_topic(m.cluster, topic, partitions=2, config={"cleanup.policy": "compact"})
    _set_topic_config(m, topic, "retention.ms", "86400000")
    admin = _admin(m)
    acl = AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.PREFIXED, f"User:{user}", "*",
                     AclOperation.WRITE, AclPermissionType.ALLOW)  # fmt: skip
    for future in admin.create_acls([acl]).values():
        future.result(timeout=60)
    scram = UserScramCredentialUpsertion(user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b"pw")
    for future in admin.alter_user_scram_credentials([scram]).values():
        try:
            future.result(timeout=60)
        except KafkaException as exc:  # pragma: no cover - said with the broker's reason
            raise AssertionError(f"SCRAM upsertion for {user}: {exc}") from None
    run_tool(
        m.cluster.release, "ConfigCommand",
        ["--bootstrap-server", m.cluster.bootstrap, "--alter", "--entity-type", "users",
         "--entity-name", user, "--add-config", "consumer_byte_rate=4096"],
        timeout=180,
    )  # fmt: skip


def _in_step_after_churn(m: Migration, tag: str) -> dict:
    before = _objects(_diff(m))[1]["compared"]
    _churn(m, tag)
    result = _diff(m)
    assert result.exit_code == 0, result.stdout + result.stderr
    summary = _objects(result)[1]
    assert summary["inStep"] and summary["migrationState"] == "MIGRATION", summary
    grown = {k: summary["compared"][k] - before.get(k, 0) for k in ("topic", "acl", "scram", "quota")}
    assert grown == {"topic": 1, "acl": 1, "scram": 1, "quota": 1}, (before, summary)
    zk = _zk(m.connect)
    try:  # written back to ZooKeeper by the controller (dual write), not only compared equal
        topic_config = json.loads(zk.get(f"/config/topics/t-{tag}")[0])["config"]
        assert topic_config["retention.ms"] == "86400000"
        assert "SCRAM-SHA-512" in json.loads(zk.get(f"/config/users/u-{tag}")[0])["config"]
    finally:
        zk.stop()
        zk.close()
    return summary


def test_check_passes_before_the_migration(migrated):
    assert migrated.before.exit_code == 0, migrated.before.stdout + migrated.before.stderr
    assert migrated.before.stdout.endswith("ready to migrate: nothing blocking or risky found\n")


def test_check_live_reports_brokers_on_an_older_ibp_and_the_controller_quorum(migrated):
    m = migrated
    assert m.live.exit_code == 1, m.live.stdout + m.live.stderr
    got, summary = _objects(m.live)
    # what the brokers and controllers say (ZooKeeper's /migration may or may not be there yet)
    live_only = [o for o in got if o["file"].startswith(("broker ", "controllers "))]
    addresses = ",".join(f"127.0.0.1:{c.controller_port}" for c in m.controllers)
    assert [(o["severity"], o["kind"], o["file"]) for o in live_only] == [
        *(("error", "ibp-too-old", f"broker {b.node_id} (127.0.0.1:{b.port})") for b in m.cluster.brokers),
        ("info", "controller-quorum", f"controllers {addresses}"),
    ]
    assert {o["actual"] for o in live_only[:-1]} == {"3.3"}  # as server.properties sets it
    ids = ",".join(str(c.node_id) for c in m.controllers)
    assert live_only[-1]["message"].endswith(
        f"voters {ids}; zookeeper.metadata.migration.enable=true on {ids}"
    )
    assert [o["kind"] for o in got if o not in live_only] in ([], ["migration-waiting"])
    assert (summary["errors"], summary["warnings"]) == (len(m.cluster.brokers), 0)


def test_check_live_after_the_roll_to_ibp_3_9_and_a_port_that_is_no_controller(migrated):
    m = migrated
    result = run_ktool(
        "kraft-migration", "check", "--zookeeper", m.connect, "--bootstrap-server", m.cluster.bootstrap,
        "--bootstrap-controller", m.cluster.bootstrap.split(",")[0],
    )  # fmt: skip
    assert result.exit_code == 1, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert not [line for line in lines if "ibp-" in line], result.stdout  # 3.9 everywhere now
    assert [line.split(": ")[1] for line in lines if line.startswith("ERROR")] == [
        "controller-quorum-unreachable"
    ], result.stdout
    assert "no DescribeQuorum (not a KRaft controller" in result.stdout


def test_check_live_says_why_it_cannot_see_an_ibp(migrated, tmp_path):
    """A user without DescribeConfigs on the cluster: each broker's IBP unseen, with the broker's reason."""
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    m = migrated
    admin = _admin(m)
    # an ACL on the cluster (ResourceType.BROKER is Kafka's CLUSTER): with one there, only who it names
    # may describe the brokers' configs (allow.everyone.if.no.acl.found no longer applies)
    only_admin = (ResourceType.BROKER, "kafka-cluster", ResourcePatternType.LITERAL, "User:admin", "*",
                  AclOperation.DESCRIBE_CONFIGS, AclPermissionType.ALLOW)  # fmt: skip
    for future in admin.create_acls([AclBinding(*only_admin)]).values():
        future.result(timeout=60)
    auth = tmp_path / "viewer.auth"
    auth.write_text(f"scram-sha-256 viewer:{VIEWER_PASSWORD}\n")
    auth.chmod(0o600)
    sasl = m.cluster.bootstrap_of("SASL_PLAINTEXT")
    try:
        deadline = time.monotonic() + 60
        while True:  # the brokers' authorizer learns the ACL a moment after the controller takes it
            result = run_ktool(
                "kraft-migration", "check", "--json", "--zookeeper", m.connect,
                "--broker-auth-file", str(auth), "--bootstrap-server", sasl,
            )  # fmt: skip
            if "ibp-unseen" in result.stdout or time.monotonic() > deadline:
                break
            time.sleep(1)
    finally:
        for future in admin.delete_acls([AclBindingFilter(*only_admin)]).values():
            future.result(timeout=60)
    assert result.exit_code == 1, result.stdout + result.stderr
    unseen = [o for o in _objects(result)[0] if o["kind"] == "ibp-unseen"]
    assert [o["file"] for o in unseen] == [
        f"broker {b.node_id} (127.0.0.1:{b.listener_ports['SASL_PLAINTEXT']})" for b in m.cluster.brokers
    ]
    assert all(
        o["message"].startswith("inter.broker.protocol.version cannot be seen: DescribeConfigs denied "
                                "(CLUSTER_AUTHORIZATION_FAILED")
        and o["severity"] == "warning"
        for o in unseen
    ), unseen  # fmt: skip


def test_diff_is_clean_in_dual_write_while_topics_configs_quotas_acls_and_users_change(migrated):
    m = migrated
    first = _diff(m)
    assert first.exit_code == 0, first.stdout + first.stderr
    _set_topic_config(m, "orders", "retention.ms", "7200000")
    summary = _in_step_after_churn(m, "dual")
    compared = summary["compared"]  # alice, admin, viewer and u-dual; alice's and u-dual's; admin's token
    assert (compared["scram"], compared["acl"], compared["delegation-token"]) == (4, 2, 1), compared
    token_id, token_hmac = m.token
    text = run_ktool("kraft-migration", "diff", "--zookeeper", m.connect, *m.log_dirs)
    assert text.exit_code == 0 and token_hmac not in text.stdout + text.stderr
    zk = _zk(m.connect)
    try:  # the change went through KRaft and was written back to ZooKeeper
        assert json.loads(zk.get("/config/topics/orders")[0])["config"]["retention.ms"] == "7200000"
    finally:
        zk.stop()
        zk.close()


def test_drift_seeded_behind_the_controller_is_reported_exactly(migrated):
    m = migrated
    first = _diff(m)
    assert first.exit_code == 0, first.stdout + first.stderr
    zk = _zk(m.connect)
    config_path, state_path = "/config/topics/orders", "/brokers/topics/orders/partitions/1/state"
    acl_path, token_path = "/kafka-acl/Topic/orders", f"/delegation_token/tokens/{m.token[0]}"
    saved = {p: zk.get(p)[0] for p in (config_path, state_path, acl_path, token_path)}
    try:
        config = json.loads(saved[config_path])
        zk.set(
            config_path, json.dumps({**config, "config": {**config["config"], "retention.ms": "1"}}).encode()
        )
        zk.set(state_path, json.dumps({**json.loads(saved[state_path]), "isr": []}).encode())
        zk.set(acl_path, json.dumps({"version": 1, "acls": []}).encode())
        token = json.loads(saved[token_path])
        renewed = token["expiryTimestamp"] + 1  # a renewal written behind the controller
        zk.set(token_path, json.dumps({**token, "expiryTimestamp": renewed}).encode())
        result = run_ktool("kraft-migration", "diff", "--json", "--zookeeper", m.connect, *m.log_dirs)
        assert result.exit_code == 1, result.stdout + result.stderr
        got = _objects(result)[0]
        assert [
            (o["kind"], o["subject"], o["field"], o["side"], o["zookeeper"], o["repaired"]) for o in got
        ] == [
            ("partition", "orders-1", "isr", "both", [], True),
            ("config", "topic orders", "retention.ms", "both", "1", True),
            ("acl", "allow User:alice read on topic:literal:orders from *", None, "kraft", None, True),
            (
                "delegation-token",
                m.token[0],
                "expiration_timestamp",
                "both",
                token["expiryTimestamp"] + 1,
                True,
            ),
        ]
        assert m.token[1] not in result.stdout + result.stderr  # the HMAC: never said
    finally:
        for path, data in saved.items():
            zk.set(path, data)
        zk.stop()
        zk.close()


def test_check_reports_a_topic_pending_deletion_and_a_reassignment_in_flight(migrated):
    m = migrated
    zk = _zk(m.connect)
    made = ["/admin/delete_topics/orders", "/admin/reassign_partitions"]
    try:
        zk.create(made[0], b"", makepath=True)
        zk.create(made[1], b'{"version":1,"partitions":[{"topic":"orders","partition":0,"replicas":[0]}]}')
        result = run_ktool("kraft-migration", "check", "--json", "--zookeeper", m.connect)
    finally:
        for path in made:
            zk.delete(path)
        zk.stop()
        zk.close()
    assert result.exit_code == 1, result.stdout + result.stderr
    kinds = [(o["severity"], o["kind"]) for o in _objects(result)[0]]
    assert kinds == [
        ("warning", "topic-pending-deletion"),
        ("error", "reassignment-in-flight"),
        ("info", "migration-begun"),
        ("info", "kraft-controller-active"),
    ]


def test_a_copy_of_the_log_missing_a_record_is_reported_exactly(migrated, tmp_path):
    """A copy taken before a config change lacks its ConfigRecord: ZooKeeper, written back from it, is
    ahead of the copy (the log only grows: an old copy is the log with its last records missing)."""
    m = migrated
    assert _diff(m).exit_code == 0
    leader = _active_controller(m)
    copy = copy_live_dir(leader.log_dir / "__cluster_metadata-0", tmp_path / "__cluster_metadata-0")
    _set_topic_config(m, "orders", "retention.ms", "5400000")
    assert _diff(m).exit_code == 0  # the live log and ZooKeeper: in step
    result = run_ktool("kraft-migration", "diff", "--json", "--zookeeper", m.connect, str(copy))
    assert result.exit_code == 1, result.stdout + result.stderr
    got, summary = _objects(result)
    zk = _zk(m.connect)
    try:
        reflected = json.loads(zk.get("/migration")[0])["kraft_metadata_offset"]
    finally:
        zk.stop()
        zk.close()
    assert [(o["kind"], o["subject"], o["field"], o["side"], o["zookeeper"], o["kraft"]) for o in got] == [
        ("config", "topic orders", "retention.ms", "both", "5400000", "7200000"),
        (
            "migration",
            "/migration",
            "kraft_metadata_offset",
            "zookeeper",
            *(got[1][k] for k in ("zookeeper", "kraft")),
        ),
    ]
    # /migration moves on with every dual write (the controller's own records too): what the diff read is
    # past the copy's end and at most what ZooKeeper says a moment later
    assert got[1]["kraft"] < got[1]["zookeeper"] <= reflected, (got[1], reflected)
    assert "records this log does not hold" in got[1]["note"]


def _active_controller(m: Migration) -> Node:
    """The KRaft controller holding /controller (the active one, which dual-writes)."""
    zk = _zk(m.connect)
    try:
        active = json.loads(zk.get("/controller")[0])["brokerid"]
    finally:
        zk.stop()
        zk.close()
    return next(c for c in m.controllers if c.node_id == active)


@dataclass
class Churn:
    """Topics created through the Admin API in a loop while a controller is killed: each acknowledged
    one must be in both stores once the controller is back (KAFKA-15010: dual writes lost on failover)."""

    m: Migration
    acknowledged: list[str] = field(default_factory=list)
    failed: int = 0
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        from confluent_kafka.admin import NewTopic

        admin = _admin(self.m)
        i = 0
        while not self.stop.is_set():
            name = f"churn-{i}"
            i += 1
            try:
                admin.create_topics([NewTopic(name, 1, 1)], request_timeout=5)[name].result(timeout=10)
            except Exception:  # noqa: BLE001 - no controller to take it: not acknowledged
                self.failed += 1
                continue
            self.acknowledged.append(name)


def test_a_controller_killed_mid_dual_write_is_in_step_once_it_catches_up(migrated):
    m = migrated
    assert _diff(m).exit_code == 0
    churn = Churn(m)
    worker = threading.Thread(target=churn.run, daemon=True)
    worker.start()
    try:
        deadline = time.monotonic() + 120
        while len(churn.acknowledged) < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(churn.acknowledged) >= 3, f"no topic created in 120 s ({churn.failed} failed)"
        killed = _active_controller(m)
        m.cluster.stop_node(killed, kill=True)
        # whatever the stores hold now, each difference said as it is: exit 0 or 1, never a traceback
        during = run_ktool("kraft-migration", "diff", "--json", "--zookeeper", m.connect, *m.log_dirs)
        assert during.exit_code in (0, 1) and not during.stderr, during.stdout + during.stderr
        got, summary = _objects(during)
        assert summary["differences"] == len(got)
        seen = [(o["kind"], o["subject"], o["side"]) for o in got]
        print(f"while controller {killed.node_id} was down: {seen}")
        time.sleep(3)  # changes go on against a quorum without that controller
        m.cluster.start_node(killed, wait=False)
        time.sleep(3)
    finally:
        churn.stop.set()
        worker.join(timeout=60)
    after = _diff(m, timeout=180)
    assert after.exit_code == 0, after.stdout + after.stderr
    zk = _zk(m.connect)
    try:
        lost = [t for t in churn.acknowledged if not zk.exists(f"/brokers/topics/{t}")]
    finally:
        zk.stop()
        zk.close()
    assert not lost, f"acknowledged but not in ZooKeeper: {lost}"
    print(f"topics acknowledged {len(churn.acknowledged)}, refused {churn.failed}")


def test_brokers_rolled_to_kraft_stay_in_step_while_metadata_changes(migrated):
    m = migrated
    m.cluster.properties = KRAFT_AUTHORIZER | SASL  # no zookeeper.connect, migration flag nor IBP
    for broker in m.cluster.brokers:  # one at a time, as the guide rolls them
        broker.roles = "broker"
        m.cluster.reconfigure(broker)
    zk = _zk(m.connect)
    try:
        assert zk.get_children("/brokers/ids") == []  # no broker left in ZooKeeper
    finally:
        zk.stop()
        zk.close()
    _in_step_after_churn(m, "kraft")


def test_finalized_diff_passes_while_kraft_moves_on_and_names_what_only_zookeeper_holds(migrated):
    m = migrated
    m.cluster.controller_properties = KRAFT_AUTHORIZER | TOKENS  # the guide's last step: no migration flag
    for controller in m.controllers:
        m.cluster.reconfigure(controller)
    deadline = time.monotonic() + 180
    while True:
        summary = _objects(_diff(m))[1]
        if summary["migrationState"] == "POST_MIGRATION" or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert summary["migrationState"] == "POST_MIGRATION", summary
    _set_topic_config(m, "orders", "retention.ms", "1800000")  # KRaft alone has it now
    deadline = time.monotonic() + 60
    while True:
        result = run_ktool("kraft-migration", "diff", "--json", "--zookeeper", m.connect, *m.log_dirs)
        got, summary = _objects(result)
        if any(o["subject"] == "topic orders" for o in got) or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert result.exit_code == 0, result.stdout + result.stderr
    assert [(o["kind"], o["subject"], o["field"], o["side"], o["zookeeper"], o["kraft"]) for o in got] == [
        ("config", "topic orders", "retention.ms", "both", "5400000", "1800000")
    ]
    assert (summary["passes"], summary["onlyInZooKeeper"]) == (True, 0)
    zk = _zk(m.connect)
    try:  # something ZooKeeper alone holds: lost when ZooKeeper is deleted
        zk.create("/config/topics/left-behind", b'{"version":1,"config":{"cleanup.policy":"compact"}}')
        gate = run_ktool("kraft-migration", "diff", "--json", "--zookeeper", m.connect, *m.log_dirs)
        text = run_ktool("kraft-migration", "diff", "--zookeeper", m.connect, *m.log_dirs)
    finally:
        zk.delete("/config/topics/left-behind")
        zk.stop()
        zk.close()
    assert gate.exit_code == 1 and text.exit_code == 1, gate.stdout + gate.stderr
    got, summary = _objects(gate)
    assert [(o["kind"], o["subject"], o["side"]) for o in got if o["side"] == "zookeeper"] == [
        ("config", "topic left-behind", "zookeeper")
    ]
    assert (summary["passes"], summary["onlyInZooKeeper"]) == (False, 1)
    assert text.stdout.splitlines()[-1] == (
        "migration finalized (ZooKeeper no longer written): 1 only in ZooKeeper, lost when it is deleted"
    )
