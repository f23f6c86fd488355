"""The record types of the coordinators' internal topics, as data: for each key version of
``__consumer_offsets`` (classic groups; KIP-848 consumer groups and KIP-932 share groups) and of
``__transaction_state``, the type's name and its key and value schemas, transcribed from Kafka's message
definitions (format/internal_topics.py says where from, and decodes with them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kafka_tools.format.schema import F, Schema


@dataclass(frozen=True)
class RecordKind:
    """One row of a record-type table: the type name and the key/value schemas."""

    record_type: str
    key_schema: Schema
    value_schema: Schema


# --------------------------------------------------------------------------------------------------
# __consumer_offsets: classic records (key versions 0-2)
# --------------------------------------------------------------------------------------------------

OFFSET_COMMIT_KEY = Schema.make(
    "OffsetCommitKey",
    "0-1",
    "none",
    (
        F("group", "string", "0-1"),
        F("topic", "string", "0-1"),
        F("partition", "int32", "0-1"),
    ),
)

OFFSET_COMMIT_VALUE = Schema.make(
    "OffsetCommitValue",
    "0-4",
    "4+",
    (
        F("offset", "int64", "0+"),
        F("leaderEpoch", "int32", "3+", default=-1),
        F("metadata", "string", "0+"),
        F("commitTimestamp", "int64", "0+"),
        F("expireTimestamp", "int64", "1", default=-1),
        # the topic's id, written by Kafka 4.x brokers (tag 0; Uuid.ZERO_UUID when absent)
        F("topicId", "uuid", "4+", tagged="4+", tag=0, default="AAAAAAAAAAAAAAAAAAAAAA"),
    ),
)

GROUP_METADATA_KEY = Schema.make("GroupMetadataKey", "2", "none", (F("group", "string", "2"),))

_MEMBER_METADATA = (
    F("memberId", "string", "0+"),
    F("groupInstanceId", "string", "3+", nullable="3+"),
    F("clientId", "string", "0+"),
    F("clientHost", "string", "0+"),
    F("rebalanceTimeout", "int32", "1+", default=-1),
    F("sessionTimeout", "int32", "0+"),
    F("subscription", "bytes", "0+"),
    F("assignment", "bytes", "0+"),
)

GROUP_METADATA_VALUE = Schema.make(
    "GroupMetadataValue",
    "0-4",
    "4+",
    (
        F("protocolType", "string", "0+"),
        F("generation", "int32", "0+"),
        F("protocol", "string", "0+", nullable="0+"),
        F("leader", "string", "0+", nullable="0+"),
        F("currentStateTimestamp", "int64", "2+", default=-1),
        F("members", "[]struct", "0+", fields=_MEMBER_METADATA),
    ),
)

# --------------------------------------------------------------------------------------------------
# __consumer_offsets: KIP-848 consumer group and KIP-932 share group records (key versions 3-16).
# Their key schema's only valid version is the record type id ("apiKey" in newer Kafka); all values
# are flexible from version 0.
# --------------------------------------------------------------------------------------------------


def _key(name: str, type_id: int, *field_names: str) -> Schema:
    v = str(type_id)
    return Schema.make(name, v, "none", tuple(F(f, "string", v) for f in field_names))


def _value(name: str, *fields: Any) -> Schema:
    return Schema.make(name, "0", "0+", tuple(fields))


_TOPIC_PARTITIONS = (F("TopicId", "uuid"), F("Partitions", "[]int32"))

_TOPIC_METADATA = (
    F("TopicId", "uuid"),
    F("TopicName", "string"),
    F("NumPartitions", "int32"),
    F(
        "PartitionMetadata",
        "[]struct",
        fields=(F("Partition", "int32"), F("Racks", "[]string")),
    ),
)

CONSUMER_OFFSETS_RECORDS: dict[int, RecordKind] = {
    0: RecordKind("offset_commit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    1: RecordKind("offset_commit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE),
    2: RecordKind("group_metadata", GROUP_METADATA_KEY, GROUP_METADATA_VALUE),
    3: RecordKind(
        "consumer_group_metadata",
        _key("ConsumerGroupMetadataKey", 3, "GroupId"),
        _value(
            "ConsumerGroupMetadataValue",
            F("Epoch", "int32"),
            F("MetadataHash", "int64", tagged="0+", tag=0, default=0),
            F("CreationTimeMs", "int64", tagged="0+", tag=1, default=-1),
        ),
    ),
    4: RecordKind(
        "consumer_group_partition_metadata",
        _key("ConsumerGroupPartitionMetadataKey", 4, "GroupId"),
        _value("ConsumerGroupPartitionMetadataValue", F("Topics", "[]struct", fields=_TOPIC_METADATA)),
    ),
    5: RecordKind(
        "consumer_group_member_metadata",
        _key("ConsumerGroupMemberMetadataKey", 5, "GroupId", "MemberId"),
        _value(
            "ConsumerGroupMemberMetadataValue",
            F("InstanceId", "string", nullable="0+"),
            F("RackId", "string", nullable="0+"),
            F("ClientId", "string"),
            F("ClientHost", "string"),
            F("SubscribedTopicNames", "[]string"),
            F("SubscribedTopicRegex", "string", nullable="0+"),
            F("RebalanceTimeoutMs", "int32", default=-1),
            F("ServerAssignor", "string", nullable="0+"),
            F(
                "ClassicMemberMetadata",
                "struct",
                nullable="0+",
                tagged="0+",
                tag=0,
                fields=(
                    F("SessionTimeoutMs", "int32"),
                    F(
                        "SupportedProtocols",
                        "[]struct",
                        fields=(F("Name", "string"), F("Metadata", "bytes")),
                    ),
                ),
            ),
        ),
    ),
    6: RecordKind(
        "consumer_group_target_assignment_metadata",
        _key("ConsumerGroupTargetAssignmentMetadataKey", 6, "GroupId"),
        _value(
            "ConsumerGroupTargetAssignmentMetadataValue",
            F("AssignmentEpoch", "int32"),
            F("AssignmentTimestamp", "int64", tagged="0+", tag=0, default=0),
        ),
    ),
    7: RecordKind(
        "consumer_group_target_assignment_member",
        _key("ConsumerGroupTargetAssignmentMemberKey", 7, "GroupId", "MemberId"),
        _value(
            "ConsumerGroupTargetAssignmentMemberValue",
            F("TopicPartitions", "[]struct", fields=_TOPIC_PARTITIONS),
        ),
    ),
    8: RecordKind(
        "consumer_group_current_member_assignment",
        _key("ConsumerGroupCurrentMemberAssignmentKey", 8, "GroupId", "MemberId"),
        _value(
            "ConsumerGroupCurrentMemberAssignmentValue",
            F("MemberEpoch", "int32"),
            F("PreviousMemberEpoch", "int32"),
            F("State", "int8"),
            F(
                "AssignedPartitions",
                "[]struct",
                fields=(
                    *_TOPIC_PARTITIONS,
                    F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0),
                ),
            ),
            F(
                "PartitionsPendingRevocation",
                "[]struct",
                fields=(
                    *_TOPIC_PARTITIONS,
                    F("AssignmentEpochs", "[]int32", nullable="0+", tagged="0+", tag=0),
                ),
            ),
        ),
    ),
    9: RecordKind(
        "share_group_partition_metadata",
        _key("ShareGroupPartitionMetadataKey", 9, "GroupId"),
        _value("ShareGroupPartitionMetadataValue", F("Topics", "[]struct", fields=_TOPIC_METADATA)),
    ),
    10: RecordKind(
        "share_group_member_metadata",
        _key("ShareGroupMemberMetadataKey", 10, "GroupId", "MemberId"),
        _value(
            "ShareGroupMemberMetadataValue",
            F("RackId", "string", nullable="0+"),
            F("ClientId", "string"),
            F("ClientHost", "string"),
            F("SubscribedTopicNames", "[]string"),
        ),
    ),
    11: RecordKind(
        "share_group_metadata",
        _key("ShareGroupMetadataKey", 11, "GroupId"),
        _value("ShareGroupMetadataValue", F("Epoch", "int32"), F("MetadataHash", "int64")),
    ),
    12: RecordKind(
        "share_group_target_assignment_metadata",
        _key("ShareGroupTargetAssignmentMetadataKey", 12, "GroupId"),
        _value("ShareGroupTargetAssignmentMetadataValue", F("AssignmentEpoch", "int32")),
    ),
    13: RecordKind(
        "share_group_target_assignment_member",
        _key("ShareGroupTargetAssignmentMemberKey", 13, "GroupId", "MemberId"),
        _value(
            "ShareGroupTargetAssignmentMemberValue",
            F("TopicPartitions", "[]struct", fields=_TOPIC_PARTITIONS),
        ),
    ),
    14: RecordKind(
        "share_group_current_member_assignment",
        _key("ShareGroupCurrentMemberAssignmentKey", 14, "GroupId", "MemberId"),
        _value(
            "ShareGroupCurrentMemberAssignmentValue",
            F("MemberEpoch", "int32"),
            F("PreviousMemberEpoch", "int32"),
            F("State", "int8"),
            F("AssignedPartitions", "[]struct", fields=_TOPIC_PARTITIONS),
        ),
    ),
    15: RecordKind(
        "share_group_state_partition_metadata",
        _key("ShareGroupStatePartitionMetadataKey", 15, "GroupId"),
        _value(
            "ShareGroupStatePartitionMetadataValue",
            *(
                F(
                    name,
                    "[]struct",
                    fields=(
                        F("TopicId", "uuid"),
                        F("TopicName", "string"),
                        F("Partitions", "[]int32"),
                        F("CreateTimestamp", "int64"),
                    ),
                )
                for name in ("InitializingTopics", "InitializedTopics")
            ),
            F("DeletingTopics", "[]struct", fields=(F("TopicId", "uuid"), F("TopicName", "string"))),
        ),
    ),
    16: RecordKind(
        "consumer_group_regular_expression",
        _key("ConsumerGroupRegularExpressionKey", 16, "GroupId", "RegularExpression"),
        _value(
            "ConsumerGroupRegularExpressionValue",
            F("Topics", "[]string"),
            F("Version", "int64"),
            F("Timestamp", "int64"),
        ),
    ),
}

# --------------------------------------------------------------------------------------------------
# __transaction_state
# --------------------------------------------------------------------------------------------------

TRANSACTION_LOG_KEY = Schema.make("TransactionLogKey", "0", "none", (F("TransactionalId", "string", "0"),))

TRANSACTION_LOG_VALUE = Schema.make(
    "TransactionLogValue",
    "0-1",
    "1+",
    (
        F("ProducerId", "int64", "0+"),
        F("PreviousProducerId", "int64", tagged="1+", tag=0, default=-1),
        F("NextProducerId", "int64", tagged="1+", tag=1, default=-1),
        F("ProducerEpoch", "int16", "0+"),
        F("NextProducerEpoch", "int16", tagged="1+", tag=3, default=-1),  # 4.x: the epoch with NextProducerId
        F("TransactionTimeoutMs", "int32", "0+"),
        F("TransactionStatus", "int8", "0+"),
        F(
            "TransactionPartitions",
            "[]struct",
            "0+",
            nullable="0+",
            fields=(F("Topic", "string", "0+"), F("PartitionIds", "[]int32", "0+")),
        ),
        F("TransactionLastUpdateTimestampMs", "int64", "0+"),
        F("TransactionStartTimestampMs", "int64", "0+"),
        F("ClientTransactionVersion", "int16", tagged="1+", tag=2, default=0),
    ),
)

TRANSACTION_STATE_RECORDS: dict[int, RecordKind] = {
    0: RecordKind("transaction_log", TRANSACTION_LOG_KEY, TRANSACTION_LOG_VALUE),
}

#: ``TransactionStatus`` byte -> name (kafka.coordinator.transaction.TransactionState ids).
TRANSACTION_STATUS_NAMES: dict[int, str] = {
    0: "Empty",
    1: "Ongoing",
    2: "PrepareCommit",
    3: "PrepareAbort",
    4: "CompleteCommit",
    5: "CompleteAbort",
    6: "Dead",
    7: "PrepareEpochFence",
}
