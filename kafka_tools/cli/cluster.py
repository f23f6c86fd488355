"""`ktool brokers`, `ktool topics`, `ktool cluster-id`: the cluster as ZooKeeper describes it.

The shared ZooKeeper options (cli/zk_options.py) are re-exported here with `zk_if_configured`.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from kafka_tools.cli.complete_names import complete_topics
from kafka_tools.cli.options import colour_of, json_option
from kafka_tools.cli.zk_options import zk_config_from_options, zookeeper_options
from kafka_tools.errors import InputError
from kafka_tools.render.cluster import (
    render_brokers_json,
    render_brokers_text,
    render_cluster_id_json,
    render_topics_json,
    render_topics_text,
)
from kafka_tools.render.json_lines import emit
from kafka_tools.render.lines import wants_colour
from kafka_tools.zk.connection import NoZooKeeperError, describe, open_zk
from kafka_tools.zk.names import check_group_name
from kafka_tools.zk.reader import cluster_id as read_cluster_id
from kafka_tools.zk.reader import list_topics, read_cluster, read_topics

if TYPE_CHECKING:
    from kazoo.client import KazooClient

__all__ = [
    "brokers",
    "check_zk_groups",
    "cluster_id",
    "topics",
    "zk_config_from_options",
    "zk_if_configured",
    "zookeeper_options",
]


def check_zk_groups(groups: Iterable[str], **options: Any) -> None:
    """Before connecting: when ZooKeeper is configured (the command will look the groups up there), each
    group must be a name ZooKeeper can hold (zk/names.py), else one line and exit 2."""
    groups = list(groups)
    if not groups:
        return
    try:
        zk_config_from_options(**options)
    except NoZooKeeperError:
        return
    for group in groups:
        check_group_name(group)


@contextmanager
def zk_if_configured(*, needed_for: str | None = None, **options: Any) -> Iterator[KazooClient | None]:
    """An open ZooKeeper when one is configured, else None: commands whose data lives in Kafka work
    with --bootstrap-server alone (KRaft and Kafka 4.x clusters have no ZooKeeper). `needed_for` says
    what could not be done without it, for the one line when neither server is given."""
    try:
        config = zk_config_from_options(**options)
    except NoZooKeeperError as exc:
        if needed_for is not None or not options.get("bootstrap_server"):
            what = needed_for or "give --bootstrap-server host:port for the groups and offsets in Kafka"
            raise NoZooKeeperError(f"{exc}; {what}") from None
        yield None
        return
    with open_zk(config) as zk:
        yield zk


def _colour(ctx: click.Context) -> bool:
    return wants_colour(sys.stdout, colour_of(ctx))


_json_option = json_option("`broker`, `partition` or `cluster` objects")


@click.command("brokers")
@zookeeper_options
@_json_option
@click.pass_context
def brokers(ctx: click.Context, as_json: bool, **options: Any) -> None:
    """List the live brokers as registered in ZooKeeper, with the controller and the cluster id.

    One row per /brokers/ids/N: host, port, endpoints, rack, JMX port, registration version, the Kafka
    version that version implies (1: 0.8.x, 2: 0.9.x, 3+: 0.10+; 0.7 brokers register a plain string),
    and when the broker registered. --json: one `broker` object per broker, then one `cluster` object.

    \b
    Exit status:
      0  ok
      2  usage error
      3  ZooKeeper unreachable, wrong chroot, no /brokers/ids, a malformed znode, not allowed
    """
    with open_zk(zk_config_from_options(**options)) as zk:
        cluster = read_cluster(zk)
    if as_json:
        render_brokers_json(cluster, sys.stdout)
        emit(sys.stdout, {"type": "summary", "brokers": len(cluster.brokers)})
    else:
        render_brokers_text(cluster, sys.stdout, _colour(ctx))


@click.command("topics")
@click.argument("topics", nargs=-1, shell_complete=complete_topics)
@zookeeper_options
@_json_option
@click.pass_context
def topics(ctx: click.Context, topics: tuple[str, ...], as_json: bool, **options: Any) -> None:
    """Show the partitions of topics: leader, replicas, ISR, leader epoch.

    Every partition of each TOPIC given, or of every topic.

    The status column marks partitions that are under-replicated (ISR smaller than the replicas),
    offline (no leader) or without a state znode. 0.7 topics list their partitions as
    brokerId-partition. --json: one `partition` object per partition.

    \b
    Exit status:
      0  ok
      2  usage error
      3  a topic does not exist, ZooKeeper unreachable, wrong chroot, a malformed znode
    """
    missing: list[str] = []
    with open_zk(zk_config_from_options(**options)) as zk:
        if topics:
            # A name that does not exist is said, and the others are shown (exit 3 at the end).
            known = set(list_topics(zk))
            missing = [t for t in dict.fromkeys(topics) if t not in known]
            present = [t for t in topics if t in known]
            found = read_topics(zk, present) if present else []
            if missing and not present:
                read_topics(zk, missing)  # its one line: no such topic, or no /brokers/topics at all
            where = describe(zk)
        else:
            found = read_topics(zk, None)
    if as_json:
        render_topics_json(found, sys.stdout)
        partitions = sum(len(t.partitions) for t in found)
        summary = {"type": "summary", "topics": len(found), "partitions": partitions, "missing": len(missing)}
        emit(sys.stdout, summary)
    else:
        render_topics_text(found, sys.stdout, _colour(ctx))
    if missing:
        sys.stdout.flush()
        plural = "s" if len(missing) > 1 else ""
        raise InputError(f"no topic{plural} {', '.join(missing)} in /brokers/topics on ZooKeeper {where}")


@click.command("cluster-id")
@zookeeper_options
@_json_option
def cluster_id(as_json: bool, **options: Any) -> None:
    """Print the cluster id (/cluster/id, Kafka 0.10.1+).

    \b
    Exit status:
      0  ok
      2  usage error
      3  no /cluster/id (clusters before 0.10.1 have none), ZooKeeper unreachable, wrong chroot
    """
    config = zk_config_from_options(**options)
    with open_zk(config) as zk:
        cid = read_cluster_id(zk)
    if cid is None:
        raise InputError(f"no /cluster/id on ZooKeeper {config}: clusters before 0.10.1 have no id")
    if as_json:
        render_cluster_id_json(cid, sys.stdout)
        emit(sys.stdout, {"type": "summary", "clusterIds": 1})
    else:
        click.echo(cid)


COMMANDS = (brokers, topics, cluster_id)


def register(group: click.Group) -> None:
    """Add `brokers`, `topics` and `cluster-id` to ``group`` (those it does not have yet)."""
    for command in COMMANDS:
        if command.name not in group.commands:
            group.add_command(command)
