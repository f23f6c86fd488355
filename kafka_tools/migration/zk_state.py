"""What ZooKeeper holds that the KRaft migration copies (Kafka 3.9's ZkMigrationClient,
ZkTopicMigrationClient, ZkConfigMigrationClient, ZkAclMigrationClient, ZkDelegationTokenMigrationClient),
read into plain dataclasses.

Names are already those of the KRaft image (`metadata/image.py`): a quota entity is sorted
(type, name) pairs with `<default>` as None, an ACL's codes are image names, so `compare.py` compares
like with like. A SCRAM credential keeps only its iterations (what the image keeps): never a salt or
key; a delegation token is its metadata only (ZooKeeper holds no HMAC: the brokers derive it from
delegation.token.secret.key). Entity znode names are desanitized (`%40` → `@`) as Kafka's Sanitizer does."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from kafka_tools.zk.layout import MalformedZnodeError, parse_cluster_id, parse_topic_config, znode_json
from kafka_tools.zk.reader import BROKER_TOPICS, CLUSTER_ID, Wave

if TYPE_CHECKING:
    from kazoo.client import KazooClient

DEFAULT_ENTITY = "<default>"  # ZooKeeper's name for a default config or quota entity
MIGRATION = "/migration"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
ACL_LITERAL = "/kafka-acl"
ACL_PREFIXED = "/kafka-acl-extended/prefixed"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN = "/admin/reassign_partitions"
PREFERRED_ELECTION = "/admin/preferred_replica_election"
DELEGATION_TOKENS = "/delegation_token/tokens"
SCRAM_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")
# ZooKeeper's quota entity folders under /config and the entity types of ClientQuotaRecord.
QUOTA_FOLDERS = {"users": "user", "clients": "client-id", "ips": "ip"}


@dataclass(slots=True)
class ZkPartition:
    replicas: list[int]
    adding_replicas: list[int]
    removing_replicas: list[int]
    leader: int | None = None  # None: no state znode
    isr: list[int] = field(default_factory=list)
    leader_epoch: int | None = None
    partition_epoch: int | None = None  # the state znode's version, as ZkTopicMigrationClient reads it


@dataclass(slots=True)
class ZkTopic:
    name: str
    topic_id: str | None
    partitions: dict[int, ZkPartition] = field(default_factory=dict)


@dataclass(slots=True)
class ZkDelegationToken:
    """/delegation_token/tokens/ID as DelegationTokenManagerZk writes it (principals sanitized there)."""

    owner: str
    requester: str
    renewers: list[str]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


@dataclass(slots=True)
class ZkMigration:
    """`/migration`: how far into the KRaft log the controller's dual write has reached."""

    kraft_metadata_offset: int
    kraft_metadata_epoch: int
    kraft_controller_id: int
    kraft_controller_epoch: int


@dataclass(slots=True)
class ZkState:
    cluster_id: str | None = None
    topics: dict[str, ZkTopic] = field(default_factory=dict)
    configs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)  # ("topic"|"broker", name)
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    scram: dict[tuple[str, str], int] = field(default_factory=dict)  # (user, mechanism) -> iterations
    acls: set[tuple[str, str, str, str, str, str, str]] = field(default_factory=set)
    # block_start of /latest_producer_id_block: the migration copies it as ProducerIdsRecord's
    # nextProducerId and dual write writes nextProducerId back there (ZkMigrationClient)
    next_producer_id: int | None = None
    migration: ZkMigration | None = None
    topics_pending_deletion: list[str] = field(default_factory=list)
    reassigning: dict[str, list[int]] = field(default_factory=dict)  # /admin/reassign_partitions
    preferred_election: bool = False
    delegation_tokens: dict[str, ZkDelegationToken] = field(default_factory=dict)  # by token id


def kebab(name: str) -> str:
    """ZooKeeper's enum names (`ClusterAction`, `TransactionalId`) as the image's (`cluster-action`)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def read_zk_state(zk: KazooClient) -> ZkState:
    """Every object the migration copies, in a few waves (one round trip per level of the tree)."""
    state = ZkState()
    wave = Wave(zk)
    wave.children("topics", BROKER_TOPICS)
    wave.children("topic-configs", "/config/topics")
    wave.children("broker-configs", "/config/brokers")
    for folder in QUOTA_FOLDERS:
        wave.children(("quota", folder), f"/config/{folder}")
    wave.children("acl-literal", ACL_LITERAL)
    wave.children("acl-prefixed", ACL_PREFIXED)
    wave.children("deleting", DELETE_TOPICS)
    wave.get("reassign", REASSIGN)
    wave.get("election", PREFERRED_ELECTION)
    wave.get("pid", PRODUCER_ID_BLOCK)
    wave.get("migration", MIGRATION)
    wave.get("cluster", CLUSTER_ID)
    wave.children("tokens", DELEGATION_TOKENS)
    top = wave.collect()
    if top["topics"] is None:
        raise MalformedZnodeError(BROKER_TOPICS, "missing: is this Kafka's chroot?")
    _top_level(state, top)
    _read_topics(zk, state, sorted(top["topics"]))
    _read_configs(zk, state, top)
    _read_acls(zk, state, top)
    _read_delegation_tokens(zk, state, top["tokens"] or ())
    return state


def _read_delegation_tokens(zk: KazooClient, state: ZkState, ids: list[str]) -> None:
    tokens = Wave(zk)
    for token_id in ids:
        tokens.get(token_id, f"{DELEGATION_TOKENS}/{token_id}")
    for token_id, data in sorted(tokens.collect().items()):
        if not data:
            continue  # deleted since the listing, or empty: ZkMigrationClient skips it too
        path = f"{DELEGATION_TOKENS}/{token_id}"
        doc = znode_json(data, path)
        state.delegation_tokens[str(token_id)] = ZkDelegationToken(
            unquote(str(doc.get("owner", ""))),
            unquote(str(doc.get("tokenRequester", ""))),
            [unquote(str(r)) for r in doc.get("renewers") or ()],
            *(_int(doc, k, path) for k in ("issueTimestamp", "maxTimestamp", "expiryTimestamp")),
        )


def _top_level(state: ZkState, top: dict) -> None:
    if top["cluster"] is not None:
        state.cluster_id = parse_cluster_id(top["cluster"], CLUSTER_ID)
    if top["pid"]:
        block = znode_json(top["pid"], PRODUCER_ID_BLOCK)
        state.next_producer_id = _int(block, "block_start", PRODUCER_ID_BLOCK)
    if top["migration"]:
        m = znode_json(top["migration"], MIGRATION)
        state.migration = ZkMigration(
            *(_int(m, k, MIGRATION) for k in ("kraft_metadata_offset", "kraft_metadata_epoch")),
            *(_int(m, k, MIGRATION) for k in ("kraft_controller_id", "kraft_controller_epoch")),
        )
    state.topics_pending_deletion = sorted(top["deleting"] or ())
    if top["reassign"]:
        doc = znode_json(top["reassign"], REASSIGN)
        for entry in doc.get("partitions") or ():
            state.reassigning.setdefault(str(entry.get("topic")), []).append(int(entry.get("partition", -1)))
    state.preferred_election = top["election"] is not None


def _int(obj: dict[str, Any], key: str, path: str) -> int:
    value = obj.get(key)
    try:
        return int(value)  # Kafka writes some as JSON strings ("block_start":"0")
    except (TypeError, ValueError):
        raise MalformedZnodeError(path, f"{key} is {value!r}, expected an integer") from None


def _ints(obj: dict[str, Any], key: str, path: str) -> list[int]:
    value = obj.get(key) or []
    if not isinstance(value, list):
        raise MalformedZnodeError(path, f"{key} is {value!r}, expected a list")
    return [int(x) for x in value]


def _read_topics(zk: KazooClient, state: ZkState, names: list[str]) -> None:
    wave = Wave(zk)
    for name in names:
        wave.get(name, f"{BROKER_TOPICS}/{name}")
    found = wave.collect()
    states = Wave(zk)
    for name, data in found.items():
        if data is None:
            continue
        path = f"{BROKER_TOPICS}/{name}"
        doc = znode_json(data, path)
        assignment = doc.get("partitions") or {}
        adding, removing = doc.get("adding_replicas") or {}, doc.get("removing_replicas") or {}
        topic = ZkTopic(name, doc.get("topic_id"))
        for pid, replicas in assignment.items():
            topic.partitions[int(pid)] = ZkPartition(
                [int(r) for r in replicas],
                [int(r) for r in adding.get(pid, ())],
                [int(r) for r in removing.get(pid, ())],
            )
            states.get_versioned((name, int(pid)), f"{path}/partitions/{pid}/state")
        state.topics[name] = topic
    for (name, pid), answer in states.collect().items():
        if answer is None:
            continue
        data, version = answer
        path = f"{BROKER_TOPICS}/{name}/partitions/{pid}/state"
        doc = znode_json(data, path)
        part = state.topics[name].partitions[pid]
        part.leader = _int(doc, "leader", path)
        part.isr = _ints(doc, "isr", path)
        part.leader_epoch = _int(doc, "leader_epoch", path)
        part.partition_epoch = version


def _read_configs(zk: KazooClient, state: ZkState, top: dict) -> None:
    wave = Wave(zk)
    for name in top["topic-configs"] or ():
        wave.get(("topic", name), f"/config/topics/{name}")
    for name in top["broker-configs"] or ():
        wave.get(("broker", name), f"/config/brokers/{name}")
    for folder in QUOTA_FOLDERS:
        for name in top[("quota", folder)] or ():
            wave.get(("quota", folder, name, None), f"/config/{folder}/{name}")
            if folder == "users":
                wave.children(("user-clients", name), f"/config/users/{name}/clients")
    got = wave.collect()
    nested = Wave(zk)
    for key, clients in got.items():
        if key[0] == "user-clients":
            for client in clients or ():
                nested.get(("quota", "users", key[1], client), f"/config/users/{key[1]}/clients/{client}")
    got.update(nested.collect())
    for key, data in got.items():
        if data is None or key[0] == "user-clients":
            continue
        if key[0] in ("topic", "broker"):
            path = f"/config/{key[0]}s/{key[1]}"
            name = "" if key[1] == DEFAULT_ENTITY else key[1]
            state.configs[(key[0], name)] = parse_topic_config(data, path)
            continue
        _, folder, name, client = key
        path = f"/config/{folder}/{name}" + (f"/clients/{client}" if client else "")
        _quota_entity(state, QUOTA_FOLDERS[folder], name, client, parse_topic_config(data, path), path)


def _entity_name(name: str) -> str | None:
    return None if name == DEFAULT_ENTITY else unquote(name)


def _quota_entity(
    state: ZkState, etype: str, name: str, client: str | None, config: dict[str, str], path: str
) -> None:
    entity = [(etype, _entity_name(name))]
    if client is not None:
        entity.append(("client-id", _entity_name(client)))
    quotas: dict[str, float] = {}
    for key, value in config.items():
        if key in SCRAM_MECHANISMS and client is None:
            state.scram[(unquote(name), key)] = _scram_iterations(value, path, key)
            continue
        try:
            quotas[key] = float(value)
        except ValueError:
            raise MalformedZnodeError(path, f"quota {key} is {value!r}, expected a number") from None
    if quotas:
        state.client_quotas[tuple(sorted(entity, key=lambda e: (e[0], e[1] or "")))] = quotas


def _scram_iterations(value: str, path: str, mechanism: str) -> int:
    """`salt=…,stored_key=…,server_key=…,iterations=4096` (ScramCredentialUtils): the rest dropped here."""
    parts = dict(p.split("=", 1) for p in value.split(",") if "=" in p)
    if not parts.get("iterations", "").isdigit():
        raise MalformedZnodeError(path, f"{mechanism}: no iterations in the credential")
    return int(parts["iterations"])


def _read_acls(zk: KazooClient, state: ZkState, top: dict) -> None:
    types = Wave(zk)
    for pattern, root in (("literal", ACL_LITERAL), ("prefixed", ACL_PREFIXED)):
        for rtype in top[f"acl-{pattern}"] or ():
            types.children((pattern, rtype), f"{root}/{rtype}")
    resources = Wave(zk)
    for (pattern, rtype), names in types.collect().items():
        root = ACL_LITERAL if pattern == "literal" else ACL_PREFIXED
        for name in names or ():
            resources.get((pattern, rtype, name), f"{root}/{rtype}/{name}")
    for (pattern, rtype, name), data in resources.collect().items():
        if data is None:
            continue
        root = ACL_LITERAL if pattern == "literal" else ACL_PREFIXED
        path = f"{root}/{rtype}/{name}"
        for acl in znode_json(data, path).get("acls") or ():
            state.acls.add((
                kebab(rtype), name, pattern, str(acl.get("principal")), str(acl.get("host")),
                kebab(str(acl.get("operation"))), kebab(str(acl.get("permissionType"))),
            ))  # fmt: skip
