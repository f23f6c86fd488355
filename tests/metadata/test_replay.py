"""Replay of hand-built records into the image, as Kafka's MetadataDelta classes apply them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kafka_tools.metadata.image import MIGRATING_DIRECTORY
from kafka_tools.metadata.replay import Replayer

TID = "Fb6hT0rTQ3-dUDTxb1bT-g"


@dataclass(frozen=True)
class Rec:
    """Shaped as format.kraft's MetadataRecord, for the fields replay reads."""

    type_name: str
    fields: dict[str, Any] = field(default_factory=dict)
    version: int = 0
    known: bool = True


def topic(name: str = "orders", tid: str = TID) -> Rec:
    return Rec("TopicRecord", {"name": name, "topicId": tid})


def partition(pid: int, replicas: list[int], leader: int, tid: str = TID, **extra: Any) -> Rec:
    f = {
        "partitionId": pid,
        "topicId": tid,
        "replicas": replicas,
        "isr": list(replicas),
        "removingReplicas": [],
        "addingReplicas": [],
        "leader": leader,
        "leaderRecoveryState": 0,
        "leaderEpoch": 0,
        "partitionEpoch": 0,
    }
    f.update(extra)
    return Rec("PartitionRecord", f, version=0)


def change(pid: int, tid: str = TID, **f: Any) -> Rec:
    base = {
        "partitionId": pid,
        "topicId": tid,
        "isr": None,
        "leader": -2,
        "replicas": None,
        "removingReplicas": None,
        "addingReplicas": None,
        "leaderRecoveryState": -1,
    }
    base.update(f)
    return Rec("PartitionChangeRecord", base)


def broker(bid: int, epoch: int = 10, fenced: bool = True) -> Rec:
    return Rec(
        "RegisterBrokerRecord",
        {
            "brokerId": bid,
            "incarnationId": "inc" + str(bid),
            "brokerEpoch": epoch,
            "endPoints": [{"name": "PLAINTEXT", "host": "h", "port": 9092, "securityProtocol": 0}],
            "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 20}],
            "rack": None,
            "fenced": fenced,
            "inControlledShutdown": False,
        },
        version=1,
    )


def run(*records: Rec, events_from: int | None = None) -> Replayer:
    r = Replayer(events_from=events_from)
    for offset, rec in enumerate(records):
        r.replay(offset, rec)
    return r


def test_partition_change_keeps_absent_fields_and_bumps_epochs():
    r = run(topic(), partition(0, [1, 2, 3], 1), change(0, isr=[1, 2]), change(0, leader=2))
    p = r.image.topics[TID].partitions[0]
    assert p.replicas == [1, 2, 3]
    assert p.isr == [1, 2]
    assert p.leader == 2
    assert p.leader_epoch == 1  # only the leader change bumps it
    assert p.partition_epoch == 2  # every change does
    assert p.directories == [MIGRATING_DIRECTORY] * 3


def test_no_leader_is_a_leader_change_and_no_leader_change_is_not():
    r = run(topic(), partition(0, [1], 1), change(0, leader=-1), change(0, isr=[]))
    p = r.image.topics[TID].partitions[0]
    assert (p.leader, p.leader_epoch, p.isr) == (-1, 1, [])


def test_reassignment_and_elr_fields():
    r = run(
        topic(),
        partition(0, [1, 2], 1),
        change(0, replicas=[1, 2, 3], addingReplicas=[3]),
        change(
            0,
            replicas=[2, 3],
            addingReplicas=[],
            removingReplicas=[],
            eligibleLeaderReplicas=[3],
            lastKnownElr=[1],
        ),
    )
    p = r.image.topics[TID].partitions[0]
    assert p.replicas == [2, 3] and p.adding_replicas == [] and p.elr == [3] and p.last_known_elr == [1]
    assert len(p.directories) == 2


def test_remove_topic_drops_partitions_and_configs():
    r = run(
        topic(),
        partition(0, [1], 1),
        Rec(
            "ConfigRecord",
            {"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "1"},
        ),
        Rec("RemoveTopicRecord", {"topicId": TID}),
    )
    assert r.image.topics == {} and r.image.configs == {}


def test_broker_fencing_and_controlled_shutdown():
    r = run(
        broker(1),
        Rec("UnfenceBrokerRecord", {"id": 1, "epoch": 10}),
        Rec(
            "BrokerRegistrationChangeRecord",
            {"brokerId": 1, "brokerEpoch": 10, "fenced": 0, "inControlledShutdown": 1, "logDirs": []},
        ),
    )
    b = r.image.brokers[1]
    assert not b.fenced and b.in_controlled_shutdown and b.endpoints[0].port == 9092
    r2 = run(
        broker(1), Rec("BrokerRegistrationChangeRecord", {"brokerId": 1, "brokerEpoch": 10, "fenced": -1})
    )
    assert not r2.image.brokers[1].fenced
    r3 = run(broker(1, fenced=False), Rec("FenceBrokerRecord", {"id": 1, "epoch": 10}))
    assert r3.image.brokers[1].fenced
    r4 = run(broker(1), Rec("UnregisterBrokerRecord", {"brokerId": 1, "brokerEpoch": 10}))
    assert r4.image.brokers == {}


def test_config_null_value_deletes_and_feature_level_zero_removes():
    r = run(
        Rec("ConfigRecord", {"resourceType": 4, "resourceName": "", "name": "a", "value": "1"}),
        Rec("ConfigRecord", {"resourceType": 4, "resourceName": "", "name": "b", "value": "2"}),
        Rec("ConfigRecord", {"resourceType": 4, "resourceName": "", "name": "a", "value": None}),
        Rec("FeatureLevelRecord", {"name": "metadata.version", "featureLevel": 20}),
        Rec("FeatureLevelRecord", {"name": "group.version", "featureLevel": 1}),
        Rec("FeatureLevelRecord", {"name": "group.version", "featureLevel": 0}),
    )
    assert r.image.configs == {(4, ""): {"b": "2"}}
    assert r.image.features == {"metadata.version": 20}
    assert r.image.metadata_version == 20


def test_quotas_acls_scram_tokens_producer_ids():
    entity = [{"entityType": "user", "entityName": "alice"}]
    r = run(
        Rec(
            "ClientQuotaRecord",
            {"entity": entity, "key": "producer_byte_rate", "value": 1024.0, "remove": False},
        ),
        Rec(
            "ClientQuotaRecord",
            {"entity": entity, "key": "consumer_byte_rate", "value": 10.0, "remove": False},
        ),
        Rec(
            "ClientQuotaRecord", {"entity": entity, "key": "consumer_byte_rate", "value": 0.0, "remove": True}
        ),
        Rec(
            "AccessControlEntryRecord",
            {
                "id": "acl1",
                "resourceType": 2,
                "resourceName": "t",
                "patternType": 3,
                "principal": "User:a",
                "host": "*",
                "operation": 3,
                "permissionType": 3,
            },
        ),
        Rec(
            "AccessControlEntryRecord",
            {
                "id": "acl2",
                "resourceType": 2,
                "resourceName": "t",
                "patternType": 3,
                "principal": "User:b",
                "host": "*",
                "operation": 3,
                "permissionType": 3,
            },
        ),
        Rec("RemoveAccessControlEntryRecord", {"id": "acl1"}),
        Rec(
            "UserScramCredentialRecord",
            {
                "name": "alice",
                "mechanism": 1,
                "salt": b"s",
                "storedKey": b"k",
                "serverKey": b"v",
                "iterations": 4096,
            },
        ),
        Rec(
            "UserScramCredentialRecord",
            {
                "name": "bob",
                "mechanism": 2,
                "salt": b"s",
                "storedKey": b"k",
                "serverKey": b"v",
                "iterations": 8192,
            },
        ),
        Rec("RemoveUserScramCredentialRecord", {"name": "bob", "mechanism": 2}),
        Rec(
            "DelegationTokenRecord",
            {
                "owner": "User:a",
                "requester": "User:a",
                "renewers": [],
                "issueTimestamp": 1,
                "maxTimestamp": 3,
                "expirationTimestamp": 2,
                "tokenId": "tok",
            },
        ),
        Rec("ProducerIdsRecord", {"brokerId": 1, "brokerEpoch": 5, "nextProducerId": 2000}),
    )
    img = r.image
    assert img.client_quotas == {(("user", "alice"),): {"producer_byte_rate": 1024.0}}
    assert list(img.acls) == ["acl2"]
    assert img.scram_users == {("alice", 1): 4096}
    assert "tok" in img.delegation_tokens
    assert img.producer_ids.next_producer_id == 2000
    assert "s" not in repr(img.scram_users)  # only user, mechanism, iterations are kept


def test_aborted_transaction_is_discarded_and_committed_one_applied():
    r = run(
        Rec("BeginTransactionRecord", {"name": "create a"}),
        topic("a", "AAAAAAAAAAAAAAAAAAAAAB"),
        Rec("AbortTransactionRecord", {"reason": "controller failover"}),
        Rec("BeginTransactionRecord", {"name": "create b"}),
        topic("b", "AAAAAAAAAAAAAAAAAAAAAC"),
        Rec("EndTransactionRecord"),
        Rec("BeginTransactionRecord", {"name": "open"}),
        topic("c", "AAAAAAAAAAAAAAAAAAAAAD"),
        events_from=0,
    )
    assert sorted(t.name for t in r.image.topics.values()) == ["b"]
    assert r.aborted == 1
    assert r.pending and r.transaction_start == 6  # still open: held back, not applied
    kinds = [e.kind for e in r.events]
    assert kinds == ["transaction-aborted", "topic-created"]
    assert r.events[1].offset == 4


def test_diff_events_for_leader_isr_config_and_brokers():
    r = run(
        broker(1),
        topic(),
        partition(0, [1, 2], 1),
        Rec("UnfenceBrokerRecord", {"id": 1, "epoch": 10}),
        change(0, isr=[1]),
        change(0, leader=2, isr=[2]),
        change(0, isr=[2, 1]),
        Rec(
            "ConfigRecord",
            {"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": "5"},
        ),
        Rec(
            "ConfigRecord",
            {"resourceType": 2, "resourceName": "orders", "name": "retention.ms", "value": None},
        ),
        Rec("RemoveTopicRecord", {"topicId": TID}),
        events_from=3,
    )
    got = [(e.offset, e.kind) for e in r.events]
    assert got == [
        (3, "broker-unfenced"),
        (4, "isr-shrunk"),
        (5, "leader-changed"),
        (5, "isr-changed"),
        (6, "isr-expanded"),
        (7, "config-set"),
        (8, "config-deleted"),
        (9, "topic-deleted"),
    ]
    leader = r.events[2]
    assert leader.data["oldLeader"] == 1 and leader.data["leader"] == 2 and leader.subject == "orders-0"


def test_unknown_records_are_counted_not_applied_and_inconsistencies_reported():
    r = run(Rec("Unknown", known=False), change(0, tid="nope"), Rec("NoOpRecord"))
    assert r.unknown["Unknown"] == 1
    assert r.applied["NoOpRecord"] == 1
    assert [i.record_type for i in r.inconsistencies] == ["PartitionChangeRecord"]
    assert r.image.offset == 3


def test_voters_controllers_and_kraft_version():
    r = run(
        Rec(
            "RegisterControllerRecord",
            {
                "controllerId": 3000,
                "incarnationId": "x",
                "zkMigrationReady": False,
                "endPoints": [{"name": "CONTROLLER", "host": "c", "port": 9093, "securityProtocol": 0}],
                "features": [],
            },
        ),
        Rec("KRaftVersionRecord", {"version": 0, "kRaftVersion": 1}),
        Rec(
            "VotersRecord",
            {
                "version": 0,
                "voters": [
                    {
                        "voterId": 3000,
                        "voterDirectoryId": "d",
                        "endpoints": [{"name": "CONTROLLER", "host": "c", "port": 9093}],
                        "kRaftVersionFeature": {"minSupportedVersion": 0, "maxSupportedVersion": 1},
                    }
                ],
            },
        ),
    )
    assert r.image.controllers[3000].endpoints[0].port == 9093
    assert r.image.kraft_version == 1
    assert [(v.voter_id, v.directory_id, v.kraft_version_range) for v in r.image.voters] == [
        (3000, "d", (0, 1))
    ]


def test_a_fence_for_another_broker_epoch_is_not_applied():
    r = run(broker(1, epoch=10, fenced=False), Rec("FenceBrokerRecord", {"id": 1, "epoch": 9}))
    assert not r.image.brokers[1].fenced
    assert [i.record_type for i in r.inconsistencies] == ["FenceBrokerRecord"]


def test_clear_elr_empties_the_named_topics_elr_or_every_topics():
    other = "Ab6hT0rTQ3-dUDTxb1bT-g"
    elr = {"eligibleLeaderReplicas": [2], "lastKnownElr": [1]}
    records = [
        topic(),
        partition(0, [1, 2], 1, **elr),
        topic("audit", other),
        partition(0, [1, 2], 1, other, **elr),
    ]
    one = run(*records, Rec("ClearElrRecord", {"topicName": "orders"}))
    assert (one.image.topics[TID].partitions[0].elr, one.image.topics[TID].partitions[0].last_known_elr) == (
        [],
        [],
    )
    assert one.image.topics[other].partitions[0].elr == [2]
    every = run(*records, Rec("ClearElrRecord", {"topicName": ""}))
    assert [t.partitions[0].elr for t in every.image.topics.values()] == [[], []]
    assert sum(every.applied.values()) == 5 and not every.unknown


def test_unregister_controller_removes_it():
    register = Rec("RegisterControllerRecord", {"controllerId": 3000, "incarnationId": "x", "endPoints": []})
    r = run(register, Rec("UnregisterControllerRecord", {"controllerId": 3000}))
    assert r.image.controllers == {} and not r.unknown
