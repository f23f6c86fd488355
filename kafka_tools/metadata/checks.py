"""What an operator checks before trusting a copied KRaft log dir: does the log dir hold the partitions
the image says this node hosts, does the image know every partition directory (a deleted topic's
directory left behind; `partition.metadata` topic ids against the image's; a partition whose replicas
no longer include this node), and is the node in meta.properties among the registered brokers,
controllers or voters.

The directories a 3.7+ / 4.x broker sets aside as stray at its next start (LogManager's
isStrayReplica: the topic id not in the image, or the node not among the partition's replicas, renamed
`<topic>-<partition>.<id>-stray`) are the ones flagged `unknown-topic-dir`, `unknown-partition-dir`,
`topic-id-mismatch`, `no-topic-id` (isStrayKraftReplica: no `partition.metadata`) or `not-a-replica`;
checked against the cluster's current image (a controller's log dir), not the stale one of a broker that
was down."""

from __future__ import annotations

from pathlib import Path

from kafka_tools.format.checkpoints import CheckpointError, read_partition_metadata
from kafka_tools.format.kinds import partition_of
from kafka_tools.log.checks.findings import Finding, Severity
from kafka_tools.log.files.discover import partition_dirs
from kafka_tools.metadata.image import MIGRATING_DIRECTORY, Image
from kafka_tools.metadata.load import MetadataLoad
from kafka_tools.metadata.node_files import read_node_files

# DirectoryId's reserved ids: UNASSIGNED, LOST, MIGRATING; a partition with one of them lives in
# whichever log dir the broker chose, so any log dir may hold it.
RESERVED_DIRECTORIES = frozenset(
    {"AAAAAAAAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAQ", "AAAAAAAAAAAAAAAAAAAAAg"}
)


def _partition_dirs(log_dir: Path) -> list[tuple[Path, str, int]]:
    """The log dir's partition directories as the one partition model lists them (not KRaft's own)."""
    out = []
    for p in partition_dirs(log_dir):
        tp = partition_of(p / "x")
        if tp is not None and not p.name.startswith("__cluster_metadata-"):
            out.append((p, tp[0], tp[1]))
    return out


def _hosted_here(image: Image, node_id: int, directory_id: str | None):
    """(topic, partition) the image places on this node and in this log dir."""
    for topic in image.topics.values():
        for part in topic.partitions.values():
            if node_id not in part.replicas:
                continue
            i = part.replicas.index(node_id)
            where = part.directories[i] if i < len(part.directories) else MIGRATING_DIRECTORY
            if directory_id and where not in RESERVED_DIRECTORIES and where != directory_id:
                continue  # another of the node's log dirs holds it (JBOD)
            yield topic, part


def check_log_dir(load: MetadataLoad, log_dir: Path | None = None) -> list[Finding]:
    """The consistency findings of a log dir against its own image, or of `log_dir` (another node's,
    its node id from its own meta.properties) against `load`'s image."""
    image, findings = load.image, []
    node = load.node if log_dir is None else read_node_files(log_dir)
    log_dir = load.log_dir if log_dir is None else log_dir
    findings += node.findings if node is not load.node else []
    meta = node.meta
    node_id = meta.node_id if meta else None
    name = str(log_dir)
    if node_id is not None:
        voters = {v.voter_id for v in image.voters or ()}
        if load.node.quorum and load.node.quorum.current_voters:  # the image's node knows the quorum
            voters |= set(load.node.quorum.current_voters)
        if node_id not in image.brokers and node_id not in image.controllers and node_id not in voters:
            findings.append(
                Finding(
                    file=str(log_dir / "meta.properties"),
                    kind="node-not-registered",
                    severity=Severity.ERROR,
                    message=f"node {node_id} of meta.properties is neither a registered broker, a controller "
                    "nor a voter in the image",
                )
            )
    present: dict[tuple[str, int], Path] = {}
    for path, topic_name, partition in _partition_dirs(log_dir):
        if path.name.endswith(("-delete", "-stray")):
            continue  # a deleted partition the broker has not removed yet, or one it set aside as stray
        present[(topic_name, partition)] = path
        topic = image.topic_by_name(topic_name)
        if topic is None:
            findings.append(
                Finding(
                    file=str(path),
                    kind="unknown-topic-dir",
                    severity=Severity.ERROR,
                    message=f"topic {topic_name} is not in the image (a deleted topic left behind?)",
                )
            )
            continue
        if partition not in topic.partitions:
            findings.append(
                Finding(
                    file=str(path),
                    kind="unknown-partition-dir",
                    severity=Severity.ERROR,
                    message=f"topic {topic_name} has no partition {partition} in the image",
                )
            )

        meta_file = path / "partition.metadata"
        if not meta_file.exists():
            # LogManager.isStrayKraftReplica (3.7+): written before any record, so a log without it
            # most likely never held data; the broker sets it aside as stray at its next start.
            findings.append(
                Finding(
                    file=str(path),
                    kind="no-topic-id",
                    severity=Severity.ERROR,
                    message="no partition.metadata (no topic id): a 3.7+ broker treats the log as stray and "
                    "renames it -stray at its next start",
                )
            )
            continue
        if meta_file.is_file():
            try:
                topic_id = read_partition_metadata(meta_file).get("topic_id")
            except (CheckpointError, OSError) as exc:
                findings.append(
                    Finding(
                        file=str(meta_file),
                        kind="malformed-partition-metadata",
                        severity=Severity.ERROR,
                        message=str(exc),
                    )
                )
                continue
            if topic_id and topic_id != topic.topic_id:
                findings.append(
                    Finding(
                        file=str(meta_file),
                        kind="topic-id-mismatch",
                        severity=Severity.ERROR,
                        message=f"topic id {topic_id}, the image's {topic_name} is {topic.topic_id} "
                        "(a directory of an earlier topic of the same name)",
                        expected=topic.topic_id,
                        actual=topic_id,
                    )
                )
                continue
        part = topic.partitions.get(partition)
        if part is not None and node_id is not None and node_id not in part.replicas:
            findings.append(
                Finding(
                    file=str(path),
                    kind="not-a-replica",
                    severity=Severity.ERROR,
                    message=f"node {node_id} is not among {topic_name}-{partition}'s replicas "
                    f"{part.replicas} "
                    "in the image (moved away?)",
                )
            )
    if node_id is not None:
        directory_id = meta.directory_id if meta else None
        for topic, part in _hosted_here(image, node_id, directory_id):
            if (topic.name, part.partition_id) not in present:
                findings.append(
                    Finding(
                        file=name,
                        kind="partition-dir-missing",
                        severity=Severity.ERROR,
                        message=f"{topic.name}-{part.partition_id} has node {node_id} among its replicas "
                        f"{part.replicas} but no directory here",
                    )
                )
    return findings


def read_findings(load: MetadataLoad) -> list[Finding]:
    """What reading and replaying found: unreadable files and records, snapshots without footer, and
    records the image could not take (Kafka's own replay would have stopped on them)."""
    out = list(load.all_findings)
    for inc in load.replayer.inconsistencies:
        out.append(
            Finding(
                file=str(load.partition_dir),
                kind="replay-inconsistency",
                severity=Severity.ERROR,
                message=f"{inc.record_type}: {inc.message}",
                position=None,
                offset=inc.offset,
            )
        )
    unknown = sum(load.replayer.unknown.values())
    if unknown:
        types = ", ".join(f"{n} x{c}" for n, c in sorted(load.replayer.unknown.items()))
        out.append(
            Finding(
                file=str(load.partition_dir),
                kind="unknown-records",
                severity=Severity.WARNING,
                message=f"{unknown} records of a type or version ktool does not know were not applied "
                f"({types})",
            )
        )
    return out
