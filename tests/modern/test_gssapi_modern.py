"""SASL GSSAPI (Kerberos) on ktool's own broker client, against a real MIT KDC (tests/support/kdc.py) and a
real Kafka 4.4 broker whose SASL_PLAINTEXT listener takes GSSAPI alone (tests/support/kerberized.py):
`groups list` and `groups describe` (offsets, log ends, lag, owners; --members) of a group with live
members equal kafka-consumer-groups given a GSSAPI --command-config, `groups watch --until-stable` says
the same owners, `groups rebalance-plan` the plan it makes over plaintext; `topics` equal kafka-topics
--describe and the plain listener's, `brokers` the cluster's; a stale keytab, a KDC that does not
answer: one line naming the principal and the broker, exit 3.

One broker and one KDC for the module; the group's two consumers join through the plain listener of the
same broker (confluent-kafka's wheels have no GSSAPI)."""

from __future__ import annotations

import json
import os
import time
import uuid

import pytest

from tests.modern.test_groups_views_modern import LiveConsumer, their_tables
from tests.support.cli import run_ktool
from tests.support.kdc import REALM
from tests.support.kerberized import CLIENT, LISTENER, broker_settings, java_client_config
from tests.support.modern import create_topic, run_tool_batch

pytestmark = [pytest.mark.server, pytest.mark.own_cluster]  # a broker and a KDC of its own
PARTITIONS, RECORDS = 3, 20


def _wait_for_gssapi(within: float = 900) -> None:
    """tests/run.sh builds gssapi beside the lanes: until its exit code is in $KTOOL_KERBEROS_RC (the
    import then finds the package installed meanwhile)."""
    import importlib

    done = os.environ.get("KTOOL_KERBEROS_RC")
    deadline = time.monotonic() + within
    while done and not os.path.exists(done) and time.monotonic() < deadline:
        time.sleep(1)
    importlib.invalidate_caches()


@pytest.fixture(scope="module")
def kerberos_kdc(tmp_path_factory):
    """The realm's KDC, MIT's library pointed at it (KRB5_CONFIG, a ticket cache of the module's own)
    and the JVMs of Kafka's tools too (JAVA_TOOL_OPTIONS), for the module."""
    from tests.conftest import _unavailable
    from tests.support.kdc import kdc
    from tests.support.servers import ServerError

    _wait_for_gssapi()
    try:
        import gssapi  # noqa: F401
    except ImportError:
        _unavailable("the gssapi package is not installed (pip install -e '.[kerberos]')")
    try:
        server = kdc(tmp_path_factory.mktemp("kdc")).start()
    except ServerError as exc:
        _unavailable(f"the Kerberos KDC: {exc}")
    saved = {k: os.environ.get(k) for k in (*server.env, "JAVA_TOOL_OPTIONS")}
    os.environ.update(server.env)
    os.environ["JAVA_TOOL_OPTIONS"] = f"-Djava.security.krb5.conf={server.krb5_conf}"
    try:
        yield server
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="module")
def kerberized_kafka(kafka4_release, kerberos_kdc, tmp_path_factory):
    from tests.conftest import _started

    listeners, properties, jvm = broker_settings(kerberos_kdc)
    cluster = _started(
        kafka4_release,
        "combined",
        tmp_path_factory,
        listeners=listeners,
        properties=properties,
        jvm_options=jvm,
    )
    with cluster:
        yield cluster


@pytest.fixture(scope="module")
def group(kerberized_kafka, kerberos_kdc):
    """A classic group of two consumers (the plain listener) on a topic of 3 partitions of 20 records
    each, every record consumed and committed."""
    from confluent_kafka import Producer

    topic, name = f"krb-{uuid.uuid4().hex[:8]}", f"krb-group-{uuid.uuid4().hex[:6]}"
    create_topic(kerberized_kafka, topic, partitions=PARTITIONS)
    producer = Producer({"bootstrap.servers": kerberized_kafka.bootstrap})
    for p in range(PARTITIONS):
        for n in range(RECORDS):
            producer.produce(topic, f"r{n}".encode(), partition=p)
    assert producer.flush(30) == 0
    members = [LiveConsumer(kerberized_kafka.bootstrap, name, topic, "classic", f"c-{n}") for n in (1, 2)]
    try:
        for m in members:
            assert m.assigned.wait(90)
        deadline = time.monotonic() + 90
        while True:  # auto-committed up to the end, the group Stable
            rows = _ours(kerberized_kafka, kerberos_kdc, "describe", name)
            done = [
                r for r in rows if r["type"] == "partition" and r["kafkaOffset"] == RECORDS and r["owner"]
            ]
            if len(done) == PARTITIONS:
                break
            assert time.monotonic() < deadline, rows
            time.sleep(0.5)
        yield name
    finally:
        for m in members:
            m.close()


def _auth(kdc, principal: str = CLIENT, keytab=None) -> dict[str, str]:
    keytab = keytab or kdc.keytabs.get(principal) or kdc.add_principal(principal)
    return {"KTOOL_BROKER_AUTH": f"gssapi {principal}@{REALM} {keytab}"}


def _ktool(cluster, env: dict[str, str], *args: str):
    return run_ktool("groups", *args, "--json", "--bootstrap-server", cluster.bootstrap_of(LISTENER), env=env)


def _ours(cluster, kdc, *args: str) -> list[dict]:
    result = _ktool(cluster, _auth(kdc), *args)
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _theirs(cluster, kdc, tmp_path, *args: str) -> list[dict[str, str]]:
    config = java_client_config(kdc, tmp_path / "gssapi.properties")
    return their_tables(
        cluster, *args, "--command-config", str(config), bootstrap=cluster.bootstrap_of(LISTENER)
    )


def test_list_and_describe_over_gssapi_equal_kafka_consumer_groups(
    kerberized_kafka, kerberos_kdc, group, tmp_path
):
    listed = {r["group"]: (r["groupType"], r["state"]) for r in _ours(kerberized_kafka, kerberos_kdc, "list")
              if r["type"] == "group"}  # fmt: skip
    theirs = _theirs(kerberized_kafka, kerberos_kdc, tmp_path, "--list", "--state", "--type")
    assert listed == {r["GROUP"]: (r["TYPE"].lower(), r["STATE"]) for r in theirs}
    assert listed[group] == ("classic", "Stable")

    rows = [r for r in _ours(kerberized_kafka, kerberos_kdc, "describe", group) if r["type"] == "partition"]
    ours = {
        (r["topic"], str(r["partition"])): (
            str(r["kafkaOffset"]),
            str(r["logEndOffset"]),
            str(r["lag"]),
            r["owner"],
        )
        for r in rows
    }
    table = _theirs(kerberized_kafka, kerberos_kdc, tmp_path, "--describe", "--group", group)
    assert ours == {
        (r["TOPIC"], r["PARTITION"]): (r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"], r["CONSUMER-ID"])
        for r in table
    }
    assert {v[:3] for v in ours.values()} == {(str(RECORDS), str(RECORDS), "0")}

    members = [
        r
        for r in _ours(kerberized_kafka, kerberos_kdc, "describe", group, "--members")
        if r["type"] == "member"
    ]
    their_members = _theirs(
        kerberized_kafka, kerberos_kdc, tmp_path, "--describe", "--group", group, "--members"
    )
    assert sorted((m["consumerId"], m["clientId"], str(m["partitions"])) for m in members) == sorted(
        (r["CONSUMER-ID"], r["CLIENT-ID"], r["#PARTITIONS"]) for r in their_members
    )


def test_watch_until_stable_over_gssapi_names_the_owners_describe_names(
    kerberized_kafka, kerberos_kdc, group
):
    rows = _ours(kerberized_kafka, kerberos_kdc, "describe", group)
    owners = {(r["topic"], r["partition"]): r["owner"] for r in rows if r["type"] == "partition"}
    result = _ktool(
        kerberized_kafka,
        _auth(kerberos_kdc),
        "watch",
        group,
        "--until-stable",
        "--timeout",
        "30",
        "--interval",
        "0.5",
    )
    assert result.exit_code == 0, result.output
    events = [json.loads(x) for x in result.stdout.splitlines() if x.startswith("{")]
    state = next(e for e in events if e.get("event") == "group-state")
    assert {(o["topic"], o["partition"]): o["owner"] for o in state["owners"]} == owners


def test_rebalance_plan_over_gssapi_is_the_plan_over_plaintext(kerberized_kafka, kerberos_kdc, group):
    """A classic group's plan (librdkafka's cooperative-sticky, no racks): the same reads over GSSAPI."""
    plain = run_ktool(
        "groups", "rebalance-plan", group, "--json", "--bootstrap-server", kerberized_kafka.bootstrap
    )
    assert plain.exit_code == 0, plain.output
    secured = _ktool(kerberized_kafka, _auth(kerberos_kdc), "rebalance-plan", group)
    assert secured.exit_code == 0, secured.output
    assert secured.stdout == plain.stdout and f'"group":"{group}"' in plain.stdout


def test_topics_and_brokers_over_gssapi_equal_kafka_topics_and_the_plain_listener(
    kerberized_kafka, kerberos_kdc, group, tmp_path
):
    from tests.modern.test_cluster_live import _describe_rows, _ours

    sasl = kerberized_kafka.bootstrap_of(LISTENER)
    config = java_client_config(kerberos_kdc, tmp_path / "gssapi.properties")
    (described,) = run_tool_batch(
        kerberized_kafka.release,
        "TopicCommand",
        [["--bootstrap-server", sasl, "--command-config", str(config), "--describe"]],
    )
    secured = run_ktool("topics", "--json", "--bootstrap-server", sasl, env=_auth(kerberos_kdc))
    assert secured.exit_code == 0, secured.output
    objs = [json.loads(line) for line in secured.stdout.splitlines()]
    assert _ours(objs) == _describe_rows(described) and len(_ours(objs)) >= PARTITIONS
    plain = run_ktool("topics", "--json", "--bootstrap-server", kerberized_kafka.bootstrap)
    assert secured.stdout == plain.stdout  # min ISR and every status too (DescribeConfigs on our client)

    brokers = run_ktool("brokers", "--json", "--bootstrap-server", sasl, env=_auth(kerberos_kdc))
    assert brokers.exit_code == 0, brokers.output
    objs = [json.loads(line) for line in brokers.stdout.splitlines()]
    assert [(o["id"], o["port"]) for o in objs if o["type"] == "broker"] == [
        (n.node_id, n.listener_ports[LISTENER]) for n in kerberized_kafka.brokers
    ]
    assert [o["clusterId"] for o in objs if o["type"] == "cluster"] == [kerberized_kafka.cluster_id]


def test_a_stale_keytab_is_one_line_naming_the_principal_and_the_broker(
    kerberized_kafka, kerberos_kdc, group
):
    """The principal's keys changed in the KDC after its keytab was written (a rotated password)."""
    principal = f"rotated-{uuid.uuid4().hex[:6]}"
    stale = kerberos_kdc.add_principal(principal)
    kerberos_kdc.add_principal(principal.replace("rotated", "other"))  # the KDC knows others besides
    kerberos_kdc._run("kadmin.local", "-r", REALM, "-q", f"cpw -randkey {principal}@{REALM}")
    result = _ktool(kerberized_kafka, _auth(kerberos_kdc, principal, stale), "describe", group)
    assert result.exit_code == 3, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert f"{principal}@{REALM}" in line and kerberized_kafka.bootstrap_of(LISTENER) in line
    assert "Decrypt integrity check failed" in line  # the KDC's answer, sealed with the keys it now holds

    missing = stale.with_name("missing.keytab")
    result = _ktool(kerberized_kafka, _auth(kerberos_kdc, principal, missing), "describe", group)
    assert result.exit_code == 3, result.output
    assert result.output.strip().endswith(
        f"SASL GSSAPI as {principal}@{REALM}: keytab {missing} cannot be read"
    )


def test_a_kdc_that_does_not_answer_is_one_line(kerberized_kafka, kerberos_kdc, group, tmp_path):
    from tests.support.servers import free_port

    principal = f"unreached-{uuid.uuid4().hex[:6]}"  # no ticket of it cached in this process
    keytab = kerberos_kdc.add_principal(principal)
    conf = tmp_path / "krb5.conf"
    conf.write_text(kerberos_kdc.krb5_conf.read_text().replace(f":{kerberos_kdc.port}", f":{free_port()}"))
    env = {**_auth(kerberos_kdc, principal, keytab), "KRB5_CONFIG": str(conf)}
    result = _ktool(kerberized_kafka, env, "list")
    assert result.exit_code == 3, result.output
    line = result.output.strip()
    assert "\n" not in line and "Traceback" not in line
    assert "Cannot contact any KDC" in line and f"{principal}@{REALM}" in line
