"""`ktool truncate PATH…`: cut corrupt tails as the broker's log recovery does, with a backup."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path

import click

from kafka_tools.cli.options import json_option, live_options
from kafka_tools.errors import (
    EXIT_ENVIRONMENT,
    EXIT_FINDINGS,
    FindingsError,
    InputError,
    KtoolError,
    UsageError,
)
from kafka_tools.format.plural import plural
from kafka_tools.keep.state import STATE_HOME_HELP, backups_dir, make_state_dir
from kafka_tools.log.checks.partition_checks import plan_partition
from kafka_tools.log.checks.recovery import (
    DEFAULT_INDEX_INTERVAL,
    RecoveryPlan,
    partition_for,
)
from kafka_tools.log.files.dirs import Partition, Segment, read_partition
from kafka_tools.log.files.discover import check_backup_location, discover, owning_log_dirs, refuse_if_live
from kafka_tools.render.contract import partition_fields


def plan_lines(plan: RecoveryPlan) -> list[str]:
    part = plan.partition
    if plan.unrepairable:
        f = plan.unrepairable[0]
        where = f"{f.file}:{f.position}" if f.position is not None else f.file
        more = f" (and {len(plan.unrepairable) - 1} more)" if len(plan.unrepairable) > 1 else ""
        return [
            f"{part.name}: cannot repair: {where}: {f.kind}: {f.message}{more}; the broker's recovery "
            "keeps this damage, so truncating would not repair it"
        ]
    if plan.is_noop:
        return [f"{part.name}: nothing to do (every segment is valid)"]
    lines = [f"{part.name}: the broker's recovery would:"]
    if plan.cut is not None:
        c = plan.cut
        lines.append(
            f"  truncate {c.segment.log} from {c.size} to {plural(c.keep_bytes, 'byte')} (cut {c.cut_bytes}):"
            f" {c.reason}"
        )
        if c.valid_after:
            lines.append(
                f"    losing {plural(len(c.valid_after), 'valid entry', 'valid entries')} after the damage "
                "(first at position "
                f"{c.valid_after[0]}): corruption in the middle, not a tail"
            )
    for seg in plan.deleted_segments:
        lines.append(f"  delete segment {seg.log.name} and its indexes (after the cut)")
    for seg, why in plan.rebuild_indexes:
        lines.append(
            f"  rebuild the indexes of {seg.log.name} (every {plural(plan.index_interval, 'byte')}): {why}"
        )
    for path, why in plan.deleted_snapshots:
        lines.append(f"  delete producer snapshot {path.name}: {why}")
    if plan.epoch_checkpoint_keep is not None:
        lines.append(
            f"  drop leader epochs past the new log end from {plan.partition.leader_epoch_checkpoint}"
        )
    if plan.new_log_end is not None:
        lines.append(f"  new log end offset: {plan.new_log_end}")
    return lines


def plan_json(plan: RecoveryPlan) -> dict:
    c = plan.cut
    return {
        "type": "plan",
        **partition_fields(plan.partition.path),
        "noop": plan.is_noop,
        "repair": plan.advice,
        "unrepairable": [f.fields() for f in plan.unrepairable],
        "truncate": None
        if c is None
        else {
            "file": str(c.segment.log),
            "size": c.size,
            "newSize": c.keep_bytes,
            "cutBytes": c.cut_bytes,
            "reason": c.reason,
            "validEntriesLost": len(c.valid_after),
        },
        "deleteSegments": [str(s.log) for s in plan.deleted_segments],
        "rebuildIndexes": [{"segment": str(s.log), "reason": why} for s, why in plan.rebuild_indexes],
        "deleteSnapshots": [str(p) for p, _ in plan.deleted_snapshots],
        "lostValidEntries": plan.lost_entries,
        "newLogEndOffset": plan.new_log_end,
        "indexIntervalBytes": plan.index_interval,
    }


@click.command("truncate")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print the plan; change nothing. Refuses, and exits, as the same run without it would.",
)
@click.option(
    "--force", is_flag=True, help="Also cut corruption that valid data follows (kept in the backup)."
)
@click.option(
    "--backup-dir",
    type=click.Path(path_type=Path),  # a file in the way: exit 3 in one line (check_backup_location)
    metavar="DIRECTORY",
    help="Where removed bytes and the manifest go, never inside a log dir "
    f"[default: backups/ in ktool's state directory, {STATE_HOME_HELP}].",
)
@click.option(
    "--index-interval-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_INDEX_INTERVAL,
    show_default=True,
    help="index.interval.bytes for the rebuilt indexes.",
)
@click.option(
    "--allow-links",
    is_flag=True,
    help="Change a segment, index or checkpoint that is a symbolic link or has other hard links (a "
    "`cp -al` snapshot) by first giving it a copy of its own in the partition directory: the link's target "
    "and the other names keep the old bytes (--undo puts a symbolic link back).",
)
@click.option(
    "--undo",
    "undo_manifest",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Restore the files a previous run changed, from its manifest.",
)
@json_option("the `plan` and the result of each partition")
@live_options
@click.pass_context
def truncate(
    ctx: click.Context,
    paths: tuple[Path, ...],
    dry_run: bool,
    force: bool,
    backup_dir: Path | None,
    index_interval_bytes: int,
    allow_links: bool,
    undo_manifest: Path | None,
    as_json: bool,
) -> None:
    """Cut corrupt tails of segments as the broker's log recovery does, losing no valid byte.

    PATH is a partition directory (topic-N), a log dir (every partition in it) or a segment file
    (recovery then starts at that segment). For each partition ktool prints what the broker's recovery
    would do — truncate the first damaged segment at its last valid byte, rebuild its indexes, delete
    every later segment — then does it: every removed or rewritten byte is first copied, with a
    manifest (sizes, sha256), into --backup-dir. `ktool truncate --undo MANIFEST` restores exactly.

    ktool refuses while a broker or another ktool holds the log dir's .lock (asked first: one line,
    exit 3, nothing read or changed, --dry-run too; --live refuses as if one did), and refuses damage
    that valid data follows (cutting it would lose that data) unless --force; even then the valid
    entries after the hole are kept in the backup, as a segment of their own. It takes the .lock itself
    before planning and holds it until the last change is on disk.

    It changes only files directly in the partition directory, never through a link: a file to change
    that is a symbolic link or has other hard links is refused (exit 3) unless --allow-links. Files it
    writes or restores keep their owner, group and mode; backups are 0600 in 0700 directories, and a
    backup directory appears only complete, with its manifest. A run interrupted (killed, power cut)
    is finished by the next run with the same --backup-dir, from its manifest; when the files changed
    since, that run refuses (exit 1) and names the `--undo` to run.

    \b
    Exit status:
      0  done (an interrupted run finished too), or nothing to do
      1  refused (corruption in the middle, an interrupted run that cannot be finished) or nothing applied
      2  usage error
      3  a path could not be read or is a link, the backup could not be written (nothing changed),
         or a broker or another ktool holds the log dir's .lock
    """
    out = sys.stdout
    # The repair machinery (hashing, copying, the journal) only where something is changed or undone:
    # not for --dry-run.
    if undo_manifest is not None:
        from kafka_tools.log.repair import MANIFEST, undo, undo_targets

        if paths:
            raise UsageError("--undo takes the manifest alone, no PATH")
        manifest = undo_manifest / MANIFEST if undo_manifest.is_dir() else undo_manifest
        refuse_if_live(undo_targets(manifest), "ktool truncate --undo")
        actions = 0
        for line in undo(manifest):
            actions += 1
            _say(out, as_json, {"type": "undo", "action": line}, line)
        _say(out, as_json, {"type": "summary", "undoActions": actions}, None)
        return
    if not paths:
        raise UsageError("give a partition directory, a log dir or a segment (or --undo MANIFEST)")
    # First: a running broker's files are not planned (a missing path is said below, with the others).
    refuse_if_live([p for p in paths if p.exists()], "ktool truncate")
    backup_dir = backups_dir() if backup_dir is None else backup_dir
    check_backup_location(backup_dir)  # in a dry run too: it predicts the real run's refusals
    with ExitStack() as held:
        if not dry_run:
            from kafka_tools.log.write_lock import write_lock

            # Taken before anything is planned: no other repair (nor a broker) changes what is planned.
            for log_dir in owning_log_dirs([p for p in paths if p.exists()]):
                held.enter_context(write_lock(log_dir, "ktool truncate"))
        _truncate(ctx, out, paths, dry_run, force, backup_dir, index_interval_bytes, allow_links, as_json)


def _truncate(
    ctx: click.Context,
    out,
    paths: tuple[Path, ...],
    dry_run: bool,
    force: bool,
    backup_dir: Path,
    index_interval_bytes: int,
    allow_links: bool,
    as_json: bool,
) -> None:
    targets: list[tuple[Partition, Segment | None]] = []
    unreadable = 0
    for path in paths:
        # A path that is missing or of the wrong kind is said and the others are planned (exit 3).
        try:
            targets += _targets(path)
        except KtoolError as exc:
            unreadable += 1
            click.echo(f"ktool: {exc}", err=True)
            if as_json:
                _say(out, True, {"type": "unreadable", **partition_fields(path), "reason": str(exc)}, None)
    plans: list[RecoveryPlan] = []
    refused = applied = 0
    for part, start in targets:
        # One partition that cannot be read fully is left alone and said so; the others go on.
        problems = part.unreadable_lines()
        if not problems:
            try:
                if not dry_run:
                    part, start = _finish_interrupted(part, start, backup_dir, out, as_json)
                elif backup_dir.is_dir() and _say_interrupted(part, backup_dir):
                    continue
                plans.append(plan_partition(part, start, index_interval_bytes))
                continue
            except FindingsError as exc:  # an interrupted run that cannot be finished: --undo it
                refused += 1
                click.echo(f"ktool: {exc}", err=True)
                refusal = {"type": "refused", **partition_fields(part.path), "reason": str(exc)}
                _say(out, as_json, refusal, None)
                continue
            except KtoolError as exc:
                problems = [str(exc)]
            except OSError as exc:
                problems = [f"{exc.filename or part.path}: {exc.strerror or exc}"]
        unreadable += 1
        for line in problems:
            click.echo(f"ktool: {line}; {part.name} left unchanged", err=True)
            if as_json:
                _say(out, True, {"type": "unreadable", **partition_fields(part.path), "reason": line}, None)
    for plan in plans:
        _say(out, as_json, plan_json(plan), "\n".join(plan_lines(plan)))
        reason = plan.refusal(force)
        if reason is not None:  # the dry run refuses as the real run does
            refused += 1
            click.echo(f"ktool: {reason}", err=True)
            refusal = {"type": "refused", **partition_fields(plan.partition.path), "reason": reason}
            _say(out, as_json, refusal, None)
            continue
        if plan.is_noop:
            continue
        if dry_run:  # and a link the real run would refuse is said as it would say it
            from kafka_tools.log.repair import check_links

            try:
                check_links(plan, allow_links)
            except InputError as exc:
                unreadable += 1
                _say_unreadable(out, as_json, plan, exc)
            continue
        from kafka_tools.log.repair import MANIFEST, apply_plan

        make_state_dir(backup_dir, "backup directory")
        try:
            backup = apply_plan(plan, backup_dir, allow_links)
        except InputError as exc:  # a link, a full backup disk: nothing of this partition changed
            unreadable += 1
            _say_unreadable(out, as_json, plan, exc)
            continue
        applied += 1
        text = (
            f"{plan.partition.name}: done; backup and manifest in {backup} "
            f"(undo: ktool truncate --undo {backup / MANIFEST})"
        )
        _say(
            out,
            as_json,
            {
                "type": "applied",
                **partition_fields(plan.partition.path),
                "backup": str(backup),
                "manifest": str(backup / MANIFEST),
            },
            text,
        )
    if dry_run and not as_json and targets:
        out.write("dry run: nothing changed\n")
    summary = {
        "type": "summary",
        "partitions": len(plans),
        "applied": applied,
        "refused": refused,
        "unreadable": unreadable,
        "dryRun": dry_run,
    }
    _say(out, as_json, summary, None)
    if unreadable:
        ctx.exit(EXIT_ENVIRONMENT)
    if refused:
        ctx.exit(EXIT_FINDINGS)


def _finish_interrupted(
    part: Partition, start: Segment | None, backup_dir: Path, out, as_json: bool
) -> tuple[Partition, Segment | None]:
    """A run of this partition that was interrupted (its manifest still `prepared`) is finished first,
    and the partition read again; FindingsError (exit 1, naming the `--undo`) when it cannot be."""
    from kafka_tools.log.repair import interrupted, resume

    pending = interrupted(backup_dir, part.path)
    if not pending:
        return part, start
    for manifest in pending:
        resume(manifest)
        text = (
            f"{part.name}: finished the interrupted repair {manifest} "
            f"(undo: ktool truncate --undo {manifest})"
        )
        resumed = {"type": "resumed", **partition_fields(part.path), "manifest": str(manifest)}
        _say(out, as_json, resumed, text)
    fresh = read_partition(part.path)
    if start is not None:
        start = next((s for s in fresh.segments if s.log.name == start.log.name), None)
    return fresh, start


def _say_unreadable(out, as_json: bool, plan: RecoveryPlan, exc: InputError) -> None:
    """A partition the run cannot change (a link, a full backup disk): one line, and its JSON object."""
    click.echo(f"ktool: {exc}", err=True)
    if as_json:
        obj = {"type": "unreadable", **partition_fields(plan.partition.path), "reason": str(exc)}
        _say(out, True, obj, None)


def _say_interrupted(part: Partition, backup_dir: Path) -> bool:
    """--dry-run: an unfinished repair of this partition is said, not finished; True when there is one
    (the real run finishes it before it plans: what it plans then is not known yet)."""
    from kafka_tools.log.repair import interrupted

    found = interrupted(backup_dir, part.path)
    for manifest in found:
        click.echo(
            f"ktool: {part.name}: the repair in {manifest} was interrupted; ktool truncate without --dry-run "
            f"finishes it first (or: ktool truncate --undo {manifest})",
            err=True,
        )
    return bool(found)


def _targets(path: Path) -> list[tuple[Partition, Segment | None]]:
    """The partitions (and the segment to start at) a PATH names; InputError for a path that is missing
    or not a partition directory, a log dir or a segment file in a partition directory."""
    check_exists(path)
    if path.is_dir() and not _is_partition(path):
        return [(p, None) for p in discover([path]).all_partitions()]
    if not path.is_dir() and not _is_partition(path.parent):
        raise InputError(f"{path}: not a partition directory (topic-N), a log dir or a segment file")
    try:
        return [partition_for(path)]
    except UsageError as exc:  # a file of a partition directory, not one of its segments
        raise InputError(str(exc)) from None


def check_exists(path: Path) -> None:
    """A path that is not there is exit 3 in one line (as in `validate`), not a usage error."""
    if path.is_symlink() and not path.exists():
        raise InputError(f"{path}: a dangling symbolic link")
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")


def _is_partition(path: Path) -> bool:
    from kafka_tools.log.files.discover import is_partition_dir

    return is_partition_dir(path)


def _say(out, as_json: bool, obj: dict, text: str | None) -> None:
    if as_json:
        from kafka_tools.render.json_lines import emit  # the one JSON Lines writer, for --json only

        emit(out, obj)
    elif text is not None:
        out.write(text + "\n")
