"""The --json object kinds of the commands about a cluster's state: the KRaft metadata, ZooKeeper's brokers
and topics, groups and their offsets, transactions (render/contract.py puts them together)."""

from __future__ import annotations

from kafka_tools.render.json_kinds import shape
from kafka_tools.render.kinds_logs import FINDING  # metadata check reports validate's findings

# --------------------------------------------------------------------------- metadata (KRaft)

METADATA_KINDS = [
    shape(
        "image",
        "The image's head: cluster, node, offsets, counts of records read and applied.",
        logDir="str",
        clusterId="str|null",
        nodeId="int|null",
        directoryId="str|null",
        offset="int",
        snapshot="str|null",
        logStart="int|null",
        logEnd="int|null",
        recordsRead="int",
        recordsApplied="int",
        recordsUnknown="int",
        recordsAborted="int",
        openTransactionAt="int|null",
        recordTypes="object",
        metadataVersion="int|null",
        kraftVersion="int|null",
        zkMigrationState="str|int|null",
        raftLeader="int|null",
        quorumState="object|null",
        bootstrap="object|null",
    ),  # fmt: skip
    shape(
        "broker",
        "A registered broker.",
        id="int",
        epoch="int",
        incarnationId="str",
        endpoints="list",
        rack="str|null",
        fenced="bool",
        inControlledShutdown="bool",
        logDirs="list",
        features="object",
    ),  # fmt: skip
    shape(
        "partition",
        "A topic partition of the image.",
        topic="str",
        topicId="str",
        partition="int",
        leader="int",
        leaderEpoch="int",
        partitionEpoch="int",
        replicas="list",
        isr="list",
        elr="list",
        lastKnownElr="list",
        addingReplicas="list",
        removingReplicas="list",
        directories="list",
        leaderRecoveryState="int",
    ),  # fmt: skip
    shape("feature", "A finalized feature level.", name="str", level="int"),
    shape(
        "controller",
        "A registered controller.",
        id="int",
        incarnationId="str",
        endpoints="list",
        zkMigrationReady="bool",
    ),  # fmt: skip
    shape("voter", "A voter.", id="int", directoryId="str|null", endpoints="list", kraftVersion="list|null"),
    shape("topic", "A topic.", name="str", topicId="str", partitions="int"),
    shape("config", "A config entry.", resourceType="str", resourceName="str", name="str", value="str|null"),
    shape(
        "acl",
        "An ACL.",
        id="str",
        resourceType="str",
        resourceName="str",
        patternType="str",
        principal="str",
        host="str",
        operation="str",
        permission="str",
    ),  # fmt: skip
    shape("quota", "A client quota.", entity="object", key="str", value="number"),
    shape(
        "producerIds", "The next producer id block.", brokerId="int", brokerEpoch="int", nextProducerId="int"
    ),
    shape(
        "delegationToken",
        "A delegation token (never its HMAC).",
        tokenId="str",
        owner="str",
        requester="str",
        renewers="list",
        issueTimestamp="int",
        maxTimestamp="int",
        expirationTimestamp="int",
    ),  # fmt: skip
    shape(
        "scramUser", "A SCRAM user (never its salt or keys).", name="str", mechanism="str", iterations="int"
    ),
    shape(
        "event",
        "A change between two offsets (metadata diff); its own data in further fields.",
        open_=True,
        offset="int",
        kind="str",
        subject="str",
        detail="str",
    ),  # fmt: skip
    FINDING,
    shape(
        "summary",
        "The image's offset and size, the findings (errors decide exit 1); diff: the events.",
        optional=("events",),
        offset="int",
        topics="int",
        brokers="int",
        events="int",
        findings="int",
        errors="int",
    ),  # fmt: skip
]

# --------------------------------------------------------------------------- ZooKeeper and groups

CLUSTER = shape(
    "cluster",
    "The cluster: id, controller, broker count (cluster-id: the id alone).",
    optional=(
        "controller", "controllerEpoch", "controllerSince", "brokers", "kafkaVersionHint", "librdkafka"
    ),
    clusterId="str|null", controller="int|null", controllerEpoch="int|null", controllerSince="str|null",
    brokers="int", kafkaVersionHint="str|null", librdkafka="object|null",
)  # fmt: skip
TOPIC_PARTITION = shape(
    "partition",
    "A topic partition as ZooKeeper, a live broker or a KRaft metadata log describes it (cluster/view.py): "
    "null where the source does not say (ZooKeeper has no ELR); statuses as kafka-topics decides them. "
    "ZooKeeper adds broker (Kafka 0.7 numbers partitions per broker), controllerEpoch and layout; a "
    "metadata log adds topicId, partitionEpoch, directories and leaderRecoveryState; --sizes each "
    "replica's bytes on disk by broker id.",
    optional=(
        "broker", "controllerEpoch", "layout", "topicId", "partitionEpoch", "directories",
        "leaderRecoveryState", "sizes",
    ),
    topic="str", partition="int", leader="int|null", replicas="list", isr="list|null", elr="list|null",
    lastKnownElr="list|null", addingReplicas="list", removingReplicas="list", leaderEpoch="int|null",
    minIsr="int|null", underReplicated="bool", underMinIsr="bool", offline="bool", reassigning="bool",
    statuses="list", broker="int|null", controllerEpoch="int|null", layout="str", topicId="str",
    partitionEpoch="int", directories="list", leaderRecoveryState="int", sizes="object",
)  # fmt: skip
CLUSTER_BROKER = shape(
    "broker",
    "A broker: as registered in /brokers/ids (ZooKeeper: jmxPort to kafkaVersionHint), or as a live "
    "cluster (DescribeCluster) or a metadata log describes it (state: fenced, unfenced, "
    "controlled-shutdown; null live).",
    optional=(
        "jmxPort", "version", "timestamp", "registeredAt", "layout", "kafkaVersionHint", "state"
    ),
    id="int", host="str|null", port="int|null", endpoints="list", rack="str|null", jmxPort="int|null",
    version="int|null", timestamp="int|null", registeredAt="str|null", layout="str",
    kafkaVersionHint="str|null", state="str|null",
)  # fmt: skip
QUORUM_KINDS = [
    shape(
        "quorum",
        "The controller quorum as kafka-metadata-quorum --status shows it (DescribeQuorum).",
        clusterId="str|null",
        leaderId="int",
        leaderEpoch="int",
        highWatermark="int",
        maxFollowerLag="int",
        maxFollowerLagTimeMs="int",
        voters="list",
        observers="list",
    ),  # fmt: skip
    shape(
        "replica",
        "A voter or observer of the metadata log, as --replication shows it (timestamps: ms, -1 unknown).",
        nodeId="int",
        directoryId="str|null",
        logEndOffset="int",
        lag="int",
        lastFetchTimestamp="int",
        lastCaughtUpTimestamp="int",
        status="str",
    ),  # fmt: skip
    shape("summary", "Voters and observers.", voters="int", observers="int"),
]
GROUP_KINDS = [
    shape(
        "group",
        "A consumer group: where its offsets live, its live members (list: those registered in ZooKeeper, "
        "null for a Kafka-only group), its state and type as Kafka lists them; describe adds partitions "
        "and lag, describe --state the coordinator, assignor and (--verbose) the KIP-848 epochs.",
        optional=(
            "protocolType",
            "layout",
            "partitions",
            "unownedPartitions",
            "lag",
            "topicLag",
            "notes",
            "state",
            "groupType",
            "assignor",
            "coordinator",
            "coordinatorId",
            "groupEpoch",
            "assignmentEpoch",
        ),
        group="str",
        offsetsIn="str",
        members="int|null",
        protocolType="str|null",
        state="str|null",
        groupType="str|null",
        assignor="str|null",
        coordinator="str|null",
        coordinatorId="int|null",
        groupEpoch="int|null",
        assignmentEpoch="int|null",
        layout="str|null",
        partitions="int",
        unownedPartitions="int",
        lag="int|null",
        topicLag="object",
        notes="list",
    ),  # fmt: skip
    shape(
        "partition",
        "A partition of a group: owner, committed offsets in each store, log start/end and lag.",
        group="str",
        topic="str",
        partition="int",
        broker="int|null",
        owner="str|null",
        zookeeperOffset="int|null",
        kafkaOffset="int|null",
        committed="int|null",
        logStartOffset="int|null",
        logEndOffset="int|null",
        lag="int|null",
        note="str|null",
    ),  # fmt: skip
    shape(
        "member",
        "A member of a group.",
        open_=True,
        group="str",
        consumerId="str",
    ),  # fmt: skip
    shape(
        "assignment",
        "A partition's owner now and in the plan.",
        group="str",
        topic="str",
        partition="int",
        broker="int|null",
        currentOwner="str|null",
        proposedOwner="str|null",
        moves="bool",
    ),  # fmt: skip
    shape(
        "plan",
        "A rebalance plan's totals; a group Kafka coordinates adds the assignor's implementation "
        "(java, librdkafka, broker) and the reasons for both.",
        optional=("implementation", "reasons"),
        group="str",
        strategy="str",
        partitions="int",
        moves="int",
        unassigned="list",
        idleThreads="list",
        idleConsumers="list",
        warnings="list",
        implementation="str",
        reasons="list",
    ),  # fmt: skip
    shape(
        "summary",
        "Groups shown (and those that could not be); a plan's partitions and moves.",
        optional=("failed", "partitions", "moves"),
        groups="int",
        failed="int",
        partitions="int",
        moves="int",
    ),  # fmt: skip
]
WATCH_KINDS = [
    shape(
        "event",
        "A watched event: ts, event, group and its own fields.",
        open_=True,
        ts="str",
        event="str",
        group="str|null",
    ),  # fmt: skip
    shape("summary", "Events printed until the watch ended.", events="int"),
]
MOVE_KINDS = [
    shape(
        "partition",
        "An offset move: both stores before and after, the log's range, the status and why.",
        group="str",
        topic="str",
        partition="int",
        zookeeperOffset="int|null",
        kafkaOffset="int|null",
        offset="int|null",
        zookeeperAfter="int|null",
        kafkaAfter="int|null",
        logStartOffset="int|null",
        logEndOffset="int|null",
        status="str",
        reason="str|null",
    ),  # fmt: skip
    shape("summary", "Moves by status.", stage="str", partitions="int", statuses="object"),
]
DELETE_KINDS = [
    shape(
        "deletion",
        "A group deleted (or to be, or restored by --undo) from one store: what it removes, the status "
        "(would-delete, deleted, refused-live, unknown-group, refused, restored, already-restored) and why.",
        group="str",
        store="str",
        status="str",
        liveMembers="list",
        znodes="int|null",
        offsets="int",
        kept="int",
        reason="str|null",
    ),  # fmt: skip
    shape(
        "summary",
        "Groups by status; the journal written (or undone), null on a dry run.",
        stage="str",
        groups="int",
        statuses="object",
        journal="str|null",
    ),  # fmt: skip
]


# --------------------------------------------------------------------------- transactions

TRANSACTION = shape(
    "transaction",
    "A transactional id as the coordinator's newest __transaction_state record says it.",
    transactionalId="str", coordinatorPartition="int", producerId="int", producerEpoch="int", state="str",
    timeoutMs="int", partitions="list", startTimeMs="int", lastUpdateTimeMs="int", previousProducerId="int",
    nextProducerId="int", clientTransactionVersion="int",
)  # fmt: skip
TXN_PARTITION = shape(
    "partition",
    "A partition's last stable offset and its open transactions (producerId, producerEpoch, "
    "coordinatorEpoch, firstOffset, lastOffset, lastTimestamp).",
    topic="str", partition="int", logEndOffset="int", lastStableOffset="int", recordsBehind="int",
    snapshotOffset="int|null", openTransactions="list",
)  # fmt: skip
TXN_FINDING = shape(
    "finding",
    "A hanging transaction or an anomaly of the producer state or the coordinator, with the "
    "kafka-transactions.sh abort command that clears a hanging one; damage (crc-mismatch: a batch whose "
    "checksum fails, where the broker's recovery cuts the log) with its file and byte position.",
    kind="str", topic="str", partition="int", producerId="int", producerEpoch="int", coordinatorEpoch="int",
    firstOffset="int", lastTimestamp="int", ageMs="int", transactionalId="str|null", recordsBehind="int",
    message="str", abortCommand="str|null", file="str|null", position="int|null",
)  # fmt: skip
TRANSACTIONS_KINDS = {
    "transactions list": [
        TRANSACTION,
        shape("summary", "Ids listed; coordinator partitions read; records the coordinator never writes.",
              transactions="int", coordinatorPartitions="int", errors="int"),
    ],
    "transactions describe": [
        TRANSACTION,
        TXN_PARTITION,
        shape("summary", "Ids and partitions described; transactions open; records the coordinator never "
              "writes and damaged batches (said on stderr).", transactions="int", partitions="int",
              openTransactions="int", errors="int"),
    ],
    "transactions find-hanging": [
        TXN_FINDING,
        shape("summary", "Findings; partitions replayed; coordinator partitions read; transactions open; the "
              "clock used and what said it (--now, a file of the log dirs, or the data's newest timestamp).",
              findings="int", partitions="int", coordinatorPartitions="int", openTransactions="int",
              nowMs="int", clockSource="str"),
    ],
}  # fmt: skip

MIGRATION_DIFF_KINDS = [
    shape(
        "difference",
        "What ZooKeeper and the KRaft image hold differently: the object, its field (null: the whole object "
        "is on one side), the side that holds it (zookeeper, kraft, both), each side's value (null where "
        "absent; a sensitive config's is `<sensitive>`), whether dual write's next full sync repairs it.",
        kind="str",
        subject="str",
        field="str|null",
        side="str",
        zookeeper="str|int|number|list|null",
        kraft="str|int|number|list|null",
        repaired="bool",
        note="str|null",
    ),
    shape(
        "summary",
        "The log dir compared, the migration state it holds, objects compared by kind, ZooKeeper objects "
        "the migration leaves behind, the count of differences, those only ZooKeeper holds, and whether the "
        "comparison passes (after finalizing: nothing only in ZooKeeper; before: in step).",
        logDir="str",
        migrationState="str|null",
        compared="object",
        skipped="list",
        differences="int",
        inStep="bool",
        onlyInZooKeeper="int",
        passes="bool",
    ),
]
