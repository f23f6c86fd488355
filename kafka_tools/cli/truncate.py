"""`ktool truncate PATH…`: cut corrupt tails as the broker's log recovery does, with a backup."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from kafka_tools.cli.options import json_option, live_options, writable_dir
from kafka_tools.errors import EXIT_ENVIRONMENT, EXIT_FINDINGS, InputError, KtoolError, UsageError
from kafka_tools.format.plural import plural
from kafka_tools.log.dirs import Partition, Segment, discover, refuse_if_live
from kafka_tools.log.recovery import DEFAULT_INDEX_INTERVAL, RecoveryPlan, partition_for, plan_partition
from kafka_tools.state import STATE_HOME_HELP, backups_dir


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
        "partition": plan.partition.name,
        "path": str(plan.partition.path),
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
@click.option("--dry-run", is_flag=True, help="Print the plan; change nothing.")
@click.option(
    "--force", is_flag=True, help="Also cut corruption that valid data follows (kept in the backup)."
)
@click.option(
    "--backup-dir",
    type=click.Path(file_okay=False, path_type=Path),
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
    undo_manifest: Path | None,
    as_json: bool,
) -> None:
    """Cut corrupt tails of segments as the broker's log recovery does, losing no valid byte.

    PATH is a partition directory (topic-N), a log dir (every partition in it) or a segment file
    (recovery then starts at that segment). For each partition ktool prints what the broker's recovery
    would do — truncate the first damaged segment at its last valid byte, rebuild its indexes, delete
    every later segment — then does it: every removed or rewritten byte is first copied, with a
    manifest (sizes, sha256), into --backup-dir. `ktool truncate --undo MANIFEST` restores exactly.

    ktool refuses while a broker holds the log dir's .lock (asked first: one line, exit 3, nothing read
    or changed, --dry-run too; --live refuses as if one did), and refuses damage that valid data
    follows (cutting it would lose that data) unless --force; even then the valid entries after the
    hole are kept in the backup, as a segment of their own.

    \b
    Exit status:
      0  done, or nothing to do
      1  refused (corruption in the middle) or nothing applied
      2  usage error
      3  a path could not be read, or a broker holds the log dir's .lock
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
    if not dry_run:
        from kafka_tools.log.repair import check_backup_location

        check_backup_location(backup_dir)
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
                _say(out, True, {"type": "unreadable", "partition": None, "reason": str(exc)}, None)
    plans: list[RecoveryPlan] = []
    for part, start in targets:
        # One partition that cannot be read fully is left alone and said so; the others go on.
        problems = part.unreadable_lines()
        if not problems:
            try:
                plans.append(plan_partition(part, start, index_interval_bytes))
                continue
            except OSError as exc:
                problems = [f"{exc.filename or part.path}: {exc.strerror or exc}"]
        unreadable += 1
        for line in problems:
            click.echo(f"ktool: {line}; {part.name} left unchanged", err=True)
            if as_json:
                _say(out, True, {"type": "unreadable", "partition": part.name, "reason": line}, None)
    refused = applied = 0
    for plan in plans:
        _say(out, as_json, plan_json(plan), "\n".join(plan_lines(plan)))
        if plan.unrepairable and not dry_run:
            refused += 1
            msg = (
                f"{plan.partition.name}: refused: damage the broker's recovery keeps; truncating cannot "
                "repair it (with or without --force)"
            )
            click.echo(f"ktool: {msg}", err=True)
            _say(out, as_json, {"type": "refused", "partition": plan.partition.name, "reason": msg}, None)
            continue
        if plan.is_noop or plan.unrepairable or dry_run:
            continue
        if plan.loses_valid_data and not force:
            refused += 1
            msg = (
                f"{plan.partition.name}: refused: "
                f"{plural(plan.lost_entries, 'valid entry', 'valid entries')} would be lost; the damage is "
                "in the middle, not a tail (--force cuts it anyway, keeping them in the backup)"
            )
            click.echo(f"ktool: {msg}", err=True)
            _say(out, as_json, {"type": "refused", "partition": plan.partition.name, "reason": msg}, None)
            continue
        from kafka_tools.log.repair import MANIFEST, apply_plan, log_dir_lock

        writable_dir(backup_dir, "backup")
        with log_dir_lock(plan.partition.log_dir):
            backup = apply_plan(plan, backup_dir)
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
                "partition": plan.partition.name,
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
    from kafka_tools.log.dirs import is_partition_dir

    return is_partition_dir(path)


def _say(out, as_json: bool, obj: dict, text: str | None) -> None:
    if as_json:
        from kafka_tools.render.json_lines import emit  # the one JSON Lines writer, for --json only

        emit(out, obj)
    elif text is not None:
        out.write(text + "\n")
