"""`ktool tiered audit LOGDIR…`: tiered storage's remote segments as `__remote_log_metadata` leaves
them, checked."""

from __future__ import annotations

import sys
import time

import click

from kafka_tools.cli.options import TimeSpec, json_option
from kafka_tools.cli.paths import path_type
from kafka_tools.errors import EXIT_FINDINGS


@click.group("tiered")
def tiered() -> None:
    """Tiered storage (KIP-405): remote segments replayed from __remote_log_metadata, audited.

    \b
    Exit status:
      0  no finding
      1  findings (stuck copies or deletes, illegal transitions, gaps, overlaps, store differences)
      2  usage error
      3  a log dir or the store could not be read
    """


@tiered.command("audit")
@click.argument("log_dirs", nargs=-1, required=True, type=path_type(path_type=str))
@click.option(
    "--remote-dir",
    type=path_type(path_type=str),
    help="A LocalTieredStorage store (its `dir`, or the kafka-tiered-storage directory in it) to "
    "compare: finished segments missing, files no live segment names, sizes that differ.",
)
@click.option(
    "--stuck-after",
    type=click.IntRange(min=0),
    default=900,
    show_default=True,
    metavar="SECONDS",
    help="A copy or delete started this long ago and not finished is a finding (younger: in progress).",
)
@click.option(
    "--metadata-partitions",
    type=click.IntRange(min=1),
    help="remote.log.metadata.topic.num.partitions: which metadata partition each partition's events "
    "belong in [default: from the KRaft metadata in the log dirs; unknown otherwise, and not checked].",
)
@click.option(
    "--now",
    type=TimeSpec(words=False),
    help="The clock ages are measured against (epoch ms or ISO-8601) [default: the newest time the log "
    "dirs hold: the KRaft metadata log's newest record, checkpoint and segment mtimes; a copy's age is "
    "not today's].",
)
@json_option("`partition` and `finding` objects")
def audit(
    log_dirs: tuple[str, ...],
    remote_dir: str | None,
    stuck_after: int,
    metadata_partitions: int | None,
    now: int | None,
    as_json: bool,
) -> None:
    """Replay __remote_log_metadata from log dirs and check every remote segment.

    LOG_DIR is a broker's log dir (or a directory of them, or partition directories) holding
    `__remote_log_metadata-N` partitions, and the local logs of the tiered partitions to compare with.
    Each user partition's segments are replayed through the states RemoteLogSegmentState allows
    (COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED) and
    its partition delete states. Findings: illegal transitions; copies and deletes not finished after
    --stuck-after (with their age and offsets); finished segments that overlap or leave a gap, with
    each other or before the local log start; segments outside the leader-epoch lineage (Kafka's
    isRemoteSegmentWithinLeaderEpochs against leader-epoch-checkpoint); with --remote-dir, the store's
    differences. Nothing is written.

    \b
    Exit status:
      0  no finding
      1  findings
      2  usage error
      3  a log dir or the store could not be read
    """
    from kafka_tools.render.tiered import render_json, render_text
    from kafka_tools.tiered.audit import audit as run_audit

    now_ms, metadata_partitions = _clock_and_count(log_dirs, now, metadata_partitions)
    report = run_audit(list(log_dirs), remote_dir, now_ms, stuck_after * 1000, metadata_partitions)
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)
    (render_json if as_json else render_text)(sys.stdout, report)
    sys.stdout.flush()
    if any(True for _ in report.all_findings()):
        click.get_current_context().exit(EXIT_FINDINGS)


def _clock_and_count(log_dirs: tuple[str, ...], now: int | None, given: int | None) -> tuple[int, int | None]:
    """What the copy itself says, as `transactions` reads it: the clock (the newest time its log dirs
    hold, unless --now; the wall clock only when they hold none) and the metadata topic's partition count
    (unless --metadata-partitions; unknown is said once and judged by no guess)."""
    from kafka_tools.format.remote_log_metadata import REMOTE_LOG_METADATA
    from kafka_tools.log.files.discover import discover
    from kafka_tools.log.retention.copy_clock import copy_clock
    from kafka_tools.metadata.partition_count import internal_partition_count

    parts = discover(list(log_dirs)).all_partitions() if now is None or given is None else []
    if now is None:
        clock, wall = copy_clock(parts), int(time.time() * 1000)
        now = clock.ms if clock is not None else wall
        if clock is None or abs(wall - clock.ms) > 60_000:  # a copy: its ages are not today's, so say so
            said = clock.source if clock is not None else "no file says one: the wall clock"
            click.echo(f"ktool: ages as of {_iso(now)} ({said}; --now overrides)", err=True)
    if given is None:
        found = internal_partition_count(
            parts,
            REMOTE_LOG_METADATA,
            "--metadata-partitions",
            "which metadata partition a partition's events belong in",
        )
        if found.count is None and found.source:
            click.echo(f"ktool: {found.source}", err=True)
        given = found.count
    return now, given


def _iso(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, timezone.utc).isoformat(timespec="milliseconds")
