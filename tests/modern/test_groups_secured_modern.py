"""`groups list`, `describe --members --verbose` and `describe --state --verbose` over a SASL_SSL
listener of a real 4.x broker (SCRAM-SHA-512 and PLAIN users), equal to kafka-consumer-groups of the same
jars given the same identity (--command-config): ktool's own requests (ListGroups v5,
ConsumerGroupDescribe) go over TLS and SASL as over plaintext, so a consumer group's epochs are shown,
not `-`, and the mTLS listener too; OffsetDelete (an undo) over SASL_SSL. The groups: a KIP-848 group
of Java consumers (GroupMember.java) and a classic cooperative-sticky group (confluent-kafka), both
joined through the plain listener.

The broker is the session's `secured_kafka` (tests/support/secured.py), shared with
test_secured_brokers.py: no cluster of its own."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.modern.test_groups_views_modern import LiveConsumer, _stable, their_tables
from tests.modern.test_groups_watch_modern import Member, _until
from tests.support.cli import run_ktool
from tests.support.modern import create_topic, group_member_command
from tests.support.secured import KEY_PASSWORD, USERS, java_client_config
from tests.support.servers import kafka_commit, kafka_committed

pytestmark = pytest.mark.server
IDENTITIES = {"bob": "SCRAM-SHA-512", "carol": "PLAIN"}


@pytest.fixture(scope="module")
def groups(secured_kafka):
    """{kind: group id} on one topic of 4 partitions: `consumer` (two Java GroupMembers of the new
    protocol) and `classic` (two confluent-kafka consumers, cooperative-sticky), each settled."""
    java = group_member_command(secured_kafka.release)
    topic, suffix = f"secured-views-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex[:6]
    create_topic(secured_kafka, topic, partitions=4)
    names = {"consumer": f"kip848-{suffix}", "classic": f"classic-{suffix}"}
    members = [Member(secured_kafka, names["consumer"], topic, "consumer", f"java-{n}", java) for n in (1, 2)]
    classic = [
        LiveConsumer(secured_kafka.bootstrap, names["classic"], topic, "classic", f"c-{n}") for n in (1, 2)
    ]
    try:
        _until("the Java members' assignments", lambda: sum(len(m.owned()) for m in members) == 4, 120)
        for c in classic:
            assert c.assigned.wait(90)
        for name in names.values():
            _stable(secured_kafka, name)
        yield names
    finally:
        for m in members:
            m.kill()
        for c in classic:
            c.close()


def _sasl(cluster, user: str, *args: str):
    mechanism = IDENTITIES[user]
    return run_ktool(
        "groups", *args, "--json", "--bootstrap-server", cluster.bootstrap_of("SASL_SSL"),
        "--broker-ca", str(cluster.certificates.ca),
        env={"KTOOL_BROKER_AUTH": f"{mechanism.lower()} {user}:{USERS[user][1]}"},
    )  # fmt: skip


def _ours(cluster, user: str, *args: str) -> list[dict]:
    result = _sasl(cluster, user, *args)
    assert result.exit_code == 0, result.output
    assert USERS[user][1] not in result.output
    return [json.loads(line) for line in result.stdout.splitlines()]


def _theirs(cluster, user: str, tmp_path: Path, *args: str) -> list[dict[str, str]]:
    config = java_client_config(
        cluster.certificates, user, USERS[user][1], IDENTITIES[user], tmp_path / f"{user}.properties"
    )
    return their_tables(
        cluster, *args, "--command-config", str(config), bootstrap=cluster.bootstrap_of("SASL_SSL")
    )


def _same_moment(ours: Callable[[], dict], theirs: Callable[[], dict]) -> tuple[dict, dict]:
    """Ours and kafka-consumer-groups' view of the same moment: theirs taken between two of ours that
    agree (a Java consumer may move its group on, e.g. Stable to Reconciling, between two requests)."""
    for _ in range(4):
        before, their, after = ours(), theirs(), ours()
        if before == after:
            return before, their
    raise AssertionError(f"the groups kept moving: {before} then {after}")


@pytest.mark.parametrize("user", sorted(IDENTITIES))
def test_list_over_sasl_ssl_equals_kafka_consumer_groups(secured_kafka, groups, user, tmp_path):
    mine = set(groups.values())

    def ours() -> dict:
        rows = _ours(secured_kafka, user, "list")
        return {r["group"]: (r["groupType"], r["state"]) for r in rows if r.get("group") in mine}

    def theirs() -> dict:
        rows = _theirs(secured_kafka, user, tmp_path, "--list", "--state", "--type")
        return {r["GROUP"]: (r["TYPE"].lower(), r["STATE"]) for r in rows if r["GROUP"] in mine}

    seen, their = _same_moment(ours, theirs)
    assert seen == their
    assert {kind for kind, _state in seen.values()} == {"consumer", "classic"}


def _text(assignment: dict | None) -> str:
    return ";".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted((assignment or {}).items())) or "-"


COLUMNS = ("HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH",
           "TARGET-ASSIGNMENT")  # fmt: skip
STATE_COLUMNS = ("COORDINATOR(ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH",
                 "#MEMBERS")  # fmt: skip


@pytest.mark.parametrize("user", sorted(IDENTITIES))
def test_members_verbose_over_sasl_ssl_equals_kafka_consumer_groups_epochs_shown(
    secured_kafka, groups, user, tmp_path
):
    names = [groups["consumer"], groups["classic"]]

    def ours() -> dict:
        rows = _ours(secured_kafka, user, "describe", *names, "--members", "--verbose")
        return {
            (r["group"], r["consumerId"]): {
                "HOST": r["host"],
                "CLIENT-ID": r["clientId"],
                "#PARTITIONS": str(r["partitions"]),
                "CURRENT-EPOCH": "-" if r["memberEpoch"] is None else str(r["memberEpoch"]),
                "CURRENT-ASSIGNMENT": _text(r["assignment"]),
                "TARGET-EPOCH": "-" if r["targetEpoch"] is None else str(r["targetEpoch"]),
                "TARGET-ASSIGNMENT": _text(r["targetAssignment"]),
            }
            for r in rows
            if r["type"] == "member"
        }

    def theirs() -> dict:
        flags = [a for g in names for a in ("--group", g)]
        rows = _theirs(secured_kafka, user, tmp_path, "--describe", "--members", "--verbose", *flags)
        return {(r["GROUP"], r["CONSUMER-ID"]): {c: r[c] for c in COLUMNS} for r in rows}

    mine, their = _same_moment(ours, theirs)
    assert mine == their and len(mine) == 4
    epochs = [row["CURRENT-EPOCH"] for (group, _id), row in mine.items() if group == groups["consumer"]]
    assert len(epochs) == 2 and all(e.isdigit() and int(e) > 0 for e in epochs)


@pytest.mark.parametrize("user", sorted(IDENTITIES))
def test_state_verbose_over_sasl_ssl_equals_kafka_consumer_groups_epochs_shown(
    secured_kafka, groups, user, tmp_path
):
    names = [groups["consumer"], groups["classic"]]

    def ours() -> dict:
        rows = _ours(secured_kafka, user, "describe", *names, "--state", "--verbose")
        return {
            r["group"]: {
                "COORDINATOR(ID)": f"{r['coordinator']}({r['coordinatorId']})",
                "ASSIGNMENT-STRATEGY": r["assignor"],
                "STATE": r["state"],
                "GROUP-EPOCH": "-" if r["groupEpoch"] is None else str(r["groupEpoch"]),
                "TARGET-ASSIGNMENT-EPOCH": "-" if r["assignmentEpoch"] is None else str(r["assignmentEpoch"]),
                "#MEMBERS": str(r["members"]),
            }
            for r in rows
            if "state" in r
        }

    def theirs() -> dict:
        flags = [a for g in names for a in ("--group", g)]
        rows = _theirs(secured_kafka, user, tmp_path, "--describe", "--state", "--verbose", *flags)
        return {r["GROUP"]: {c: r[c] for c in STATE_COLUMNS} for r in rows}

    mine, their = _same_moment(ours, theirs)
    assert mine == their
    assert mine[groups["consumer"]]["GROUP-EPOCH"].isdigit()
    assert mine[groups["consumer"]]["ASSIGNMENT-STRATEGY"] == "uniform"


@pytest.mark.parametrize("user", sorted(IDENTITIES))
def test_an_undo_over_sasl_ssl_deletes_the_offset_a_partition_had_not(secured_kafka, user, tmp_path):
    """OffsetDelete (KIP-496) on ktool's own client over SASL_SSL: partition 1 had no committed offset,
    the reset wrote one, the undo deletes it (on main: `kafka-kept`, "plain connections only", exit 1)."""
    topic, group = f"secured-undo-{uuid.uuid4().hex[:8]}", f"undo-{uuid.uuid4().hex[:6]}"
    create_topic(secured_kafka, topic, partitions=2)
    kafka_commit(secured_kafka.bootstrap, group, {(topic, 0): 0}, timeout=60)
    run = _sasl(secured_kafka, user, "reset-offsets", group, "--topic", f"{topic}:1", "--to-earliest",
                "--execute", "--journal-dir", str(tmp_path))  # fmt: skip
    assert run.exit_code == 0, run.output
    assert set(_committed(secured_kafka, group, topic)) == {0, 1}
    journal = re.search(r"journal of every offset before the change: (\S+)", run.stderr)[1]
    undo = _sasl(secured_kafka, user, "reset-offsets", "--undo", journal)
    assert undo.exit_code == 0, undo.output
    rows = {r["partition"]: r for r in map(json.loads, undo.stdout.splitlines()) if r["type"] == "partition"}
    assert rows[1]["status"] == "verified", undo.stdout
    assert _committed(secured_kafka, group, topic) == {0: 0}  # no offset for partition 1 again


def _committed(cluster, group: str, topic: str) -> dict[int, int]:
    got = kafka_committed(cluster.bootstrap, group, [(topic, 0), (topic, 1)])
    return {p: off for (_, p), (off, _) in got.items() if off is not None}


def test_epochs_over_mtls_with_a_key_password_too(secured_kafka, groups):
    """ktool's own client over the mTLS listener: the client certificate and its password-protected key,
    to the bootstrap broker and the coordinator alike (ConsumerGroupDescribe's epochs, not `-`)."""
    certs = secured_kafka.certificates
    result = run_ktool(
        "groups", "describe", groups["consumer"], "--state", "--verbose", "--json",
        "--bootstrap-server", secured_kafka.bootstrap_of("SSL"), "--broker-ca", str(certs.ca),
        "--broker-cert", str(certs.client_cert), "--broker-key", str(certs.client_key),
        env={"KTOOL_BROKER_AUTH": f"key-password {KEY_PASSWORD}"},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    state = next(r for r in map(json.loads, result.stdout.splitlines()) if "state" in r)
    assert isinstance(state["groupEpoch"], int) and isinstance(state["assignmentEpoch"], int), state
    assert KEY_PASSWORD not in result.output
