"""The service behind `ktool groups delete`: a dead consumer group removed from where its offsets live.

ZooKeeper (0.8-era consumers): ``/consumers/GROUP`` and everything under it, only when no consumer id
and no partition owner is registered, in one transaction that fails if anything changed since it was
read (zk/tree.py). Kafka: DeleteGroups through the group's coordinator (Kafka 1.1+), which itself
refuses a group with members. Before anything is removed, a journal (durable.py, in the journal
directory of state.py, as migrate-offsets keeps) records every znode with its data and ACL, or every
offset the group had in Kafka, so that ``--undo JOURNAL`` puts back what is missing.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_tools import __version__
from kafka_tools.broker.client import Broker
from kafka_tools.consumers.coordinated import live_members
from kafka_tools.consumers.migration import create_journal
from kafka_tools.consumers.stores import KAFKA, STORES, ZK
from kafka_tools.errors import FindingsError, InputError, UsageError
from kafka_tools.keep.durable import read_json, write_json
from kafka_tools.zk.connection import describe
from kafka_tools.zk.names import group_path, znode_name_problem
from kafka_tools.zk.tree import SavedZnode, delete_tree, hidden_digests, read_tree, restore_tree

JOURNAL_KIND = "groups-delete"
UNDO_METADATA = "ktool-groups-delete-undo"

# A group's status in the plan, after the run, and after an undo.
WOULD_DELETE = "would-delete"
DELETED = "deleted"
REFUSED_LIVE = "refused-live"
UNKNOWN = "unknown-group"
REFUSED = "refused"  # the store cannot do it (a broker before 1.1), or it changed meanwhile
RESTORED = "restored"
ALREADY_RESTORED = "already-restored"
FAILED = (REFUSED_LIVE, UNKNOWN, REFUSED)

# A journal's states: what will be removed recorded, nothing removed yet; then the run's end.
PREPARED = "prepared"
FINISHED = "finished"


@dataclass
class GroupDeletion:
    """One group: where it is deleted from, what that removes, what happened and why."""

    group: str
    store: str
    status: str
    reason: str = ""
    members: list[str] = field(default_factory=list)
    znodes: list[SavedZnode] = field(default_factory=list)  # ZooKeeper: /consumers/GROUP and below
    offsets: dict[tuple[str, int], int] = field(default_factory=dict)  # Kafka: its committed offsets
    kept: list[str] = field(default_factory=list)  # undo: what exists again and was left alone

    @property
    def refused(self) -> bool:
        return self.status in FAILED


def choose_store(zk, broker: Broker | None, group: str, store: str | None) -> str:
    """`store` when given; else as `groups describe` looks: ZooKeeper when it is configured and holds
    /consumers/GROUP, Kafka otherwise (with --bootstrap-server), ZooKeeper when only it is given."""
    if store == ZK and zk is None:
        raise UsageError("--store zookeeper needs ZooKeeper (--zookeeper or the config file)")
    if store == KAFKA and broker is None:
        raise UsageError("--store kafka needs --bootstrap-server")
    if store is not None:
        return store
    if zk is not None and (broker is None or _in_zookeeper(zk, group)):
        return ZK
    return KAFKA


def _in_zookeeper(zk, group: str) -> bool:
    """ZooKeeper holds /consumers/GROUP (a name that cannot be a znode is not asked about: Kafka's)."""
    return znode_name_problem(group) is None and zk.exists(group_path(group)) is not None


def plan_deletion(zk, broker: Broker | None, group: str, store: str) -> GroupDeletion:
    """What deleting `group` from `store` would remove, or why it is refused."""
    if store == KAFKA:
        return _plan_kafka(broker, group)  # type: ignore[arg-type]
    plan = _plan_zookeeper(zk, group)
    if plan.status == UNKNOWN and broker is None:
        plan.reason += "; give --bootstrap-server for a group whose offsets are in Kafka"
    return plan


def _plan_zookeeper(zk, group: str) -> GroupDeletion:
    base = group_path(group)
    nodes = read_tree(zk, base)
    plan = GroupDeletion(group, ZK, WOULD_DELETE, znodes=nodes)
    hidden = next((n for n in nodes if hidden_digests(n)), None)
    if hidden is not None:  # the journal could not hold its ACL: --undo could not put it back as it was
        users = ", ".join(hidden_digests(hidden))
        raise InputError(
            f"cannot journal the ACL of {hidden.path} on ZooKeeper {describe(zk)}: ZooKeeper hides digest "
            f"user {users}'s id from this session (no ADMIN there), so --undo could not re-create it as it "
            "was; nothing was deleted (delete with credentials that have ADMIN on the group's znodes)"
        )
    if not nodes:
        plan.status, plan.reason = UNKNOWN, f"no consumer group {group} ({base}) on ZooKeeper {describe(zk)}"
        return plan
    ids: list[str] = []
    owners: list[str] = []
    for n in nodes:
        parts = n.path[len(base) + 1 :].split("/")
        if len(parts) == 2 and parts[0] == "ids":
            ids.append(parts[1])
        elif len(parts) == 3 and parts[0] == "owners":
            owners.append(f"{parts[1]}-{parts[2]}")
        elif len(parts) == 3 and parts[0] == "offsets":
            try:
                plan.offsets[(parts[1], int(parts[2]))] = int(n.data.decode().strip())
            except ValueError:  # a 0.7 brokerId-partition key, or a malformed offset: still removed
                pass
    plan.members = ids
    if ids or owners:
        if ids:
            what = f"consumers registered in {base}/ids: {', '.join(ids)}"
        else:
            what = f"partitions owned in {base}/owners: {', '.join(owners)}"
        plan.status, plan.reason = REFUSED_LIVE, f"live members: {what}; stop them first"
    return plan


def _plan_kafka(broker: Broker, group: str) -> GroupDeletion:
    plan = GroupDeletion(group, KAFKA, WOULD_DELETE)
    where = f"broker {broker.config.bootstrap}"
    unsupported = broker.delete_groups_unsupported()
    if unsupported is not None:
        plan.status, plan.reason = REFUSED, unsupported
        return plan
    # A group that only has offsets (committed by a tool, its consumers gone) is not listed by every
    # release's ListGroups: its offsets say it exists.
    plan.offsets = broker.group_offsets(group)
    if not plan.offsets and group not in {g for g, _ in broker.groups()}:
        plan.status, plan.reason = UNKNOWN, f"no consumer group {group} in Kafka ({where})"
        return plan
    plan.members = live_members(broker, group)
    if plan.members:
        plan.status = REFUSED_LIVE
        plan.reason = f"live members in Kafka: {', '.join(plan.members)}; stop them first"
    return plan


# -- the run ------------------------------------------------------------------------------------------


@dataclass
class DeletionRun:
    deletions: list[GroupDeletion]
    journal: Path | None = None

    @property
    def findings(self) -> bool:
        return any(d.refused for d in self.deletions)


def run_deletions(
    zk,
    broker: Broker | None,
    deletions: list[GroupDeletion],
    journal_dir: Path | None = None,
    journal_started: Callable[[Path, list[Path]], None] = lambda journal, swept: None,
) -> DeletionRun:
    """Journal what will be removed (announced through `journal_started` before anything is), then delete
    each group the plan allows; a group whose store refuses is said in its row and the others go on."""
    run = DeletionRun(deletions)
    todo = [d for d in deletions if d.status == WOULD_DELETE]
    if not todo:
        return run
    run.journal, swept = create_journal(journal_document(todo, PREPARED), journal_dir, JOURNAL_KIND)
    journal_started(run.journal, swept)
    for d in todo:
        try:
            if d.store == ZK:
                delete_tree(zk, d.znodes)
            else:
                assert broker is not None
                broker.delete_group(d.group)
        except FindingsError as exc:
            d.status, d.reason = REFUSED, str(exc)
            continue
        d.status = DELETED
    write_journal(run.journal, todo, FINISHED)
    return run


def journal_document(deletions: list[GroupDeletion], state: str) -> dict[str, Any]:
    return {
        "format": 1,
        "kind": JOURNAL_KIND,
        "tool": f"ktool {__version__}",
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "state": state,
        "groups": [_journal_entry(d) for d in deletions],
    }


def write_journal(path: Path, deletions: list[GroupDeletion], state: str) -> None:
    write_json(path, journal_document(deletions, state))


def _journal_entry(d: GroupDeletion) -> dict[str, Any]:
    entry: dict[str, Any] = {"group": d.group, "store": d.store, "status": d.status}
    if d.store == ZK:
        entry["znodes"] = [n.to_json() for n in d.znodes]
    else:
        offsets = sorted(d.offsets.items())
        entry["offsets"] = [{"topic": t, "partition": p, "offset": o} for (t, p), o in offsets]
    return entry


def read_journal(path: Path) -> list[GroupDeletion]:
    """The groups a `groups delete` journal recorded, with their znodes or offsets."""
    doc = read_json(path, "groups delete journal", "groups")
    where = f"{path}"
    if doc.get("kind") != JOURNAL_KIND or not isinstance(doc["groups"], list):
        raise InputError(f"{path}: not a ktool groups delete journal")
    out = []
    for g in doc["groups"]:
        if not isinstance(g, dict) or not isinstance(g.get("group"), str) or g.get("store") not in STORES:
            raise InputError(f"{where}: a group entry is malformed")
        d = GroupDeletion(g["group"], g["store"], str(g.get("status", "")))
        try:
            d.znodes = [SavedZnode.from_json(n, where) for n in g.get("znodes", [])]
            for o in g.get("offsets", []):
                d.offsets[(str(o["topic"]), int(o["partition"]))] = int(o["offset"])
        except (KeyError, TypeError, ValueError):
            raise InputError(f"{where}: the offsets of group {d.group} are malformed") from None
        out.append(d)
    return out


def undo_deletions(zk, broker: Broker | None, recorded: list[GroupDeletion]) -> list[GroupDeletion]:
    """Put back what each recorded group had and is missing now; what exists again (a consumer came back
    and wrote it) is kept as it is. A second undo finds everything in place: already-restored."""
    out = []
    for d in recorded:
        if d.store == ZK:
            if zk is None:
                raise UsageError(f"the journal holds ZooKeeper group {d.group}: give --zookeeper")
            created, d.kept = restore_tree(zk, d.znodes)
            done = bool(created)
        else:
            if broker is None:
                raise UsageError(f"the journal holds Kafka group {d.group}: give --bootstrap-server")
            now = broker.committed(d.group, list(d.offsets)) if d.offsets else {}
            missing = {k: o for k, o in d.offsets.items() if now.get(k) is None}
            d.kept = [f"{t}-{p}" for (t, p) in d.offsets if (t, p) not in missing]
            if missing:
                broker.commit(d.group, missing, UNDO_METADATA)
            done = bool(missing)
        d.status = RESTORED if done else ALREADY_RESTORED
        if d.kept:
            d.reason = f"{len(d.kept)} kept as they are now (written again since the deletion)"
        out.append(d)
    return out
