"""`ktool transactions list|describe|find-hanging LOGDIR…`: the coordinator's and the partitions'
transaction state read from the files, as `kafka-transactions.sh` shows it live."""

from __future__ import annotations

import sys

import click

from kafka_tools.cli.options import TimeSpec, colour_of, json_option, live_options
from kafka_tools.cli.paths import path_type


def _log_dirs(func):
    func = click.option(
        "--transaction-partitions",
        type=click.IntRange(min=1),
        help="transaction.state.log.num.partitions: the __transaction_state partition an id belongs in "
        "[default: from the KRaft metadata in the log dirs; unknown otherwise, and not checked].",
    )(func)
    return click.argument("log_dirs", nargs=-1, required=True, type=path_type(path_type=str))(func)


def _now(func):
    return click.option(
        "--now",
        type=TimeSpec(words=False),
        help="The clock ages are measured against (epoch ms or ISO-8601) [default: the newest time the log "
        "dirs hold: the KRaft metadata log's newest record, checkpoint and segment mtimes, the data's "
        "timestamps; a copy's age is not today's].",
    )(func)


def _partitions(log_dirs: tuple[str, ...]):
    from kafka_tools.errors import UsageError
    from kafka_tools.log.files.discover import discover

    found = discover(list(log_dirs))
    if found.files:
        raise UsageError(f"{found.files[0]}: a file; give log dirs or partition directories")
    return found.all_partitions()


def _count(parts, given: int | None) -> int | None:
    """--transaction-partitions, else the count the log dirs hold; unknown (None) is said once."""
    from kafka_tools.format.internal_topics import TRANSACTION_STATE
    from kafka_tools.metadata.partition_count import internal_partition_count

    if given is not None:
        return given
    found = internal_partition_count(
        parts, TRANSACTION_STATE, "--transaction-partitions", "which partition a transactional id belongs in"
    )
    if found.count is None and found.source:
        click.echo(f"ktool: {found.source}", err=True)
    return found.count


def _audit(log_dirs, now, max_timeout_ms, transaction_partitions, from_start=False, check_snapshots=False):
    from kafka_tools.log.retention.copy_clock import copy_clock
    from kafka_tools.transactions.audit import audit

    parts = _partitions(log_dirs)
    transaction_partitions = _count(parts, transaction_partitions)
    clock = copy_clock(parts) if now is None else None
    result = audit(parts, now, max_timeout_ms, transaction_partitions, from_start, check_snapshots,
                   clock.ms if clock else -1)  # fmt: skip
    for note in [*result.coordinator.notes, *(n for s in result.partitions for n in s.notes)]:
        click.echo(f"ktool: {note}", err=True)
    if now is not None:
        result.clock_source = "--now"
    elif clock is not None and result.now_ms == clock.ms:
        result.clock_source = clock.source
    return result


def _emit_all(objs: list[dict], summary: dict) -> None:
    from kafka_tools.render.json_lines import emit

    for obj in objs:
        emit(sys.stdout, obj)
    emit(sys.stdout, summary)


def _colour(ctx: click.Context) -> bool:
    from kafka_tools.render.lines import wants_colour

    return wants_colour(sys.stdout, colour_of(ctx))


def _coordinator_problems(state) -> None:
    for p in state.problems:
        where = f"__transaction_state-{p.coordinator_partition} offset {p.offset}"
        click.echo(f"ktool: {where}: {p.message}", err=True)


@click.group("transactions")
def transactions() -> None:
    """Transactions from log dirs: the coordinator's state, last stable offsets, hanging ones.

    Nothing here needs a broker or writes a byte: the coordinator's state is replayed from the
    `__transaction_state-N` partitions among LOGDIRs, each partition's producer state from its newest
    producer snapshot and the batches after it, as the broker loads them.

    \b
    Exit status:
      0  nothing found
      1  findings (find-hanging), records the coordinator never writes, a damaged batch
      2  usage error
      3  a log dir or a file in it could not be read
    """


@transactions.command("list")
@_log_dirs
@json_option("one `transaction` object per transactional id")
@live_options
@click.pass_context
def list_(
    ctx: click.Context, log_dirs: tuple[str, ...], transaction_partitions: int | None, as_json: bool
) -> None:
    """The coordinator's transactional ids, as kafka-transactions.sh list and describe show them.

    Read from the `__transaction_state-N` partitions among LOGDIRs: the newest record per id (a
    tombstone removes it); the coordinator column is the partition, not a broker. Records the
    coordinator never writes (an id in a partition it does not hash to, an illegal status transition,
    an undecodable record) are said on stderr.

    \b
    Exit status:
      0  the coordinator's files read
      1  a record the coordinator never writes, or a damaged batch
      2  usage error
      3  a log dir or a file in it could not be read
    """
    from kafka_tools.render.transactions import list_summary, render_transactions, transaction_object
    from kafka_tools.transactions.coordinator import replay_coordinator

    parts = _partitions(log_dirs)
    state = replay_coordinator(parts, _count(parts, transaction_partitions))
    items = sorted(state.transactions.values(), key=lambda t: t.transactional_id)
    for note in state.notes:
        click.echo(f"ktool: {note}", err=True)
    _coordinator_problems(state)
    if as_json:
        summary = {"type": "summary", "transactions": len(items), "coordinatorPartitions":
                   len(state.partitions_read), "errors": len(state.problems)}  # fmt: skip
        _emit_all([transaction_object(t) for t in items], summary)
    else:
        if items:
            render_transactions(sys.stdout, _colour(ctx), items)
            sys.stdout.write("\n")
        sys.stdout.write(list_summary(len(items), len(state.partitions_read)) + "\n")
    ctx.exit(1 if state.problems else 0)


@transactions.command("describe")
@_log_dirs
@click.option(
    "--transactional-id",
    "ids",
    multiple=True,
    help="Only this id's coordinator state and the partitions it lists (repeatable).",
)
@_now
@json_option("`transaction` objects, then one `partition` object per partition (its last stable offset "
             "and open transactions)")  # fmt: skip
@live_options
@click.pass_context
def describe(
    ctx: click.Context,
    log_dirs: tuple[str, ...],
    transaction_partitions: int | None,
    ids: tuple[str, ...],
    now: int | None,
    as_json: bool,
) -> None:
    """Each partition's last stable offset and its open transactions, with the coordinator's view.

    The last stable offset is the first offset of the oldest open transaction (the log end when none
    is open): `read_committed` consumers read up to it and no further. Open transactions are listed
    with kafka-transactions.sh describe-producers' columns. Every batch's checksum is checked: a
    damaged one is said on stderr and ends the replay there, where the broker's recovery cuts the log
    (the log end is `ktool validate`'s).

    \b
    Exit status:
      0  read
      1  a record the coordinator never writes, or a damaged batch
      2  usage error
      3  a log dir or a file in it could not be read
    """
    from kafka_tools.errors import UsageError
    from kafka_tools.render.transactions import (
        partition_object,
        render_partitions,
        render_transactions,
        transaction_object,
    )

    result = _audit(log_dirs, now, 0, transaction_partitions)
    coordinator = result.coordinator
    chosen = sorted(coordinator.transactions.values(), key=lambda t: t.transactional_id)
    parts = sorted(result.partitions, key=lambda s: (s.topic, s.partition))
    if ids:
        missing = [i for i in ids if i not in coordinator.transactions]
        if missing:
            where = "the __transaction_state partitions read"
            raise UsageError(f"transactional id {missing[0]!r}: not in {where}")
        chosen = [t for t in chosen if t.transactional_id in ids]
        listed = {tp for t in chosen for tp in t.partitions}
        pids = {t.producer_id for t in chosen}
        parts = [s for s in parts if (s.topic, s.partition) in listed or pids & set(s.producers)]
    _coordinator_problems(coordinator)
    damage = [d for s in result.partitions for d in s.damage]  # whatever the filter: the answer stops there
    for d in damage:
        click.echo(f"ktool: {d.message}", err=True)
    errors = len(coordinator.problems) + len(damage)
    if as_json:
        summary = {"type": "summary", "transactions": len(chosen), "partitions": len(parts),
                   "openTransactions": sum(len(s.open_transactions) for s in parts),
                   "errors": errors}  # fmt: skip
        _emit_all([transaction_object(t) for t in chosen] + [partition_object(s) for s in parts], summary)
    else:
        colour = _colour(ctx)
        if chosen:
            render_transactions(sys.stdout, colour, chosen)
            sys.stdout.write("\n")
        render_partitions(sys.stdout, colour, parts, result.now_ms)
    ctx.exit(1 if errors else 0)


@transactions.command("find-hanging")
@_log_dirs
@click.option(
    "--max-transaction-timeout",
    type=click.IntRange(min=0),
    default=15,
    show_default=True,
    metavar="MINUTES",
    help="transaction.max.timeout.ms in minutes: an open transaction younger than this may still end.",
)
@_now
@click.option(
    "--from-start",
    is_flag=True,
    help="Replay every partition from its log start, not from its newest producer snapshot.",
)
@click.option(
    "--check-snapshots",
    is_flag=True,
    help="Also replay each partition from its log start up to its snapshot: where they disagree is a "
    "finding (snapshot-disagrees).",
)
@json_option("one `finding` object per hanging transaction or anomaly")
@live_options
@click.pass_context
def find_hanging(
    ctx: click.Context,
    log_dirs: tuple[str, ...],
    transaction_partitions: int | None,
    max_transaction_timeout: int,
    now: int | None,
    from_start: bool,
    check_snapshots: bool,
    as_json: bool,
) -> None:
    """Transactions that pin a partition's last stable offset, found from the files.

    Hanging, as kafka-transactions.sh find-hanging finds them live: an open transaction older than
    --max-transaction-timeout whose producer id the coordinator does not know, whose coordinator state
    does not list the partition, or is complete. Beyond it: a coordinator stuck in PrepareCommit or
    PrepareAbort with the partitions that lack its marker (stuck-preparing); producer epochs going
    backwards (epoch-backwards); markers from a stale coordinator epoch (stale-coordinator-epoch);
    a producer's non-transactional write inside its open transaction; with --check-snapshots, a
    producer snapshot that disagrees with its own log; records the coordinator never writes; a batch
    whose checksum fails (crc-mismatch, with its file and position: the replay stops there, where the
    broker's recovery cuts the log, as `ktool validate` does). Each
    hanging row ends with the `kafka-transactions.sh abort` command that clears it on a live cluster;
    ktool writes nothing. A running broker's newest transactions are younger than the timeout, so
    never findings.

    \b
    Exit status:
      0  nothing found
      1  findings
      2  usage error
      3  a log dir or a file in it could not be read
    """
    from kafka_tools.render.transactions import finding_object, hanging_summary, render_findings

    timeout_ms = max_transaction_timeout * 60_000
    result = _audit(log_dirs, now, timeout_ms, transaction_partitions, from_start, check_snapshots)
    if not result.coordinator.partitions_read and any(s.open_transactions for s in result.partitions):
        why = "who owns the open transactions cannot be told, none is called hanging"
        click.echo(f"ktool: no __transaction_state partition among LOGDIRs: {why}", err=True)
    findings = result.findings
    if as_json:
        summary = {"type": "summary", "findings": len(findings), "partitions": len(result.partitions),
                   "coordinatorPartitions": len(result.coordinator.partitions_read),
                   "openTransactions": sum(len(s.open_transactions) for s in result.partitions),
                   "nowMs": result.now_ms, "clockSource": result.clock_source}  # fmt: skip
        _emit_all([finding_object(f) for f in findings], summary)
    else:
        if findings:
            render_findings(sys.stdout, _colour(ctx), findings)
            sys.stdout.write("\n")
        sys.stdout.write(hanging_summary(result) + "\n")
    ctx.exit(1 if findings else 0)
