"""The statuses and filters of cluster/view.py, case by case as Kafka's TopicCommand decides them
(`PartitionDescription`): the replicas being added do not count toward the replication factor; no
leader is both unavailable and under min ISR; a leader that is not a live broker is unavailable; several
filters keep what any of them names."""

from __future__ import annotations

import pytest

from kafka_tools.cluster.view import Filter, PartitionView, keep


def _p(**kw) -> PartitionView:
    base = {"topic": "t", "partition": 0, "leader": 1, "replicas": [1, 2, 3], "isr": [1, 2, 3], "min_isr": 2}
    return PartitionView(**{**base, **kw})


@pytest.mark.parametrize(
    "partition, statuses",
    [
        (_p(), []),
        (_p(isr=[1, 2]), ["under-replicated"]),
        (_p(isr=[1]), ["under-min-isr", "under-replicated"]),
        (_p(leader=None, isr=[3]), ["offline", "under-min-isr", "under-replicated"]),
        (_p(live_leader=False), ["offline"]),
        # reassigning 1,2,3 -> 2,3,4: replicas 1,2,3,4, ISR 1,2,3 is the full replication factor 3
        (_p(replicas=[1, 2, 3, 4], adding=[4], removing=[1]), ["reassigning"]),
        (_p(isr=[1], elr=[2]), ["under-min-isr", "under-replicated", "elr"]),
        (_p(isr=[1], min_isr=None), ["under-replicated"]),  # min ISR unknown: not judged
    ],
)
def test_statuses_as_topic_command_decides_them(partition: PartitionView, statuses: list[str]) -> None:
    assert partition.statuses == statuses


def test_filters_keep_what_any_of_them_names() -> None:
    healthy, lagging = _p(partition=0), _p(partition=1, isr=[1, 2])
    leaderless = _p(partition=2, leader=None, isr=[3])  # Kafka keeps the last replica in the ISR
    everything = [healthy, lagging, leaderless]
    assert keep(everything, []) == everything
    assert keep(everything, [Filter.UNDER_REPLICATED]) == [lagging, leaderless]
    assert keep(everything, [Filter.UNAVAILABLE]) == [leaderless]
    assert keep(everything, [Filter.UNDER_MIN_ISR]) == [leaderless]
    assert keep(everything, [Filter.UNAVAILABLE, Filter.UNDER_REPLICATED]) == [lagging, leaderless]
