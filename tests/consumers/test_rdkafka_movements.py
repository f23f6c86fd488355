"""librdkafka's partition movements (consumers/rdkafka_movements.py) where its C breaks from the algorithm
it ports, worked from PartitionMovements_* in rdkafka_sticky_assignor.c; real consumers on librdkafka's mock
cluster showed both the swapped partition and the abort (test_rdkafka_sticky_vs_librdkafka.py)."""

from __future__ import annotations

import pytest

from kafka_tools.consumers.rdkafka_movements import LeaderFault, PartitionMovements, UndefinedAssignment


def two_moved_from_b_to_a() -> PartitionMovements:
    movements = PartitionMovements()
    movements.move(("t", 1), "b", "a", from_list=False)
    movements.move(("t", 2), "b", "a", from_list=False)
    return movements


def test_a_reverse_move_moves_the_partition_after_the_one_it_names():
    # t-0 to go from a to b: t-1, first moved b -> a, goes back instead; removing its record shifts the
    # pair's list under the pointer the caller holds, and the caller moves t-2
    movements = two_moved_from_b_to_a()
    assert movements.to_move(("t", 0), "a", "b") == (("t", 1), True)
    assert movements.move(("t", 1), "a", "b", from_list=True) == ("t", 2)


def test_the_partition_moved_in_its_place_aborts_the_leader_when_it_moves_again():
    movements = two_moved_from_b_to_a()
    movements.move(("t", 1), "a", "b", from_list=True)  # t-2 is now at b, still recorded b -> a
    with pytest.raises(LeaderFault, match="t-2 is recorded at a, not at b"):
        movements.to_move(("t", 2), "b", "c")


def test_a_reverse_move_through_a_list_of_one_frees_it_under_the_pointer():
    movements = PartitionMovements()
    movements.move(("t", 1), "b", "a", from_list=False)
    assert movements.to_move(("t", 0), "a", "b") == (("t", 1), True)
    with pytest.raises(UndefinedAssignment, match="frees while using it"):
        movements.move(("t", 1), "a", "b", from_list=True)


def test_a_partition_moved_back_home_and_again_aborts_the_leader():
    movements = PartitionMovements()
    movements.move(("t", 1), "b", "a", from_list=False)
    movements.move(("t", 1), "a", "b", from_list=False)  # back home: its record b -> a stays
    with pytest.raises(LeaderFault, match="moves again after moving back to b"):
        movements.move(("t", 1), "b", "c", from_list=False)
