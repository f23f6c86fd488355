"""Consumer offsets between ZooKeeper (`/consumers/G/offsets/T/P`) and Kafka (`__consumer_offsets`):
plan, journal, apply, verify, undo.

Both stores hold the same thing — the offset of the next message the group will read — so an offset
moves unchanged. The safety rules: no group with live members (unless forced), no offset moved
backwards (unless allowed), no offset outside the partition's log (unless forced), no Kafka 0.7
byte-position offsets at all. Before anything is written, a journal records every offset in both
stores; `undo` writes those values back. A run is idempotent: what is already in place is left alone.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from kafka_tools import __version__
from kafka_tools.broker.client import Broker
from kafka_tools.consumers.coordinated import live_members
from kafka_tools.consumers.stores import FILE, KAFKA, MIGRATE_METADATA, ZK
from kafka_tools.errors import FindingsError, InputError, KtoolError, UsageError, os_reason
from kafka_tools.keep.durable import create_json, read_json, write_json
from kafka_tools.keep.state import journals_dir, make_state_dir
from kafka_tools.zk.connection import ZnodeMissingError
from kafka_tools.zk.layout import LAYOUT_07
from kafka_tools.zk.names import offset_path
from kafka_tools.zk.reader import list_groups, list_topics, read_group, read_topics
from kafka_tools.zk.write import write_znode

# Statuses of one partition in a plan and after it ran.
WRITE = "write"  # the target store gets the offset
UNCHANGED = "unchanged"  # the target already holds it
REFUSED_REWIND = "refused-rewind"
REFUSED_RANGE = "refused-out-of-range"
REFUSED_LIVE = "refused-live-group"
REFUSED_07 = "refused-0.7-offset"
NO_SOURCE = "no-source-offset"
WRITTEN = "written"
VERIFIED = "verified"
MISMATCH = "mismatch"
NOT_WRITTEN = "not-written"


@dataclass
class PartitionMove:
    group: str
    topic: str
    partition: int
    zookeeper: int | None  # before
    kafka: int | None  # before
    offset: int | None  # what the target store(s) will hold
    status: str
    reason: str = ""
    zookeeper_after: int | None = None
    kafka_after: int | None = None
    log_start: int | None = None
    log_end: int | None = None

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.partition


@dataclass
class GroupPlan:
    group: str
    moves: list[PartitionMove] = field(default_factory=list)
    live: list[str] = field(default_factory=list)
    refused: str | None = None  # why the whole group is refused


@dataclass
class MigrationOptions:
    source: str = ZK
    target: str = KAFKA
    dual_commit: bool = False
    force: bool = False
    allow_rewind: bool = False
    metadata: str = MIGRATE_METADATA
    topics: tuple[str, ...] = ()
    command: str = "migrate-offsets"  # the command that wrote the journal: its name and its --undo


def read_stores(
    zk, broker: Broker, group: str, topics: tuple[str, ...]
) -> tuple[dict, dict, str | None, list[str]]:
    """(ZooKeeper offsets, Kafka offsets, the ZooKeeper layout, live members) of one group."""
    zk_offsets: dict[tuple[str, int], int] = {}
    layout = None
    live: list[str] = []
    g = None
    if zk is not None:  # without ZooKeeper (KRaft, or only --bootstrap-server given): Kafka's side alone
        try:
            g = read_group(zk, group)
        except ZnodeMissingError:  # no such group in ZooKeeper; a malformed or forbidden one stops the run
            g = None
    if g is not None:
        layout = g.layout
        for (topic, key), offset in g.offsets.items():
            if topics and topic not in topics:
                continue
            zk_offsets[(topic, key)] = offset
        live += [f"{m.id} (ZooKeeper)" for m in g.members]
    # OffsetFetch for named partitions works with every broker version: ask for those of the topics the
    # group is known to read (ZooKeeper) or was asked about, else of every topic.
    catalog = topic_catalog(zk, broker)
    wanted = set(topics) or (set(g.topics()) | {t for m in g.members for t in m.subscription} if g else set())
    names = sorted(wanted & set(catalog)) if wanted else [t for t in catalog if t != "__consumer_offsets"]
    candidates = [(t, p) for t in names for p in catalog[t]]
    committed = broker.committed(group, candidates)
    kafka = {k: v for k, v in committed.items() if v is not None}
    live += [f"{m} (Kafka)" for m in live_members(broker, group)]
    return zk_offsets, kafka, layout, live


def topic_catalog(zk, broker: Broker) -> dict[str, list[int]]:
    """Every topic's partitions, read once per session however many groups are planned: from ZooKeeper
    when there is one, else from the brokers' metadata."""
    holder = zk if zk is not None else broker
    cached = getattr(holder, "_ktool_catalog", None)
    if cached is None:
        if zk is not None:
            cached = {t.name: [p.partition for p in t.partitions] for t in read_topics(zk, list_topics(zk))}
        else:
            cached = broker.topics()
        holder._ktool_catalog = cached
    return cached


def plan_group(
    zk, broker: Broker, group: str, options: MigrationOptions, given: dict[tuple[str, int], int] | None = None
) -> GroupPlan:
    """What moving the group's offsets would do, partition by partition (`given`: offsets from a file)."""
    zk_offsets, kafka_offsets, layout, live = read_stores(zk, broker, group, options.topics)
    plan = GroupPlan(group, live=live)
    given = given or {}
    if layout == LAYOUT_07:
        plan.refused = (
            "Kafka 0.7 offsets are byte positions in a 0.7 log, keyed brokerId-partition: they name no "
            "message offset in a 0.8+ log and cannot be converted"
        )
    known = set(given) if options.source == FILE else set(zk_offsets) | set(kafka_offsets)
    keys = sorted(known, key=lambda k: (k[0], str(k[1])))
    plain = [k for k in keys if isinstance(k[1], int)]
    marks = broker.watermarks(plain) if plain else {}
    for key in keys:
        topic, partition = key
        zk_off, kafka_off = zk_offsets.get(key), kafka_offsets.get(key)
        move = PartitionMove(
            group, topic, partition if isinstance(partition, int) else -1, zk_off, kafka_off, None, WRITE
        )
        if not isinstance(partition, int):
            move.status, move.reason = REFUSED_07, f"0.7 key {partition}"
            plan.moves.append(move)
            continue
        move.log_start, move.log_end = marks.get(key, (None, None))
        _decide(move, options, given.get(key))
        plan.moves.append(move)
    if live and not options.force:
        plan.refused = plan.refused or (
            "live members: " + ", ".join(live) + " (stop them, or --force to write while they run)"
        )
    if plan.refused:
        for m in plan.moves:
            if m.status == WRITE:
                m.status, m.reason = (REFUSED_07 if layout == LAYOUT_07 else REFUSED_LIVE), plan.refused
    return plan


def _decide(move: PartitionMove, options: MigrationOptions, given: int | None = None) -> None:
    source = {ZK: move.zookeeper, KAFKA: move.kafka, FILE: given}
    if options.dual_commit:
        values = [v for v in (move.zookeeper, move.kafka) if v is not None]
        move.offset = max(values) if values else None
        targets = [s for s in (KAFKA, ZK) if source[s] != move.offset]
    else:
        move.offset = source[options.source]
        targets = [options.target] if source[options.target] != move.offset else []
    if move.offset is None:
        move.status, move.reason = NO_SOURCE, f"no offset in {options.source}"
        return
    if not targets:
        move.status = UNCHANGED
        return
    ahead = [t for t in targets if source[t] is not None and source[t] > move.offset]
    if ahead and not options.allow_rewind:
        move.status = REFUSED_REWIND
        move.reason = (
            f"{ahead[0]} is ahead ({source[ahead[0]]} > {move.offset}); --allow-rewind moves it back"
        )
        return
    if (
        move.log_end is not None
        and not (move.log_start or 0) <= move.offset <= move.log_end
        and not options.force
    ):
        move.status = REFUSED_RANGE
        move.reason = (
            f"{move.offset} is outside the log {move.log_start}..{move.log_end}; --force writes it anyway"
        )
        return
    move.status = WRITE


# -- the journal ------------------------------------------------------------------------------------

# A journal's states: every offset of both stores recorded and nothing written yet, then how the run
# ended: every write done and read back, a commit the broker refused, a store lost part way.
PREPARED = "prepared"
APPLIED = "applied"
REFUSED = "refused"
INTERRUPTED = "interrupted"
UNDONE = "undone"  # `--undo` put every partition back (consumers/undo.py): a second one writes nothing


def create_journal(
    document: dict, directory: Path | None = None, command: str = "migrate-offsets"
) -> tuple[Path, list[Path]]:
    """`document` as a new journal in `directory` (default: ktool's state directory, never the working
    one), named after the `command` that writes it and the second it started (`-2`, `-3`, … for runs
    started in the same second), visible only once whole (durable.py). Returns its path and the
    temporary files of killed runs removed from the directory."""
    directory = make_state_dir(journals_dir() if directory is None else directory, "journal directory")
    stem = f"{command.rpartition(' ')[2]}-{time.strftime('%Y%m%dT%H%M%S')}"
    try:
        return create_json(directory, stem, document)
    except OSError as exc:
        raise InputError(f"{directory / stem}.json: cannot create the journal: {os_reason(exc)}") from None


def journal_document(plans: list[GroupPlan], options: MigrationOptions, state: str) -> dict:
    return {
        "format": 1,
        "tool": f"ktool {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "state": state,
        "options": asdict(options),
        "groups": [
            {
                "group": p.group,
                "refused": p.refused,
                "live": p.live,
                "partitions": [asdict(m) for m in p.moves],
            }
            for p in plans
        ],
    }


def write_journal(path: Path, plans: list[GroupPlan], options: MigrationOptions, state: str) -> None:
    write_json(path, journal_document(plans, options, state))


def read_journal(path: Path) -> dict:
    journal = read_json(path, "migrate-offsets journal", "groups")
    groups = journal["groups"]
    if not isinstance(groups, list) or not all(
        isinstance(g, dict) and isinstance(g.get("group"), str) and isinstance(g.get("partitions"), list)
        for g in groups
    ):
        raise InputError(f"{path}: not a ktool migrate-offsets journal (groups malformed)")
    return journal


# -- a run: journal, apply, journal again ------------------------------------------------------------


@dataclass
class MigrationRun:
    """What a run did: the plans (their moves carry each partition's status), the journal written (None
    when nothing was to be written, or on a dry run), its last state, and the error that ended the run
    early (the journal says so too)."""

    plans: list[GroupPlan]
    journal: Path | None = None
    state: str | None = None
    failure: KtoolError | None = None

    @property
    def moves(self) -> list[PartitionMove]:
        return [m for p in self.plans for m in p.moves]

    @property
    def pending(self) -> list[PartitionMove]:
        """The moves planned and not written (all of them before the run, none after it)."""
        return [m for m in self.moves if m.status == WRITE]

    @property
    def refused(self) -> list[PartitionMove]:
        return [m for m in self.moves if m.status.startswith("refused")]

    def counts(self) -> dict[str, int]:
        """How many partitions ended in each status."""
        return dict(Counter(m.status for m in self.moves))

    @property
    def findings(self) -> bool:
        """Refusals, or a read-back that does not match: exit 1."""
        return bool(self.refused) or self.counts().get(MISMATCH, 0) > 0


def run_migration(
    zk,
    broker: Broker,
    plans: list[GroupPlan],
    options: MigrationOptions,
    journal_dir: Path | None = None,
    dry_run: bool = False,
    journal_started: Callable[[Path, list[Path]], None] = lambda journal, swept: None,
) -> MigrationRun:
    """Carry out the plans: the journal of every offset in both stores is written (``prepared``) and
    announced through `journal_started` before the first write, then the groups are written and read
    back, and the journal is written again with how the run ended. A commit the broker refuses
    (FindingsError) or a store lost part way (InputError) ends the run: the journal records it and
    `failure` holds the error; running the same command again finishes the job."""
    run = MigrationRun(plans)
    if dry_run or not run.pending:
        return run
    run.journal, swept = create_journal(
        journal_document(plans, options, PREPARED), journal_dir, options.command
    )
    run.state = PREPARED
    journal_started(run.journal, swept)
    try:
        for p in plans:
            apply_group(zk, broker, p, options)
    except FindingsError as exc:
        run.failure = exc
        _journal(run, options, REFUSED)
    except InputError as exc:
        run.failure = exc
        _journal(run, options, INTERRUPTED)
    else:
        _journal(run, options, APPLIED)
    return run


def _journal(run: MigrationRun, options: MigrationOptions, state: str) -> None:
    assert run.journal is not None
    write_journal(run.journal, run.plans, options, state)
    run.state = state


# -- applying ---------------------------------------------------------------------------------------


def write_zookeeper(zk, group: str, offsets: dict[tuple[str, int], int]) -> None:
    """Write offsets as the old consumer does: the decimal offset in /consumers/G/offsets/T/P."""
    try:
        for (topic, partition), offset in sorted(offsets.items()):
            write_znode(zk, offset_path(group, topic, partition), str(offset).encode())
    except InputError as exc:
        raise InputError(f"writing offsets of group {group}: {exc}") from None


def delete_zookeeper(zk, group: str, keys: list[tuple[str, int]]) -> None:
    for topic, partition in keys:
        path = offset_path(group, topic, partition)
        if zk.exists(path):
            zk.delete(path)


def apply_group(zk, broker: Broker, plan: GroupPlan, options: MigrationOptions) -> None:
    """Kafka first, then ZooKeeper where Kafka succeeded (as the 0.8.2 consumer's dual commit does);
    then read both back and verify every partition."""
    todo = [m for m in plan.moves if m.status == WRITE]
    if not todo:
        return
    to_kafka = {m.key: m.offset for m in todo if writes_to(m, options, KAFKA)}
    to_zk = {m.key: m.offset for m in todo if writes_to(m, options, ZK)}
    kafka_ok = True
    if to_kafka:
        try:
            broker.commit(plan.group, to_kafka, options.metadata)
        except KtoolError as exc:
            kafka_ok = False
            for m in todo:
                m.status, m.reason = NOT_WRITTEN, f"the Kafka commit failed: {exc}"
            raise
    if to_zk and kafka_ok:
        write_zookeeper(zk, plan.group, to_zk)
    verify_group(zk, broker, plan, options)


def writes_to(m: PartitionMove, options: MigrationOptions, store: str) -> bool:
    """Whether the run writes `m`'s offset into `store` (ZK or KAFKA)."""
    if options.dual_commit:
        return (m.kafka if store == KAFKA else m.zookeeper) != m.offset
    return options.target == store


def verify_group(zk, broker: Broker, plan: GroupPlan, options: MigrationOptions) -> None:
    zk_now, kafka_now, _, _ = read_stores(zk, broker, plan.group, options.topics)
    for m in plan.moves:
        m.zookeeper_after = zk_now.get(m.key)
        m.kafka_after = kafka_now.get(m.key)
        if m.status != WRITE:
            continue
        wanted_zk = m.offset if writes_to(m, options, ZK) else m.zookeeper
        wanted_kafka = m.offset if writes_to(m, options, KAFKA) else m.kafka
        if (m.zookeeper_after, m.kafka_after) == (wanted_zk, wanted_kafka):
            m.status = VERIFIED
        else:
            m.status = MISMATCH
            m.reason = (
                f"read back zookeeper={m.zookeeper_after} kafka={m.kafka_after}, expected "
                f"zookeeper={wanted_zk} kafka={wanted_kafka}"
            )


def groups_for(zk, broker: Broker, groups: tuple[str, ...], all_groups: bool) -> list[str]:
    if groups and all_groups:
        raise UsageError("give --group or --all-groups, not both")
    if groups:
        return list(groups)
    if not all_groups:
        raise UsageError("name the groups (--group G) or ask for --all-groups")
    found = set(list_groups(zk)) if zk is not None else set()
    found |= {g for g, _ in broker.groups()}
    return sorted(found)
