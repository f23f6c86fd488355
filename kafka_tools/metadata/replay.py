"""Apply metadata records to an Image as Kafka's MetadataDelta classes do (ClusterDelta, TopicsDelta,
PartitionRegistration.merge, ConfigurationsDelta, FeaturesDelta, AclsDelta, …).

A record is anything with `type_name`, `version`, `fields` and `known` (format.kraft's MetadataRecord):
fields named as in the schemas with a lower-case first letter. Records between a BeginTransactionRecord
and its EndTransactionRecord are held back and applied at the end; an AbortTransactionRecord discards
them, as the controller's replay does. With `events_from` set, each change at or after that offset is
also described as an Event (what `ktool metadata diff` lists).

Why one module of this size: one class, Replayer, with one method per metadata record type as Kafka's
MetadataDelta classes have, sharing the image and the transaction hold-back; split by record type, the
dispatch and the held-back records would be scattered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from copy import copy
from dataclasses import dataclass, field
from typing import Any

from kafka_tools.format.plural import plural
from kafka_tools.metadata.image import (
    CONFIG_RESOURCE_TYPES,
    MIGRATING_DIRECTORY,
    NO_LEADER_CHANGE,
    SCRAM_MECHANISMS,
    Acl,
    Broker,
    Controller,
    DelegationToken,
    Endpoint,
    Image,
    PartitionState,
    ProducerIdBlock,
    Topic,
    Voter,
    code_name,
)

# KRaft control records that change what the image holds; the others (snapshot framing) do not.
IMAGE_CONTROL_RECORDS = frozenset({"VotersRecord", "KRaftVersionRecord", "LeaderChangeMessage"})
_TRANSACTION_MARKERS = frozenset({"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"})
# Records that change nothing in the image (framing of snapshots, keep-alives).
PASSIVE = frozenset({"NoOpRecord", "SnapshotHeaderRecord", "SnapshotFooterRecord"})


@dataclass(slots=True)
class Event:
    """One change to the image: what changed, at which offset, in words and as data."""

    offset: int
    kind: str  # topic-created, leader-changed, isr-shrunk, config-set, broker-fenced, …
    subject: str  # the topic, partition (`orders-3`), broker (`broker 1`) or resource it concerns
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Inconsistency:
    """A record the image cannot take as it stands (a partition of an unknown topic, …): Kafka's own
    replay would fail on it; ktool says so and goes on."""

    offset: int
    record_type: str
    message: str


def _endpoints(items: list[dict] | None) -> list[Endpoint]:
    return [
        Endpoint(e.get("name", ""), e.get("host", ""), e.get("port", 0), e.get("securityProtocol"))
        for e in items or ()
    ]


def _features(items: list[dict] | None) -> dict[str, tuple[int, int]]:
    return {
        f.get("name", ""): (f.get("minSupportedVersion", 0), f.get("maxSupportedVersion", 0))
        for f in items or ()
    }


def _ints(value: list | None) -> list[int]:
    return list(value) if value else []


class Replayer:
    """Holds an Image and applies records to it in offset order."""

    def __init__(self, image: Image | None = None, events_from: int | None = None) -> None:
        self.image = image if image is not None else Image()
        self.events_from = events_from
        self.events: list[Event] = []
        self.inconsistencies: list[Inconsistency] = []
        self.applied: Counter[str] = Counter()  # records applied, by type
        self.unknown: Counter[str] = Counter()  # records of a type or version not known, by type
        self.aborted = 0  # records discarded by an AbortTransactionRecord
        self.pending: list[tuple[int, Any]] | None = None  # records inside an open transaction
        self.transaction_start: int | None = None
        self._handlers: dict[str, Callable[[int, dict], None]] = {
            "RegisterBrokerRecord": self._register_broker,
            "UnregisterBrokerRecord": self._unregister_broker,
            "TopicRecord": self._topic,
            "PartitionRecord": self._partition,
            "ConfigRecord": self._config,
            "PartitionChangeRecord": self._partition_change,
            "FenceBrokerRecord": self._fence,
            "UnfenceBrokerRecord": self._unfence,
            "RemoveTopicRecord": self._remove_topic,
            "DelegationTokenRecord": self._delegation_token,
            "UserScramCredentialRecord": self._scram,
            "FeatureLevelRecord": self._feature,
            "ClientQuotaRecord": self._client_quota,
            "ProducerIdsRecord": self._producer_ids,
            "BrokerRegistrationChangeRecord": self._broker_change,
            "AccessControlEntryRecord": self._acl,
            "RemoveAccessControlEntryRecord": self._remove_acl,
            "ZkMigrationStateRecord": self._zk_migration,
            "RemoveUserScramCredentialRecord": self._remove_scram,
            "RemoveDelegationTokenRecord": self._remove_delegation_token,
            "RegisterControllerRecord": self._register_controller,
            "UnregisterControllerRecord": self._unregister_controller,
            "ClearElrRecord": self._clear_elr,
            "VotersRecord": self._voters,
            "KRaftVersionRecord": self._kraft_version,
            "LeaderChangeMessage": self._leader_change,
        }

    # -- driving -------------------------------------------------------------------------------

    def replay(self, offset: int, record: Any) -> None:
        """Apply one record (or hold it back inside a transaction); the image's offset moves past it."""
        name = record.type_name
        image = self.image
        if image.offset <= offset:
            image.offset = offset + 1
        if not record.known:
            self.unknown[name] += 1
            return
        if self.pending is None and name not in _TRANSACTION_MARKERS:
            handler = self._handlers.get(name)  # apply, inlined: this is the hot path
            if handler is not None:
                handler(offset, record.fields)
                applied = self.applied
                applied[name] = applied.get(name, 0) + 1
            else:
                self.apply(offset, record)
            return
        if name == "BeginTransactionRecord":
            if self.pending is not None:
                self._inconsistent(offset, name, "a transaction begins inside another; the first is dropped")
            self.pending, self.transaction_start = [], offset
            self.applied[name] += 1
            return
        if name == "EndTransactionRecord" or name == "AbortTransactionRecord":
            held, self.pending, self.transaction_start = self.pending, None, None
            self.applied[name] += 1
            if held is None:
                self._inconsistent(offset, name, "no transaction is open")
            elif name == "EndTransactionRecord":
                for at, rec in held:
                    self.apply(at, rec)
            else:
                self.aborted += len(held)
                if self._wants(offset):
                    reason = record.fields.get("reason")
                    self._event(
                        offset,
                        "transaction-aborted",
                        "transaction",
                        f"{plural(len(held), 'record')} discarded" + (f" ({reason})" if reason else ""),
                        records=len(held),
                    )
            return
        if self.pending is not None:
            self.pending.append((offset, record))
            return
        self.apply(offset, record)

    def replay_log(self, items: Iterable[tuple[int, bool, Any]]) -> tuple[int | None, int | None, int]:
        """Replay (offset, is_control, record) in order, control records only when they change the
        image; (first offset, last offset, records read). `replay` with its common case inlined:
        this loop is where a log's replay spends its time."""
        first = last = None
        count = 0
        handlers, applied, image = self._handlers, self.applied, self.image
        for offset, control, record in items:
            if first is None:
                first = offset
            last = offset
            count += 1
            name = record.type_name
            if control and name not in IMAGE_CONTROL_RECORDS:
                continue
            handler = handlers.get(name)
            if handler is not None and self.pending is None and record.known:
                if image.offset <= offset:
                    image.offset = offset + 1
                handler(offset, record.fields)
                applied[name] = applied.get(name, 0) + 1
            else:
                self.replay(offset, record)
        return first, last, count

    def apply(self, offset: int, record: Any) -> None:
        """Apply one record now, outside any transaction logic (a snapshot's records, bootstrap)."""
        name = record.type_name
        handler = self._handlers.get(name)
        if handler is not None:
            handler(offset, record.fields)
        elif name not in PASSIVE:
            self.unknown[name] += 1
            return
        applied = self.applied
        applied[name] = applied.get(name, 0) + 1

    def _wants(self, offset: int) -> bool:
        since = self.events_from
        return since is not None and offset >= since

    def _event(self, offset: int, kind: str, subject: str, detail: str, **data: Any) -> None:
        self.events.append(Event(offset, kind, subject, detail, data))

    def _inconsistent(self, offset: int, record_type: str, message: str) -> None:
        self.inconsistencies.append(Inconsistency(offset, record_type, message))

    # -- cluster: brokers, controllers, voters ---------------------------------------------------

    def _register_broker(self, offset: int, f: dict) -> None:
        bid = f["brokerId"]
        broker = Broker(
            broker_id=bid,
            epoch=f.get("brokerEpoch", -1),
            incarnation_id=f.get("incarnationId", ""),
            endpoints=_endpoints(f.get("endPoints")),
            rack=f.get("rack"),
            fenced=bool(f.get("fenced", True)),
            in_controlled_shutdown=bool(f.get("inControlledShutdown", False)),
            features=_features(f.get("features")),
            log_dirs=list(f.get("logDirs") or ()),
            is_migrating_zk_broker=bool(f.get("isMigratingZkBroker", False)),
        )
        old = self.image.brokers.get(bid)
        self.image.brokers[bid] = broker
        if self._wants(offset):
            state = "fenced" if broker.fenced else "unfenced"
            again = f"re-registered (epoch {old.epoch} -> {broker.epoch})" if old else "registered"
            self._event(
                offset,
                "broker-registered",
                f"broker {bid}",
                f"{again}, {state}",
                broker=bid,
                epoch=broker.epoch,
            )

    def _unregister_broker(self, offset: int, f: dict) -> None:
        bid = f["brokerId"]
        old = self.image.brokers.pop(bid, None)
        if old is None:
            self._inconsistent(offset, "UnregisterBrokerRecord", f"broker {bid} is not registered")
        elif self._wants(offset):
            self._event(offset, "broker-unregistered", f"broker {bid}", "unregistered", broker=bid)

    def _broker(self, offset: int, record_type: str, bid: int, epoch: int) -> Broker | None:
        broker = self.image.brokers.get(bid)
        if broker is None:
            self._inconsistent(offset, record_type, f"broker {bid} is not registered")
        elif epoch != -1 and broker.epoch != epoch:
            # ClusterDelta's getBrokerOrThrow: a record for another incarnation is not applied.
            self._inconsistent(
                offset, record_type, f"broker {bid} has epoch {broker.epoch}, the record {epoch}: not applied"
            )
            return None
        return broker

    def _set_fenced(self, offset: int, broker: Broker, fenced: bool) -> None:
        if broker.fenced != fenced and self._wants(offset):
            kind = "broker-fenced" if fenced else "broker-unfenced"
            self._event(offset, kind, f"broker {broker.broker_id}", kind[7:], broker=broker.broker_id)
        broker.fenced = fenced

    def _fence(self, offset: int, f: dict) -> None:
        broker = self._broker(offset, "FenceBrokerRecord", f["id"], f.get("epoch", -1))
        if broker is not None:
            self._set_fenced(offset, broker, True)

    def _unfence(self, offset: int, f: dict) -> None:
        broker = self._broker(offset, "UnfenceBrokerRecord", f["id"], f.get("epoch", -1))
        if broker is not None:
            self._set_fenced(offset, broker, False)

    def _broker_change(self, offset: int, f: dict) -> None:
        broker = self._broker(
            offset, "BrokerRegistrationChangeRecord", f["brokerId"], f.get("brokerEpoch", -1)
        )
        if broker is None:
            return
        fenced = f.get("fenced", 0)  # BrokerRegistrationFencingChange: 1 fence, -1 unfence, 0 none
        if fenced == 1:
            self._set_fenced(offset, broker, True)
        elif fenced == -1:
            self._set_fenced(offset, broker, False)
        if f.get("inControlledShutdown", 0) == 1 and not broker.in_controlled_shutdown:
            broker.in_controlled_shutdown = True
            if self._wants(offset):
                self._event(
                    offset,
                    "broker-controlled-shutdown",
                    f"broker {broker.broker_id}",
                    "in controlled shutdown",
                    broker=broker.broker_id,
                )
        if f.get("logDirs"):
            broker.log_dirs = list(f["logDirs"])

    def _register_controller(self, offset: int, f: dict) -> None:
        cid = f["controllerId"]
        self.image.controllers[cid] = Controller(
            cid,
            f.get("incarnationId", ""),
            _endpoints(f.get("endPoints")),
            _features(f.get("features")),
            bool(f.get("zkMigrationReady", False)),
        )
        if self._wants(offset):
            self._event(offset, "controller-registered", f"controller {cid}", "registered", controller=cid)

    def _unregister_controller(self, offset: int, f: dict) -> None:
        cid = f["controllerId"]
        if self.image.controllers.pop(cid, None) is None:
            self._inconsistent(offset, "UnregisterControllerRecord", f"controller {cid} is not registered")

    def _voters(self, offset: int, f: dict) -> None:
        voters = []
        for v in f.get("voters") or ():
            feature = v.get("kRaftVersionFeature") or v.get("kraftVersionFeature") or {}
            span = (
                (feature.get("minSupportedVersion", 0), feature.get("maxSupportedVersion", 0))
                if feature
                else None
            )
            voters.append(
                Voter(v.get("voterId", -1), v.get("voterDirectoryId"), _endpoints(v.get("endpoints")), span)
            )
        before = None if self.image.voters is None else [v.voter_id for v in self.image.voters]
        self.image.voters = voters
        after = [v.voter_id for v in voters]
        if before != after and self._wants(offset):
            self._event(
                offset, "voters-changed", "quorum", f"voters {before or '-'} -> {after}", voters=after
            )

    def _kraft_version(self, offset: int, f: dict) -> None:
        self.image.kraft_version = f.get("kRaftVersion", f.get("kraftVersion"))

    def _leader_change(self, offset: int, f: dict) -> None:
        self.image.raft_leader = f.get("leaderId", -1)

    # -- topics and partitions -------------------------------------------------------------------

    def _topic(self, offset: int, f: dict) -> None:
        tid, name = f["topicId"], f["name"]
        self.image.topics[tid] = Topic(name, tid)
        if self._wants(offset):
            self._event(offset, "topic-created", name, f"created (id {tid})", topic=name, topicId=tid)

    def _remove_topic(self, offset: int, f: dict) -> None:
        tid = f["topicId"]
        topic = self.image.topics.pop(tid, None)
        if topic is None:
            self._inconsistent(offset, "RemoveTopicRecord", f"topic id {tid} is not in the image")
            return
        # ConfigurationsDelta.replay(RemoveTopicRecord): the topic's configs go with it.
        self.image.configs.pop((2, topic.name), None)
        if self._wants(offset):
            n = len(topic.partitions)
            self._event(
                offset,
                "topic-deleted",
                topic.name,
                f"deleted ({plural(n, 'partition')})",
                topic=topic.name,
                topicId=tid,
            )

    def _clear_elr(self, offset: int, f: dict) -> None:
        """TopicsDelta.replay(ClearElrRecord): an empty name clears every topic's ELR (4.x)."""
        name = f.get("topicName") or ""
        topics = [t for t in self.image.topics.values() if not name or t.name == name]
        if name and not topics:
            self._inconsistent(offset, "ClearElrRecord", f"topic {name} is not in the image")
        for topic in topics:
            for partition in topic.partitions.values():
                partition.elr, partition.last_known_elr = [], []

    def _topic_of(self, offset: int, record_type: str, tid: str) -> Topic | None:
        topic = self.image.topics.get(tid)
        if topic is None:
            self._inconsistent(offset, record_type, f"topic id {tid} is not in the image")
        return topic

    def _partition(self, offset: int, f: dict) -> None:
        topic = self._topic_of(offset, "PartitionRecord", f["topicId"])
        if topic is None:
            return
        replicas = _ints(f.get("replicas"))
        directories = list(f.get("directories") or ())
        if len(directories) != len(replicas):
            directories = [MIGRATING_DIRECTORY] * len(replicas)  # defaultToMigrating
        part = PartitionState(
            partition_id=f.get("partitionId", -1),
            replicas=replicas,
            isr=_ints(f.get("isr")),
            removing_replicas=_ints(f.get("removingReplicas")),
            adding_replicas=_ints(f.get("addingReplicas")),
            leader=f.get("leader", -1),
            leader_epoch=f.get("leaderEpoch", -1),
            partition_epoch=f.get("partitionEpoch", -1),
            leader_recovery_state=f.get("leaderRecoveryState", 0),
            directories=directories,
            elr=_ints(f.get("eligibleLeaderReplicas")),
            last_known_elr=_ints(f.get("lastKnownElr")),
        )
        old = topic.partitions.get(part.partition_id)
        topic.partitions[part.partition_id] = part
        if self._wants(offset):
            subject = f"{topic.name}-{part.partition_id}"
            if old is None:
                self._event(
                    offset,
                    "partition-created",
                    subject,
                    f"replicas {part.replicas}, leader {part.leader}",
                    topic=topic.name,
                    partition=part.partition_id,
                    replicas=part.replicas,
                    leader=part.leader,
                )
            else:
                self._partition_events(offset, topic.name, old, part)

    def _partition_change(self, offset: int, f: dict) -> None:
        topic = self.image.topics.get(f["topicId"])
        if topic is None:
            self._topic_of(offset, "PartitionChangeRecord", f["topicId"])  # says so
            return
        pid = f["partitionId"]
        old = topic.partitions.get(pid)
        if old is None:
            self._inconsistent(
                offset, "PartitionChangeRecord", f"partition {topic.name}-{pid} is not in the image"
            )
            return
        since = self.events_from
        if since is not None and offset >= since:
            new = merge_partition_change(old, f)
            topic.partitions[pid] = new
            self._partition_events(offset, topic.name, old, new)
        else:
            apply_partition_change(old, f)

    def _partition_events(self, offset: int, topic: str, old: PartitionState, new: PartitionState) -> None:
        subject = f"{topic}-{new.partition_id}"
        base = {"topic": topic, "partition": new.partition_id}
        if old.leader != new.leader or old.leader_epoch != new.leader_epoch:
            self._event(
                offset,
                "leader-changed",
                subject,
                f"leader {old.leader} -> {new.leader} (epoch {new.leader_epoch})",
                **base,
                oldLeader=old.leader,
                leader=new.leader,
                leaderEpoch=new.leader_epoch,
            )
        if old.isr != new.isr:
            gone = [r for r in old.isr if r not in new.isr]
            added = [r for r in new.isr if r not in old.isr]
            kind = (
                "isr-shrunk"
                if gone and not added
                else "isr-expanded"
                if added and not gone
                else "isr-changed"
            )
            self._event(
                offset, kind, subject, f"isr {old.isr} -> {new.isr}", **base, oldIsr=old.isr, isr=new.isr
            )
        if old.replicas != new.replicas or old.adding_replicas != new.adding_replicas:
            self._event(
                offset,
                "replicas-changed",
                subject,
                f"replicas {old.replicas} -> {new.replicas}"
                + (f" (adding {new.adding_replicas})" if new.adding_replicas else "")
                + (f" (removing {new.removing_replicas})" if new.removing_replicas else ""),
                **base,
                oldReplicas=old.replicas,
                replicas=new.replicas,
                addingReplicas=new.adding_replicas,
                removingReplicas=new.removing_replicas,
            )
        if old.elr != new.elr or old.last_known_elr != new.last_known_elr:
            self._event(
                offset,
                "elr-changed",
                subject,
                f"elr {old.elr} -> {new.elr}, last known elr {new.last_known_elr}",
                **base,
                elr=new.elr,
                lastKnownElr=new.last_known_elr,
            )

    # -- configs, features, quotas, producer ids -----------------------------------------------------

    def _config(self, offset: int, f: dict) -> None:
        rtype, rname, key, value = f["resourceType"], f.get("resourceName", ""), f["name"], f.get("value")
        resource = (rtype, rname)
        settings = self.image.configs.get(resource)
        old = None if settings is None else settings.get(key)
        if value is None:
            if settings is not None:
                settings.pop(key, None)
                if not settings:
                    del self.image.configs[resource]
        else:
            self.image.configs.setdefault(resource, {})[key] = value
        if self._wants(offset) and old != value:
            subject = f"{code_name(CONFIG_RESOURCE_TYPES, rtype)} {rname or '<default>'}"
            base = {
                "resourceType": code_name(CONFIG_RESOURCE_TYPES, rtype),
                "resourceName": rname,
                "name": key,
            }
            if value is None:
                self._event(
                    offset, "config-deleted", subject, f"{key} deleted (was {old})", **base, oldValue=old
                )
            else:
                self._event(
                    offset, "config-set", subject, f"{key}={value}", **base, value=value, oldValue=old
                )

    def _feature(self, offset: int, f: dict) -> None:
        name, level = f["name"], f.get("featureLevel", 0)
        old = self.image.features.get(name)
        if level == 0:
            self.image.features.pop(name, None)  # level 0 removes a feature
        else:
            self.image.features[name] = level
        if self._wants(offset) and old != (level or None):
            self._event(
                offset,
                "feature-level",
                name,
                f"{name} {old if old is not None else '-'} -> {level}",
                feature=name,
                level=level,
            )

    def _client_quota(self, offset: int, f: dict) -> None:
        entity = tuple(sorted((e.get("entityType", ""), e.get("entityName")) for e in f.get("entity") or ()))
        key = f["key"]
        quotas = self.image.client_quotas
        if f.get("remove"):
            values = quotas.get(entity)
            if values is not None:
                values.pop(key, None)
                if not values:
                    del quotas[entity]
        else:
            quotas.setdefault(entity, {})[key] = f.get("value", 0.0)
        if self._wants(offset):
            who = ",".join(f"{t}={n if n is not None else '<default>'}" for t, n in entity)
            what = "removed" if f.get("remove") else f"= {f.get('value')}"
            self._event(
                offset, "quota-removed" if f.get("remove") else "quota-set", who, f"{key} {what}", key=key
            )

    def _producer_ids(self, offset: int, f: dict) -> None:
        self.image.producer_ids = ProducerIdBlock(
            f.get("brokerId", -1), f.get("brokerEpoch", -1), f.get("nextProducerId", -1)
        )

    def _zk_migration(self, offset: int, f: dict) -> None:
        self.image.zk_migration_state = f.get("zkMigrationState")

    # -- security: ACLs, SCRAM, delegation tokens ------------------------------------------------

    def _acl(self, offset: int, f: dict) -> None:
        acl = Acl(
            f["id"],
            f.get("resourceType", 0),
            f.get("resourceName", ""),
            f.get("patternType", 0),
            f.get("principal", ""),
            f.get("host", ""),
            f.get("operation", 0),
            f.get("permissionType", 0),
        )
        self.image.acls[acl.acl_id] = acl
        if self._wants(offset):
            self._event(
                offset,
                "acl-created",
                acl.principal,
                f"acl {acl.acl_id} on {acl.resource_name}",
                aclId=acl.acl_id,
            )

    def _remove_acl(self, offset: int, f: dict) -> None:
        if self.image.acls.pop(f["id"], None) is None:
            self._inconsistent(offset, "RemoveAccessControlEntryRecord", f"acl {f['id']} is not in the image")
        elif self._wants(offset):
            self._event(offset, "acl-deleted", f["id"], "deleted", aclId=f["id"])

    def _scram(self, offset: int, f: dict) -> None:
        # Only who and how: salt, storedKey and serverKey are never kept.
        user, mechanism = f["name"], f.get("mechanism", 0)
        self.image.scram_users[(user, mechanism)] = f.get("iterations", 0)
        if self._wants(offset):
            mech = code_name(SCRAM_MECHANISMS, mechanism)
            self._event(offset, "scram-credential-set", user, mech, user=user, mechanism=mech)

    def _remove_scram(self, offset: int, f: dict) -> None:
        user, mechanism = f["name"], f.get("mechanism", 0)
        self.image.scram_users.pop((user, mechanism), None)
        if self._wants(offset):
            mech = code_name(SCRAM_MECHANISMS, mechanism)
            self._event(offset, "scram-credential-deleted", user, mech, user=user, mechanism=mech)

    def _delegation_token(self, offset: int, f: dict) -> None:
        token = DelegationToken(
            f["tokenId"],
            f.get("owner", ""),
            f.get("requester", ""),
            list(f.get("renewers") or ()),
            f.get("issueTimestamp", -1),
            f.get("maxTimestamp", -1),
            f.get("expirationTimestamp", -1),
        )
        self.image.delegation_tokens[token.token_id] = token
        if self._wants(offset):
            self._event(offset, "token-created", token.token_id, f"owner {token.owner}", owner=token.owner)

    def _remove_delegation_token(self, offset: int, f: dict) -> None:
        if self.image.delegation_tokens.pop(f["tokenId"], None) is not None and self._wants(offset):
            self._event(offset, "token-removed", f["tokenId"], "removed")


def merge_partition_change(old: PartitionState, f: dict) -> PartitionState:
    """PartitionRegistration.merge, as a new PartitionState (see apply_partition_change)."""
    new = copy(old)
    apply_partition_change(new, f)
    return new


def apply_partition_change(p: PartitionState, f: dict) -> None:
    """PartitionRegistration.merge, in place: an absent (null) field keeps its value; a leader other
    than NO_LEADER_CHANGE (-2) replaces the leader and bumps the leader epoch; every change bumps the
    partition epoch; leaderRecoveryState -1 means no change; directories that no longer match the
    replicas become MIGRATING (defaultToMigrating)."""
    get = f.get
    replicas = get("replicas")
    if replicas is not None:
        p.replicas = list(replicas)
    directories = get("directories")
    if directories is not None:
        p.directories = list(directories)
    if len(p.directories) != len(p.replicas):
        p.directories = [MIGRATING_DIRECTORY] * len(p.replicas)
    leader = get("leader", NO_LEADER_CHANGE)
    if leader != NO_LEADER_CHANGE:
        p.leader = leader
        p.leader_epoch += 1
    p.partition_epoch += 1
    isr = get("isr")
    if isr is not None:
        p.isr = list(isr)
    removing = get("removingReplicas")
    if removing is not None:
        p.removing_replicas = list(removing)
    adding = get("addingReplicas")
    if adding is not None:
        p.adding_replicas = list(adding)
    recovery = get("leaderRecoveryState", -1)
    if recovery != -1:
        p.leader_recovery_state = recovery
    elr = get("eligibleLeaderReplicas")
    if elr is not None:
        p.elr = list(elr)
    last_known = get("lastKnownElr")
    if last_known is not None:
        p.last_known_elr = list(last_known)
