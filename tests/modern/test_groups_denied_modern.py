"""A group the brokers' ACLs deny, and the security mistakes an operator makes, through every `groups`
command that talks to Kafka: one line each naming the broker (and the group), exit 3, no traceback, no
"not found", and at once (no request waits out its 10 s timeout).

One cluster for the module: a 4.x KRaft node with StandardAuthorizer, `super.users=User:admin` (and
User:ANONYMOUS: the plain listener the broker's own controller and the test's set-up speak on) and a
SASL_SSL listener (tests/support/secured.py) where `dave` (SCRAM-SHA-512) may DESCRIBE every topic and
DESCRIBE/READ the groups named `open-*`, but not group `secret`. As Kafka's own tools show it, ListGroups
leaves a group the user may not DESCRIBE out of the list."""

from __future__ import annotations

import json
import socket
import time
import uuid

import pytest

from tests.modern.test_groups_views_modern import their_tables
from tests.support.cli import run_ktool
from tests.support.modern import ModernCluster, create_topic
from tests.support.secured import broker_settings, java_client_config, make_certificates
from tests.support.servers import kafka_commit

pytestmark = pytest.mark.server
DAVE = ("dave", "dave-secret", "SCRAM-SHA-512")
AUTHORIZER = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin;User:ANONYMOUS",
}
AT_ONCE = 8.0  # seconds: well under the 10 s a request would wait, ktool's start-up included


@pytest.fixture(scope="module")
def cluster(kafka4_release, tmp_path_factory):
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    certs = make_certificates(tmp_path_factory.mktemp("acl-certs"))
    listeners, properties, format_args = broker_settings(certs)
    format_args += ["--add-scram", f"{DAVE[2]}=[name={DAVE[0]},password={DAVE[1]}]"]
    workdir = tmp_path_factory.mktemp("kafka-acl")
    with ModernCluster(
        kafka4_release, "combined", workdir, listeners=listeners, properties={**properties, **AUTHORIZER},
        format_args=format_args,
    ) as started:  # fmt: skip
        started.certificates = certs
        topic = f"acl-{uuid.uuid4().hex[:8]}"
        create_topic(started, topic, partitions=2)
        for group in ("secret", "open-orders"):
            kafka_commit(started.bootstrap, group, {(topic, 0): 1, (topic, 1): 0}, timeout=60)
        user = f"User:{DAVE[0]}"
        allow, literal, prefixed = (
            AclPermissionType.ALLOW,
            ResourcePatternType.LITERAL,
            ResourcePatternType.PREFIXED,
        )
        bindings = [
            AclBinding(ResourceType.TOPIC, "*", literal, user, "*", AclOperation.DESCRIBE, allow)
        ] + [
            AclBinding(ResourceType.GROUP, "open-", prefixed, user, "*", op, allow)
            for op in (AclOperation.DESCRIBE, AclOperation.READ)
        ]  # fmt: skip
        admin = AdminClient({"bootstrap.servers": started.bootstrap})
        for future in admin.create_acls(bindings, request_timeout=30).values():
            future.result()
        started.topic = topic
        yield started


def _as(cluster, *args: str, auth: str = f"{DAVE[2].lower()} {DAVE[0]}:{DAVE[1]}", server: str | None = None):
    started = time.monotonic()
    result = run_ktool(
        *args, "--bootstrap-server", server or cluster.bootstrap_of("SASL_SSL"),
        "--broker-ca", str(cluster.certificates.ca), env={"KTOOL_BROKER_AUTH": auth},
    )  # fmt: skip
    return result, time.monotonic() - started


def _denied(cluster) -> str:
    return (
        f"ktool: broker {cluster.bootstrap_of('SASL_SSL')}: SASL_SSL SCRAM-SHA-512 as dave is not authorized "
        "for group secret (GROUP_AUTHORIZATION_FAILED)"
    )


@pytest.mark.parametrize(
    "command",
    [
        ("groups", "describe", "secret"),
        ("groups", "describe", "secret", "--members", "--verbose"),
        ("groups", "describe", "secret", "--state"),
        ("groups", "watch", "secret", "--once"),
        ("groups", "watch", "secret", "--until-stable", "--timeout", "30"),
        ("groups", "reset-offsets", "secret", "--all-topics", "--to-earliest"),
    ],
    ids=["describe", "members", "state", "watch-once", "watch", "reset-offsets"],
)
def test_a_denied_group_is_one_line_naming_it_and_exit_3(cluster, command):
    result, took = _as(cluster, *command)
    assert result.exit_code == 3, result.output
    assert result.stderr.splitlines() == [_denied(cluster)]
    assert "not found" not in result.output and "Traceback" not in result.output
    assert took < AT_ONCE, took


def test_the_denied_group_is_left_out_of_the_list_as_kafka_consumer_groups_leaves_it(cluster, tmp_path):
    result, _took = _as(cluster, "groups", "list", "--json")
    assert result.exit_code == 0, result.output
    ours = {r["group"] for r in map(json.loads, result.stdout.splitlines()) if r["type"] == "group"}
    config = java_client_config(cluster.certificates, DAVE[0], DAVE[1], DAVE[2], tmp_path / "dave.properties")
    theirs = their_tables(
        cluster,
        "--list",
        "--state",
        "--command-config",
        str(config),
        bootstrap=cluster.bootstrap_of("SASL_SSL"),
    )
    assert ours == {r["GROUP"] for r in theirs} == {"open-orders"}
    admin = run_ktool("groups", "list", "--json", "--bootstrap-server", cluster.bootstrap)  # a super user
    assert {"secret", "open-orders"} <= {r.get("group") for r in map(json.loads, admin.stdout.splitlines())}


def test_an_allowed_group_beside_is_described(cluster):
    result, _took = _as(cluster, "groups", "describe", "open-orders")
    assert result.exit_code == 0, result.output
    assert cluster.topic in result.stdout


def _refused_port() -> int:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "command", [("groups", "list"), ("groups", "describe", "open-orders"), ("groups", "watch", "open-orders")]
)
@pytest.mark.parametrize("mistake", ["wrong-password", "wrong-mechanism", "unreachable"])
def test_security_mistakes_are_one_line_at_once_and_exit_3(cluster, command, mistake):
    server = cluster.bootstrap_of("SASL_SSL")
    if mistake == "wrong-password":
        result, took = _as(cluster, *command, auth="scram-sha-512 dave:not-daves")
        expected = [server, "SCRAM-SHA-512 as dave", "authentication failed"]
    elif mistake == "wrong-mechanism":  # dave has SCRAM-SHA-512 credentials only
        result, took = _as(cluster, *command, auth=f"scram-sha-256 dave:{DAVE[1]}")
        expected = [server, "SCRAM-SHA-256 as dave", "authentication failed"]
    else:
        server = f"127.0.0.1:{_refused_port()}"
        result, took = _as(cluster, *command, server=server)
        expected = [server, "connection refused"]
    assert result.exit_code == 3, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and all(word.lower() in lines[0].lower() for word in expected), result.stderr
    assert result.stdout == "" and "Traceback" not in result.output and "not-daves" not in result.output
    assert took < AT_ONCE, (took, lines)
