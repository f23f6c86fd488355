"""`ktool brokers`, `ktool topics`, `ktool cluster-id`: the cluster as ZooKeeper, a live broker or a KRaft
metadata log describes it (one view: kafka_tools/cluster/).

The shared ZooKeeper options (cli/zk_options.py) are re-exported here with `zk_if_configured`.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import click

from kafka_tools.cli.broker_options import broker_options_for
from kafka_tools.cli.complete_names import complete_topics
from kafka_tools.cli.options import colour_of, json_option
from kafka_tools.cli.paths import path_type
from kafka_tools.cli.zk_options import (
    check_zk_groups,
    zk_config_from_options,
    zk_if_configured,
    zookeeper_options,
)
from kafka_tools.errors import EXIT_FINDINGS, InputError, UsageError

# The views, renderers and clients are imported by the command that runs them: `topics --help` and a
# usage error build only the commands (tests/cli/startup_budget.json).
if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kafka_tools.broker.client import Broker
    from kafka_tools.cluster.view import ClusterView, PartitionView

__all__ = [
    "brokers",
    "quorum",
    "check_zk_groups",
    "cluster_id",
    "topics",
    "zk_config_from_options",
    "zk_if_configured",
    "zookeeper_options",
]


def _colour(ctx: click.Context) -> bool:
    from kafka_tools.render.lines import wants_colour

    return wants_colour(sys.stdout, colour_of(ctx))


_json_option = json_option("`broker`, `partition` or `cluster` objects")
_live_options = broker_options_for(
    "Kafka brokers: read the live cluster through them (Admin API) rather than ZooKeeper.",
    "The brokers' Kafka version [default: probed].",
)


def _metadata_log_option(func):
    return click.option(
        "--metadata-log",
        "metadata_log",
        type=path_type(path_type=str),
        metavar="LOGDIR",
        help="A KRaft log dir (or a copy of one): the cluster as its __cluster_metadata log says, offline.",
    )(func)


def _zk_config(options: dict[str, Any]):
    """ZooKeeper's settings when neither --metadata-log nor --bootstrap-server names another source;
    without any, one line naming all three (exit 2)."""
    from kafka_tools.zk.config import NoZooKeeperError

    try:
        return zk_config_from_options(**options)
    except NoZooKeeperError as exc:
        raise NoZooKeeperError(
            f"{exc}; or --bootstrap-server host:port for a live cluster, or --metadata-log LOGDIR for "
            "a KRaft log dir"
        ) from None


def _live_broker(options: dict[str, Any]) -> Broker | None:
    from kafka_tools.cli.broker_options import broker_from_options

    return broker_from_options(**options)


@click.command("brokers")
@zookeeper_options
@_live_options
@_metadata_log_option
@_json_option
@click.pass_context
def brokers(ctx: click.Context, as_json: bool, metadata_log: str | None, **options: Any) -> None:
    """List the live brokers as registered in ZooKeeper, with the controller and the cluster id.

    One row per /brokers/ids/N: host, port, endpoints, rack, JMX port, registration version, the Kafka
    version that version implies (1: 0.8.x, 2: 0.9.x, 3+: 0.10+; 0.7 brokers register a plain string),
    and when the broker registered. --json: one `broker` object per broker, then one `cluster` object.

    With --bootstrap-server: the live brokers as DescribeCluster gives them (id, host, port, rack), the
    controller and the cluster id. With --metadata-log: every registered broker with its state
    (fenced, unfenced, controlled-shutdown), the raft leader as controller. The controller quorum:
    `ktool quorum`.

    \b
    Exit status:
      0  ok
      1  damage in the metadata log (--metadata-log): the view is the image where it stops, each
         finding one line on stderr
      2  usage error
      3  ZooKeeper or the brokers unreachable, wrong chroot, no /brokers/ids, a malformed znode,
         not allowed, LOGDIR not a KRaft log dir or missing records a snapshot it cannot read held
    """
    from kafka_tools.render.cluster import (
        render_brokers_json,
        render_brokers_text,
        render_cluster_json,
        render_cluster_text,
    )
    from kafka_tools.render.json_lines import emit

    read = _ImageRead()
    view = _cluster_view(metadata_log, options, read)
    if view is not None:
        if as_json:
            render_cluster_json(view, sys.stdout)
            emit(sys.stdout, {"type": "summary", "brokers": len(view.brokers)})
        else:
            render_cluster_text(view, sys.stdout, _colour(ctx))
        read.say(ctx)
        return
    from kafka_tools.zk.connection import open_zk
    from kafka_tools.zk.reader import read_cluster

    with open_zk(_zk_config(options)) as zk:
        cluster = read_cluster(zk)
    if as_json:
        render_brokers_json(cluster, sys.stdout)
        emit(sys.stdout, {"type": "summary", "brokers": len(cluster.brokers)})
    else:
        render_brokers_text(cluster, sys.stdout, _colour(ctx))


@dataclass(slots=True)
class _ImageRead:
    """What reading the metadata log said beside the image: lines for stderr (a snapshot built without,
    damage where the image stops), and whether one is damage (exit 1, as `ktool metadata` exits)."""

    lines: list[str] = field(default_factory=list)
    damaged: bool = False

    def say(self, ctx: click.Context) -> None:
        for line in self.lines:
            click.echo(f"ktool: {line}", err=True)
        if self.damaged:
            ctx.exit(EXIT_FINDINGS)


def _whole_image(metadata_log: str, read: _ImageRead):
    """The metadata log's whole image (exit 3 in one line where records are missing from it); what its
    reading found goes into `read`: never a clean answer from a damaged or partly read log."""
    from kafka_tools.log.checks.findings import Severity
    from kafka_tools.metadata.checks import read_findings
    from kafka_tools.metadata.load import UNREADABLE_SNAPSHOT, load_whole_image
    from kafka_tools.render.metadata import finding_line

    load = load_whole_image(metadata_log)
    read.lines += [f"note: {note}" for note in load.unread_notes()]
    damage = [
        f for f in read_findings(load) if f.severity == Severity.ERROR and f.kind != UNREADABLE_SNAPSHOT
    ]
    read.lines += [finding_line(f) for f in damage]
    read.damaged = read.damaged or bool(damage)
    return load


def _cluster_view(
    metadata_log: str | None, options: dict[str, Any], read: _ImageRead | None = None
) -> ClusterView | None:
    """The cluster from the metadata log or the brokers; None: ZooKeeper is the source. Without `read`
    only meta.properties is wanted of the log dir (the cluster id), not every record of its image."""
    if metadata_log is not None:
        from kafka_tools.cluster.offline import cluster_from_image
        from kafka_tools.metadata.load import load_image

        load = _whole_image(metadata_log, read) if read is not None else load_image(metadata_log)
        return cluster_from_image(load)
    broker = _live_broker(options)
    if broker is None:
        return None
    from kafka_tools.cluster.live import describe_cluster

    try:
        return describe_cluster(broker)
    finally:
        broker.close()


_filters = [
    click.option(
        "--under-replicated-partitions",
        "filters",
        flag_value="under-replicated",  # cluster/view.py's Filter, by value
        multiple=True,
        help="Only partitions whose ISR is smaller than their replication factor.",
    ),
    click.option(
        "--under-min-isr-partitions",
        "filters",
        flag_value="under-min-isr",
        multiple=True,
        help="Only partitions without a leader or whose ISR is smaller than min.insync.replicas.",
    ),
    click.option(
        "--unavailable-partitions",
        "filters",
        flag_value="unavailable",
        multiple=True,
        help="Only partitions without a leader or whose leader is not a live broker.",
    ),
]


def _filter_options(func):
    for option in reversed(_filters):
        func = option(func)
    return func


@click.command("topics")
@click.argument("topics", nargs=-1, shell_complete=complete_topics)
@zookeeper_options
@_live_options
@_metadata_log_option
@_filter_options
@click.option(
    "--sizes",
    is_flag=True,
    help="Each replica's size on disk, as kafka-log-dirs gives it (DescribeLogDirs of every live broker; "
    "--bootstrap-server only).",
)
@_json_option
@click.pass_context
def topics(
    ctx: click.Context,
    topics: tuple[str, ...],
    as_json: bool,
    metadata_log: str | None,
    filters: tuple[str, ...],
    sizes: bool,
    **options: Any,
) -> None:
    """Show the partitions of topics: leader, replicas, ISR, leader epoch.

    Every partition of each TOPIC given, or of every topic, from ZooKeeper, a live broker or a KRaft
    metadata log: the same columns from each (a source that does not hold one shows `-`: ZooKeeper has
    no ELR).

    The status column says, worst first, as Kafka's kafka-topics --describe decides them: offline (no
    leader, or a leader that is not a live broker), under-min-isr (ISR smaller than
    min.insync.replicas, or no leader), under-replicated (ISR smaller than the replication factor),
    elr (eligible leader replicas held, KIP-966), reassigning (replicas shown +added -removed); no
    state (ZooKeeper: no state znode). The three filters keep the partitions any of them names, as
    kafka-topics'. 0.7 topics list their partitions as brokerId-partition. --json: one `partition`
    object per partition.

    \b
    Exit status:
      0  ok
      1  damage in the metadata log (--metadata-log): the view is the image where it stops, each
         finding one line on stderr
      2  usage error
      3  a topic does not exist, ZooKeeper or the brokers unreachable, wrong chroot, a malformed znode,
         LOGDIR not a KRaft log dir or missing records a snapshot it cannot read held
    """
    from kafka_tools.cluster.view import Filter, keep
    from kafka_tools.render.cluster import render_topics_json, render_topics_text
    from kafka_tools.render.json_lines import emit

    wanted = [Filter(f) for f in filters]
    image_read = _ImageRead()
    missing: list[str] = []
    notes: list[str] = []
    if sizes and (metadata_log is not None or not options.get("bootstrap_server")):
        raise UsageError("--sizes: the replicas' sizes are asked of live brokers: give --bootstrap-server")
    if metadata_log is not None or options.get("bootstrap_server"):
        found, missing, notes, where = _topics_view(
            metadata_log, list(topics) or None, options, sizes, image_read
        )
    else:
        from kafka_tools.cluster.zookeeper import partitions_from_zk
        from kafka_tools.zk.connection import describe, open_zk
        from kafka_tools.zk.reader import list_topics, read_topic_configs, read_topics

        with open_zk(_zk_config(options)) as zk:
            if topics:
                # A name that does not exist is said, and the others are shown (exit 3 at the end).
                known = set(list_topics(zk))
                missing = [t for t in dict.fromkeys(topics) if t not in known]
                present = [t for t in topics if t in known]
                read = read_topics(zk, present) if present else []
                if missing and not present:
                    read_topics(zk, missing)  # its one line: no such topic, or no /brokers/topics at all
            else:
                read = read_topics(zk, None)
            where = f"/brokers/topics on ZooKeeper {describe(zk)}"
            configs = read_topic_configs(zk, [t.name for t in read])
            found = partitions_from_zk(read, configs, _live_zk_brokers(zk))
    found = keep(found, wanted)
    if as_json:
        render_topics_json(found, sys.stdout)
        summary = {
            "type": "summary",
            "topics": len({p.topic for p in found}),
            "partitions": len(found),
            "missing": len(missing),
        }
        emit(sys.stdout, summary)
    else:
        render_topics_text(found, sys.stdout, _colour(ctx))
    for note in notes:
        click.echo(f"ktool: note: {note}", err=True)
    image_read.say(ctx)
    if missing:
        sys.stdout.flush()
        plural = "s" if len(missing) > 1 else ""
        raise InputError(f"no topic{plural} {', '.join(missing)} in {where}")


def _live_zk_brokers(zk: KazooClient) -> list | None:
    """/brokers/ids, for whether a leader is live; None when there is no /brokers/ids at all."""
    from kafka_tools.zk.connection import ZnodeMissingError
    from kafka_tools.zk.reader import read_brokers

    try:
        return read_brokers(zk)
    except ZnodeMissingError:
        return None


def _topics_view(
    metadata_log: str | None,
    wanted: list[str] | None,
    options: dict[str, Any],
    sizes: bool = False,
    read: _ImageRead | None = None,
) -> tuple[list[PartitionView], list[str], list[str], str]:
    """(partitions, topics not found, notes, where they were looked for) from the log or the brokers."""
    if metadata_log is not None:
        from kafka_tools.cluster.offline import partitions_from_image

        load = _whole_image(metadata_log, read if read is not None else _ImageRead())
        names = {t.name for t in load.image.topics.values()}
        missing = [t for t in dict.fromkeys(wanted or ()) if t not in names]
        where = f"the metadata log of {metadata_log} (offset {load.image.offset})"
        return partitions_from_image(load.image, wanted), missing, [], where
    from kafka_tools.cluster.live import describe_cluster, replica_sizes
    from kafka_tools.cluster.live import read_topics as read_live_topics

    broker = _live_broker(options)
    assert broker is not None
    try:
        cluster = describe_cluster(broker)
        live = read_live_topics(broker, cluster, wanted)
        if sizes:
            on_disk = replica_sizes(broker, cluster)
            for p in live.partitions:
                p.sizes = on_disk.get((p.topic, p.partition), {})
    finally:
        broker.close()
    return live.partitions, live.missing, live.notes, f"the cluster of broker {broker.config.bootstrap}"


@click.command("cluster-id")
@zookeeper_options
@_live_options
@_metadata_log_option
@_json_option
def cluster_id(as_json: bool, metadata_log: str | None, **options: Any) -> None:
    """Print the cluster id (/cluster/id, Kafka 0.10.1+).

    With --bootstrap-server: as DescribeCluster gives it; with --metadata-log: the log dir's
    meta.properties.

    \b
    Exit status:
      0  ok
      2  usage error
      3  no /cluster/id (clusters before 0.10.1 have none), ZooKeeper or the brokers unreachable,
         wrong chroot, LOGDIR not a KRaft log dir
    """
    view = _cluster_view(metadata_log, options)
    if view is not None:
        cid = view.cluster_id
        if cid is None:
            raise InputError(f"no cluster id from {view.source}")
    else:
        from kafka_tools.zk.connection import open_zk
        from kafka_tools.zk.reader import cluster_id as read_cluster_id

        config = _zk_config(options)
        with open_zk(config) as zk:
            cid = read_cluster_id(zk)
        if cid is None:
            raise InputError(f"no /cluster/id on ZooKeeper {config}: clusters before 0.10.1 have no id")
    if as_json:
        from kafka_tools.render.cluster import render_cluster_id_json
        from kafka_tools.render.json_lines import emit

        render_cluster_id_json(cid, sys.stdout)
        emit(sys.stdout, {"type": "summary", "clusterIds": 1})
    else:
        click.echo(cid)


@click.command("quorum")
@_live_options
@_json_option
@click.pass_context
def quorum(ctx: click.Context, as_json: bool, **options: Any) -> None:
    """Show the KRaft controller quorum: leader, epoch, voters, observers and their lag.

    What kafka-metadata-quorum `describe --status` and `describe --replication` show, in one view
    (DescribeQuorum, which the broker asks the active controller): the leader, its epoch, the high
    watermark, the most lagging voter's lag in offsets and in ms, then one row per voter and observer
    (the leader first) with its log end offset, lag behind the leader, last fetch and last caught-up
    times (ms since the epoch; -1 unknown). --json: one `quorum` object, one `replica` object each.

    \b
    Exit status:
      0  ok
      2  usage error (no --bootstrap-server)
      3  the brokers unreachable or refusing the credentials; not a KRaft cluster (no DescribeQuorum)
    """
    from kafka_tools.cluster.live import describe_cluster, read_quorum
    from kafka_tools.cluster.quorum import quorum_status
    from kafka_tools.render.cluster import render_quorum_json, render_quorum_text
    from kafka_tools.render.json_lines import emit

    broker = _live_broker(options)
    if broker is None:
        raise UsageError(
            "quorum: give --bootstrap-server host:port (the controller quorum is asked of a broker)"
        )
    try:
        cid = describe_cluster(broker).cluster_id
        status = quorum_status(read_quorum(broker), cid)
    finally:
        broker.close()
    if as_json:
        render_quorum_json(status, sys.stdout)
        voters = sum(r.status != "Observer" for r in status.replicas)
        emit(sys.stdout, {"type": "summary", "voters": voters, "observers": len(status.replicas) - voters})
    else:
        render_quorum_text(status, sys.stdout, _colour(ctx))


COMMANDS = (brokers, topics, cluster_id, quorum)


def register(group: click.Group) -> None:
    """Add `brokers`, `topics` and `cluster-id` to ``group`` (those it does not have yet)."""
    for command in COMMANDS:
        if command.name not in group.commands:
            group.add_command(command)
