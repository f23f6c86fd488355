"""The --json contract: every object a command writes, its fields and their JSON types, described once.

What scripts may rely on, in every command:
- one compact JSON object a line (no spaces: `grep '"kind":"crc-mismatch"'` works everywhere), each with
  a `type`;
- the stream ends with a `summary` object; stdout stays empty only when the command failed before it
  began (its one line on stderr says why);
- one shape per object kind across commands: a field two commands' objects of one `type` share has one
  JSON type; whatever names a partition says `topic` and `partition` (an integer), and, read from a
  log dir, `dir` (the directory's name, `orders-0`) and `path` (partition_fields); a count of errors is
  `errors`, of things that could not be read `unreadable`;
- the fields of each object are those below, of those JSON types (`int|null`: a number or null). A
  field in `optional` may be left out (a v0 message has no timestamp); an `open` object may carry more
  fields (an event's own data).

tests/cli/test_json_contract.py runs every command with --json on fixtures and checks every line here.

Why one module of this size: the JSON Lines contract is one table, every object kind's fields and types
(most of its length), read by the renderers and checked by the contract test; split, a kind's shape
would have two homes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from kafka_tools.errors import missing_line
from kafka_tools.format.kinds import topic_partition

_JSON_TYPES = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "bool": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "list": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
}


@dataclass(frozen=True)
class Kind:
    """One object kind: its `type` value, its fields (name -> `int`, `str|null`, …) and what it says."""

    type: str
    doc: str
    fields: dict[str, str]
    optional: frozenset[str] = field(default_factory=frozenset)
    open: bool = False

    def problems(self, obj: dict[str, Any]) -> list[str]:
        """What in `obj` breaks this kind (empty: it conforms)."""
        out = []
        for name, types in self.fields.items():
            if name not in obj:
                if name not in self.optional:
                    out.append(f"{self.type}: missing field {name!r}")
                continue
            if not any(_JSON_TYPES[t](obj[name]) for t in types.split("|")):
                out.append(f"{self.type}.{name}: {obj[name]!r} is not {types}")
        if not self.open:
            out += [f"{self.type}: undocumented field {name!r}" for name in obj if name not in self.fields]
        return out


def _kind(type_: str, doc: str, optional: tuple[str, ...] = (), open_: bool = False, **fields: str) -> Kind:
    return Kind(type_, doc, {"type": "str", **fields}, frozenset(optional), open_)


def partition_fields(path: str | os.PathLike | None, dir_name: str | None = None) -> dict[str, Any]:
    """How every object names a partition directory: `topic`, `partition` (an integer), `dir` (its name,
    `orders-0`) and `path`; null where unknown (a file given on its own, a path that was not read)."""
    if path is None:
        return {"topic": None, "partition": None, "dir": dir_name, "path": None}
    text = os.fspath(path)
    name = dir_name if dir_name is not None else os.path.basename(text.rstrip("/"))
    parsed = topic_partition(name)
    return {
        "topic": parsed[0] if parsed else None,
        "partition": parsed[1] if parsed else None,
        "dir": name,
        "path": text,
    }


_PARTITION_REF = {"topic": "str|null", "partition": "int|null", "dir": "str|null", "path": "str|null"}

# --------------------------------------------------------------------------- dump-log and read

BATCH = _kind(
    "batch",
    "A record batch (magic 2), DumpLogSegments' batch line.",
    file="str", position="int", baseOffset="int", lastOffset="int", count="int", size="int", magic="int",
    crc="int", computedCrc="int", isValid="bool", compressCodec="str", timestampType="str",
    baseTimestamp="int", maxTimestamp="int", partitionLeaderEpoch="int", producerId="int",
    producerEpoch="int", baseSequence="int", lastSequence="int", isTransactional="bool", isControl="bool",
    deleteHorizonMs="int|null", attributes="int",
)  # fmt: skip
RECORD = _kind(
    "record",
    "A record of a batch (--deep-iteration); key, value and headers with --print-data-log.",
    optional=("headers", "key", "value", "control", "payload"),
    file="str", batchPosition="int", offset="int", timestamp="int", timestampType="str", keySize="int",
    valueSize="int", sequence="int", headerKeys="list", headers="list", key="str|object|null",
    value="str|object|null", control="object", payload="object",
)  # fmt: skip
MESSAGE = _kind(
    "message",
    "A message of a v0/v1 message set or a Kafka 0.7 file (inner: inside a compressed wrapper).",
    optional=("timestampType", "timestamp", "keySize", "key", "value", "nextOffset", "position", "offset",
              "magic", "size", "crc", "computedCrc", "isValid", "compressCodec", "attributes", "valueSize"),
    file="str", position="int", offset="int", inner="bool", magic="int", size="int", crc="int",
    computedCrc="int", isValid="bool", compressCodec="str", attributes="int", timestampType="str",
    timestamp="int", keySize="int", valueSize="int", key="str|object|null", value="str|object|null",
    nextOffset="int",
)  # fmt: skip
PROBLEM = _kind(
    "problem",
    "What the decoder met in a file while printing it (bad CRC, cut or garbage tail …) at a byte position; "
    "fatal: reading stopped there. Not a `finding`: no check judged it (no severity, no repair advice), "
    "but its shared fields (file, position, offset, kind, message) are a finding's.",
    file="str", position="int", offset="int|null", kind="str", fatal="bool", message="str",
)  # fmt: skip
FILE = _kind(
    "file",
    "A file begins: its kind and the base offset its name gives (0 for a log not named by offset).",
    file="str", kind="str", baseOffset="int|null", size="int",
)  # fmt: skip
FILE_SUMMARY = _kind(
    "file-summary",
    "A file ends: its entries and records (null: compressed v0/v1 wrappers not opened without --deep).",
    file="str", kind="str", entries="int", records="int|null", size="int", validBytes="int",
    trailingBytes="int", errors="int", unknownRecords="int",
)  # fmt: skip
FILE_ERROR = _kind(
    "error",
    "A file that could not be read (missing, unreadable, not a Kafka file): said on stderr too.",
    file="str", message="str", exitCode="int",
)  # fmt: skip
DUMP_SUMMARY = _kind(
    "summary",
    "The last line: the files' counts added up, the files that could not be read, the exit code.",
    files="int", unreadable="int", entries="int", records="int|null", errors="int", unknownRecords="int",
    exitCode="int",
)  # fmt: skip
INDEX_ENTRY = _kind(
    "index-entry",
    "An .index/.timeindex entry.",
    optional=("offset", "position", "timestamp"),
    open_=True,
    file="str",
)
SIDE_FILE_KINDS = [
    _kind(
        "file-header",
        "A side file's header: its version (a snapshot's: and its CRCs).",
        optional=("crc", "computedCrc"),
        open_=True,
        file="str",
        version="int",
        crc="int",
        computedCrc="int",
    ),  # fmt: skip
    _kind(
        "producer-state",
        "A producer .snapshot entry.",
        file="str",
        producerId="int",
        producerEpoch="int",
        lastSequence="int",
        lastOffset="int",
        offsetDelta="int",
        timestamp="int",
        coordinatorEpoch="int",
        currentTxnFirstOffset="int",
    ),  # fmt: skip
    _kind(
        "aborted-txn",
        "A .txnindex entry.",
        file="str",
        slot="int",
        version="int",
        producerId="int",
        firstOffset="int",
        lastOffset="int",
        lastStableOffset="int",
    ),  # fmt: skip
    _kind(
        "checkpoint-entry",
        "A line of a checkpoint file.",
        optional=("topic", "partition", "offset", "epoch", "startOffset"),
        open_=True,
        file="str",
    ),
    _kind(
        "property", "A key of meta.properties or partition.metadata.", file="str", key="str", value="str|int"
    ),
    INDEX_ENTRY,
    _kind("quorum-state", "A KRaft quorum-state file.", open_=True, file="str"),
    _kind(
        "remote-segment",
        "A remote segment of a 3.6/3.7 remote_log_snapshot (file-header: its metadata partition and offset).",
        file="str",
        position="int",
        segmentId="str",
        startOffset="int",
        endOffset="int",
        brokerId="int",
        maxTimestampMs="int",
        eventTimestampMs="int",
        segmentLeaderEpochs="object",
        segmentSizeInBytes="int",
        customMetadata="str|null",
        state="str",
        txnIndexEmpty="bool",
    ),  # fmt: skip
]
NOTE = _kind(
    "note",
    "A line said on stderr by a reader with no finding of its own to say it with (read, offsets-at): "
    "severity error (counted in the summary's errors and the exit code) or warning (an index not used …).",
    severity="str", message="str",
)  # fmt: skip


def note_object(message: str, error: bool) -> dict[str, Any]:
    return {"type": "note", "severity": "error" if error else "warning", "message": message}


def error_object(file: str, exc: Any) -> dict[str, Any]:
    """A file or directory that could not be read (`exc` a KtoolError), as stderr said it."""
    return {"type": "error", "file": file, "message": str(exc), "exitCode": exc.exit_code}


def missing_object(path: str) -> dict[str, Any]:
    """A path given that is not there (exit 3), as stderr says it."""
    return {"type": "error", "file": path, "message": missing_line(path), "exitCode": 3}


READ_SUMMARY = _kind("summary", "What `read` printed.", entries="int", warnings="int", errors="int")

# --------------------------------------------------------------------------- validate, truncate, offsets-at

FINDING = _kind(
    "finding",
    "A check that failed (validate, scan, metadata): file, byte position, offset, kind, severity.",
    file="str", severity="str", kind="str", position="int|null", offset="int|null", message="str",
    expected="int|str|null", actual="int|str|null", repairable="bool",
)  # fmt: skip
VALIDATE_PARTITION = _kind(
    "partition",
    "A partition directory checked: topic, partition, its directory's name and path.",
    topic="str|null", partition="int|null", dir="str", logDir="str", path="str", segments="int",
    bytes="int", batches="int", logEndOffset="int|null", tailBytes="int", errors="int",
    unreadable="int", status="str", repair="str",
)  # fmt: skip
VALIDATE_SUMMARY = _kind(
    "summary",
    "Counts over everything checked and the verdict line.",
    partitions="int", segments="int", bytes="int", batches="int", records="int", errors="int",
    warnings="int", infos="int", tailBytes="int", corrupt="bool", allRepairable="bool", unreadable="int",
    verdict="str", inFlight="int",
)  # fmt: skip
TRUNCATE_KINDS = [
    _kind(
        "plan",
        "What the broker's recovery would do to a partition.",
        **_PARTITION_REF,
        noop="bool",
        repair="str",
        unrepairable="list",
        truncate="object|null",
        deleteSegments="list",
        rebuildIndexes="list",
        deleteSnapshots="list",
        leaderEpochCheckpoint="object|null",
        lostValidEntries="int",
        newLogEndOffset="int|null",
        indexIntervalBytes="int",
    ),  # fmt: skip
    _kind("applied", "A plan done, with its backup.", **_PARTITION_REF, backup="str", manifest="str"),
    _kind("refused", "A plan refused, and why.", **_PARTITION_REF, reason="str"),
    _kind("resumed", "An interrupted repair finished from its manifest.", **_PARTITION_REF, manifest="str"),
    _kind("unreadable", "A path or partition left alone.", **_PARTITION_REF, reason="str"),
    _kind("undo", "One file restored by --undo.", action="str"),
    _kind(
        "summary",
        "Partitions planned, applied, refused, unreadable (undo: undoActions).",
        optional=("partitions", "applied", "refused", "unreadable", "dryRun", "undoActions"),
        partitions="int",
        applied="int",
        refused="int",
        unreadable="int",
        dryRun="bool",
        undoActions="int",
    ),  # fmt: skip
]
OFFSETS_AT_KINDS = [
    _kind(
        "offset",
        "A partition's offset at the time asked (offset null: no record at or after it; error: not "
        "answered).",
        logDir="str",
        topic="str",
        partition="int",
        offset="int|null",
        time="int",
        error="str|null",
    ),  # fmt: skip
    NOTE,
    FILE_ERROR,
    _kind(
        "summary",
        "Partitions answered and failed; log dirs unreadable.",
        partitions="int",
        failed="int",
        unreadable="int",
    ),
]

# --------------------------------------------------------------------------- retention

RETENTION_KINDS = [
    _kind(
        "partition",
        "A partition's retention preview: the rule, the settings and their sources, what goes.",
        **_PARTITION_REF,
        unreadableReason="str|null",
        rule="str|null",
        ruleVersions="str|null",
        ruleBasis="str|null",
        ruleWhy="str|null",
        settings="object|null",
        logStartOffset="int|null",
        newLogStartOffset="int|null",
        logEndOffset="int|null",
        highWatermark="int|null",
        highWatermarkSource="str|null",
        segments="int",
        segmentsDeleted="int",
        bytesFreed="int",
        recordsFreed="int",
        segmentsKept="int",
        bytesKept="int",
        rolled="bool",
        notes="list",
        warnings="list",
        inconsistent="list",
        compaction="object|null",
    ),  # fmt: skip
    _kind(
        "segment",
        "A segment: deleted or kept, and why.",
        **_PARTITION_REF,
        baseOffset="int",
        file="str",
        size="int",
        mtimeMs="int",
        active="bool",
        largestTimestamp="int|null",
        timestampSource="str|null",
        action="str",
        deletedBy="str|null",
        reason="str",
    ),  # fmt: skip
    FILE_ERROR,
    _kind(
        "summary",
        "What would be deleted, over every partition (unreadable: partitions and paths not read).",
        now="int",
        partitions="int",
        partitionsWithDeletes="int",
        segmentsDeleted="int",
        bytesFreed="int",
        recordsFreed="int",
        unreadable="int",
        inconsistent="int",
    ),  # fmt: skip
]

# --------------------------------------------------------------------------- metadata (KRaft)

METADATA_KINDS = [
    _kind(
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
    _kind(
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
    _kind(
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
    _kind("feature", "A finalized feature level.", name="str", level="int"),
    _kind(
        "controller",
        "A registered controller.",
        id="int",
        incarnationId="str",
        endpoints="list",
        zkMigrationReady="bool",
    ),  # fmt: skip
    _kind("voter", "A voter.", id="int", directoryId="str|null", endpoints="list", kraftVersion="list|null"),
    _kind("topic", "A topic.", name="str", topicId="str", partitions="int"),
    _kind("config", "A config entry.", resourceType="str", resourceName="str", name="str", value="str|null"),
    _kind(
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
    _kind("quota", "A client quota.", entity="object", key="str", value="number"),
    _kind(
        "producerIds", "The next producer id block.", brokerId="int", brokerEpoch="int", nextProducerId="int"
    ),
    _kind(
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
    _kind(
        "scramUser", "A SCRAM user (never its salt or keys).", name="str", mechanism="str", iterations="int"
    ),
    _kind(
        "event",
        "A change between two offsets (metadata diff); its own data in further fields.",
        open_=True,
        offset="int",
        kind="str",
        subject="str",
        detail="str",
    ),  # fmt: skip
    FINDING,
    _kind(
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

CLUSTER = _kind(
    "cluster",
    "The cluster: id, controller, broker count (cluster-id: the id alone).",
    optional=(
        "controller", "controllerEpoch", "controllerSince", "brokers", "kafkaVersionHint", "librdkafka"
    ),
    clusterId="str|null", controller="int|null", controllerEpoch="int|null", controllerSince="str|null",
    brokers="int", kafkaVersionHint="str|null", librdkafka="object|null",
)  # fmt: skip
TOPIC_PARTITION = _kind(
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
CLUSTER_BROKER = _kind(
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
    _kind(
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
    _kind(
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
    _kind("summary", "Voters and observers.", voters="int", observers="int"),
]
GROUP_KINDS = [
    _kind(
        "group",
        "A consumer group: where its offsets live, its live members (list: those registered in ZooKeeper, "
        "null for a Kafka-only group); describe adds partitions and lag.",
        optional=(
            "protocolType",
            "layout",
            "partitions",
            "unownedPartitions",
            "lag",
            "topicLag",
            "notes",
        ),
        group="str",
        offsetsIn="str",
        members="int|null",
        protocolType="str|null",
        layout="str|null",
        partitions="int",
        unownedPartitions="int",
        lag="int|null",
        topicLag="object",
        notes="list",
    ),  # fmt: skip
    _kind(
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
    _kind(
        "member",
        "A member of a group.",
        open_=True,
        group="str",
        consumerId="str",
    ),  # fmt: skip
    _kind(
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
    _kind(
        "plan",
        "A rebalance plan's totals.",
        group="str",
        strategy="str",
        partitions="int",
        moves="int",
        unassigned="list",
        idleThreads="list",
        idleConsumers="list",
        warnings="list",
    ),  # fmt: skip
    _kind(
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
    _kind(
        "event",
        "A watched event: ts, event, group and its own fields.",
        open_=True,
        ts="str",
        event="str",
        group="str|null",
    ),  # fmt: skip
    _kind("summary", "Events printed until the watch ended.", events="int"),
]
MOVE_KINDS = [
    _kind(
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
    _kind("summary", "Moves by status.", stage="str", partitions="int", statuses="object"),
]
DELETE_KINDS = [
    _kind(
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
    _kind(
        "summary",
        "Groups by status; the journal written (or undone), null on a dry run.",
        stage="str",
        groups="int",
        statuses="object",
        journal="str|null",
    ),  # fmt: skip
]
SCAN_KINDS = [
    FINDING,
    _kind(
        "partition",
        "A partition scanned (a file given on its own: topic and partition null).",
        open_=True,
        **_PARTITION_REF,
    ),
    _kind("commit", "An offset commit --offsets-topic replays.", open_=True),
    _kind("table", "A table written.", name="str", path="str", format="str", rows="int|null"),
    _kind("match", "A record a question matched.", open_=True),
    _kind("row", "A row of --sql: its columns under `row`.", row="object"),
    _kind("summary", "Counts over the scan.", open_=True),
]

REPLICAS_KINDS = [
    _kind(
        "replica",
        "One copy of the partition: offsets, checkpoints, epoch histories, its KIP-966 rank.",
        replica="str", path="str", brokerId="int|null", logStartOffset="int|null", logEndOffset="int|null",
        highWatermark="int|null", recoveryPoint="int|null", leaderEpochs="list|null", batchEpochs="list|null",
        lastEpoch="int|null", magic="int|null", segments="int", inFlight="bool", rank="int",
    ),
    _kind(
        "comparison",
        "Two replicas compared: where they first differ and the ranges that differ.",
        replicas="list", status="str", method="str", commonStartOffset="int|null",
        commonEndOffset="int|null", firstDifference="int|null", epochsPartAt="int|null", ranges="list",
        entriesCompared="int",
    ),
    _kind(
        "truncation",
        "What the follower would lose were the leader to lead, as Kafka of that generation truncates.",
        leader="str", follower="str", rule="str", truncateTo="int|null", startOverAt="int|null",
        lostStartOffset="int|null", lostEndOffset="int|null", lostOffsets="int|null",
        lostRecords="int|null", lostBytes="int|null", steps="list", divergentAfter="list",
    ),
    BATCH,
    RECORD,
    MESSAGE,
    NOTE,
    FILE_ERROR,
    _kind(
        "summary",
        "The partition's verdict, the replicas ranked as KIP-966 would keep them (status unreadable: a "
        "replica could not be read, said in an error object; topic and partition null).",
        topic="str|null", partition="int|null", replicas="int", status="str", firstDifference="int|null",
        ranking="list", newEpoch="int|null", entriesCompared="int",
    ),
]  # fmt: skip

TIERED_KINDS = [
    _kind(
        "partition",
        "A user partition's remote state, replayed from __remote_log_metadata.",
        topic="str", partition="int", topicId="str", copyStarted="int", copyFinished="int",
        deleteStarted="int", deletedSegments="int", remoteStart="int|null", remoteEnd="int|null",
        remoteBytes="int", localStart="int|null", deleteState="str|null", events="int",
        storedSegments="int|null", findings="int",
    ),
    _kind(
        "finding",
        "Something wrong with a partition's remote segments (kind: illegal-transition, copy-not-finished, "
        "gap, overlap, epoch-lineage, missing-in-store, leaked-files, ...), or a __remote_log_metadata "
        "segment damaged (crc-mismatch, metadata-unreadable: where is the file, position the byte, offset "
        "the batch's base offset).",
        kind="str", severity="str", topic="str|null", partition="int|null", segmentId="str|null",
        startOffset="int|null", endOffset="int|null", where="str|null", position="int|null",
        offset="int|null", message="str",
    ),
    _kind(
        "summary",
        "Partitions audited, records replayed, findings.",
        partitions="int", metadataPartitions="int", records="int", findings="int", errors="int",
    ),
]  # fmt: skip

# --------------------------------------------------------------------------- transactions

TRANSACTION = _kind(
    "transaction",
    "A transactional id as the coordinator's newest __transaction_state record says it.",
    transactionalId="str", coordinatorPartition="int", producerId="int", producerEpoch="int", state="str",
    timeoutMs="int", partitions="list", startTimeMs="int", lastUpdateTimeMs="int", previousProducerId="int",
    nextProducerId="int", clientTransactionVersion="int",
)  # fmt: skip
TXN_PARTITION = _kind(
    "partition",
    "A partition's last stable offset and its open transactions (producerId, producerEpoch, "
    "coordinatorEpoch, firstOffset, lastOffset, lastTimestamp).",
    topic="str", partition="int", logEndOffset="int", lastStableOffset="int", recordsBehind="int",
    snapshotOffset="int|null", openTransactions="list",
)  # fmt: skip
TXN_FINDING = _kind(
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
        _kind("summary", "Ids listed; coordinator partitions read; records the coordinator never writes.",
              transactions="int", coordinatorPartitions="int", errors="int"),
    ],
    "transactions describe": [
        TRANSACTION,
        TXN_PARTITION,
        _kind("summary", "Ids and partitions described; transactions open; records the coordinator never "
              "writes and damaged batches (said on stderr).", transactions="int", partitions="int",
              openTransactions="int", errors="int"),
    ],
    "transactions find-hanging": [
        TXN_FINDING,
        _kind("summary", "Findings; partitions replayed; coordinator partitions read; transactions open; the "
              "clock used and what said it (--now, a file of the log dirs, or the data's newest timestamp).",
              findings="int", partitions="int", coordinatorPartitions="int", openTransactions="int",
              nowMs="int", clockSource="str"),
    ],
}  # fmt: skip


COMMAND_KINDS: dict[str, list[Kind]] = {
    "dump-log": [
        BATCH,
        RECORD,
        MESSAGE,
        PROBLEM,
        NOTE,
        FILE,
        FILE_SUMMARY,
        FILE_ERROR,
        DUMP_SUMMARY,
        *SIDE_FILE_KINDS,
    ],
    "read": [BATCH, RECORD, MESSAGE, NOTE, FILE_ERROR, READ_SUMMARY],
    "validate": [FINDING, VALIDATE_PARTITION, FILE_ERROR, VALIDATE_SUMMARY],
    "truncate": TRUNCATE_KINDS,
    "offsets-at": OFFSETS_AT_KINDS,
    "retention": RETENTION_KINDS,
    "metadata show": METADATA_KINDS,
    "metadata topics": [TOPIC_PARTITION, *(k for k in METADATA_KINDS if k.type != "partition")],
    "metadata brokers": METADATA_KINDS,
    "metadata diff": METADATA_KINDS,
    "metadata check": METADATA_KINDS,
    "brokers": [CLUSTER_BROKER, CLUSTER, _kind("summary", "Brokers listed.", brokers="int")],
    "quorum": QUORUM_KINDS,
    "topics": [
        TOPIC_PARTITION,
        _kind("summary", "Topics shown; names not found.", topics="int", partitions="int", missing="int"),
    ],
    "cluster-id": [CLUSTER, _kind("summary", "The id was found.", clusterIds="int")],
    "groups list": GROUP_KINDS,
    "groups describe": GROUP_KINDS,
    "groups rebalance-plan": GROUP_KINDS,
    "groups watch": WATCH_KINDS,
    "groups reset-offsets": [*MOVE_KINDS, NOTE],
    "groups delete": DELETE_KINDS,
    "migrate-offsets": MOVE_KINDS,
    "offsets import": MOVE_KINDS,
    "scan": SCAN_KINDS,
    "replicas diff": REPLICAS_KINDS,
    "tiered audit": TIERED_KINDS,
    **TRANSACTIONS_KINDS,
}


def problems(command: str, lines: list[str]) -> list[str]:
    """Every way `lines` (a command's --json stdout) breaks the contract; empty when it keeps it."""
    import json

    from kafka_tools.compact_json import dumps  # the checker only: commands import no json module up front

    kinds = {k.type: k for k in COMMAND_KINDS[command]}
    out = []
    for n, line in enumerate(lines, start=1):
        try:
            obj = json.loads(line)
        except ValueError as exc:
            out.append(f"line {n}: not JSON: {exc}")
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            out.append(f"line {n}: not an object with a type")
            continue
        if dumps(obj) != line:
            out.append(f"line {n}: not compact JSON")
        kind = kinds.get(obj["type"])
        if kind is None:
            out.append(f"line {n}: {command} does not document objects of type {obj['type']!r}")
            continue
        out += [f"line {n}: {p}" for p in kind.problems(obj)]
        if kind.open:  # an open kind's extra fields still keep the one shape and the one count name
            if "problems" in obj:
                out.append(f"line {n}: {obj['type']}: a count of errors is named errors, not problems")
            if isinstance(obj.get("partition"), str):
                out.append(f"line {n}: {obj['type']}.partition: {obj['partition']!r} is not int")
    if lines and not lines[-1].startswith('{"type":"summary"'):
        out.append(f"{command}: the last line is not a summary")
    return out
