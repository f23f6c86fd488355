"""`ktool migrate-offsets` and `ktool offsets export|import`: consumer offsets between ZooKeeper, Kafka
and files, with a journal, verification and undo."""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kafka_tools.cli.broker_options import broker_from_options, broker_options
from kafka_tools.cli.complete_names import complete_groups, complete_topics
from kafka_tools.cli.options import colour_of, json_option, say_swept, write_output_file
from kafka_tools.cli.paths import path_type
from kafka_tools.cli.zk_options import (
    check_zk_groups,
    zk_config_from_options,
    zk_if_configured,
    zookeeper_options,
)
from kafka_tools.consumers.stores import FILE, KAFKA, MIGRATE_METADATA, ZK
from kafka_tools.errors import EXIT_FINDINGS, UsageError
from kafka_tools.keep.state import STATE_HOME_HELP

if TYPE_CHECKING:  # the services (the broker and ZooKeeper clients) only when a command runs
    from kafka_tools.broker.client import Broker
    from kafka_tools.consumers.migration import GroupPlan, MigrationOptions, PartitionMove

_STORES = click.Choice([ZK, KAFKA])


def _colour(ctx: click.Context) -> bool:
    from kafka_tools.render.lines import wants_colour

    return wants_colour(sys.stdout, colour_of(ctx))


def run_plans(
    ctx: click.Context,
    zk,
    broker,
    plans: list[GroupPlan],
    options: MigrationOptions,
    dry_run: bool,
    journal_dir: Path | None,
    as_json: bool,
    render: Callable[[list[PartitionMove], str], None] | None = None,
) -> None:
    """Say what consumers/migration.run_migration does, and exit as its outcome says. `render`: how the
    moves are shown (default: the table, or JSON Lines)."""
    from kafka_tools.consumers.migration import APPLIED, INTERRUPTED, REFUSED, run_migration
    from kafka_tools.render.offsets import render_moves

    undo_command = f"ktool {options.command} --undo"
    colour = _colour(ctx)

    def show(moves: list[PartitionMove], title: str) -> None:
        if render is not None:
            render(moves, title)
        else:
            render_moves(moves, colour, as_json, title)

    for p in plans:
        if p.refused:
            click.echo(f"ktool: group {p.group}: refused: {p.refused}", err=True)

    def announce(journal: Path, swept: list[Path]) -> None:
        say_swept(swept)
        click.echo(
            f"ktool: journal of every offset before the change: {journal} (undo: {undo_command} {journal})",
            err=True,
        )

    run = run_migration(zk, broker, plans, options, journal_dir, dry_run, announce)
    if run.state is None:
        show(run.moves, "plan (dry run)" if dry_run else "plan")
        if not run.pending:
            click.echo("ktool: nothing to write: every offset is already in place or refused", err=True)
        if run.refused:
            ctx.exit(EXIT_FINDINGS)
        return
    titles = {APPLIED: "result", REFUSED: "refused by the broker", INTERRUPTED: "interrupted"}
    show(run.moves, titles[run.state])
    if run.state == INTERRUPTED:
        click.echo(
            f"ktool: interrupted; the journal {run.journal} says what was written; run the same command "
            "again to finish",
            err=True,
        )
    if run.failure is not None:
        raise run.failure
    click.echo("ktool: " + ", ".join(f"{n} {s}" for s, n in sorted(run.counts().items())), err=True)
    if run.findings:
        ctx.exit(EXIT_FINDINGS)


def run_undo(
    ctx: click.Context, zk, connect: Callable[[], Broker], path: Path, force: bool, as_json: bool
) -> None:
    """`--undo JOURNAL` (consumers/undo.py) said and exited as its outcome says: what a consumer moved
    since the run refused (exit 1) unless `force`; a journal undone before, "already undone" (exit 0).
    `connect`: the broker, asked for once the journal is read and the servers it needs are given."""
    from kafka_tools.consumers.group_lock import group_locks
    from kafka_tools.consumers.migration import read_journal
    from kafka_tools.consumers.undo import check_zookeeper, undo_journal
    from kafka_tools.render.offsets import render_moves

    journal = read_journal(path)
    check_zookeeper(zk, path, journal)
    with group_locks([g["group"] for g in journal["groups"]]):
        result = undo_journal(zk, connect(), path, journal, force)
    if result.already:
        at = f" at {result.undone_at}" if result.undone_at else ""
        click.echo(f"ktool: {path}: already undone{at}; nothing written", err=True)
        render_moves([], _colour(ctx), as_json, "already undone")
        return
    render_moves(result.moves, _colour(ctx), as_json, "undo")
    click.echo("ktool: " + ", ".join(f"{n} {s}" for s, n in sorted(result.counts().items())), err=True)
    if result.findings:
        ctx.exit(EXIT_FINDINGS)


_common = [
    click.option(
        "--group",
        "group_ids",
        multiple=True,
        metavar="GROUP",
        help="A group to move (repeatable).",
        shell_complete=complete_groups,
    ),
    click.option("--all-groups", is_flag=True, help="Every group in ZooKeeper (and in Kafka)."),
    click.option(
        "--topic",
        "topics",
        multiple=True,
        metavar="TOPIC",
        help="Only these topics (repeatable).",
        shell_complete=complete_topics,
    ),
    click.option("--dry-run", is_flag=True, help="Print the plan; write nothing."),
    click.option(
        "--force",
        is_flag=True,
        help="Write to groups with live members, and offsets outside the log; with --undo, rewind "
        "offsets moved since the run.",
    ),
    click.option("--allow-rewind", is_flag=True, help="Move offsets backwards where the target is ahead."),
    click.option(
        "--metadata",
        default=MIGRATE_METADATA,
        show_default=True,
        help="Commit metadata stored with offsets written to Kafka, to recognise them.",
    ),
    click.option(
        "--journal-dir",
        type=path_type(path_type=Path),  # a file in the way: exit 3 in one line (make_state_dir)
        metavar="DIRECTORY",
        help="Where the journal is written "
        f"[default: journals/ in ktool's state directory, {STATE_HOME_HELP}].",
    ),
    json_option("one `partition` object per offset move"),
]


def common_options(func):
    for option in reversed(_common):
        func = option(func)
    return zookeeper_options(broker_options(func))


def need_broker(zk, options: dict[str, Any]):
    broker = broker_from_options(zk, **options)
    if broker is None:
        raise UsageError(
            "--bootstrap-server is required: the offsets in Kafka are read and written through it"
        )
    return broker


# The store a command reads, the same option (and default) for migrate-offsets and offsets export.
from_store = click.option(
    "--from",
    "source",
    type=_STORES,
    default=ZK,
    show_default=True,
    help="The store to read: ZooKeeper's /consumers, or Kafka's __consumer_offsets.",
)


@click.command("migrate-offsets")
@from_store
@click.option(
    "--to",
    "target",
    type=_STORES,
    help="The store to write [default: the other store: kafka, or zookeeper with --from kafka].",
)
@click.option(
    "--dual-commit",
    is_flag=True,
    help="Leave both stores with max(ZooKeeper, Kafka) per partition, as dual.commit.enabled does.",
)
@click.option(
    "--undo",
    "undo",
    type=path_type(dir_okay=False, path_type=Path),
    help="Restore both stores to what a journal recorded before its run (an offset moved since the run "
    "is refused unless --force; a journal undone before: nothing written).",
)
@common_options
@click.pass_context
def migrate_offsets(
    ctx: click.Context,
    source: str,
    target: str | None,
    dual_commit: bool,
    undo: Path | None,
    group_ids: tuple[str, ...],
    all_groups: bool,
    topics: tuple[str, ...],
    dry_run: bool,
    force: bool,
    allow_rewind: bool,
    metadata: str,
    journal_dir: Path | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Move consumer offsets between ZooKeeper and Kafka, with a journal and undo.

    From ZooKeeper (/consumers/G/offsets/T/P) to Kafka (__consumer_offsets), or back with --from kafka
    --to zookeeper, or keep both with --dual-commit.

    For each partition: read both stores and the log's start and end, refuse what is unsafe (a group
    with live members, an offset that would move backwards, an offset outside the log, Kafka 0.7
    byte positions), write a journal of every offset in both stores, commit (one request per group,
    with --metadata), read back and verify. A second run changes nothing; an interrupted run is
    finished by running it again; --undo JOURNAL restores both stores, except an offset a consumer
    moved since the run (refused, exit 1, unless --force); a second --undo says "already undone".

    \b
    Exit status:
      0  every offset written and verified, or already in place
      1  refusals, or a read-back that does not match
      2  usage error
      3  ZooKeeper or a broker unreachable (the journal says what was written)
    """
    from kafka_tools.consumers.group_lock import group_locks
    from kafka_tools.consumers.migration import MigrationOptions, groups_for, plan_group
    from kafka_tools.zk.connection import open_zk

    target = target or (KAFKA if source == ZK else ZK)
    if source == target and not dual_commit:
        raise UsageError("--from and --to name the same store")
    mopts = MigrationOptions(source, target, dual_commit, force, allow_rewind, metadata, topics)
    check_zk_groups(group_ids, **options)
    with open_zk(zk_config_from_options(**options)) as zk:
        broker = need_broker(zk, options)
        if undo is not None:
            run_undo(ctx, zk, lambda: broker, undo, force, as_json)
            return
        groups = groups_for(zk, broker, group_ids, all_groups)
        with nullcontext() if dry_run else group_locks(groups):
            plans = [plan_group(zk, broker, g, mopts) for g in groups]
            run_plans(ctx, zk, broker, plans, mopts, dry_run, journal_dir, as_json)


@click.group("offsets")
def offsets() -> None:
    """Consumer offsets to and from files (ExportZkOffsets lines, or CSV).

    Files in Kafka's ExportZkOffsets/ImportZkOffsets line format (`/consumers/G/offsets/T/P:offset`) or
    CSV (`group,topic,partition,offset`).

    \b
    Exit status:
      0  ok
      1  refusals, or a read-back that does not match (import)
      2  usage error
      3  ZooKeeper or a broker unreachable, a file unreadable or malformed
    """


@offsets.command("export")
@from_store
@click.option(
    "--group",
    "group_ids",
    multiple=True,
    metavar="GROUP",
    help="A group to export (repeatable).",
    shell_complete=complete_groups,
)
@click.option("--all-groups", is_flag=True, help="Every group in the store.")
@click.option(
    "--topic",
    "topics",
    multiple=True,
    metavar="TOPIC",
    help="Only these topics (repeatable).",
    shell_complete=complete_topics,
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["zk", "csv"]),
    default="zk",
    show_default=True,
    help="zk: `/consumers/G/offsets/T/P:offset` lines; csv: `group,topic,partition,offset`.",
)
@click.option(
    "--output", type=path_type(dir_okay=False, path_type=Path), help="File to write [default: stdout]."
)
@zookeeper_options
@broker_options
def export_cmd(
    source: str, group_ids, all_groups: bool, topics, fmt: str, output: Path | None, **options
) -> None:
    """Write a store's offsets to a file (or stdout).

    --from kafka needs only --bootstrap-server: no ZooKeeper (KRaft and Kafka 4.x clusters have none).

    \b
    Exit status:
      0  ok
      2  usage error
      3  ZooKeeper or a broker unreachable, the file cannot be written
    """
    import csv
    import io

    from kafka_tools.consumers.migration import groups_for, read_stores
    from kafka_tools.format.plural import plural

    rows: list[tuple[str, str, int, int]] = []
    needed = "--from zookeeper reads /consumers in ZooKeeper" if source == ZK else None
    check_zk_groups(group_ids, **options)
    with zk_if_configured(needed_for=needed, **options) as zk:
        broker = broker_from_options(zk, **options)
        if source == KAFKA and broker is None:
            raise UsageError("--from kafka needs --bootstrap-server")
        if broker is None:
            from kafka_tools.zk.reader import list_groups, read_group

            names = list(group_ids) or (list_groups(zk) if all_groups else [])
            if not names:
                raise UsageError("name the groups (--group G) or ask for --all-groups")
            for g in names:
                for (t, p), o in read_group(zk, g).offsets.items():
                    if isinstance(p, int) and (not topics or t in topics):
                        rows.append((g, t, p, o))
        else:
            for g in groups_for(zk, broker, group_ids, all_groups):
                zk_offsets, kafka_offsets, _, _ = read_stores(zk, broker, g, tuple(topics))
                chosen = zk_offsets if source == ZK else kafka_offsets
                rows += [(g, t, p, o) for (t, p), o in chosen.items() if isinstance(p, int)]
    rows.sort()
    text = io.StringIO()
    if fmt == "zk":
        text.writelines(f"/consumers/{g}/offsets/{t}/{p}:{o}\n" for g, t, p, o in rows)
    else:
        csv.writer(text, lineterminator="\n").writerows(rows)
    if output is None:
        sys.stdout.write(text.getvalue())
    else:
        write_output_file(output, text.getvalue())
        click.echo(f"ktool: {plural(len(rows), 'offset')} written to {output}", err=True)


@offsets.command("import")
@click.argument("file", type=path_type(path_type=Path))  # missing or unreadable: exit 3, as elsewhere
@click.option(
    "--to",
    "target",
    type=_STORES,
    required=True,
    help="The store to write: ZooKeeper's /consumers, or Kafka's __consumer_offsets (always named: "
    "import writes, so ktool does not guess where).",
)
@common_options
@click.pass_context
def import_cmd(
    ctx: click.Context,
    file: Path,
    target: str,
    group_ids,
    all_groups: bool,
    topics,
    dry_run: bool,
    force: bool,
    allow_rewind: bool,
    metadata: str,
    journal_dir: Path | None,
    as_json: bool,
    **options,
) -> None:
    """Write offsets from a file (either format) into a store.

    With the same checks, journal and verification as migrate-offsets. --to kafka needs only
    --bootstrap-server: no ZooKeeper.

    \b
    Exit status:
      0  every offset written and verified, or already in place
      1  refusals, or a read-back that does not match
      2  usage error
      3  ZooKeeper or a broker unreachable, the file unreadable or malformed
    """
    from kafka_tools.consumers.group_lock import group_locks
    from kafka_tools.consumers.migration import NO_SOURCE, MigrationOptions, plan_group
    from kafka_tools.consumers.offsets_file import parse_offsets_file

    wanted = parse_offsets_file(file)
    if group_ids:
        wanted = {g: v for g, v in wanted.items() if g in group_ids}
    mopts = MigrationOptions(FILE, target, False, force, allow_rewind, metadata, topics)
    needed = "--to zookeeper writes /consumers in ZooKeeper" if target == ZK else None
    with zk_if_configured(needed_for=needed, **options) as zk:
        broker = need_broker(zk, options)
        with nullcontext() if dry_run else group_locks(wanted):
            plans = [plan_group(zk, broker, g, mopts, given) for g, given in sorted(wanted.items())]
            for p in plans:
                for m in p.moves:
                    if m.status == NO_SOURCE:
                        m.reason = "not in the file"
            run_plans(ctx, zk, broker, plans, mopts, dry_run, journal_dir, as_json)
