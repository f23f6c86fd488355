"""The view (cluster/view.py) of a KRaft metadata image replayed offline (kafka_tools/metadata/): the
same partitions, statuses and brokers the live cluster had at the image's offset."""

from __future__ import annotations

from kafka_tools.cluster.view import BrokerView, ClusterView, PartitionView
from kafka_tools.metadata.image import NO_LEADER, Image
from kafka_tools.metadata.load import MetadataLoad

MIN_ISR = "min.insync.replicas"
_TOPIC, _BROKER = 2, 4  # ConfigResource.Type ids


def min_isr_of(img: Image, topic: str) -> int | None:
    """The topic's override, else the cluster-wide dynamic default (broker ""); None when neither is in
    the log (a broker's server.properties is not)."""
    for key in ((_TOPIC, topic), (_BROKER, "")):
        value = img.configs.get(key, {}).get(MIN_ISR)
        if value is not None and value.isdigit():
            return int(value)
    return None


def partitions_from_image(img: Image, topics: list[str] | None = None) -> list[PartitionView]:
    """Every partition of `topics` (all when None), by topic name then partition."""
    live = {b.broker_id for b in img.brokers.values() if not b.fenced}
    out = []
    for topic in sorted(img.topics.values(), key=lambda t: t.name):
        if topics is not None and topic.name not in topics:
            continue
        min_isr = min_isr_of(img, topic.name)
        for p in sorted(topic.partitions.values(), key=lambda p: p.partition_id):
            leader = None if p.leader == NO_LEADER else p.leader
            out.append(
                PartitionView(
                    topic=topic.name,
                    partition=p.partition_id,
                    leader=leader,
                    replicas=list(p.replicas),
                    isr=list(p.isr),
                    leader_epoch=p.leader_epoch,
                    elr=list(p.elr),
                    last_known_elr=list(p.last_known_elr),
                    adding=list(p.adding_replicas),
                    removing=list(p.removing_replicas),
                    min_isr=min_isr,
                    live_leader=leader in live,
                    extra={
                        "topicId": topic.topic_id,
                        "partitionEpoch": p.partition_epoch,
                        "directories": list(p.directories),
                        "leaderRecoveryState": p.leader_recovery_state,
                    },
                )
            )
    return out


def cluster_from_image(load: MetadataLoad) -> ClusterView:
    """Brokers as registered (fenced ones too, with their state); the controller is the raft leader."""
    img = load.image
    brokers = []
    for b in sorted(img.brokers.values(), key=lambda b: b.broker_id):
        first = b.endpoints[0] if b.endpoints else None
        state = "controlled-shutdown" if b.in_controlled_shutdown else "fenced" if b.fenced else "unfenced"
        brokers.append(
            BrokerView(
                id=b.broker_id,
                host=first.host if first else None,
                port=first.port if first else None,
                rack=b.rack,
                state=state,
                endpoints=[f"{e.name}://{e.host}:{e.port}" for e in b.endpoints],
            )
        )
    return ClusterView(
        cluster_id=load.node.meta.cluster_id if load.node.meta else None,
        controller=img.raft_leader,
        brokers=brokers,
        source=f"metadata log {load.log_dir} at offset {img.offset}",
    )
