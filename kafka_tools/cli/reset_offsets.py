"""`ktool groups reset-offsets GROUP`: kafka-consumer-groups' --reset-offsets, on either offset store,
with ktool's plan, journal, read-back and undo."""

from __future__ import annotations

import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from kafka_tools.cli.broker_options import broker_options
from kafka_tools.cli.complete_names import complete_groups, complete_topics
from kafka_tools.cli.offsets import need_broker, run_plans, run_undo
from kafka_tools.cli.options import TimeSpec, json_option, live_options
from kafka_tools.cli.paths import path_type
from kafka_tools.cli.zk_options import check_zk_groups, zk_if_configured, zookeeper_options
from kafka_tools.consumers.stores import KAFKA, RESET_METADATA, ZK
from kafka_tools.errors import UsageError
from kafka_tools.keep.state import STATE_HOME_HELP

if TYPE_CHECKING:  # the service (the broker and ZooKeeper clients) only when a reset is planned
    from kafka_tools.consumers.reset import Target


@click.command("reset-offsets")
@click.argument("group", required=False, shell_complete=complete_groups)
@click.option("--all-topics", is_flag=True, help="Every partition the group has an offset for.")
@click.option(
    "--topic",
    "topics",
    multiple=True,
    shell_complete=complete_topics,
    metavar="TOPIC[:P,P…]",
    help="A topic's partitions, all or those listed (repeatable).",
)
@click.option(
    "--store",
    type=click.Choice([KAFKA, ZK]),
    help="The offsets to reset [default: as `groups describe` reads the group: zookeeper for a group "
    "ZooKeeper knows (0.8-era consumers), else kafka].",
)
@click.option("--to-earliest", "earliest", is_flag=True, help="The log start offset.")
@click.option("--to-latest", "latest", is_flag=True, help="The log end offset.")
@click.option(
    "--to-current", "current", is_flag=True, help="The committed offset (the log end where none is)."
)
@click.option("--to-offset", "to_offset", type=int, metavar="N", help="Offset N.")
@click.option("--shift-by", "shift_by", type=int, metavar="±N", help="The committed offset moved by N.")
@click.option(
    "--to-datetime",
    "datetime_",
    type=TimeSpec(words=False),
    metavar="T",
    help="The first offset whose record's timestamp is at or after T (ISO-8601, UTC unless it names a "
    "zone, or epoch ms; a fraction of a second in milliseconds, as kafka-consumer-groups reads it: .5 is "
    "5 ms); the log end where no record is.",
)
@click.option(
    "--by-duration",
    "duration",
    metavar="PnDTnHnMnS",
    help="As --to-datetime, for the time that long ago (e.g. PT1H30M, P1D).",
)
@click.option(
    "--from-file",
    "from_file",
    type=path_type(path_type=Path),  # a directory or a FIFO: one line, exit 3, as offsets import
    metavar="CSV",
    help="kafka-consumer-groups' reset plan: `topic,partition,offset` (or `group,topic,partition,offset`) "
    "lines, as --export writes them.",
)
@click.option(
    "--log-dir",
    "log_dirs",
    multiple=True,
    type=path_type(path_type=str),
    metavar="DIR",
    help="Answer --to-datetime/--by-duration from these log dirs (or a copy) with offsets-at, not the "
    "brokers' ListOffsets (which 0.9 and 0.10.0 lack); repeatable.",
)
@click.option("--dry-run", is_flag=True, help="Print the plan and write nothing (the default).")
@click.option("--execute", is_flag=True, help="Write the plan: journal, commit, read back.")
@click.option(
    "--export", is_flag=True, help="Print the plan as kafka-consumer-groups' CSV instead of a table."
)
@click.option(
    "--undo",
    type=path_type(dir_okay=False, path_type=Path),
    metavar="JOURNAL",
    help="Put back the offsets a reset's journal recorded (an offset moved since is refused unless "
    "--force; a journal undone before: nothing written).",
)
@click.option("--force", is_flag=True, help="With --undo: rewind offsets moved since the reset too.")
@click.option(
    "--metadata",
    default=RESET_METADATA,
    show_default=True,
    help="Commit metadata stored with offsets written to Kafka.",
)
@click.option(
    "--journal-dir",
    type=path_type(path_type=Path),
    metavar="DIRECTORY",
    help=f"Where the journal is written [default: journals/ in ktool's state directory, {STATE_HOME_HELP}].",
)
@json_option("one `partition` object per partition, `note` objects (what stderr says)")
@zookeeper_options
@broker_options
@live_options
@click.pass_context
def reset_offsets(
    ctx: click.Context,
    group: str | None,
    all_topics: bool,
    topics: tuple[str, ...],
    store: str | None,
    earliest: bool,
    latest: bool,
    current: bool,
    to_offset: int | None,
    shift_by: int | None,
    datetime_: int | None,
    duration: str | None,
    from_file: Path | None,
    log_dirs: tuple[str, ...],
    dry_run: bool,
    execute: bool,
    export: bool,
    undo: Path | None,
    force: bool,
    metadata: str,
    journal_dir: Path | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Reset a group's offsets as kafka-consumer-groups --reset-offsets does.

    Scope: --all-topics (every partition the group has an offset for) or --topic T / T:0,2. Target:
    one of --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime,
    --by-duration, --from-file. Store: Kafka (OffsetCommit through the broker, 0.9 to 4.x) or ZooKeeper
    (/consumers/G/offsets, 0.8-era consumers).

    Prints the plan (the default, as --dry-run); --execute writes it. New offsets are kept inside
    [log start, log end], with a note per partition clamped. A time is answered by the broker's
    ListOffsets (0.10.1+) or, with --log-dir, by ktool's offsets-at on the log files (0.9, or a copy
    of the data); stderr says which. A group with live members (consumers registered in ZooKeeper, or
    a non-empty group in Kafka) is refused and nothing is written. --execute writes a journal first,
    then commits and reads back; --undo JOURNAL puts the offsets back, refusing one a consumer moved
    since the reset unless --force, and a second --undo says "already undone".

    \b
    Exit status:
      0  the plan printed, or every offset written and verified (undo: restored, or already undone)
      1  refused (live members), a read-back that does not match, an offset moved since (undo)
      2  usage error
      3  ZooKeeper or a broker unreachable, credentials or TLS refused, a group the brokers' ACLs
         deny (GROUP_AUTHORIZATION_FAILED), a topic missing, the CSV or a
         log dir unreadable, a broker too old to answer a time without --log-dir
    """
    from kafka_tools.consumers.group_lock import group_locks
    from kafka_tools.consumers.reset import (
        DATETIME,
        DURATION,
        FROM_FILE,
        ResetRequest,
        parse_topic,
        plan_reset,
    )
    from kafka_tools.render.json_kinds import note_object
    from kafka_tools.render.json_lines import emit

    if undo is not None:
        with zk_if_configured(**options) as zk:
            run_undo(ctx, zk, lambda: need_broker(zk, options), undo, force, as_json)
        return
    if group is None:
        raise UsageError("name the GROUP whose offsets to reset (or give --undo JOURNAL)")
    if force:
        raise UsageError("--force goes with --undo (a group with live members is never reset)")
    if dry_run and execute:
        raise UsageError("give --dry-run or --execute, not both")
    if export and as_json:
        raise UsageError("give --export (CSV) or --json, not both")
    target = _target(group, earliest, latest, current, to_offset, shift_by, datetime_, duration, from_file)
    if not (all_topics or topics or target.kind == FROM_FILE):
        raise UsageError("give the scope: --all-topics or --topic TOPIC[:P,P…]")
    if log_dirs and target.kind not in (DATETIME, DURATION):
        raise UsageError("--log-dir answers --to-datetime or --by-duration only")
    request = ResetRequest(
        group, target, all_topics, tuple(parse_topic(t) for t in topics), store, log_dirs, metadata
    )
    check_zk_groups([group], **options)
    with zk_if_configured(**options) as zk:
        broker = need_broker(zk, options)
        with group_locks([group]) if execute else nullcontext():
            reset = plan_reset(zk, broker, request)
            for note in reset.notes:
                click.echo(f"ktool: {group}: {note}", err=True)
                if as_json:
                    emit(sys.stdout, note_object(f"{group}: {note}", False))
            render = _export if export else None
            run_plans(ctx, zk, broker, [reset.plan], reset.options, not execute, journal_dir, as_json, render)


def _export(moves, title: str) -> None:
    from kafka_tools.consumers.reset import export_csv

    sys.stdout.write(export_csv(moves))


def _target(
    group: str,
    earliest: bool,
    latest: bool,
    current: bool,
    to_offset: int | None,
    shift_by: int | None,
    datetime_: int | None,
    duration: str | None,
    from_file: Path | None,
) -> Target:
    from kafka_tools.consumers.reset import (
        CURRENT,
        DATETIME,
        DURATION,
        EARLIEST,
        FROM_FILE,
        LATEST,
        OFFSET,
        SHIFT,
        Target,
        parse_duration,
        read_plan_csv,
    )

    given = [
        (EARLIEST, earliest),
        (LATEST, latest),
        (CURRENT, current),
        (OFFSET, to_offset is not None),
        (SHIFT, shift_by is not None),
        (DATETIME, datetime_ is not None),
        (DURATION, duration is not None),
        (FROM_FILE, from_file is not None),
    ]
    chosen = [kind for kind, on in given if on]
    if len(chosen) != 1:
        named = ", ".join(f"--{k}" for k in chosen) if chosen else "none"
        raise UsageError(
            f"give exactly one target (--to-earliest, --to-latest, …, --from-file); given: {named}"
        )
    kind = chosen[0]
    if kind == OFFSET:
        return Target(kind, to_offset)
    if kind == SHIFT:
        return Target(kind, shift_by)
    if kind == DATETIME:
        return Target(kind, datetime_)
    if kind == DURATION:
        import time

        return Target(kind, int(time.time() * 1000) - parse_duration(duration or ""))
    if kind == FROM_FILE:
        assert from_file is not None
        return Target(kind, offsets=read_plan_csv(from_file, group))
    return Target(kind)
