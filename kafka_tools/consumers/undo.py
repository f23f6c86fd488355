"""`--undo JOURNAL` of migrate-offsets, offsets import and groups reset-offsets: put back what a run
changed, and only that.

For each partition and each store the run wrote: a store that still holds what the run wrote gets the
journal's value back; one that holds the journal's value already is left (already undone); one that
holds anything else was moved since the run, by a consumer that went on or another tool, and rewinding
it would make that consumer read again what it had read: refused unless forced. Where Kafka had no
offset before, "no offset" is put back by deleting the run's (OffsetDelete, Kafka 2.4+); where that
cannot be done the partition is `kafka-kept`, a finding. When every partition is
back, the journal is marked `undone`, and a second undo of it writes nothing, however the offsets have
moved since.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from kafka_tools.broker.client import Broker
from kafka_tools.broker.offset_delete import ERROR_NAMES, SUBSCRIBED, delete_group_offsets
from kafka_tools.consumers.migration import (
    KAFKA,
    MISMATCH,
    NOT_WRITTEN,
    UNDONE,
    VERIFIED,
    WRITE,
    WRITTEN,
    ZK,
    MigrationOptions,
    PartitionMove,
    delete_zookeeper,
    read_stores,
    write_zookeeper,
    writes_to,
)
from kafka_tools.consumers.stores import MIGRATE_METADATA
from kafka_tools.errors import UsageError
from kafka_tools.keep.durable import write_json

ALREADY_UNDONE = "already-undone"
REFUSED_MOVED = "refused-moved"
KAFKA_KEPT = "kafka-kept"

# The statuses of a partition the run wrote (or may have written, when it was interrupted).
_WROTE = (WRITE, WRITTEN, VERIFIED, MISMATCH, NOT_WRITTEN)


@dataclass
class UndoResult:
    """The partitions as the undo left them; `already`: the journal was undone before (at `undone_at`),
    and nothing was read or written."""

    moves: list[PartitionMove]
    already: bool = False
    undone_at: str | None = None

    def counts(self) -> dict[str, int]:
        return dict(Counter(m.status for m in self.moves))

    @property
    def findings(self) -> bool:
        """A partition refused, kept where it had no offset, or not read back as restored: exit 1."""
        return any(m.status in (REFUSED_MOVED, MISMATCH, KAFKA_KEPT) for m in self.moves)


def journal_options(journal: dict) -> MigrationOptions:
    """The options the journal's run had (fields a newer ktool added take their defaults)."""
    known = {f.name for f in dataclasses.fields(MigrationOptions)}
    given = {k: v for k, v in (journal.get("options") or {}).items() if k in known}
    if "topics" in given:
        given["topics"] = tuple(given["topics"])
    return MigrationOptions(**given)


def undo_journal(zk, broker: Broker, path: Path, journal: dict, force: bool = False) -> UndoResult:
    """Undo the run `journal` (read from `path`) records, group by group; mark it undone when every
    partition is back as it was."""
    if journal.get("state") == UNDONE:
        return UndoResult([], already=True, undone_at=journal.get("undone"))
    check_zookeeper(zk, path, journal)
    options = journal_options(journal)
    metadata = (options.metadata or MIGRATE_METADATA) + "-undo"
    moves: list[PartitionMove] = []
    for g in journal["groups"]:
        partitions = [PartitionMove(**m) for m in g["partitions"]]
        moves += _undo_group(zk, broker, g["group"], partitions, options, metadata, force)
    result = UndoResult(moves)
    if not result.findings:
        journal.update(state=UNDONE, undone=time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        write_json(path, journal)
    return result


def check_zookeeper(zk, path: Path, journal: dict) -> None:
    """A usage error when the journal holds ZooKeeper offsets and no ZooKeeper was given."""
    options = journal_options(journal)
    needed = (
        ZK in (options.source, options.target)
        or options.dual_commit
        or any(m.get("zookeeper") is not None for g in journal["groups"] for m in g["partitions"])
    )
    if zk is None and needed:
        raise UsageError(f"{path}: the journal holds ZooKeeper offsets: give --zookeeper to undo it")


def _undo_group(
    zk,
    broker: Broker,
    group: str,
    moves: list[PartitionMove],
    options: MigrationOptions,
    metadata: str,
    force: bool,
) -> list[PartitionMove]:
    topics = tuple(sorted({m.topic for m in moves}))
    zk_now, kafka_now, _, _ = read_stores(zk, broker, group, topics)
    rewinds: dict[tuple[str, int], dict[str, int | None]] = {}
    for m in moves:
        m.zookeeper_after, m.kafka_after = zk_now.get(m.key), kafka_now.get(m.key)
        rewind = _decide(m, options, force)
        if rewind:
            rewinds[m.key] = rewind
    if not rewinds:
        return moves
    to_kafka = {k: r[KAFKA] for k, r in rewinds.items() if KAFKA in r and r[KAFKA] is not None}
    to_zk = {k: r[ZK] for k, r in rewinds.items() if ZK in r and r[ZK] is not None}
    absent_zk = [k for k, r in rewinds.items() if ZK in r and r[ZK] is None]
    absent_kafka = [k for k, r in rewinds.items() if KAFKA in r and r[KAFKA] is None]
    kept = _delete_kafka(broker, group, absent_kafka) if absent_kafka else {}
    for key in kept:
        del rewinds[key][KAFKA]
    if to_kafka:
        broker.commit(group, to_kafka, metadata)
    if to_zk:
        write_zookeeper(zk, group, to_zk)
    if absent_zk:
        delete_zookeeper(zk, group, absent_zk)
    zk_now, kafka_now, _, _ = read_stores(zk, broker, group, topics)
    for m in moves:
        if m.key not in rewinds:
            continue
        m.zookeeper_after, m.kafka_after = zk_now.get(m.key), kafka_now.get(m.key)
        now = {ZK: m.zookeeper_after, KAFKA: m.kafka_after}
        if all(now[s] == v for s, v in rewinds[m.key].items()):
            m.status, m.reason = (KAFKA_KEPT, kept[m.key]) if m.key in kept else (VERIFIED, "restored")
        else:
            m.status = MISMATCH
            m.reason = "read back " + ", ".join(
                f"{s}={now[s]}, expected {v}" for s, v in rewinds[m.key].items() if now[s] != v
            )
    return moves


def _decide(m: PartitionMove, options: MigrationOptions, force: bool) -> dict[str, int | None]:
    """What to write back for one partition (store -> the journal's value, None: delete the znode);
    sets the partition's status where nothing is to be written. A store holds what the run left there
    (its write, or the journal's value where it wrote nothing) or it was moved since."""
    before = {ZK: m.zookeeper, KAFKA: m.kafka}
    now = {ZK: m.zookeeper_after, KAFKA: m.kafka_after}
    wrote = {s: m.status in _WROTE and writes_to(m, options, s) for s in (KAFKA, ZK)}
    rewind: dict[str, int | None] = {}
    moved = []
    for s in (KAFKA, ZK):
        if now[s] == before[s]:
            continue
        if not (wrote[s] and now[s] == m.offset):
            moved.append(s)
        rewind[s] = before[s]
    if moved and not force:
        m.status = REFUSED_MOVED
        m.reason = "; ".join(
            f"{s} holds {now[s]}, not the {m.offset if wrote[s] else before[s]} the run left: moved since "
            f"(a consumer went on); --force rewinds it to {'nothing' if before[s] is None else before[s]}"
            for s in moved
        )
        return {}
    if not rewind:
        if any(wrote.values()):
            m.status, m.reason = ALREADY_UNDONE, "holds the offset it had before the run"
        else:
            m.status, m.reason = VERIFIED, "not changed by the run"
    return rewind


def _delete_kafka(broker: Broker, group: str, keys: list[tuple[str, int]]) -> dict[tuple[str, int], str]:
    """Put back "no offset" in Kafka (OffsetDelete, Kafka 2.4+); the partitions whose offset stays,
    each with why (a broker without OffsetDelete, a topic the group's live members subscribe to)."""
    answer = delete_group_offsets(broker.config, group, keys)
    if answer.unsupported is not None:
        why = f"Kafka had no offset before, and {answer.unsupported}: the run's offset stays"
        return dict.fromkeys(keys, why)
    kept = {}
    for key in keys:
        code = answer.errors.get(key, 0)
        if code == SUBSCRIBED:
            kept[key] = (
                f"Kafka had no offset before, and its coordinator deletes none of topic {key[0]} while "
                f"members of group {group} subscribe to it (GROUP_SUBSCRIBED_TO_TOPIC): stop them, undo again"
            )
        elif code:
            kept[key] = f"Kafka had no offset before, and OffsetDelete failed: {ERROR_NAMES.get(code, code)}"
    return kept
