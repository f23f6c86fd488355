"""`ktool replicas diff DIR DIR…`: where the copies of a partition diverge, and what each would lose."""

from __future__ import annotations

import sys

import click

from kafka_tools.cli.options import decoder_options, json_option
from kafka_tools.cli.paths import path_type
from kafka_tools.cli.read import record_renderer
from kafka_tools.errors import EXIT_FINDINGS, KtoolError

RULES = ("auto", "high-watermark", "leader-epoch")  # log/replicas/diff.py's


@click.group("replicas")
def replicas() -> None:
    """The replicas of a partition, compared offline from their log dirs.

    \b
    Exit status:
      0  the replicas hold the same records where they overlap
      1  they diverged: different records at the same offsets
      2  usage error
      3  a replica could not be read
    """


@replicas.command("diff")
@click.argument("paths", nargs=-1, required=True, type=path_type(path_type=str))
@click.option(
    "--partition",
    metavar="TOPIC-N",
    help="The partition to compare when PATHs are log dirs holding more than one.",
)
@click.option(
    "--full",
    is_flag=True,
    help="Compare every batch of the offsets both hold, not a binary search (finds every range).",
)
@click.option(
    "--truncation-rule",
    type=click.Choice(RULES),
    default="auto",
    show_default=True,
    help="How a follower truncates: high-watermark (Kafka 0.8-0.10), leader-epoch (0.11+, KIP-101/279); "
    "auto: leader-epoch when both replicas have epochs.",
)
@click.option("--records", is_flag=True, help="List the records each replica would lose (dump-log's lines).")
@decoder_options
@json_option("`replica`, `comparison` and `truncation` objects (records as dump-log's)")
@click.pass_context
def diff(
    ctx: click.Context,
    paths: tuple[str, ...],
    partition: str | None,
    full: bool,
    truncation_rule: str,
    records: bool,
    key_decoder: str,
    value_decoder: str,
    as_json: bool,
) -> None:
    """Where the replicas of a partition diverge, and what each would lose to another as leader.

    PATH is a copy of the partition from one broker: its partition directory (topic-N), or the
    broker's log dir (with --partition when it holds several). Two or more; nothing is written.

    For each replica: log start and end, high watermark and recovery point (the log dir's
    checkpoints), leader-epoch history (leader-epoch-checkpoint, and the epochs in the v2 batches).
    For each pair: the first offset where their records differ, found by a binary search over offsets
    (a v2 batch compared by base offset, last offset and CRC; a v0/v1 message by offset and CRC), so
    only a few batches are read; when the ends agree, logs with leader epochs are probed at every
    epoch boundary and logs without are compared batch by batch (Kafka before 0.11 leaves diverged
    ranges below the point it truncates to). For each replica as leader: where every other one would
    truncate, as Kafka of that generation does it (0.8-0.10 to the high watermark, then to the
    leader's log end; 0.11+ by the leader-epoch rounds of KIP-101/279), what that removes, and which
    offsets stay different afterwards without Kafka noticing. Last, the replica KIP-966's unclean
    recovery would keep (highest last epoch, then longest log).

    \b
    Exit status:
      0  identical, or one a prefix of the other (a lagging replica)
      1  diverged: different records at the same offsets
      2  usage error
      3  a replica could not be read (missing, damaged where it must be read)
    """
    from kafka_tools.log.replicas.diff import diff_replicas, lost_record_events
    from kafka_tools.render.json_kinds import note_object
    from kafka_tools.render.json_lines import emit_all
    from kafka_tools.render.lines import wants_colour

    try:
        report = diff_replicas(list(paths), partition, full, truncation_rule)
    except KtoolError as exc:
        if as_json:  # the stream says it as stderr does, and ends with its summary
            from kafka_tools.render.replicas import unreadable_objects

            emit_all(sys.stdout, unreadable_objects(list(paths), exc))
        raise
    colour = wants_colour(sys.stdout, (ctx.find_root().obj or {}).get("color"))
    if as_json:
        from kafka_tools.render.replicas import ReplicasJsonRenderer

        out = ReplicasJsonRenderer(sys.stdout)
    else:
        from kafka_tools.render.replicas import ReplicasTextRenderer

        out = ReplicasTextRenderer(sys.stdout, colour)
    out.replicas(report)
    for t in report.truncations:
        out.truncation(report, t)
        if records and t.lost_offsets:
            if not as_json:
                out.records_header(report, t)
            dump = record_renderer(as_json, colour, key_decoder, value_decoder)
            path = report.replicas[t.follower].path
            for event in lost_record_events(path, t.lost_start, t.lost_end):
                dump.render(event)
    warnings = list(dict.fromkeys(w for r in report.replicas for w in r.warnings))
    if as_json:  # what stderr says is in the stream too
        emit_all(sys.stdout, (note_object(line, False) for line in warnings))
    out.summary(report)
    sys.stdout.flush()
    for line in warnings:
        click.echo(f"ktool: {line}", err=True)
    if report.status == "diverged":
        ctx.exit(EXIT_FINDINGS)
