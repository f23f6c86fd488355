"""ZooKeeper's state and the KRaft image compared object by object, as the migration maps one onto
the other (ZkMigrationClient and its topic, config and ACL clients in Kafka 3.9).

Each difference names the object, the field and the side that holds what: `zookeeper` (only ZooKeeper
has it), `kraft` (only KRaft has it) or `both` (both hold it, with different values). While the
controller dual-writes (ZkMigrationState MIGRATION), KRaft is the source of truth and its next full
sync of ZooKeeper (on a controller failover, KRaftMigrationZkWriter's snapshot handling) overwrites
what ZooKeeper holds: `repaired` says so. Once the migration is finalized (POST_MIGRATION: the
controllers no longer write ZooKeeper) KRaft moves on alone: what matters then is what ZooKeeper alone
holds, lost when it is deleted (`only_in_zookeeper`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from kafka_tools.metadata.image import (
    ACL_OPERATIONS,
    ACL_PATTERN_TYPES,
    ACL_PERMISSIONS,
    ACL_RESOURCE_TYPES,
    SCRAM_MECHANISMS,
    Image,
    code_name,
)
from kafka_tools.migration.zk_state import ZkState

# Kafka's ZkMigrationState (metadata/migration/ZkMigrationState.java) by its code: not in the order of
# the phases (3.4 wrote PRE_MIGRATION as 1, so 3.5 gave MIGRATION that code and PRE_MIGRATION 2).
MIGRATION_STATES = {0: "NONE", 1: "MIGRATION", 2: "PRE_MIGRATION", 3: "POST_MIGRATION", 4: "ZK"}
MIGRATION, POST_MIGRATION = 1, 3
# Config names of type PASSWORD (DynamicBrokerConfig.isPasswordConfig: the name or its listener-
# prefixed form ends with one): ZooKeeper holds them encoded with password.encoder.secret, KRaft as
# set, so only their presence is compared, and their values are never printed.
SENSITIVE_SUFFIXES = (
    "password",
    "sasl.jaas.config",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.truststore.certificates",
)
HIDDEN = "<sensitive>"
CONFIG_TYPES = {"topic": 2, "broker": 4}


@dataclass(slots=True)
class Difference:
    kind: str  # topic, partition, config, quota, scram, acl, delegation-token, producer-ids, migration
    subject: str  # what object: a topic's name, `orders-0`, `topic orders`, an ACL
    field: str | None  # which of its fields; None: the whole object is on one side only
    side: str  # zookeeper | kraft | both
    zookeeper: Any = None
    kraft: Any = None
    repaired: bool = False  # the controller's next full sync to ZooKeeper overwrites it
    note: str | None = None


@dataclass(slots=True)
class Comparison:
    differences: list[Difference] = field(default_factory=list)
    compared: dict[str, int] = field(default_factory=dict)  # objects compared, by kind
    migration_state: str | None = None
    skipped: list[str] = field(default_factory=list)  # ZooKeeper objects the migration does not carry

    @property
    def in_step(self) -> bool:
        return not self.differences

    @property
    def finalized(self) -> bool:
        """The controllers stopped writing ZooKeeper: differences where KRaft moved on are expected."""
        return self.migration_state == MIGRATION_STATES[POST_MIGRATION]

    @property
    def only_in_zookeeper(self) -> list[Difference]:
        """Objects or keys ZooKeeper holds and KRaft does not: lost if ZooKeeper is deleted."""
        return [d for d in self.differences if d.side == "zookeeper"]

    @property
    def passes(self) -> bool:
        """The gate: in step during the migration; once finalized, nothing held only by ZooKeeper."""
        return not self.only_in_zookeeper if self.finalized else self.in_step


def is_sensitive(name: str) -> bool:
    return name.endswith(SENSITIVE_SUFFIXES)


def compare(zk: ZkState, image: Image) -> Comparison:
    """Every object of both sides, each difference once."""
    state = image.zk_migration_state
    result = Comparison(migration_state=None if state is None else MIGRATION_STATES.get(state, str(state)))
    repaired = state == MIGRATION
    diffs: list[Difference] = []
    _topics(zk, image, result, diffs)
    _configs(zk, image, result, diffs)
    _keyed(
        "quota", {_entity(k): v for k, v in zk.client_quotas.items()},
        {_entity(k): v for k, v in image.client_quotas.items()}, result, diffs,
    )  # fmt: skip
    kraft_scram = image.scram_users.items()
    _keyed(
        "scram", {f"{u} {m}": {"iterations": n} for (u, m), n in zk.scram.items()},
        {f"{u} {code_name(SCRAM_MECHANISMS, m)}": {"iterations": n} for (u, m), n in kraft_scram},
        result, diffs,
    )  # fmt: skip
    _acls(zk, image, result, diffs)
    _keyed(
        "delegation-token", {tid: _token_fields(t) for tid, t in zk.delegation_tokens.items()},
        {tid: _token_fields(t) for tid, t in image.delegation_tokens.items()}, result, diffs,
    )  # fmt: skip
    _producer_ids(zk, image, result, diffs)
    for diff in diffs:
        diff.repaired = repaired
    _migration(zk, image, result, diffs)
    result.differences = diffs
    return result


def _topics(zk: ZkState, image: Image, result: Comparison, diffs: list[Difference]) -> None:
    kraft = {t.name: t for t in image.topics.values()}
    deleting = set(zk.topics_pending_deletion)
    result.skipped = sorted(f"topic {name} (pending deletion)" for name in deleting & zk.topics.keys())
    partitions = 0
    for name in sorted(zk.topics.keys() | kraft.keys()):
        ours, theirs = zk.topics.get(name), kraft.get(name)
        if ours is not None and name in deleting:
            continue  # ZkTopicMigrationClient does not migrate a topic pending deletion
        if ours is None or theirs is None:
            diffs.append(Difference("topic", name, None, "zookeeper" if theirs is None else "kraft"))
            continue
        if ours.topic_id != theirs.topic_id:
            diffs.append(Difference("topic", name, "topic_id", "both", ours.topic_id, theirs.topic_id))
        for pid in sorted(ours.partitions.keys() | theirs.partitions.keys()):
            zp, kp = ours.partitions.get(pid), theirs.partitions.get(pid)
            subject = f"{name}-{pid}"
            partitions += 1
            if zp is None or kp is None:
                diffs.append(Difference("partition", subject, None, "zookeeper" if kp is None else "kraft"))
                continue
            pairs = {
                "replicas": (zp.replicas, kp.replicas),
                "adding_replicas": (zp.adding_replicas, kp.adding_replicas),
                "removing_replicas": (zp.removing_replicas, kp.removing_replicas),
                "leader": (zp.leader, kp.leader),
                "isr": (zp.isr, kp.isr),
                "leader_epoch": (zp.leader_epoch, kp.leader_epoch),
            }
            for what, (a, b) in pairs.items():
                if a != b:
                    diffs.append(Difference("partition", subject, what, "both", a, b))
    result.compared["topic"] = len(zk.topics.keys() | kraft.keys())
    result.compared["partition"] = partitions


def _configs(zk: ZkState, image: Image, result: Comparison, diffs: list[Difference]) -> None:
    codes = {code: kind for kind, code in CONFIG_TYPES.items()}
    kraft = {(codes[t], name): v for (t, name), v in image.configs.items() if t in codes}
    count = 0
    for resource in sorted(zk.configs.keys() | kraft.keys()):
        ours, theirs = zk.configs.get(resource, {}), kraft.get(resource, {})
        subject = f"{resource[0]} {resource[1] or '<default>'}"
        for key in sorted(ours.keys() | theirs.keys()):
            count += 1
            a, b = ours.get(key), theirs.get(key)
            if a is None or b is None:
                side = "zookeeper" if b is None else "kraft"
                shown = (HIDDEN if a is not None else None, HIDDEN if b is not None else None)
                diffs.append(
                    Difference("config", subject, key, side, *(shown if is_sensitive(key) else (a, b)))
                )
            elif a != b and not is_sensitive(key):
                diffs.append(Difference("config", subject, key, "both", a, b))
    result.compared["config"] = count


def _entity(entity: Iterable[tuple[str, str | None]]) -> str:
    return ",".join(f"{etype}={name if name is not None else '<default>'}" for etype, name in entity)


def _keyed(
    kind: str,
    ours: dict[str, dict[str, Any]],
    theirs: dict[str, dict[str, Any]],
    result: Comparison,
    diffs: list[Difference],
) -> None:
    """Objects named by a key, each a map of values: quotas, SCRAM credentials."""
    for key in sorted(ours.keys() | theirs.keys()):
        a, b = ours.get(key), theirs.get(key)
        if a is None or b is None:
            diffs.append(Difference(kind, key, None, "zookeeper" if b is None else "kraft"))
            continue
        for name in sorted(a.keys() | b.keys()):
            if a.get(name) != b.get(name):
                side = "both" if name in a and name in b else ("zookeeper" if name in a else "kraft")
                diffs.append(Difference(kind, key, name, side, a.get(name), b.get(name)))
    result.compared[kind] = len(ours.keys() | theirs.keys())


def _token_fields(token: Any) -> dict[str, Any]:
    """A delegation token's metadata, the same on both sides (neither holds its HMAC)."""
    return {
        "owner": token.owner,
        "requester": token.requester,
        "renewers": sorted(token.renewers),
        "issue_timestamp": token.issue_timestamp,
        "max_timestamp": token.max_timestamp,
        "expiration_timestamp": token.expiration_timestamp,
    }


def _acl_text(acl: tuple[str, ...]) -> str:
    rtype, name, pattern, principal, host, operation, permission = acl
    return f"{permission} {principal} {operation} on {rtype}:{pattern}:{name} from {host}"


def _acls(zk: ZkState, image: Image, result: Comparison, diffs: list[Difference]) -> None:
    kraft = {
        (
            code_name(ACL_RESOURCE_TYPES, a.resource_type), a.resource_name,
            code_name(ACL_PATTERN_TYPES, a.pattern_type), a.principal, a.host,
            code_name(ACL_OPERATIONS, a.operation), code_name(ACL_PERMISSIONS, a.permission_type),
        )
        for a in image.acls.values()
    }  # fmt: skip
    for acl in sorted(zk.acls - kraft):
        diffs.append(Difference("acl", _acl_text(acl), None, "zookeeper"))
    for acl in sorted(kraft - zk.acls):
        diffs.append(Difference("acl", _acl_text(acl), None, "kraft"))
    result.compared["acl"] = len(zk.acls | kraft)


def _producer_ids(zk: ZkState, image: Image, result: Comparison, diffs: list[Difference]) -> None:
    kraft = None if image.producer_ids is None else image.producer_ids.next_producer_id
    if zk.next_producer_id is None and kraft is None:
        return
    result.compared["producer-ids"] = 1
    if zk.next_producer_id != kraft:
        side = (
            "both"
            if zk.next_producer_id is not None and kraft is not None
            else ("zookeeper" if kraft is None else "kraft")
        )
        diffs.append(Difference("producer-ids", "next producer id", "next_producer_id", side,
                                zk.next_producer_id, kraft))  # fmt: skip


def _migration(zk: ZkState, image: Image, result: Comparison, diffs: list[Difference]) -> None:
    """`/migration` says how far into the KRaft log ZooKeeper was written; past the image's end means
    this copy of the log lacks records ZooKeeper already reflects."""
    if zk.migration is None:
        if image.zk_migration_state is not None:
            diffs.append(Difference("migration", "/migration", None, "kraft",
                                    kraft=result.migration_state, note="no /migration znode"))  # fmt: skip
        return
    result.compared["migration"] = 1
    last = image.offset - 1
    if zk.migration.kraft_metadata_offset > last:
        diffs.append(Difference(
            "migration", "/migration", "kraft_metadata_offset", "zookeeper",
            zk.migration.kraft_metadata_offset, last,
            note="ZooKeeper reflects KRaft records this log does not hold (an old copy, or records lost)",
        ))  # fmt: skip
    if image.zk_migration_state is None:
        diffs.append(Difference("migration", "ZkMigrationStateRecord", None, "zookeeper",
                                zookeeper=zk.migration.kraft_metadata_offset,
                                note="the log holds no ZkMigrationStateRecord"))  # fmt: skip
