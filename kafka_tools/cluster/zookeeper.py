"""The view (cluster/view.py) of what ZooKeeper holds: /brokers/topics with their state znodes,
/config/topics for min.insync.replicas, /brokers/ids for the live brokers. ZooKeeper has no ELR and
no leader epoch history: those stay unknown."""

from __future__ import annotations

from kafka_tools.cluster.view import PartitionView
from kafka_tools.zk.layout import Broker as ZkBroker
from kafka_tools.zk.layout import BrokerPartition, Topic

MIN_ISR = "min.insync.replicas"


def partitions_from_zk(
    topics: list[Topic], configs: dict[str, dict[str, str]], brokers: list[ZkBroker] | None
) -> list[PartitionView]:
    """One view per partition; min.insync.replicas is the topic's override (the brokers' own default is
    in their server.properties, which ZooKeeper does not hold: unknown). `brokers` None: no
    /brokers/ids, every leader taken as live."""
    live = None if brokers is None else {b.id for b in brokers}
    out = []
    for topic in topics:
        min_isr = _int(configs.get(topic.name, {}).get(MIN_ISR))
        for p in topic.partitions:
            old = isinstance(p.partition, BrokerPartition)
            state = p.state
            leader = p.leader
            out.append(
                PartitionView(
                    topic=topic.name,
                    partition=p.partition.partition if old else p.partition,
                    leader=None if leader is None or leader < 0 else leader,
                    replicas=list(p.replicas),
                    isr=list(state.isr) if state else None,
                    leader_epoch=state.leader_epoch if state else None,
                    min_isr=min_isr,
                    live_leader=old or live is None or leader in live,
                    extra={
                        "broker": p.partition.broker if old else None,
                        "controllerEpoch": state.controller_epoch if state else None,
                        "layout": topic.layout,
                        "noState": state is None and not old,
                    },
                )
            )
    return out


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().lstrip("-").isdigit() else None
