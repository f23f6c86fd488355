"""Every command that talks to a broker, against a real 4.x broker with SASL_SSL (SCRAM-SHA-256/512 and
PLAIN users) and an mTLS listener (a client key with a password): right credentials work, wrong ones
are one line naming the broker and exit 3, and no secret is ever printed."""

from __future__ import annotations

import json
import uuid

import pytest

from tests.support.cli import run_ktool
from tests.support.modern import create_topic
from tests.support.secured import KEY_PASSWORD, USERS


@pytest.fixture(scope="module")
def group(secured_kafka) -> tuple[str, str]:
    """(group, topic): a group with committed offsets, made over the plain listener."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic, group = f"sec-{uuid.uuid4().hex[:8]}", f"sec-group-{uuid.uuid4().hex[:8]}"
    create_topic(secured_kafka, topic)
    producer = Producer({"bootstrap.servers": secured_kafka.bootstrap})
    for i in range(10):
        producer.produce(topic, f"m{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": secured_kafka.bootstrap, "group.id": group})
    consumer.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
    consumer.close()
    return group, topic


def _sasl(cluster, *args: str, user: str, password: str | None = None, **kwargs):
    mechanism, right = USERS[user]
    auth = f"{mechanism.lower()} {user}:{password or right}"
    return run_ktool(
        *args,
        "--bootstrap-server",
        cluster.bootstrap_of("SASL_SSL"),
        "--broker-ca",
        str(cluster.certificates.ca),
        env={"KTOOL_BROKER_AUTH": auth, **kwargs.get("env", {})},
    )


@pytest.mark.parametrize("user", sorted(USERS))
def test_groups_list_over_sasl_ssl_with_each_mechanism(secured_kafka, group, user):
    result = _sasl(secured_kafka, "groups", "list", "--json", user=user)
    assert result.exit_code == 0, result.output
    groups = [json.loads(line) for line in result.stdout.splitlines()]
    assert group[0] in {g.get("group") for g in groups}
    assert USERS[user][1] not in result.output


def test_groups_describe_over_sasl_ssl_shows_offsets_and_lag(secured_kafka, group):
    name, topic = group
    result = _sasl(secured_kafka, "groups", "describe", name, "--json", user="alice")
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    parts = [r for r in rows if r.get("type") == "partition"]
    assert [(p["topic"], p["partition"]) for p in parts] == [(topic, 0)]
    assert (parts[0]["kafkaOffset"], parts[0]["logEndOffset"], parts[0]["lag"]) == (7, 10, 3)


def test_a_wrong_password_is_one_line_naming_the_broker_and_exit_3(secured_kafka, group):
    result = _sasl(secured_kafka, "groups", "list", user="bob", password="not-bobs-password")
    assert result.exit_code == 3, result.output
    server = secured_kafka.bootstrap_of("SASL_SSL")
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert server in lines[0] and "authentication failed" in lines[0] and "SCRAM-SHA-512 as bob" in lines[0]
    assert "not-bobs-password" not in result.output and "Traceback" not in result.output


def test_groups_list_and_watch_over_sasl_ssl_say_state_and_type(secured_kafka, group):
    """Over SASL_SSL the list is ktool's own ListGroups v5 (state, type), sent with the same SASL and
    TLS settings; the watch's view the coordinator's DescribeGroups."""
    name, _topic = group
    listed = _sasl(secured_kafka, "groups", "list", "--json", user="alice")
    assert listed.exit_code == 0, listed.output
    ours = {g["group"]: g for g in map(json.loads, listed.stdout.splitlines()) if g["type"] == "group"}
    assert (ours[name]["state"], ours[name]["groupType"]) == ("Empty", "classic")
    watched = _sasl(secured_kafka, "groups", "watch", name, "--once", "--json", user="alice")
    assert watched.exit_code == 0, watched.output
    events = [json.loads(line) for line in watched.stdout.splitlines()]
    assert [e["event"] for e in events if e["type"] == "event"][-1] == "group-state"


def test_a_wrong_password_stops_the_watch_in_one_line(secured_kafka, group):
    result = _sasl(secured_kafka, "groups", "watch", group[0], user="bob", password="not-bobs-password")
    assert result.exit_code == 3, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "authentication failed" in lines[0], result.stderr
    assert "not-bobs-password" not in result.output


def test_credentials_from_a_file_and_from_the_config_file(secured_kafka, group, tmp_path):
    auth = tmp_path / "kafka-auth"
    auth.write_text("# bob's\nscram-sha-512 bob:bob-secret\n")
    result = run_ktool(
        "groups",
        "list",
        "--json",
        "--bootstrap-server",
        secured_kafka.bootstrap_of("SASL_SSL"),
        "--broker-ca",
        str(secured_kafka.certificates.ca),
        "--broker-auth-file",
        str(auth),
    )
    assert result.exit_code == 0, result.output
    assert group[0] in result.stdout
    carol = tmp_path / "carol-auth"
    carol.write_text("plain carol:carol-secret\n")
    config = tmp_path / "config.toml"
    config.write_text(f'[kafka]\nauth_file = "{carol}"\nca = "{secured_kafka.certificates.ca}"\n')
    result = run_ktool(
        "groups",
        "describe",
        group[0],
        "--bootstrap-server",
        secured_kafka.bootstrap_of("SASL_SSL"),
        env={"KTOOL_CONFIG": str(config)},
    )
    assert result.exit_code == 0, result.output
    assert group[1] in result.stdout


def _mtls(cluster, *args: str, key_password: str):
    certs = cluster.certificates
    return run_ktool(
        *args,
        "--bootstrap-server",
        cluster.bootstrap_of("SSL"),
        "--broker-ca",
        str(certs.ca),
        "--broker-cert",
        str(certs.client_cert),
        "--broker-key",
        str(certs.client_key),
        env={"KTOOL_BROKER_AUTH": f"key-password {key_password}"},
    )


def test_tls_client_certificate_with_a_key_password(secured_kafka, group):
    result = _mtls(secured_kafka, "groups", "describe", group[0], "--json", key_password=KEY_PASSWORD)
    assert result.exit_code == 0, result.output
    parts = [json.loads(line) for line in result.stdout.splitlines() if '"partition"' in line]
    assert [p["kafkaOffset"] for p in parts if p.get("type") == "partition"] == [7]
    assert KEY_PASSWORD not in result.output


def test_a_wrong_key_password_is_one_line_and_exit_3(secured_kafka, group):
    result = _mtls(secured_kafka, "groups", "list", key_password="wrong-key-password")
    assert result.exit_code == 3, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and secured_kafka.bootstrap_of("SSL") in lines[0], result.stderr
    assert "TLS client key" in lines[0] and "key-password" in lines[0]
    assert "wrong-key-password" not in result.output and "Traceback" not in result.output


def test_offsets_export_over_sasl_ssl(secured_kafka, group, tmp_path):
    """offsets export --from kafka reads the group's offsets through the secured listener."""
    out = tmp_path / "offsets.csv"
    result = _sasl(
        secured_kafka,
        "offsets",
        "export",
        "--from",
        "kafka",
        "--group",
        group[0],
        "--format",
        "csv",
        "--output",
        str(out),
        user="alice",
    )
    assert result.exit_code == 0, result.output
    assert f"{group[0]},{group[1]},0,7" in out.read_text().splitlines()


def test_retention_reads_topic_configs_over_sasl_ssl_with_an_auth_file(secured_kafka, tmp_path):
    """`retention --bootstrap-server` takes the security options every command that talks to a broker
    takes (it once had only --bootstrap-server: `No such option '--broker-auth-file'`, exit 2)."""
    from tests.support.modern import partition_dir

    topic = f"sec-ret-{uuid.uuid4().hex[:8]}"
    create_topic(secured_kafka, topic, config={"retention.bytes": "2000000"})
    auth = tmp_path / "kafka-auth"
    auth.write_text("scram-sha-256 alice:alice-secret\n")
    server = secured_kafka.bootstrap_of("SASL_SSL")
    result = run_ktool(
        "retention",
        str(partition_dir(secured_kafka.brokers[0], topic)),
        "--json",
        "--bootstrap-server",
        server,
        "--broker-ca",
        str(secured_kafka.certificates.ca),
        "--broker-auth-file",
        str(auth),
    )
    assert result.exit_code == 0, result.output
    (part,) = [o for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "partition"]
    assert part["settings"]["retentionBytes"] == {
        "value": 2000000,
        "source": f"broker {server}: topic {topic} config",
    }
    assert "alice-secret" not in result.output


def _other_ca(directory) -> str:
    """A CA that did not sign the broker's certificate (PEM)."""
    import subprocess

    key, cert = directory / "other-ca.key", directory / "other-ca.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
         "-days", "1", "-subj", "/CN=not-the-brokers-ca"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    return str(cert)


REFUSALS = {  # case: (listener, options, environment, what the one line says)
    "plaintext-to-sasl-ssl": ("SASL_SSL", [], {}, "this port speaks TLS"),
    "mtls-without-certificate": ("SSL", ["--broker-ca", "{ca}"], {}, "TLS"),
    "wrong-password": ("SASL_SSL", ["--broker-ca", "{ca}"], {"KTOOL_BROKER_AUTH": "scram-sha-512 bob:nope"},
                       "authentication failed"),
    "wrong-mechanism": ("SASL_SSL", ["--broker-ca", "{ca}"],
                        {"KTOOL_BROKER_AUTH": "scram-sha-512 alice:alice-secret"}, "authentication failed"),
    "foreign-ca": ("SASL_SSL", ["--broker-ca", "{other}"],
                   {"KTOOL_BROKER_AUTH": "scram-sha-256 alice:alice-secret"}, "TLS handshake failed"),
}  # fmt: skip


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_a_refused_connection_is_said_as_soon_as_the_client_sees_it(secured_kafka, tmp_path, case):
    """A wrong protocol, a missing client certificate, a wrong password or mechanism, a CA that did not
    sign the broker: one line, exit 3, saying what the client saw, in seconds, not after the whole
    --broker-timeout (30 s here) as "no answer within … (is the broker running …?)"."""
    import time

    listener, options, env, words = REFUSALS[case]
    names = {
        "ca": str(secured_kafka.certificates.ca),
        "other": _other_ca(tmp_path) if case == "foreign-ca" else "",
    }
    server = secured_kafka.bootstrap_of(listener)
    start = time.monotonic()
    result = run_ktool(
        "groups", "list", "--bootstrap-server", server, "--broker-timeout", "30",
        *[o.format(**names) for o in options], env=env,
    )  # fmt: skip
    took = time.monotonic() - start
    assert result.exit_code == 3 and result.stdout == "", result.output
    (line,) = result.stderr.splitlines()
    assert server in line and words in line and "no answer" not in line, line
    assert took < 12, f"{case}: {took:.1f} s: {line}"


@pytest.mark.parametrize("user", sorted(USERS))
def test_topics_over_sasl_ssl_asks_its_own_requests_with_each_mechanism(secured_kafka, group, user):
    """ktool's own protocol client (leader epoch, ELR: DescribeTopicPartitions) over TLS with SASL PLAIN
    and SCRAM, as librdkafka's requests; a wrong password is one line, exit 3."""
    topic = group[1]
    result = _sasl(secured_kafka, "topics", topic, "--json", user=user)
    assert result.exit_code == 0, result.output
    (part,) = [json.loads(line) for line in result.stdout.splitlines() if '"partition"' in line]
    assert (part["leader"], part["leaderEpoch"], part["elr"], part["minIsr"]) == (1, 0, [], 1), part
    assert result.stderr == "" and USERS[user][1] not in result.output
    refused = _sasl(secured_kafka, "topics", topic, user=user, password="wrong")
    assert refused.exit_code == 3 and len(refused.stderr.strip().splitlines()) == 1, refused.output


def test_topics_over_mutual_tls_with_a_key_password(secured_kafka, group):
    result = _mtls(secured_kafka, "topics", group[1], "--json", key_password=KEY_PASSWORD)
    assert result.exit_code == 0, result.output
    (part,) = [json.loads(line) for line in result.stdout.splitlines() if '"partition"' in line]
    assert part["leaderEpoch"] == 0 and part["elr"] == [] and result.stderr == ""
