"""The --json object kinds of the commands that read log dirs: dump-log, read, validate, truncate,
offsets-at, retention, scan, replicas diff, tiered audit (render/contract.py puts them together)."""

from __future__ import annotations

from kafka_tools.render.json_kinds import PARTITION_REF, shape

# --------------------------------------------------------------------------- dump-log and read

BATCH = shape(
    "batch",
    "A record batch (magic 2), DumpLogSegments' batch line.",
    file="str", position="int", baseOffset="int", lastOffset="int", count="int", size="int", magic="int",
    crc="int", computedCrc="int", isValid="bool", compressCodec="str", timestampType="str",
    baseTimestamp="int", maxTimestamp="int", partitionLeaderEpoch="int", producerId="int",
    producerEpoch="int", baseSequence="int", lastSequence="int", isTransactional="bool", isControl="bool",
    deleteHorizonMs="int|null", attributes="int",
)  # fmt: skip
RECORD = shape(
    "record",
    "A record of a batch (--deep-iteration); key, value and headers with --print-data-log.",
    optional=("headers", "key", "value", "control", "payload"),
    file="str", batchPosition="int", offset="int", timestamp="int", timestampType="str", keySize="int",
    valueSize="int", sequence="int", headerKeys="list", headers="list", key="str|object|null",
    value="str|object|null", control="object", payload="object",
)  # fmt: skip
MESSAGE = shape(
    "message",
    "A message of a v0/v1 message set or a Kafka 0.7 file (inner: inside a compressed wrapper).",
    optional=("timestampType", "timestamp", "keySize", "key", "value", "nextOffset", "position", "offset",
              "magic", "size", "crc", "computedCrc", "isValid", "compressCodec", "attributes", "valueSize"),
    file="str", position="int", offset="int", inner="bool", magic="int", size="int", crc="int",
    computedCrc="int", isValid="bool", compressCodec="str", attributes="int", timestampType="str",
    timestamp="int", keySize="int", valueSize="int", key="str|object|null", value="str|object|null",
    nextOffset="int",
)  # fmt: skip
PROBLEM = shape(
    "problem",
    "What the decoder met in a file while printing it (bad CRC, cut or garbage tail …) at a byte position; "
    "fatal: reading stopped there. Not a `finding`: no check judged it (no severity, no repair advice), "
    "but its shared fields (file, position, offset, kind, message) are a finding's.",
    file="str", position="int", offset="int|null", kind="str", fatal="bool", message="str",
)  # fmt: skip
FILE = shape(
    "file",
    "A file begins: its kind and the base offset its name gives (0 for a log not named by offset).",
    file="str", kind="str", baseOffset="int|null", size="int",
)  # fmt: skip
FILE_SUMMARY = shape(
    "file-summary",
    "A file ends: its entries and records (null: compressed v0/v1 wrappers not opened without --deep).",
    file="str", kind="str", entries="int", records="int|null", size="int", validBytes="int",
    trailingBytes="int", errors="int", unknownRecords="int",
)  # fmt: skip
FILE_ERROR = shape(
    "error",
    "A file that could not be read (missing, unreadable, not a Kafka file): said on stderr too.",
    file="str", message="str", exitCode="int",
)  # fmt: skip
DUMP_SUMMARY = shape(
    "summary",
    "The last line: the files' counts added up, the files that could not be read, the exit code.",
    files="int", unreadable="int", entries="int", records="int|null", errors="int", unknownRecords="int",
    exitCode="int",
)  # fmt: skip
INDEX_ENTRY = shape(
    "index-entry",
    "An .index/.timeindex entry.",
    optional=("offset", "position", "timestamp"),
    open_=True,
    file="str",
)
SIDE_FILE_KINDS = [
    shape(
        "file-header",
        "A side file's header: its version (a snapshot's: and its CRCs).",
        optional=("crc", "computedCrc"),
        open_=True,
        file="str",
        version="int",
        crc="int",
        computedCrc="int",
    ),  # fmt: skip
    shape(
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
    shape(
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
    shape(
        "checkpoint-entry",
        "A line of a checkpoint file.",
        optional=("topic", "partition", "offset", "epoch", "startOffset"),
        open_=True,
        file="str",
    ),
    shape(
        "property", "A key of meta.properties or partition.metadata.", file="str", key="str", value="str|int"
    ),
    INDEX_ENTRY,
    shape("quorum-state", "A KRaft quorum-state file.", open_=True, file="str"),
    shape(
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
NOTE = shape(
    "note",
    "A line said on stderr by a reader with no finding of its own to say it with (read, offsets-at): "
    "severity error (counted in the summary's errors and the exit code) or warning (an index not used …).",
    severity="str", message="str",
)  # fmt: skip


READ_SUMMARY = shape("summary", "What `read` printed.", entries="int", warnings="int", errors="int")

# --------------------------------------------------------------------------- validate, truncate, offsets-at

FINDING = shape(
    "finding",
    "A check that failed (validate, scan, metadata): file, byte position, offset, kind, severity.",
    file="str", severity="str", kind="str", position="int|null", offset="int|null", message="str",
    expected="int|str|null", actual="int|str|null", repairable="bool",
)  # fmt: skip
VALIDATE_PARTITION = shape(
    "partition",
    "A partition directory checked: topic, partition, its directory's name and path.",
    topic="str|null", partition="int|null", dir="str", logDir="str", path="str", segments="int",
    bytes="int", batches="int", logEndOffset="int|null", tailBytes="int", errors="int",
    unreadable="int", status="str", repair="str",
)  # fmt: skip
VALIDATE_SUMMARY = shape(
    "summary",
    "Counts over everything checked and the verdict line.",
    partitions="int", segments="int", bytes="int", batches="int", records="int", errors="int",
    warnings="int", infos="int", tailBytes="int", corrupt="bool", allRepairable="bool", unreadable="int",
    verdict="str", inFlight="int",
)  # fmt: skip
TRUNCATE_KINDS = [
    shape(
        "plan",
        "What the broker's recovery would do to a partition.",
        **PARTITION_REF,
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
    shape("applied", "A plan done, with its backup.", **PARTITION_REF, backup="str", manifest="str"),
    shape("refused", "A plan refused, and why.", **PARTITION_REF, reason="str"),
    shape("resumed", "An interrupted repair finished from its manifest.", **PARTITION_REF, manifest="str"),
    shape("unreadable", "A path or partition left alone.", **PARTITION_REF, reason="str"),
    shape("undo", "One file restored by --undo.", action="str"),
    shape(
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
    shape(
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
    shape(
        "summary",
        "Partitions answered and failed; log dirs unreadable.",
        partitions="int",
        failed="int",
        unreadable="int",
    ),
]

# --------------------------------------------------------------------------- retention

RETENTION_KINDS = [
    shape(
        "partition",
        "A partition's retention preview: the rule, the settings and their sources, what goes.",
        **PARTITION_REF,
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
    shape(
        "segment",
        "A segment: deleted or kept, and why.",
        **PARTITION_REF,
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
    shape(
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

SCAN_KINDS = [
    FINDING,
    shape(
        "partition",
        "A partition scanned (a file given on its own: topic and partition null).",
        open_=True,
        **PARTITION_REF,
    ),
    shape("commit", "An offset commit --offsets-topic replays.", open_=True),
    shape("table", "A table written.", name="str", path="str", format="str", rows="int|null"),
    shape("match", "A record a question matched.", open_=True),
    shape("row", "A row of --sql: its columns under `row`.", row="object"),
    shape("summary", "Counts over the scan.", open_=True),
]

REPLICAS_KINDS = [
    shape(
        "replica",
        "One copy of the partition: offsets, checkpoints, epoch histories, its KIP-966 rank.",
        replica="str", path="str", brokerId="int|null", logStartOffset="int|null", logEndOffset="int|null",
        highWatermark="int|null", recoveryPoint="int|null", leaderEpochs="list|null", batchEpochs="list|null",
        lastEpoch="int|null", magic="int|null", segments="int", inFlight="bool", rank="int",
    ),
    shape(
        "comparison",
        "Two replicas compared: where they first differ and the ranges that differ.",
        replicas="list", status="str", method="str", commonStartOffset="int|null",
        commonEndOffset="int|null", firstDifference="int|null", epochsPartAt="int|null", ranges="list",
        entriesCompared="int",
    ),
    shape(
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
    shape(
        "summary",
        "The partition's verdict, the replicas ranked as KIP-966 would keep them (status unreadable: a "
        "replica could not be read, said in an error object; topic and partition null).",
        topic="str|null", partition="int|null", replicas="int", status="str", firstDifference="int|null",
        ranking="list", newEpoch="int|null", entriesCompared="int",
    ),
]  # fmt: skip

TIERED_KINDS = [
    shape(
        "partition",
        "A user partition's remote state, replayed from __remote_log_metadata.",
        topic="str", partition="int", topicId="str", copyStarted="int", copyFinished="int",
        deleteStarted="int", deletedSegments="int", remoteStart="int|null", remoteEnd="int|null",
        remoteBytes="int", localStart="int|null", deleteState="str|null", events="int",
        storedSegments="int|null", findings="int",
    ),
    shape(
        "finding",
        "Something wrong with a partition's remote segments (kind: illegal-transition, copy-not-finished, "
        "gap, overlap, epoch-lineage, missing-in-store, leaked-files, ...), or a __remote_log_metadata "
        "segment damaged (crc-mismatch, metadata-unreadable: where is the file, position the byte, offset "
        "the batch's base offset).",
        kind="str", severity="str", topic="str|null", partition="int|null", segmentId="str|null",
        startOffset="int|null", endOffset="int|null", where="str|null", position="int|null",
        offset="int|null", message="str",
    ),
    shape(
        "summary",
        "Partitions audited, records replayed, findings.",
        partitions="int", metadataPartitions="int", records="int", findings="int", errors="int",
    ),
]  # fmt: skip
