"""`ktool truncate`'s service: which partitions a run takes, the plan for each, what it refuses, and what
it changes — said as events, in the order they happen, for render/truncate.py to print.

The refusal policy lives here and in `RecoveryPlan.refusal` (log/recovery.py), not in the CLI: a dry run
walks the same steps as the real run (a broker's lock, the backup location, an interrupted repair, a
link) and refuses what the real run would refuse, with the same words and exit code. The repair
machinery (hashing, copying, the journal) is imported only where something is changed or undone.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from contextlib import ExitStack, closing
from dataclasses import dataclass
from pathlib import Path

from kafka_tools.errors import (
    EXIT_ENVIRONMENT,
    EXIT_FINDINGS,
    FindingsError,
    InputError,
    KtoolError,
    UsageError,
    os_error_line,
    path_error,
)
from kafka_tools.format.shared_methods import SharedMethods
from kafka_tools.keep.state import backups_dir, make_state_dir
from kafka_tools.log.checks.findings import UNREADABLE
from kafka_tools.log.checks.partition_checks import plan_partition
from kafka_tools.log.checks.recovery import DEFAULT_INDEX_INTERVAL, RecoveryPlan, partition_for
from kafka_tools.log.files.dirs import Partition, Segment
from kafka_tools.log.files.discover import (
    check_backup_location,
    discover,
    is_partition_dir,
    owning_log_dirs,
    refuse_if_live,
)
from kafka_tools.log.held_dir import HeldDir, hold_partition, may_be_unfinished, read_held_partition, shown_as


@dataclass(init=False, repr=False, eq=False)
class TruncateRequest(SharedMethods):
    """One `ktool truncate PATH…` run (backup_dir None: backups/ in ktool's state directory)."""

    paths: tuple[Path, ...]
    dry_run: bool = False
    force: bool = False
    backup_dir: Path | None = None
    index_interval: int = DEFAULT_INDEX_INTERVAL
    allow_links: bool = False
    follow_dir_links: bool = False  # a partition directory that is a symbolic link: repair its target

    def __init__(
        self,
        paths: tuple[Path, ...],
        dry_run: bool = False,
        force: bool = False,
        backup_dir: Path | None = None,
        index_interval: int = DEFAULT_INDEX_INTERVAL,
        allow_links: bool = False,
        follow_dir_links: bool = False,
    ) -> None:
        self.paths = paths
        self.dry_run = dry_run
        self.force = force
        self.backup_dir = backup_dir
        self.index_interval = index_interval
        self.allow_links = allow_links
        self.follow_dir_links = follow_dir_links


# -- what a run says, in order -------------------------------------------------------------------
# Plain (not frozen) dataclasses with written __init__s: a frozen one makes @dataclass compile its
# __setattr__ and __delattr__ at every start, 0.23 ms a class, and truncate loads ten of them.


@dataclass(init=False, repr=False, eq=False)
class Planned(SharedMethods):
    """What the broker's recovery would do to a partition."""

    plan: RecoveryPlan

    def __init__(self, plan: RecoveryPlan) -> None:
        self.plan = plan


@dataclass(init=False, repr=False, eq=False)
class Refused(SharedMethods):
    """A partition left alone on purpose (exit 1): `reason` names it."""

    path: Path
    reason: str

    def __init__(self, path: Path, reason: str) -> None:
        self.path = path
        self.reason = reason


@dataclass(init=False, repr=False, eq=False)
class Unreadable(SharedMethods):
    """A path or partition that could not be read or changed (exit 3): `reason` for its JSON object,
    `line` the one line said on stderr."""

    path: Path
    reason: str
    line: str

    def __init__(self, path: Path, reason: str, line: str) -> None:
        self.path = path
        self.reason = reason
        self.line = line


@dataclass(init=False, repr=False, eq=False)
class Applied(SharedMethods):
    """A plan carried out, with its backup and the manifest `--undo` takes."""

    plan: RecoveryPlan
    backup: Path
    manifest: Path

    def __init__(self, plan: RecoveryPlan, backup: Path, manifest: Path) -> None:
        self.plan = plan
        self.backup = backup
        self.manifest = manifest


@dataclass(init=False, repr=False, eq=False)
class Resumed(SharedMethods):
    """An interrupted repair of a partition finished from its manifest before planning."""

    partition: Partition
    manifest: Path

    def __init__(self, partition: Partition, manifest: Path) -> None:
        self.partition = partition
        self.manifest = manifest


@dataclass(init=False, repr=False, eq=False)
class Interrupted(SharedMethods):
    """--dry-run: an unfinished repair of a partition, which the real run finishes first."""

    partition: Partition
    manifest: Path

    def __init__(self, partition: Partition, manifest: Path) -> None:
        self.partition = partition
        self.manifest = manifest


@dataclass(init=False, repr=False, eq=False)
class Summary(SharedMethods):
    partitions: int
    applied: int
    refused: int
    unreadable: int
    dry_run: bool
    targets: int  # partitions named, planned or not

    def __init__(
        self,
        partitions: int,
        applied: int,
        refused: int,
        unreadable: int,
        dry_run: bool,
        targets: int,
    ) -> None:
        self.partitions = partitions
        self.applied = applied
        self.refused = refused
        self.unreadable = unreadable
        self.dry_run = dry_run
        self.targets = targets

    @property
    def exit_code(self) -> int:
        if self.unreadable:
            return EXIT_ENVIRONMENT
        return EXIT_FINDINGS if self.refused else 0


@dataclass(init=False, repr=False, eq=False)
class Undone(SharedMethods):
    """One file `--undo` restored: `action` says how."""

    action: str

    def __init__(self, action: str) -> None:
        self.action = action


@dataclass(init=False, repr=False, eq=False)
class UndoSummary(SharedMethods):
    actions: int

    def __init__(self, actions: int) -> None:
        self.actions = actions


Event = Planned | Refused | Unreadable | Applied | Resumed | Interrupted | Summary


def undo_run(manifest: Path) -> Iterator[Undone | UndoSummary]:
    """`ktool truncate --undo MANIFEST` (the manifest or its backup directory): restore every file a run
    changed; refused (exit 3) while a broker holds a log dir it would change."""
    from kafka_tools.log.repair import manifest_of, undo, undo_targets

    manifest = manifest_of(manifest)
    refuse_if_live(undo_targets(manifest), "ktool truncate --undo")
    actions = 0
    for line in undo(manifest):
        actions += 1
        yield Undone(line)
    yield UndoSummary(actions)


def truncate_run(request: TruncateRequest) -> Iterator[Event]:
    """Plan (and, but for --dry-run, carry out) the broker's recovery of every partition the paths name.
    Refused before anything is read while a broker holds a log dir's .lock (InputError); the real run
    holds the .lock itself from before planning until the last change is on disk."""
    paths = request.paths
    # First: a running broker's files are not planned (a missing path is said below, with the others).
    refuse_if_live([p for p in paths if p.exists()], "ktool truncate")
    backup_dir = backups_dir() if request.backup_dir is None else request.backup_dir
    check_backup_location(backup_dir)  # in a dry run too: it predicts the real run's refusals
    with ExitStack() as held:
        locks = _Locks(held, request.dry_run)
        # Taken before anything is planned: no other repair (nor a broker) changes what is planned.
        for log_dir in owning_log_dirs([p for p in paths if p.exists()]):
            locks.take(log_dir)
        yield from _run(request, backup_dir, held, locks)


class _Locks:
    """The log dirs whose .lock a real run holds (each once), by their path as the kernel resolves it:
    a partition reached through `..` or a followed link is locked in the log dir it really is in."""

    def __init__(self, stack: ExitStack, dry_run: bool) -> None:
        self.stack = stack
        self.dry_run = dry_run
        self.taken: set[str] = set()

    def take(self, log_dir: Path) -> None:
        real = os.path.realpath(log_dir)
        if self.dry_run or real in self.taken:
            return
        from kafka_tools.log.write_lock import write_lock

        self.stack.enter_context(write_lock(Path(real), "ktool truncate"))
        self.taken.add(real)


def _run(request: TruncateRequest, backup_dir: Path, stack: ExitStack, locks: _Locks) -> Iterator[Event]:
    dry_run = request.dry_run
    targets: list[tuple[Partition, Segment | None]] = []
    unreadable = 0
    for path in request.paths:
        # A path that is missing or of the wrong kind is said and the others are planned (exit 3).
        try:
            targets += targets_of(path)
        except KtoolError as exc:
            unreadable += 1
            yield Unreadable(path, str(exc), str(exc))
    plans: list[tuple[RecoveryPlan, HeldDir]] = []
    refused = applied = 0
    for named, named_start in targets:
        # The partition directory opened once, as the kernel resolves its path (`..`, links), and
        # everything from here on read and changed through that descriptor (log/held_dir.py).
        try:
            held = hold_partition(named.path, request.follow_dir_links)
            stack.callback(held.close)
            locks.take(held.path.parent)
            part, start = _read_held(held, named_start)
        except KtoolError as exc:
            unreadable += 1
            yield Unreadable(named.path, str(exc), str(exc))
            continue
        # One partition that cannot be read fully is left alone and said so; the others go on.
        problems = [held.said(line) for line in part.unreadable_lines()]
        if not problems:
            try:
                if not dry_run:
                    part, start = yield from _finish_interrupted(held, part, start, backup_dir)
                else:
                    pending = _interrupted(held, backup_dir)
                    if pending:
                        yield from pending
                        continue
                plan = plan_partition(part, start, request.index_interval)
                shown_as(held, part, plan)
                # A file that could not be read (permission denied) is the environment's (exit 3), said
                # as validate says it, not damage the broker's recovery keeps (exit 1).
                problems = [f"{f.file}: {f.message}" for f in plan.unrepairable if f.kind == UNREADABLE]
                if not problems:
                    plans.append((plan, held))  # planned on: its device and inode, to open it again by
                    held.close()  # (a descriptor per partition waiting would exhaust them at 10,000)
                    continue
            except FindingsError as exc:  # an interrupted run that cannot be finished: --undo it
                refused += 1
                line = held.said(str(exc))
                held.close()
                yield Refused(held.path, line)
                continue
            except KtoolError as exc:
                problems = [held.said(str(exc))]
            except OSError as exc:
                problems = [held.said(os_error_line(exc.filename or held.path, exc))]
        unreadable += 1
        held.close()
        for line in problems:
            yield Unreadable(held.path, line, f"{line}; {part.name} left unchanged")
    for plan, held in plans:
        yield Planned(plan)
        reason = plan.refusal(request.force)
        if reason is not None:  # the dry run refuses as the real run does
            refused += 1
            yield Refused(plan.partition.path, reason)
            continue
        if plan.is_noop:
            continue
        if dry_run:  # and a link the real run would refuse is said as it would say it
            from kafka_tools.log.repair import check_links

            try:
                with closing(held.reopened(request.follow_dir_links)) as again:
                    check_links(plan, again, request.allow_links)
            except InputError as exc:
                unreadable += 1
                yield Unreadable(plan.partition.path, str(exc), str(exc))
            continue
        from kafka_tools.log.repair import MANIFEST, apply_plan

        make_state_dir(backup_dir, "backup directory")
        try:
            with closing(held.reopened(request.follow_dir_links)) as again:
                backup = apply_plan(plan, backup_dir, request.allow_links, again)
        except InputError as exc:  # a link, a full backup disk, the directory swapped: nothing changed
            unreadable += 1
            yield Unreadable(plan.partition.path, str(exc), str(exc))
            continue
        applied += 1
        yield Applied(plan, backup, backup / MANIFEST)
    yield Summary(len(plans), applied, refused, unreadable, dry_run, len(targets))


def _read_held(held: HeldDir, start: Segment | None) -> tuple[Partition, Segment | None]:
    """The held partition directory read through its descriptor, and the segment named `start` in it."""
    part = read_held_partition(held)
    if start is not None:
        start = next((s for s in part.segments if s.log.name == start.log.name), None)
    return part, start


def _finish_interrupted(
    held: HeldDir, part: Partition, start: Segment | None, backup_dir: Path
) -> Generator[Resumed, None, tuple[Partition, Segment | None]]:
    """A run of this partition that was interrupted (its manifest still `prepared`, found in the backup
    directory or through the partition directory's pointer) is finished first, and the partition read
    again (returned); FindingsError (exit 1, naming the `--undo`) when it cannot be."""
    from kafka_tools.log.repair import drop_pointer, interrupted, resume

    pending = interrupted(backup_dir, held)
    if not pending:
        drop_pointer(held)  # a pointer whose repair is finished or undone (killed before it was removed)
        return part, start
    said = Partition(held.path, part.topic, part.partition)
    for manifest in pending:
        resume(manifest, held)
        yield Resumed(said, manifest)
    return _read_held(held, start)


def _interrupted(held: HeldDir, backup_dir: Path) -> list[Interrupted]:
    """--dry-run: the unfinished repairs of this partition, said, not finished (the real run finishes
    them before it plans: what it plans then is not known yet)."""
    if not may_be_unfinished(held, backup_dir):
        return []
    from kafka_tools.log.repair import interrupted

    said = Partition(held.path, *_where(held))
    return [Interrupted(said, manifest) for manifest in interrupted(backup_dir, held)]


def _where(held: HeldDir) -> tuple[str, int]:
    from kafka_tools.format.kinds import topic_partition

    where = topic_partition(held.path.name)
    assert where is not None  # read_held_partition checked it
    return where


def targets_of(path: Path) -> list[tuple[Partition, Segment | None]]:
    """The partitions (and the segment to start at) a PATH names; InputError for a path that is missing
    or not a partition directory, a log dir or a segment file in a partition directory."""
    check_exists(path)
    if path.is_dir() and not is_partition_dir(path):
        return [(p, None) for p in discover([path]).all_partitions()]
    if not path.is_dir() and not is_partition_dir(path.parent):
        raise InputError(f"{path}: not a partition directory (topic-N), a log dir or a segment file")
    try:
        return [partition_for(path)]
    except UsageError as exc:  # a file of a partition directory, not one of its segments
        raise InputError(str(exc)) from None


def check_exists(path: Path) -> None:
    """A path that is not there is exit 3 in one line (as in `validate`), not a usage error."""
    missing = path_error(path)
    if missing:
        raise InputError(missing)
