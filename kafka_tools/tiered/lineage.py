"""Kafka's `RemoteLogManager.isRemoteSegmentWithinLeaderEpochs`: whether a remote segment's leader
epochs belong to the partition's epoch lineage (its `leader-epoch-checkpoint`), the check the broker
makes before it serves or keeps a remote segment. Returns why not (None: within)."""

from __future__ import annotations


def filtered(epochs: dict[int, int]) -> dict[int, int]:
    """`buildFilteredLeaderEpochMap`: epochs holding no record (the next starts at the same offset) out."""
    items = sorted(epochs.items())
    empty = {e for (e, o), (_, o2) in zip(items, items[1:], strict=False) if o == o2}
    return {e: o for e, o in items if e not in empty}


def outside_lineage(
    segment_epochs: dict[int, int], end_offset: int, log_end: int | None, lineage: dict[int, int]
) -> str | None:
    """Why the segment is not within `lineage` (epoch -> start offset), or None."""
    seg = filtered(segment_epochs)
    if not seg or not lineage:
        return None if lineage else "the partition has no leader epochs"
    keys = sorted(lineage)
    last = max(seg)
    if last < keys[0] or last > keys[-1]:
        return f"its last epoch {last} is outside the partition's epochs {keys[0]}-{keys[-1]}"
    first = min((e for e in seg if e >= keys[0]), default=None)
    if first is None:
        return f"none of its epochs reaches the partition's first epoch {keys[0]}"
    for epoch, offset in sorted(seg.items()):
        if epoch < first:
            continue
        if epoch not in lineage:
            return f"its epoch {epoch} is not in the partition's epochs {keys}"
        lower = [k for k in keys if k < epoch]
        if epoch == first and lower and offset < lineage[epoch]:
            return f"its epoch {epoch} starts at {offset}, before the partition's {lineage[epoch]}"
        higher = [k for k in keys if k > epoch]
        if epoch == last:
            if higher and end_offset > lineage[higher[0]] - 1:
                return (
                    f"it ends at {end_offset}, past the end of epoch {epoch} "
                    f"({lineage[higher[0]] - 1}, epoch {higher[0]} starts at {lineage[higher[0]]})"
                )
        else:
            seg_higher = min(k for k in seg if k > epoch)
            if not higher or (higher[0], lineage[higher[0]]) != (seg_higher, seg[seg_higher]):
                return f"the epoch after {epoch} differs: the segment's {seg_higher}@{seg[seg_higher]}"
    if log_end is not None and end_offset >= log_end:
        return f"it ends at {end_offset}, at or past the log end {log_end}"
    return None
