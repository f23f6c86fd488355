"""One model of a cluster's partitions and brokers, whatever it was read from, and the statuses and
filters of Kafka's TopicCommand (tools/.../TopicCommand.java `PartitionDescription`), computed here
once so that ZooKeeper, a live broker and an offline metadata log answer alike:

- under-replicated: fewer in-sync replicas than the replication factor (the replicas being added
  during a reassignment not counted);
- under-min-ISR: no leader, or fewer in-sync replicas than min.insync.replicas;
- unavailable (status `offline`): no leader, or a leader that is not a live broker;
- `elr`: eligible leader replicas (KIP-966) are held; `reassigning`: replicas are being added or removed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum


class Filter(Enum):
    """TopicCommand's --under-replicated-partitions, --under-min-isr-partitions, --unavailable-partitions."""

    UNDER_REPLICATED = "under-replicated"
    UNDER_MIN_ISR = "under-min-isr"
    UNAVAILABLE = "unavailable"


@dataclass(slots=True)
class PartitionView:
    """A partition as every source describes it; None: the source does not say (ZooKeeper has no ELR)."""

    topic: str
    partition: int
    leader: int | None  # None: no leader
    replicas: list[int]
    isr: list[int] | None
    leader_epoch: int | None = None
    elr: list[int] | None = None
    last_known_elr: list[int] | None = None
    adding: list[int] = field(default_factory=list)
    removing: list[int] = field(default_factory=list)
    min_isr: int | None = None
    live_leader: bool = True  # the leader is a live broker (Admin API: among DescribeCluster's nodes)
    sizes: dict[int, int] | None = None  # bytes on disk by broker (DescribeLogDirs), when asked
    extra: dict[str, object] = field(default_factory=dict)  # a source's own fields (topicId, layout, …)

    @property
    def replication_factor(self) -> int:
        return len(self.replicas) - len(self.adding)

    @property
    def under_replicated(self) -> bool:
        return self.isr is not None and self.replication_factor - len(self.isr) > 0

    @property
    def under_min_isr(self) -> bool:
        if self.leader is None:
            return True
        return self.isr is not None and self.min_isr is not None and len(self.isr) < self.min_isr

    @property
    def unavailable(self) -> bool:
        return self.leader is None or not self.live_leader

    @property
    def reassigning(self) -> bool:
        return bool(self.adding or self.removing)

    @property
    def statuses(self) -> list[str]:
        """In the order the status column shows them, the worst first."""
        flags = [
            ("offline", self.unavailable),
            ("under-min-isr", self.under_min_isr),
            ("under-replicated", self.under_replicated),
            ("elr", bool(self.elr)),
            ("reassigning", self.reassigning),
        ]
        return [name for name, on in flags if on]

    def matches(self, filters: Iterable[Filter]) -> bool:
        """TopicCommand: with no filter every partition; with several, those any filter names."""
        wanted = set(filters)
        if not wanted:
            return True
        return (
            (Filter.UNDER_REPLICATED in wanted and self.under_replicated)
            or (Filter.UNDER_MIN_ISR in wanted and self.under_min_isr)
            or (Filter.UNAVAILABLE in wanted and self.unavailable)
        )


@dataclass(slots=True)
class BrokerView:
    """A broker: its id and address; `state` where the source knows it (KRaft: fenced, unfenced, …)."""

    id: int
    host: str | None
    port: int | None
    rack: str | None = None
    state: str | None = None
    endpoints: list[str] = field(default_factory=list)


@dataclass(slots=True)
class ClusterView:
    """The brokers, the active controller and the cluster id, as the source tells them."""

    cluster_id: str | None
    controller: int | None
    brokers: list[BrokerView]
    source: str  # "broker HOST:PORT", "metadata log DIR at offset N", "ZooKeeper HOST:PORT"


def keep(partitions: Iterable[PartitionView], filters: Iterable[Filter]) -> list[PartitionView]:
    filters = list(filters)
    return [p for p in partitions if p.matches(filters)]
