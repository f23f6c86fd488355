"""RemoteLogManager.isRemoteSegmentWithinLeaderEpochs on the cases of Kafka's RemoteLogManagerTest
(testRemoteSegmentWithinLeaderEpochs, ...ForOverlappingSegments): ktool's port agrees case for case."""

from __future__ import annotations

import pytest

from kafka_tools.tiered.lineage import outside_lineage

LINEAGE = {0: 0, 1: 10, 2: 20, 3: 30, 4: 40, 5: 50, 7: 70}
OVERLAPPING = {7: 51, 9: 100}


@pytest.mark.parametrize(
    "start, end, epochs, log_end, lineage, within",
    [
        (15, 35, {1: 15, 2: 20, 3: 30}, 90, LINEAGE, True),
        (15, 19, {1: 15}, 90, LINEAGE, True),
        (0, 5, {0: 0}, 90, LINEAGE, True),
        (70, 75, {7: 70}, 90, LINEAGE, True),
        (15, 29, {1: 15, 2: 20}, 90, LINEAGE, True),
        (55, 85, {5: 55, 6: 60, 7: 70}, 90, LINEAGE, False),  # epoch 6 never led
        (15, 45, {1: 15, 2: 20, 4: 40}, 90, LINEAGE, False),  # epoch 3 skipped
        (15, 95, LINEAGE, 90, LINEAGE, False),  # past the log end
        (15, 90, LINEAGE, 90, LINEAGE, False),  # at the log end
        (5, 25, {1: 5, 2: 20}, 90, LINEAGE, False),  # epoch 1 starts earlier than the partition's
        (15, 35, {1: 15, 2: 20}, 90, LINEAGE, False),  # past epoch 2's end
        (14, 150, {5: 14, 7: 15, 9: 100}, 210, OVERLAPPING, True),
        (2, 7, {2: 5, 3: 6}, 210, OVERLAPPING, False),
        (15, 250, {7: 15, 9: 100, 10: 200}, 210, OVERLAPPING, False),
        (75, 100, {8: 75}, 210, OVERLAPPING, False),
        (15, 150, {7: 15, 9: 101}, 210, OVERLAPPING, False),
    ],
)
def test_kafkas_cases(start, end, epochs, log_end, lineage, within):
    why = outside_lineage(epochs, end, log_end, lineage)
    assert (why is None) == within, why
