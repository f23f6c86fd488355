"""Apply metadata records to an Image as Kafka's MetadataDelta classes do (ClusterDelta, TopicsDelta,
PartitionRegistration.merge, ConfigurationsDelta, FeaturesDelta, AclsDelta, …).

A record is anything with `type_name`, `version`, `fields` and `known` (format.kraft's MetadataRecord):
fields named as in the schemas with a lower-case first letter. Records between a BeginTransactionRecord
and its EndTransactionRecord are held back and applied at the end; an AbortTransactionRecord discards
them, as the controller's replay does. With `events_from` set, each change at or after that offset is
also described as an Event (what `ktool metadata diff` lists).

Replayer drives (the dispatch and the transaction hold-back, here); its handlers, one method per record
type, come from the deltas it is made of, as Kafka's MetadataDelta classes are split: ClusterDelta
(metadata/cluster_delta.py), TopicsDelta (metadata/topics_delta.py), and the configs, features, quotas and
security records (metadata/settings_delta.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from kafka_tools.format.plural import plural
from kafka_tools.metadata.cluster_delta import ClusterDelta
from kafka_tools.metadata.delta_base import Event, Inconsistency
from kafka_tools.metadata.image import Image
from kafka_tools.metadata.settings_delta import SettingsDelta
from kafka_tools.metadata.topics_delta import TopicsDelta

# KRaft control records that change what the image holds; the others (snapshot framing) do not.
IMAGE_CONTROL_RECORDS = frozenset({"VotersRecord", "KRaftVersionRecord", "LeaderChangeMessage"})
_TRANSACTION_MARKERS = frozenset({"BeginTransactionRecord", "EndTransactionRecord", "AbortTransactionRecord"})
# Records that change nothing in the image (framing of snapshots, keep-alives).
PASSIVE = frozenset({"NoOpRecord", "SnapshotHeaderRecord", "SnapshotFooterRecord"})


class Replayer(ClusterDelta, TopicsDelta, SettingsDelta):
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
