"""Kafka's follower truncation by leader epochs, as pure functions over epoch histories: the leader's
LeaderEpochFileCache.endOffsetFor and the follower's OffsetsForLeaderEpoch rounds of
AbstractFetcherThread.getOffsetTruncationState (KIP-101, and KIP-279's extra rounds when the leader
answers with an epoch the follower never had)."""

from __future__ import annotations

from kafka_tools.format.checkpoints import EpochEntry

UNDEFINED = -1  # UNDEFINED_EPOCH and UNDEFINED_EPOCH_OFFSET


def end_offset_for(history: list[EpochEntry], requested: int, log_end: int) -> tuple[int, int]:
    """LeaderEpochFileCache.endOffsetFor: (epoch, end offset) for `requested`, or (-1, -1)."""
    if requested == UNDEFINED or not history:
        return UNDEFINED, UNDEFINED
    if history[-1].epoch == requested:
        return requested, log_end
    higher = next((e for e in history if e.epoch > requested), None)
    if higher is None:
        return UNDEFINED, UNDEFINED
    floor = [e for e in history if e.epoch <= requested]
    if not floor:
        return requested, higher.start_offset
    return floor[-1].epoch, higher.start_offset


def epoch_truncation(
    follower: list[EpochEntry],
    follower_end: int,
    high_watermark: int,
    leader: list[EpochEntry],
    leader_end: int,
) -> tuple[int, list[str]]:
    """Where a follower truncates by OffsetsForLeaderEpoch rounds (AbstractFetcherThread
    .getOffsetTruncationState): each round asks the leader for the end of the follower's latest
    epoch; an epoch the follower does not know makes it truncate to its own end of the epoch below
    and ask again (KIP-279)."""
    cache = list(follower)
    end = follower_end
    steps: list[str] = []
    for _ in range(len(cache) + 2):
        if not cache:
            steps.append(f"no leader epoch left: truncate to the high watermark {min(high_watermark, end)}")
            return min(high_watermark, end), steps
        asked = cache[-1].epoch
        epoch, offset = end_offset_for(leader, asked, leader_end)
        if offset == UNDEFINED:
            steps.append(
                f"epoch {asked}: the leader knows no end for it: truncate to the high watermark "
                f"{min(high_watermark, end)}"
            )
            return min(high_watermark, end), steps
        own_epoch, own_end = end_offset_for(cache, epoch, end)
        if own_end == UNDEFINED:
            t = min(offset, end)
            steps.append(
                f"epoch {asked}: leader says epoch {epoch} ends at {offset}, unknown here: truncate to {t}"
            )
            return t, steps
        if own_epoch != epoch:
            t = min(own_end, end)
            steps.append(
                f"epoch {asked}: leader says epoch {epoch} ends at {offset}; not an epoch of this replica: "
                f"truncate to {t} (the end of its epoch {own_epoch}) and ask again"
            )
            end = t
            cache = [e for e in cache if e.start_offset < t]
            continue
        t = min(own_end, offset, end)
        steps.append(
            f"epoch {asked}: leader says epoch {epoch} ends at {offset}; here it ends at {own_end}: "
            f"truncate to {t}"
        )
        return t, steps
    return min(high_watermark, end), steps
