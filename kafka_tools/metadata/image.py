"""The cluster's metadata image as the controller holds it after replaying records (Kafka's
metadata/image classes: ClusterImage, TopicsImage, ConfigurationsImage, FeaturesImage, AclsImage,
ClientQuotasImage, ProducerIdsImage, ScramImage, DelegationTokenImage), as plain dataclasses.

Secret material is never kept: a SCRAM credential is its user, mechanism and iterations only."""

from __future__ import annotations

from dataclasses import dataclass, field

NO_LEADER = -1
NO_LEADER_CHANGE = -2
MIGRATING_DIRECTORY = "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid(0, 0): DirectoryId.MIGRATING

# Kafka's ConfigResource.Type ids, ResourceType / PatternType / AclOperation / AclPermissionType codes.
CONFIG_RESOURCE_TYPES = {2: "topic", 4: "broker", 8: "broker-logger", 16: "client-metrics", 32: "group"}
ACL_RESOURCE_TYPES = {
    2: "topic",
    3: "group",
    4: "cluster",
    5: "transactional-id",
    6: "delegation-token",
    7: "user",
}
ACL_PATTERN_TYPES = {3: "literal", 4: "prefixed"}
ACL_OPERATIONS = {
    2: "all",
    3: "read",
    4: "write",
    5: "create",
    6: "delete",
    7: "alter",
    8: "describe",
    9: "cluster-action",
    10: "describe-configs",
    11: "alter-configs",
    12: "idempotent-write",
    13: "create-tokens",
    14: "describe-tokens",
}
ACL_PERMISSIONS = {2: "deny", 3: "allow"}
SCRAM_MECHANISMS = {1: "SCRAM-SHA-256", 2: "SCRAM-SHA-512"}
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}


def code_name(table: dict[int, str], code: int | None) -> str:
    """A Kafka enum code by its name, or `unknown(N)` for a code this table does not hold."""
    if code is None:
        return "-"
    return table.get(code, f"unknown({code})")


@dataclass(slots=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: int | None = None


@dataclass(slots=True)
class Broker:
    broker_id: int
    epoch: int
    incarnation_id: str
    endpoints: list[Endpoint]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool
    features: dict[str, tuple[int, int]]
    log_dirs: list[str]
    is_migrating_zk_broker: bool = False


@dataclass(slots=True)
class Controller:
    controller_id: int
    incarnation_id: str
    endpoints: list[Endpoint]
    features: dict[str, tuple[int, int]]
    zk_migration_ready: bool = False


@dataclass(slots=True)
class Voter:
    voter_id: int
    directory_id: str | None
    endpoints: list[Endpoint]
    kraft_version_range: tuple[int, int] | None = None


@dataclass(slots=True)
class PartitionState:
    """PartitionRegistration: who holds the partition and who leads it."""

    partition_id: int
    replicas: list[int]
    isr: list[int]
    removing_replicas: list[int]
    adding_replicas: list[int]
    leader: int
    leader_epoch: int
    partition_epoch: int
    leader_recovery_state: int
    directories: list[str]
    elr: list[int]
    last_known_elr: list[int]


@dataclass(slots=True)
class Topic:
    name: str
    topic_id: str
    partitions: dict[int, PartitionState] = field(default_factory=dict)


@dataclass(slots=True)
class Acl:
    acl_id: str
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(slots=True)
class DelegationToken:
    token_id: str
    owner: str
    requester: str
    renewers: list[str]
    issue_timestamp: int
    max_timestamp: int
    expiration_timestamp: int


@dataclass(slots=True)
class ProducerIdBlock:
    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(slots=True)
class Image:
    """The image after every record below `offset` was replayed (`offset` is the next one)."""

    offset: int = 0
    features: dict[str, int] = field(default_factory=dict)
    brokers: dict[int, Broker] = field(default_factory=dict)
    controllers: dict[int, Controller] = field(default_factory=dict)
    voters: list[Voter] | None = None  # None: no VotersRecord (a static quorum, controller.quorum.voters)
    kraft_version: int | None = None
    raft_leader: int | None = None  # leaderId of the last LeaderChangeMessage
    topics: dict[str, Topic] = field(default_factory=dict)  # by topic id
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    client_quotas: dict[tuple[tuple[str, str | None], ...], dict[str, float]] = field(default_factory=dict)
    producer_ids: ProducerIdBlock | None = None
    acls: dict[str, Acl] = field(default_factory=dict)
    scram_users: dict[tuple[str, int], int] = field(default_factory=dict)  # (user, mechanism) -> iterations
    delegation_tokens: dict[str, DelegationToken] = field(default_factory=dict)
    zk_migration_state: int | None = None

    def topic_by_name(self, name: str) -> Topic | None:
        for topic in self.topics.values():
            if topic.name == name:
                return topic
        return None

    @property
    def metadata_version(self) -> int | None:
        return self.features.get("metadata.version")
