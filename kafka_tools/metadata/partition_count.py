"""How many partitions an internal topic has, which says the partition each key belongs in:
`__transaction_state` (transaction.state.log.num.partitions: a transactional id's) and
`__remote_log_metadata` (remote.log.metadata.topic.num.partitions: a tiered partition's events). Only what
the files say: the KRaft image of a log dir among those read (built from its metadata log's segments when a
snapshot, which Kafka writes mode 0400, cannot be read by this user). A ZooKeeper broker's log dir does not
hold it, nor an image with a gap: then the count is unknown, said once, and nothing is judged by a guessed
count (Kafka's default, 50, is only a default: a cluster may have set another)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kafka_tools.errors import KtoolError
from kafka_tools.log.files.dirs import Partition

METADATA_PARTITION = "__cluster_metadata-0"


@dataclass(frozen=True, slots=True)
class TopicPartitions:
    """The count, or None with the line that says why it is unknown."""

    count: int | None
    source: str


def internal_partition_count(
    partitions: Iterable[Partition], topic_name: str, option: str, judged: str
) -> TopicPartitions:
    """`topic_name`'s partition count in the KRaft image of the log dirs read (those holding a partition of
    it first); unknown when no image that can be trusted has the topic. `judged` says what goes unchecked
    then, `option` how to give the count."""
    from kafka_tools.metadata.load import load_image

    parts = list(partitions)
    present = sorted({p.partition for p in parts if p.topic == topic_name})
    holders = {p.path.absolute().parent for p in parts if p.topic == topic_name}
    log_dirs = sorted({p.path.absolute().parent for p in parts}, key=lambda d: (d not in holders, d))
    why: list[str] = []
    for log_dir in log_dirs:
        if not (log_dir / METADATA_PARTITION).is_dir():
            continue
        try:
            load = load_image(log_dir)
        except KtoolError as exc:
            why.append(str(exc))
            continue
        missing = load.missing_records()
        if missing:
            why.append(missing)
            continue
        topic = load.image.topic_by_name(topic_name)
        if topic is not None and topic.partitions:
            return TopicPartitions(len(topic.partitions), f"the KRaft metadata in {log_dir}")
    if not present:
        return TopicPartitions(None, "")
    seen = f"{len(present)} present, the highest {topic_name}-{present[-1]}"
    reason = f" ({why[0]})" if why else " (no KRaft metadata log among them, as on a ZooKeeper broker)"
    return TopicPartitions(
        None,
        f"the number of {topic_name} partitions cannot be read from the log dirs{reason}; {seen}: "
        f"{judged} is not checked ({option} N does)",
    )
