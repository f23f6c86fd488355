"""The controller quorum as Kafka's MetadataQuorumCommand shows it (`describe --status` and
`--replication`), computed from DescribeQuorum's answer the way that tool computes it: the lag of a
replica is the leader's log end offset minus its own; the most lagging voter gives MaxFollowerLag and,
from the two last-caught-up times, MaxFollowerLagTimeMs (0 when the leader is the most lagging)."""

from __future__ import annotations

from dataclasses import dataclass

from kafka_tools.broker.cluster_wire import Quorum, ReplicaState

ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"


@dataclass(slots=True)
class QuorumReplica:
    node: int
    directory_id: str | None  # None: Uuid.ZERO_UUID (a static quorum, or before KIP-853)
    log_end_offset: int
    lag: int
    last_fetch_ms: int
    last_caught_up_ms: int
    status: str  # Leader, Follower, Observer
    endpoints: list[str]


@dataclass(slots=True)
class QuorumStatus:
    cluster_id: str | None
    leader: int
    leader_epoch: int
    high_watermark: int
    max_follower_lag: int
    max_follower_lag_ms: int
    replicas: list[QuorumReplica]  # the leader, the other voters, the observers


def quorum_status(quorum: Quorum, cluster_id: str | None) -> QuorumStatus:
    leader = next((v for v in quorum.voters if v.node == quorum.leader), None)
    leader_end = leader.log_end_offset if leader else -1

    def row(r: ReplicaState, status: str) -> QuorumReplica:
        directory = None if r.directory_id in (None, ZERO_UUID) else r.directory_id
        return QuorumReplica(
            r.node,
            directory,
            r.log_end_offset,
            leader_end - r.log_end_offset,
            r.last_fetch_ms,
            r.last_caught_up_ms,
            status,
            quorum.endpoints.get(r.node, []),
        )

    rows = [row(leader, "Leader")] if leader else []
    rows += [row(v, "Follower") for v in quorum.voters if v.node != quorum.leader]
    rows += [row(o, "Observer") for o in quorum.observers]
    lag, lag_ms = 0, 0
    if leader is not None and quorum.voters:
        slowest = min(quorum.voters, key=lambda v: v.log_end_offset)
        lag = leader.log_end_offset - slowest.log_end_offset
        if slowest is leader:
            lag_ms = 0
        elif leader.last_caught_up_ms >= 0 and slowest.last_caught_up_ms >= 0:
            lag_ms = leader.last_caught_up_ms - slowest.last_caught_up_ms
        else:
            lag_ms = -1
    return QuorumStatus(
        cluster_id, quorum.leader, quorum.leader_epoch, quorum.high_watermark, lag, lag_ms, rows
    )
