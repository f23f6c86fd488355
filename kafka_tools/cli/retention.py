"""`ktool retention LOGDIR…`: which segments the broker's delete policy would remove next (a preview)."""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import click

from kafka_tools.cli.broker_options import broker_options_for
from kafka_tools.cli.options import colour_of, json_option, live_options
from kafka_tools.cli.paths import path_type
from kafka_tools.cli.zk_options import zk_config_from_options, zookeeper_options
from kafka_tools.errors import EXIT_ENVIRONMENT, EXIT_FINDINGS, InputError, KtoolError
from kafka_tools.log.reads.times import parse_time

# The preview, its settings and renderers are imported when it runs: `retention --help` and a usage
# error build only the command (tests/cli/startup_budget.json).


def _topic_overrides(topics: set[str], options: dict[str, Any]) -> dict[str, dict[str, str]] | None:
    """Each topic's overrides from ZooKeeper, when one is configured (--zookeeper, $KTOOL_ZOOKEEPER or
    the config file); None when none is."""
    from kafka_tools.zk.config import NoZooKeeperError

    try:
        config = zk_config_from_options(**options)
    except NoZooKeeperError:
        return None
    # The connection layers only when there is a ZooKeeper to talk to.
    from kafka_tools.zk.connection import open_zk
    from kafka_tools.zk.reader import read_topic_configs

    with open_zk(config) as zk:
        return read_topic_configs(zk, topics)


_RETENTION_NAMES = ("retention.ms", "retention.bytes", "cleanup.policy", "min.cleanable.dirty.ratio",
                    "delete.retention.ms")  # fmt: skip


def _broker_overrides(
    topics: set[str], options: dict[str, Any]
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """Each topic's settings as a broker reports them (DescribeConfigs: KRaft and 4.x clusters keep topic
    configs in their metadata, not ZooKeeper): (topic -> name -> value, topic -> name -> source)."""
    from kafka_tools.cli.broker_options import broker_from_options

    broker = broker_from_options(None, **options)
    assert broker is not None  # asked only with --bootstrap-server
    bootstrap = broker.config.bootstrap
    try:
        found = broker.topic_configs(topics, _RETENTION_NAMES)
    finally:
        broker.close()
    values = {t: {n: v for n, (v, _) in entries.items()} for t, entries in found.items()}
    sources = {
        t: {
            n: f"broker {bootstrap}: " + (f"topic {t} config" if src == "DYNAMIC_TOPIC_CONFIG" else src)
            for n, (_, src) in entries.items()
        }
        for t, entries in found.items()
    }
    return values, sources


@click.command("retention")
@click.argument("paths", nargs=-1, required=True, type=path_type(path_type=str))
@click.option("--retention-ms", type=int, metavar="MS", help="retention.ms for every topic (-1: no limit).")
@click.option("--retention-hours", type=int, metavar="N", help="retention.ms as hours (-1: no limit).")
@click.option(
    "--retention-bytes", type=int, metavar="BYTES", help="retention.bytes for every topic (-1: no limit)."
)
@click.option(
    "--server-properties",
    type=path_type(path_type=str),  # a directory given: exit 3 in one line where it is read
    metavar="FILE",
    help="The broker's server.properties: log.retention.{ms,minutes,hours}, log.retention.bytes, "
    "log.cleanup.policy, log.cleaner.* defaults.",
)
@zookeeper_options
@broker_options_for(
    bootstrap_help="A broker to ask for the topics' settings (DescribeConfigs, Kafka 0.11+; KRaft clusters "
    "have no ZooKeeper): the topic overrides and the broker's own settings; it is asked instead of "
    "ZooKeeper.",
    version_help="Apply this broker version's rule (0.9, 0.10.1, 2.8, 3.7 …) [default: detected from the "
    "log]; with --bootstrap-server, the brokers' version too.",
)
@click.option(
    "--metadata-log-dir",
    type=path_type(path_type=str),
    metavar="DIR",
    help="The KRaft log dir holding __cluster_metadata-0, when it is not the partitions' own log dir "
    "(metadata.log.dir): topic configs and dynamic broker configs are read from it.",
)
@click.option("--now", "now_text", metavar="T", help="Judge as of T (epoch ms or ISO-8601) [default: now].")
@click.option(
    "--compaction", is_flag=True, help="Also preview the log cleaner on compacted partitions (decodes them)."
)
@click.option("--all-segments", is_flag=True, help="List every segment, not only those deleted and the next.")
@json_option("`partition` and `segment` objects")
@live_options
@click.pass_context
def retention(
    ctx: click.Context,
    paths: tuple[str, ...],
    retention_ms: int | None,
    retention_hours: int | None,
    retention_bytes: int | None,
    server_properties: str | None,
    metadata_log_dir: str | None,
    now_text: str | None,
    broker_version: str | None,
    compaction: bool,
    all_segments: bool,
    as_json: bool,
    **zk_options: Any,
) -> None:
    """Preview which segments the broker's delete policy would remove next, and why.

    PATH is a log dir, a partition directory (topic-N) or a directory holding log dirs. For every
    partition: the rule of the broker generation that wrote it (0.8-0.10.0 by segment file mtime; 0.10.1+
    by the largest record timestamp; 0.11.0.1+ never past the high watermark), the segments deleted by
    time, by size or below the log start offset, the bytes and records freed, the new log start offset,
    and what stays. Settings: flags, then topic overrides from ZooKeeper /config/topics/<topic> (when
    ZooKeeper is configured) or, with --bootstrap-server, the topic's settings as the broker reports them
    (its overrides, then the broker's own), or, offline on a KRaft log dir, the topic's and the dynamic
    broker configs from the KRaft metadata log beside the partitions (or in --metadata-log-dir), then
    --server-properties, then Kafka's defaults; each is printed with its source.
    Nothing is written anywhere.

    \b
    Exit status:
      0  the preview was printed (whether or not anything would be deleted)
      1  an inconsistent state: a checkpoint that cannot be parsed, a high watermark past the log end
      2  usage error
      3  a path, server.properties, a KRaft log dir's metadata log, ZooKeeper or the broker could not
         be read
    """
    from kafka_tools.log.retention.config import (
        SettingSources,
        broker_settings,
        flag_settings,
        read_server_properties,
    )
    from kafka_tools.log.retention.preview import find_partitions, preview
    from kafka_tools.metadata.configs import kraft_settings
    from kafka_tools.render.lines import wants_colour
    from kafka_tools.render.retention import RetentionJsonRenderer, RetentionTextRenderer

    now_ms = parse_time(now_text, "--now") if now_text else int(time.time() * 1000)
    sources = SettingSources(flags=flag_settings(retention_ms, retention_hours, retention_bytes))
    static = None
    if server_properties:
        static = (server_properties, read_server_properties(server_properties))
        sources.broker = broker_settings(static[1], server_properties)
    parts: list = []
    bad_paths: list[tuple[str, KtoolError]] = []
    for path in paths:
        # A path that is missing or of the wrong kind is said and the others are previewed (exit 3).
        try:
            if os.path.isfile(path):
                raise InputError(f"{path}: a file; give log dirs or partition directories")
            parts += find_partitions([path])
        except KtoolError as exc:
            click.echo(f"ktool: {exc}", err=True)
            bad_paths.append((path, exc))
    topics = {p.topic for p in parts}
    bootstrap = zk_options.get("bootstrap_server")
    kraft_unread = False
    if bootstrap and topics:
        sources.topic_overrides, sources.override_sources = _broker_overrides(
            topics, {**zk_options, "broker_version": broker_version}
        )
    elif parts and (kraft := kraft_settings(parts, metadata_log_dir, sources, static)) is not None:
        kraft_unread = kraft.unread
        for line in kraft.notes:
            click.echo(f"ktool: {line}", err=True)
    else:
        overrides = _topic_overrides(topics, zk_options)
        if overrides is not None:
            sources.topic_overrides = overrides
    report = preview(parts, sources, now_ms, broker_version, compaction)
    if as_json:
        RetentionJsonRenderer(sys.stdout).render(report, bad_paths)
    else:
        colour = wants_colour(sys.stdout, colour_of(ctx))
        RetentionTextRenderer(sys.stdout, colour, all_segments).render(report)
    sys.stdout.flush()
    for p in report.unreadable:
        click.echo(f"ktool: {p.unreadable}", err=True)
    inconsistent = [line for p in report.partitions for line in p.inconsistent]
    for line in dict.fromkeys(inconsistent):
        click.echo(f"ktool: {line}", err=True)
    if report.unreadable or bad_paths or kraft_unread:
        ctx.exit(EXIT_ENVIRONMENT)
    if inconsistent:
        ctx.exit(EXIT_FINDINGS)
