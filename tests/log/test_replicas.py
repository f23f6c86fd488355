"""`replicas diff` on replicas built by an independent encoder (kafka-python), in the shapes KIP-101
and KIP-279 describe. Every expected truncation point is worked out by hand from the KIPs' rules
(LeaderEpochFileCache.endOffsetFor, AbstractFetcherThread.getOffsetTruncationState) in the comments;
for Kafka before 0.11, from ReplicaManager.makeFollowers (to the high watermark) and
ReplicaFetcherThread.handleOffsetOutOfRange (to the leader's log end when that is lower)."""

from __future__ import annotations

import pytest

from kafka_tools.format.checkpoints import EpochEntry
from kafka_tools.log.replicas.diff import diff_replicas
from kafka_tools.log.replicas.leader_epochs import end_offset_for, epoch_truncation
from tests.support.replica_logs import Batch, values, write_replica


def _loss(report, leader: int, follower: int):
    return next(t for t in report.truncations if t.leader == leader and t.follower == follower)


def _h(*pairs: int) -> list[EpochEntry]:
    return [EpochEntry(pairs[i], pairs[i + 1]) for i in range(0, len(pairs), 2)]


# ------------------------------------------------------------------------ LeaderEpochFileCache


def test_end_offset_for_follows_the_leader_epoch_cache():
    cache = _h(0, 0, 1, 3, 3, 6, 5, 9)
    assert end_offset_for(cache, 5, 12) == (5, 12)  # the latest epoch: the log end
    assert end_offset_for(cache, 3, 12) == (3, 9)  # floor 3, the next epoch starts at 9
    assert end_offset_for(cache, 4, 12) == (3, 9)  # unknown 4: the epoch below it, ends where 5 starts
    assert end_offset_for(cache, 2, 12) == (1, 6)
    assert end_offset_for(cache, 7, 12) == (-1, -1)  # above every epoch: undefined
    assert end_offset_for(_h(3, 10), 1, 12) == (1, 10)  # below every epoch: the first start
    assert end_offset_for([], 1, 12) == (-1, -1)
    assert end_offset_for(cache, -1, 12) == (-1, -1)


def test_several_rounds_when_the_leader_answers_with_epochs_the_follower_skipped():
    # Follower epochs 0@0 2@5 4@8, log end 10; leader 0@0 1@3 3@6 5@9, log end 12.
    # Round 1: asks 4 -> leader (3, 9); follower's own end for 3 is (2, 8): epoch 2 != 3 -> 8, again.
    # Round 2: asks 2 -> leader (1, 6); own end for 1 is (0, 5): 0 != 1 -> 5, again.
    # Round 3: asks 0 -> leader (0, 3); own (0, 5): same epoch -> min(5, 3) = 3.
    t, steps = epoch_truncation(_h(0, 0, 2, 5, 4, 8), 10, 0, _h(0, 0, 1, 3, 3, 6, 5, 9), 12)
    assert t == 3
    assert len(steps) == 3


# ----------------------------------------------------------------------------- v2 with epochs


def test_kip101_scenario1_epochs_keep_what_the_high_watermark_would_cut(tmp_path):
    # KIP-101 scenario 1: A (leader) and B both hold m1, m2 in epoch 0, but B's high watermark is 1
    # (the leader's advance reaches a follower with its next fetch). Truncating to the high
    # watermark loses m2; asking for the end of epoch 0 (A: the latest before the election, so its
    # log end 2) keeps it.
    m1m2 = [Batch(0, [b"m1"]), Batch(0, [b"m2"])]
    a = write_replica(tmp_path / "a", 1, m1m2, epochs=[(0, 0)])
    b = write_replica(tmp_path / "b", 2, m1m2, epochs=[(0, 0)], high_watermark=1)
    by_epoch = diff_replicas([str(a.path), str(b.path)])
    assert by_epoch.status == "identical" and by_epoch.pairs[0].epochs_part_at is None
    assert _loss(by_epoch, 0, 1).truncate_to == 2 and _loss(by_epoch, 0, 1).lost_offsets == 0
    by_hw = diff_replicas([str(a.path), str(b.path)], rule="high-watermark")
    t = _loss(by_hw, 0, 1)
    assert (t.truncate_to, t.lost_offsets, t.lost.records) == (1, 1, 1)
    assert t.lost.bytes == a.batches[1][2]
    # one batch of m1 m2: the high watermark 1 falls inside it, and Log.truncateTo removes it whole
    both = [Batch(0, [b"m1", b"m2"])]
    a2 = write_replica(tmp_path / "a2", 1, both, epochs=[(0, 0)])
    b2 = write_replica(tmp_path / "b2", 2, both, epochs=[(0, 0)], high_watermark=1)
    t2 = _loss(diff_replicas([str(a2.path), str(b2.path)], rule="high-watermark"), 0, 1)
    assert (t2.truncate_to, t2.lost_start, t2.lost.records, t2.lost.bytes) == (1, 0, 2, a2.batches[0][2])


def test_kip101_scenario2_divergence_is_cut_by_the_epoch_lookup(tmp_path):
    # KIP-101 scenario 2: A holds m1 m2 (epoch 0), B only m1; B comes back first, leads epoch 1 and
    # writes m3 at offset 1. If B leads: A asks for epoch 0, B answers (0, 1) (epoch 1 starts at 1),
    # A truncates to 1 and loses m2. If A leads: B asks for epoch 1, A (its new epoch 2 starting at
    # 2) answers (0, 2); B's own end of epoch 0 is 1: same epoch, min(1, 2) = 1: B loses m3.
    shared = Batch(0, values("m", 0, 1))
    a = write_replica(tmp_path / "a", 1, [shared, Batch(0, [b"m2"])], epochs=[(0, 0)])
    b = write_replica(tmp_path / "b", 2, [shared, Batch(1, [b"m3"])], epochs=[(0, 0), (1, 1)])
    report = diff_replicas([str(a.path), str(b.path)])
    assert report.status == "diverged"
    assert report.pairs[0].first_difference == 1
    assert (_loss(report, 1, 0).truncate_to, _loss(report, 1, 0).lost_offsets) == (1, 1)
    assert (_loss(report, 0, 1).truncate_to, _loss(report, 0, 1).lost_offsets) == (1, 1)
    assert not _loss(report, 1, 0).divergent_after
    # KIP-966: B has the higher last epoch (1), so it is kept though both logs end at 2
    assert report.ranking == [1, 0]
    # Before 0.11 (to the high watermark, 2): A keeps m2 where B has m3, silently
    old = _loss(diff_replicas([str(a.path), str(b.path)], rule="high-watermark"), 1, 0)
    assert old.truncate_to == 2 and old.lost_offsets == 0
    assert [(r.start, r.end) for r in old.divergent_after] == [(1, 2)]


def test_kip279_the_followers_epoch_is_not_in_the_leaders_history(tmp_path):
    # Both: epoch 0 at 0..1. A led epoch 1 (2..3) that B never saw; B then led epoch 2 (2..4).
    # If B leads (new epoch 3 at 5): A asks 1 -> (0, 2) (the epoch below 1 that B knows is 0, and
    # the next epoch, 2, starts at 2); A's own end of 0 is 2: A truncates to 2, loses 2..3.
    # If A leads (new epoch 3 at 4): B asks 2 -> A answers (1, 4): B has no epoch 1, its end for 1
    # is (0, 2): truncate to 2 and ask again; asks 0 -> (0, 2): B truncates to 2, loses 2..4.
    shared = Batch(0, values("x", 0, 2))
    a = write_replica(tmp_path / "a", 1, [shared, Batch(1, values("a", 2, 2))], epochs=[(0, 0), (1, 2)])
    b = write_replica(tmp_path / "b", 2, [shared, Batch(2, values("b", 2, 3))], epochs=[(0, 0), (2, 2)])
    report = diff_replicas([str(a.path), str(b.path)])
    assert report.new_epoch == 3
    a_loses, b_loses = _loss(report, 1, 0), _loss(report, 0, 1)
    assert (a_loses.truncate_to, a_loses.lost_start, a_loses.lost_end, a_loses.lost.records) == (2, 2, 4, 2)
    assert (b_loses.truncate_to, b_loses.lost_start, b_loses.lost_end, b_loses.lost.records) == (2, 2, 5, 3)
    assert len(b_loses.steps) == 2  # the second round
    assert a_loses.lost.bytes == a.batches[1][2] and b_loses.lost.bytes == b.batches[1][2]
    pair = report.pairs[0]
    assert pair.epochs_part_at == 2  # epoch 1 at 2 on A, epoch 2 at 2 on B
    assert [(r.start, r.end) for r in pair.ranges] == [(2, 4)]
    assert [(s.records, s.bytes) for s in pair.ranges[0].sides] == [
        (2, a.batches[1][2]),
        (2, b.batches[1][2]),
    ]
    assert report.ranking == [1, 0]  # last epoch 2 beats 1


def test_epochs_skipped_several_rounds_on_real_logs(tmp_path):
    # The three-round case above, as logs: F epochs 0@0 2@5 4@8 (end 10), L 0@0 1@3 3@6 5@9 (end 12),
    # sharing offsets 0..2. F truncates to 3 and loses 3..9 (7 records).
    shared = Batch(0, values("s", 0, 3))
    f = write_replica(
        tmp_path / "f",
        1,
        [shared, Batch(0, values("f", 3, 2)), Batch(2, values("f", 5, 3)), Batch(4, values("f", 8, 2))],
        epochs=[(0, 0), (2, 5), (4, 8)],
    )
    leader = write_replica(
        tmp_path / "l",
        2,
        [shared, Batch(1, values("l", 3, 3)), Batch(3, values("l", 6, 3)), Batch(5, values("l", 9, 3))],
        epochs=[(0, 0), (1, 3), (3, 6), (5, 9)],
    )
    report = diff_replicas([str(f.path), str(leader.path)])
    t = _loss(report, 1, 0)
    assert (t.truncate_to, t.lost_offsets, t.lost.records) == (3, 7, 7)
    assert report.pairs[0].first_difference == 3
    # the epochs stamped in the batches are found by bisection and agree with the checkpoint
    assert [(e.epoch, e.start_offset) for e in report.replicas[1].batch_epochs] == [
        (0, 0),
        (1, 3),
        (3, 6),
        (5, 9),
    ]


def test_without_a_checkpoint_the_batches_epochs_are_the_history(tmp_path):
    shared = Batch(0, values("x", 0, 2))
    a = write_replica(tmp_path / "a", 1, [shared, Batch(1, values("a", 2, 2))], epochs=None)
    b = write_replica(tmp_path / "b", 2, [shared, Batch(2, values("b", 2, 3))], epochs=None)
    report = diff_replicas([str(a.path), str(b.path)])
    assert report.replicas[0].checkpoint_epochs is None
    assert [(e.epoch, e.start_offset) for e in report.replicas[1].epochs] == [(0, 0), (2, 2)]
    assert _loss(report, 0, 1).truncate_to == 2


def test_the_requested_epoch_below_the_leaders_first_one(tmp_path):
    # The leader's log starts at 10 in epoch 3 (older segments deleted); the follower's latest
    # epoch is 1 (1@5). The leader answers (1, 10): the start of its first epoch; the follower's
    # own end of 1 is its log end 12: it truncates to 10 and loses 10..11.
    f = write_replica(
        tmp_path / "f",
        1,
        [Batch(0, values("x", 0, 5)), Batch(1, values("f", 5, 5)), Batch(1, values("f", 10, 2))],
        epochs=[(0, 0), (1, 5)],
    )
    leader = write_replica(tmp_path / "l", 2, [Batch(3, values("l", 10, 4))], epochs=[(3, 10)], log_start=10)
    report = diff_replicas([str(f.path), str(leader.path)])
    t = _loss(report, 1, 0)
    assert t.truncate_to == 10 and (t.lost_start, t.lost_end) == (10, 12)


def test_a_follower_below_the_leaders_log_start_starts_over(tmp_path):
    f = write_replica(tmp_path / "f", 1, [Batch(0, values("x", 0, 5))], epochs=[(0, 0)])
    leader = write_replica(tmp_path / "l", 2, [Batch(2, values("l", 20, 4))], epochs=[(2, 20)], log_start=20)
    report = diff_replicas([str(f.path), str(leader.path)])
    t = _loss(report, 1, 0)
    assert t.start_over_at == 20
    assert (t.lost_start, t.lost_end, t.lost.records) == (0, 5, 5)
    assert report.pairs[0].status == "no-overlap"


# --------------------------------------------------------------------------- before 0.11


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", [0, 1], ids=["plain", "gzip"])
def test_unclean_election_before_epochs_leaves_a_silent_divergence(tmp_path, magic, codec):
    # A led alone and wrote 3..5 (high watermark 6); B, stopped at 3, was elected uncleanly and wrote
    # 3..4. If B leads: A truncates to its high watermark 6, past B's end 5 -> to 5 (the leader's log
    # end): A loses offset 5, and 3..4 stay different, which 0.9 never notices. If A leads: B
    # truncates to its high watermark 3 and loses 3..4.
    shared = Batch(0, values("x", 0, 3), codec)
    a = write_replica(tmp_path / "a", 1, [shared, Batch(0, values("a", 3, 3), codec)], magic=magic)
    b = write_replica(
        tmp_path / "b", 2, [shared, Batch(0, values("b", 3, 2), codec)], magic=magic, high_watermark=3
    )
    report = diff_replicas([str(a.path), str(b.path)])
    assert report.status == "diverged" and report.pairs[0].first_difference == 3
    b_loses, a_loses = _loss(report, 0, 1), _loss(report, 1, 0)
    assert b_loses.rule == "high-watermark"
    assert (b_loses.truncate_to, b_loses.lost_start, b_loses.lost_end, b_loses.lost.records) == (3, 3, 5, 2)
    if codec:
        # offset 5 sits in A's wrapper of 3..5: truncating there removes the whole wrapper
        assert (a_loses.truncate_to, a_loses.lost_start, a_loses.lost.records) == (5, 3, 3)
        assert a_loses.divergent_after == []
    else:
        assert (a_loses.truncate_to, a_loses.lost_start, a_loses.lost.records) == (5, 5, 1)
        assert [(r.start, r.end) for r in a_loses.divergent_after] == [(3, 5)]
        assert [s.records for s in a_loses.divergent_after[0].sides] == [2, 2]
    assert report.ranking == [0, 1]  # no epochs: the longer log


@pytest.mark.parametrize("codec", [0, 1], ids=["plain", "gzip"])
def test_a_healed_divergence_between_logs_without_epochs_is_found(tmp_path, codec):
    # After 0.9's truncation and catch-up the two logs agree again at the end; only the middle
    # differs. Both ends agree, so the logs are compared batch by batch.
    head, tail = Batch(0, values("x", 0, 10), codec), Batch(0, values("t", 13, 8), codec)
    mid_a, mid_b = Batch(0, values("a", 10, 3), codec), Batch(0, values("b", 10, 3), codec)
    a = write_replica(tmp_path / "a", 1, [head, mid_a, tail], magic=0, per_segment=2)
    b = write_replica(tmp_path / "b", 2, [head, mid_b, tail], magic=0, per_segment=2)
    report = diff_replicas([str(a.path), str(b.path)])
    pair = report.pairs[0]
    assert pair.method == "full-compare"
    assert [(r.start, r.end) for r in pair.ranges] == [(10, 13)]
    assert report.status == "diverged"


def test_a_lagging_follower_is_a_prefix_and_loses_nothing(tmp_path):
    batches = [Batch(0, values("x", 10 * i, 10)) for i in range(6)]
    a = write_replica(tmp_path / "a", 1, batches, epochs=[(0, 0)])
    b = write_replica(tmp_path / "b", 2, batches[:4], epochs=[(0, 0)])
    report = diff_replicas([str(a.path), str(b.path)])
    assert report.status == "prefix"
    assert _loss(report, 0, 1).lost_offsets == 0
    t = _loss(report, 1, 0)  # if the lagging one were elected, A loses its tail
    assert (t.lost_start, t.lost_end, t.lost.records) == (40, 60, 20)
    assert t.lost.bytes == sum(size for _, _, size in a.batches[4:])


def test_the_binary_search_reads_few_batches(tmp_path):
    # 2,000 batches in 100 segments, diverging at batch 1,900: found by reading O(log n) batches.
    shared = [Batch(0, values("x", 5 * i, 5, 8)) for i in range(1900)]
    a = write_replica(
        tmp_path / "a",
        1,
        shared + [Batch(0, values("a", 9500 + 5 * i, 5, 8)) for i in range(100)],
        per_segment=20,
        epochs=[(0, 0)],
    )
    b = write_replica(
        tmp_path / "b",
        2,
        shared + [Batch(1, values("b", 9500 + 5 * i, 5, 8)) for i in range(100)],
        per_segment=20,
        epochs=[(0, 0), (1, 9500)],
    )
    report = diff_replicas([str(a.path), str(b.path)])
    pair = report.pairs[0]
    assert pair.first_difference == 9500 and pair.method == "binary-search"
    assert pair.entries_compared < 200  # a full compare reads 4,000
    full = diff_replicas([str(a.path), str(b.path)], full=True).pairs[0]
    assert [(r.start, r.end) for r in full.ranges] == [(9500, 10000)]
    assert full.entries_compared >= 4000


def test_every_epoch_boundary_is_probed_so_an_earlier_range_is_not_missed(tmp_path):
    # A disk restored from another replica's backup: epoch 1 (offsets 5..7) holds other records on B,
    # though both agree before and after it, and the two diverge again from 12 (epoch 3 vs 4). The
    # probes at the epoch boundaries find both ranges without reading every batch.
    shared0, shared2 = Batch(0, values("s", 0, 5)), Batch(2, values("s", 8, 4))
    a = write_replica(
        tmp_path / "a",
        1,
        [shared0, Batch(1, values("a", 5, 3)), shared2, Batch(3, values("a", 12, 4))],
        epochs=[(0, 0), (1, 5), (2, 8), (3, 12)],
    )
    b = write_replica(
        tmp_path / "b",
        2,
        [shared0, Batch(1, values("b", 5, 3)), shared2, Batch(4, values("b", 12, 2))],
        epochs=[(0, 0), (1, 5), (2, 8), (4, 12)],
    )
    pair = diff_replicas([str(a.path), str(b.path)]).pairs[0]
    assert [(r.start, r.end) for r in pair.ranges] == [(5, 8), (12, 14)]
    assert pair.epochs_part_at == 12  # the histories only part at 12: 5..7 differ within epoch 1
    assert [
        (r.start, r.end) for r in diff_replicas([str(a.path), str(b.path)], full=True).pairs[0].ranges
    ] == [
        (5, 8),
        (12, 14),
    ]


def test_an_upgraded_log_has_epochs_from_its_first_v2_batch(tmp_path):
    # Message format 0.10 (v1) up to offset 9, then v2 batches stamped 3 and 4 (the upgrade); no
    # checkpoint: the epochs come from the batches, the first found by bisecting on the magic.
    old = [Batch(0, values("v1", 5 * i, 5), magic=1) for i in range(2)]
    new = [Batch(3, values("v2", 10, 4)), Batch(3, values("v2", 14, 4)), Batch(4, values("v2", 18, 2))]
    a = write_replica(tmp_path / "a", 1, old + new, epochs=None, per_segment=2)
    report = diff_replicas([str(a.path), str(a.path)])
    assert [(e.epoch, e.start_offset) for e in report.replicas[0].batch_epochs] == [(3, 10), (4, 18)]
    assert report.status == "identical"


def test_a_checkpoint_that_disagrees_with_the_batches_is_said(tmp_path):
    a = write_replica(
        tmp_path / "a", 1, [Batch(0, values("x", 0, 3)), Batch(1, values("x", 3, 3))], epochs=[(0, 0), (1, 4)]
    )
    report = diff_replicas([str(a.path), str(a.path)])
    assert any("says 0@0 1@4 but the batches say 0@0 1@3" in w for w in report.replicas[0].warnings)
    assert report.replicas[0].last_epoch == 1
