"""`ktool metadata show|topics|brokers|diff|check LOGDIR`: the KRaft cluster's metadata, read offline
from a log dir's `__cluster_metadata-0` snapshots and log (a thin skin over kafka_tools.metadata)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import click

from kafka_tools.cli.options import (
    aliased,
    check_offset_range,
    colour_of,
    json_option,
    offset_range_options,
    renamed_option,
)
from kafka_tools.cli.paths import path_type
from kafka_tools.errors import EXIT_FINDINGS, FindingsError, UsageError

# The replay, its checks and the renderers are imported by the command that runs them: `metadata X
# --help` and a usage error build only the commands (tests/cli/startup_budget.json).
if TYPE_CHECKING:
    from kafka_tools.log.checks.findings import Finding
    from kafka_tools.metadata.load import MetadataLoad

_LOGDIR = path_type(path_type=str)  # a missing one is exit 3 (environment), said by load_image


def _at_offset_option(func):
    return click.option(
        "--at-offset",
        type=click.IntRange(min=0),
        metavar="N",
        help="The image as of offset N: every record below N applied [default: the whole log].",
    )(func)


_json_option = json_option("one object per item, then a `finding` object per finding")


def _colour(ctx: click.Context) -> bool:
    from kafka_tools.render.lines import wants_colour

    return wants_colour(sys.stdout, colour_of(ctx))


def _finish(
    ctx: click.Context, findings: list[Finding], as_json: bool, load: MetadataLoad, **counts: int
) -> None:
    """Findings after the data: JSON objects on stdout with --json (then the summary), one line each
    on stderr always; exit 1 when one is an error."""
    from kafka_tools.log.checks.findings import Severity
    from kafka_tools.render.metadata import finding_line, finding_object, write_json

    if as_json:
        write_json(sys.stdout, (finding_object(f) for f in findings))
        errors = sum(f.severity == Severity.ERROR for f in findings)
        summary = {
            "type": "summary",
            "offset": load.image.offset,
            "topics": len(load.image.topics),
            "brokers": len(load.image.brokers),
            **counts,
            "findings": len(findings),
            "errors": errors,
        }
        write_json(sys.stdout, [summary])
    for f in findings:
        click.echo(f"ktool: {finding_line(f)}", err=True)
    if any(f.severity == Severity.ERROR for f in findings):
        ctx.exit(EXIT_FINDINGS)


@click.group("metadata")
def metadata() -> None:
    """The KRaft cluster's metadata, read offline from a log dir.

    Replays the newest `<end offset>-<epoch>.checkpoint` snapshot of `__cluster_metadata-0` at or
    before the offset asked, then the log, into the image the controller holds: brokers, controllers
    and voters, topics and partitions, configs, features, ACLs, client quotas, producer ids,
    delegation tokens and SCRAM users (mechanism and iterations only, never the secrets).

    \b
    Exit status:
      0  read and replayed cleanly
      1  findings: an unreadable batch or record, a snapshot without footer,
         a record the image cannot take, an unknown quorum-state version
      2  usage error
      3  LOGDIR missing, unreadable or not a KRaft log dir
    """


@metadata.command("show")
@click.argument("logdir", type=_LOGDIR)
@_at_offset_option
@_json_option
@click.pass_context
def show(ctx: click.Context, logdir: str, at_offset: int | None, as_json: bool) -> None:
    """Everything in the image, then the log dir's consistency findings.

    The findings are what reading the log found, then (without --at-offset) those of
    `ktool metadata check`.

    \b
    Exit status:
      0  read and replayed cleanly
      1  findings: an unreadable batch or record, a snapshot without footer,
         a record the image cannot take, an unknown quorum-state version;
         a consistency finding
      2  usage error
      3  LOGDIR missing, unreadable or not a KRaft log dir
    """
    from kafka_tools.metadata.checks import check_log_dir, read_findings
    from kafka_tools.metadata.load import load_image
    from kafka_tools.render.metadata import MetadataText, image_objects, write_json

    load = load_image(logdir, at_offset)
    # The log dir is checked against the image of the whole log only: an older one would flag what
    # happened since, and one missing records (read_findings says which) would flag what they hold.
    whole = at_offset is None and load.missing_records() is None
    findings = read_findings(load) + (check_log_dir(load) if whole else [])
    if as_json:
        write_json(sys.stdout, image_objects(load))
    else:
        MetadataText(sys.stdout, _colour(ctx)).show(load)
    _finish(ctx, findings, as_json, load)


@metadata.command("topics")
@click.argument("logdir", type=_LOGDIR)
@_at_offset_option
@_json_option
@click.pass_context
def topics(ctx: click.Context, logdir: str, at_offset: int | None, as_json: bool) -> None:
    """Topics and their partitions: leader, replicas, ISR, ELR, min ISR, epoch, status.

    The view `ktool topics --metadata-log LOGDIR` shows (one model, whatever the source), at any
    offset; --json `partition` objects add the topic id, partition epoch and directories.

    \b
    Exit status:
      0  read and replayed cleanly
      1  findings: an unreadable batch or record, a snapshot without footer,
         a record the image cannot take, an unknown quorum-state version
      2  usage error
      3  LOGDIR missing, unreadable or not a KRaft log dir
    """
    from kafka_tools.cluster.offline import partitions_from_image
    from kafka_tools.metadata.checks import read_findings
    from kafka_tools.metadata.load import load_image
    from kafka_tools.render.cluster import partition_json, render_topics_text
    from kafka_tools.render.metadata import write_json

    load = load_image(logdir, at_offset)
    partitions = partitions_from_image(load.image)  # the view `ktool topics` shows from every source
    if as_json:
        write_json(sys.stdout, (partition_json(p) for p in partitions))
    else:
        render_topics_text(partitions, sys.stdout, _colour(ctx))
    _finish(ctx, read_findings(load), as_json, load)


@metadata.command("brokers")
@click.argument("logdir", type=_LOGDIR)
@_at_offset_option
@_json_option
@click.pass_context
def brokers(ctx: click.Context, logdir: str, at_offset: int | None, as_json: bool) -> None:
    """Registered brokers, then controllers and voters.

    Each broker with its id, address, rack, state (fenced, unfenced, in controlled shutdown) and
    endpoints, as `ktool brokers --metadata-log LOGDIR` shows them; --json adds each broker's epoch,
    incarnation, log dirs and features.

    \b
    Exit status:
      0  read and replayed cleanly
      1  findings: an unreadable batch or record, a snapshot without footer,
         a record the image cannot take, an unknown quorum-state version
      2  usage error
      3  LOGDIR missing, unreadable or not a KRaft log dir
    """
    from kafka_tools.cluster.offline import cluster_from_image
    from kafka_tools.metadata.checks import read_findings
    from kafka_tools.metadata.load import load_image
    from kafka_tools.render.cluster import render_cluster_text
    from kafka_tools.render.metadata import MetadataText, image_objects, write_json

    load = load_image(logdir, at_offset)
    if as_json:
        write_json(
            sys.stdout, (o for o in image_objects(load) if o["type"] in ("broker", "controller", "voter"))
        )
    else:
        render_cluster_text(cluster_from_image(load), sys.stdout, _colour(ctx))
        MetadataText(sys.stdout, _colour(ctx)).quorum(load.image)
    _finish(ctx, read_findings(load), as_json, load)


@metadata.command("diff")
@click.argument("logdir", type=_LOGDIR)
@offset_range_options("First offset (required).", "End offset, not included [default: the log end].")
@renamed_option("--from", "--from-offset", "from_offset")
@renamed_option("--to", "--to-offset", "to_offset")
@_json_option
@click.pass_context
def diff(
    ctx: click.Context, logdir: str, from_offset: int | None, to_offset: int | None, as_json: bool
) -> None:
    """What changed from offset N to M, as events.

    Topics created or deleted, partitions created, leader changes, ISR shrink and expand, replicas and
    ELR, configs set or deleted, brokers registered, fenced and unfenced, features, ACLs, quotas, SCRAM
    users, aborted transactions; each with its offset. The records from N to M must still be in the
    log (a snapshot at or before N starts the image).

    \b
    Exit status:
      0  read and replayed cleanly
      1  findings: an unreadable batch or record, a snapshot without footer,
         a record the image cannot take, an unknown quorum-state version;
         the log no longer holds offset N
      2  usage error
      3  LOGDIR missing, unreadable or not a KRaft log dir
    """
    from kafka_tools.format.plural import plural
    from kafka_tools.log.checks.findings import Finding, Severity
    from kafka_tools.metadata.checks import read_findings
    from kafka_tools.metadata.load import load_image
    from kafka_tools.render.metadata import MetadataText, event_object, write_json

    from_offset = aliased(ctx, "from_offset", from_offset, click.IntRange(min=0))
    to_offset = aliased(ctx, "to_offset", to_offset, click.IntRange(min=0))
    if from_offset is None:
        raise click.MissingParameter(ctx=ctx, param_hint="'--from-offset'", param_type="option")
    check_offset_range(from_offset, to_offset)
    try:
        load: MetadataLoad = load_image(logdir, to_offset, events_from=from_offset)
    except UsageError as exc:
        # The loader says it of --at-offset; here it is --to-offset, out of the log's range: as `read`
        # says of an offset out of range, a finding (exit 1).
        raise FindingsError(str(exc).replace("--at-offset", "--to-offset")) from None
    findings = read_findings(load)
    if from_offset > load.image.offset:
        findings.append(
            Finding(
                file=str(load.partition_dir),
                kind="offset-past-end",
                severity=Severity.ERROR,
                message=f"--from-offset {from_offset} is past the log end offset {load.image.offset}: "
                "no change "
                "can lie there",
            )
        )
    if load.log_start is not None and load.log_start > from_offset:
        findings.append(
            Finding(
                file=str(load.partition_dir),
                kind="log-starts-later",
                severity=Severity.ERROR,
                message=f"the log starts at offset {load.log_start}: changes from {from_offset} on are "
                "only in "
                "snapshots, which hold states, not changes",
            )
        )
    events = load.replayer.events
    if as_json:
        write_json(sys.stdout, (event_object(e) for e in events))
    else:
        out = MetadataText(sys.stdout, _colour(ctx))
        out.line(f"offsets {from_offset}..{load.image.offset}: {plural(len(events), 'change')}")
        if events:
            out.events(events)
    _finish(ctx, findings, as_json, load, events=len(events))


@metadata.command("check")
@click.argument("logdir", type=_LOGDIR)
@click.option(
    "--image-from",
    type=_LOGDIR,
    metavar="DIR",
    help="Take the image from this log dir's __cluster_metadata-0 (a controller's, or a running "
    "broker's) instead of LOGDIR's own: what a broker that was down finds at its next start.",
)
@_json_option
@click.pass_context
def check(ctx: click.Context, logdir: str, image_from: str | None, as_json: bool) -> None:
    """Check a log dir against its own metadata image (or another node's, --image-from).

    The partition directories of the partitions the image places on this node (meta.properties'
    node.id and directory.id) are all here; every partition directory belongs to a topic the image
    knows, with the same topic id in partition.metadata (a deleted topic's directory left behind, or
    one of an earlier topic of the same name) and this node among its replicas; the node is a
    registered broker, controller or voter. The directories flagged are those a 3.7+ broker renames
    to `-stray` at its next start, when checked against the cluster's current image.

    \b
    Exit status:
      0  read and replayed cleanly
      1  findings: an unreadable batch or record, a snapshot without footer,
         a record the image cannot take, an unknown quorum-state version;
         a consistency finding
      2  usage error
      3  LOGDIR missing, unreadable or not a KRaft log dir
    """
    from kafka_tools.format.plural import plural
    from kafka_tools.log.checks.findings import Severity
    from kafka_tools.metadata.checks import check_log_dir, read_findings
    from kafka_tools.metadata.load import checked_dir, load_image

    load = load_image(image_from or logdir)
    checked = checked_dir(logdir) if image_from else None
    # an image missing records (read_findings says which) would flag what they hold: not checked then
    whole = load.missing_records() is None
    findings = read_findings(load) + (check_log_dir(load, checked) if whole else [])
    errors = sum(f.severity == Severity.ERROR for f in findings)
    if not as_json:
        verdict = "consistent" if not errors else plural(errors, "finding")
        source = f" of {load.log_dir}" if checked else ""
        click.echo(
            f"{checked or load.log_dir}: {plural(len(load.image.topics), 'topic')}, "
            f"{plural(len(load.image.brokers), 'broker')} "
            f"in the image{source} at offset {load.image.offset}: {verdict}"
        )
    _finish(ctx, findings, as_json, load)
