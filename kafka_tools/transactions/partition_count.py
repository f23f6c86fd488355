"""How many partitions `__transaction_state` has (transaction.state.log.num.partitions), which says the
partition each transactional id belongs in: from the KRaft metadata of the log dir that holds the
coordinator's partitions when there is one, Kafka's default (50) otherwise."""

from __future__ import annotations

from collections.abc import Iterable

from kafka_tools.errors import KtoolError
from kafka_tools.format.internal_topics import TRANSACTION_STATE
from kafka_tools.log.files.dirs import Partition
from kafka_tools.transactions.coordinator import DEFAULT_TRANSACTION_PARTITIONS

METADATA_PARTITION = "__cluster_metadata-0"


def transaction_partition_count(partitions: Iterable[Partition]) -> int:
    """The topic's partition count in the first KRaft image beside a `__transaction_state-N`; 50 when
    no log dir read has one (a ZooKeeper broker's, or an image that cannot be read)."""
    from kafka_tools.metadata.load import load_image

    seen = set()
    for part in partitions:
        log_dir = part.path.absolute().parent
        if part.topic != TRANSACTION_STATE or log_dir in seen:
            continue
        seen.add(log_dir)
        if not (log_dir / METADATA_PARTITION).is_dir():
            continue
        try:
            topic = load_image(log_dir).image.topic_by_name(TRANSACTION_STATE)
        except KtoolError:
            continue
        if topic is not None and topic.partitions:
            return len(topic.partitions)
    return DEFAULT_TRANSACTION_PARTITIONS
