"""`ktool groups delete`: a dead consumer group removed from ZooKeeper or Kafka, with a journal and undo."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import click

from kafka_tools.cli.broker_options import broker_from_options, broker_options
from kafka_tools.cli.complete_names import complete_groups
from kafka_tools.cli.options import colour_of, json_option, say_swept
from kafka_tools.cli.paths import path_type
from kafka_tools.cli.zk_options import check_zk_groups, zk_if_configured, zookeeper_options
from kafka_tools.consumers.stores import STORES, ZK
from kafka_tools.errors import EXIT_FINDINGS, UsageError
from kafka_tools.keep.state import STATE_HOME_HELP


@click.command("delete")
@click.argument("group_ids", nargs=-1, metavar="[GROUP]...", shell_complete=complete_groups)
@click.option(
    "--store",
    type=click.Choice(STORES),
    help="Where to delete the group [default: ZooKeeper when it holds /consumers/GROUP, else Kafka].",
)
@click.option("--dry-run", is_flag=True, help="Print what would be deleted; delete nothing.")
@click.option(
    "--undo",
    type=path_type(dir_okay=False, path_type=Path),
    metavar="JOURNAL",
    help="Put back what a journal of this command recorded (what exists again is kept).",
)
@click.option(
    "--journal-dir",
    type=path_type(path_type=Path),
    metavar="DIRECTORY",
    help=f"Where the journal is written [default: journals/ in ktool's state directory, {STATE_HOME_HELP}].",
)
@zookeeper_options
@broker_options
@json_option("one `deletion` object per group")
@click.pass_context
def delete(
    ctx: click.Context,
    group_ids: tuple[str, ...],
    store: str | None,
    dry_run: bool,
    undo: Path | None,
    journal_dir: Path | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Delete consumer groups that have no live members, as kafka-consumer-groups --delete does.

    ZooKeeper (0.8-era consumers): /consumers/GROUP and everything under it, refused while a consumer
    id or a partition owner is registered, removed in one transaction that fails if anything changed
    meanwhile. Kafka: DeleteGroups through the group's coordinator (Kafka 1.1+; older brokers are
    refused in one line naming them). The store is chosen as `groups describe` chooses (ZooKeeper when
    it holds the group, else --bootstrap-server), or named with --store.

    Before anything is deleted a journal records every znode (data and ACL) or every offset the group
    had in Kafka; --undo JOURNAL puts back what is missing and keeps what was written again since. Each
    znode comes back with exactly its recorded ACL, in one ZooKeeper transaction: credentials that could
    not have created them (without the owner's) are refused and nothing is created.

    \b
    Exit status:
      0  every group deleted (or would be, with --dry-run), or restored
      1  a group refused: live members, unknown, or a broker without DeleteGroups
      2  usage error
      3  a server unreachable, not allowed to delete or re-create, a journal unreadable or its ACLs incomplete
    """
    from kafka_tools.consumers.group_delete import (
        choose_store,
        plan_deletion,
        read_journal,
        run_deletions,
        undo_deletions,
    )
    from kafka_tools.consumers.group_lock import group_locks
    from kafka_tools.render.groups_delete import render_deletions
    from kafka_tools.render.lines import wants_colour

    if undo is not None and group_ids:
        raise UsageError("--undo takes the groups from its journal: give no GROUP")
    if undo is None and not group_ids:
        raise UsageError("name the groups to delete (GROUP...)")
    if store == ZK or (store is None and not options.get("bootstrap_server")):
        check_zk_groups(group_ids, **options)  # else a name ZooKeeper cannot hold is Kafka's group
    colour = wants_colour(sys.stdout, colour_of(ctx))
    recorded = read_journal(undo) if undo is not None else []  # a bad journal is said before connecting
    with zk_if_configured(needed_for=None, **options) as zk:
        broker = broker_from_options(zk, **options)
        if undo is not None:
            with group_locks([d.group for d in recorded]):
                restored = undo_deletions(zk, broker, recorded)
            render_deletions(restored, sys.stdout, colour, as_json, "undo", str(undo))
            return
        groups = list(dict.fromkeys(group_ids))
        with nullcontext() if dry_run else group_locks(groups):
            plans = [plan_deletion(zk, broker, g, choose_store(zk, broker, g, store)) for g in groups]
            for d in plans:
                if d.refused:
                    click.echo(f"ktool: group {d.group}: {d.reason}", err=True)
            if dry_run:
                render_deletions(plans, sys.stdout, colour, as_json, "plan (dry run)", None)
                if any(d.refused for d in plans):
                    ctx.exit(EXIT_FINDINGS)
                return

            def announce(journal: Path, swept: list[Path]) -> None:
                say_swept(swept)
                undo_with = f"ktool groups delete --undo {journal}"
                click.echo(f"ktool: journal of what is deleted: {journal} (undo: {undo_with})", err=True)

            refused_before = {id(d) for d in plans if d.refused}
            run = run_deletions(zk, broker, plans, journal_dir, announce)
    for d in run.deletions:
        if d.refused and id(d) not in refused_before:
            click.echo(f"ktool: group {d.group}: {d.reason}", err=True)
    render_deletions(run.deletions, sys.stdout, colour, as_json, "result",
                     None if run.journal is None else str(run.journal))  # fmt: skip
    if run.findings:
        ctx.exit(EXIT_FINDINGS)
