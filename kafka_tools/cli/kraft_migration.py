"""`ktool kraft-migration check` and `diff`: ready to leave ZooKeeper, and ZooKeeper and the KRaft
controllers' metadata log compared during the migration's dual write and after it (KIP-866)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from kafka_tools.cli.broker_options import broker_options_for
from kafka_tools.cli.options import colour_of, json_option
from kafka_tools.cli.zk_options import zk_config_from_options, zookeeper_options
from kafka_tools.errors import EXIT_FINDINGS, InputError, UsageError
from kafka_tools.render.lines import wants_colour


@click.group("kraft-migration")
def kraft_migration() -> None:
    """The ZooKeeper to KRaft migration (KIP-866): both stores compared object by object.

    `check` before migrating: what blocks it or makes it risky. `diff` during dual write and after:
    every difference between ZooKeeper and the KRaft image, with the side that holds it.

    \b
    Exit status:
      0  ready (check), in step (diff)
      1  a blocking or risky condition (check), a difference (diff)
      2  usage error
      3  ZooKeeper unreachable, a malformed znode, a log dir unreadable
    """


@kraft_migration.command("diff")
@click.argument("log_dirs", nargs=-1, required=True, metavar="LOGDIR...")
@zookeeper_options
@json_option("`difference` objects")
@click.pass_context
def diff(ctx: click.Context, log_dirs: tuple[str, ...], as_json: bool, **options: Any) -> None:
    """Compare ZooKeeper's metadata with the KRaft image of the controllers' metadata log.

    Each LOGDIR is a controller's metadata log dir (or its __cluster_metadata-0 directory), live or a
    copy; the one furthest ahead is compared. Topics and topic ids, partitions (replicas, leader, ISR,
    leader epoch, adding/removing replicas), topic and broker configs (sensitive ones by presence only,
    never printed), client quotas, SCRAM credentials (iterations, never keys), ACLs, the producer-id
    block, delegation tokens (their metadata: neither side holds the HMAC) and /migration
    against the log's end. Each difference names the side that holds it and
    whether the controller's next full sync of ZooKeeper repairs it (only during dual write). A topic
    pending deletion is not expected in KRaft: the migration leaves it behind. Once the migration is
    finalized (POST_MIGRATION) KRaft moves on alone: what ZooKeeper alone holds is said, lost when it
    is deleted. --json's summary: `passes`, a runbook's gate.

    \b
    Exit status:
      0  in step (finalized: nothing only in ZooKeeper)
      1  a difference (finalized: something only in ZooKeeper)
      2  usage error
      3  ZooKeeper unreachable, a malformed znode, a log dir unreadable
    """
    from kafka_tools.metadata.load import checked_dir, load_whole_image
    from kafka_tools.migration.compare import compare
    from kafka_tools.migration.zk_state import read_zk_state
    from kafka_tools.render.migration import render_diff_json, render_diff_text
    from kafka_tools.zk.connection import open_zk

    for path in log_dirs:  # a path that is not there: one line before ZooKeeper is asked anything
        checked_dir(path)
    # ZooKeeper first, the log after: a live log only grows, so it holds every record /migration says
    # ZooKeeper reflects (read the other way round, a record committed in between looks lost)
    with open_zk(zk_config_from_options(**options)) as zk:
        state = read_zk_state(zk)
    load = max((load_whole_image(path) for path in log_dirs), key=lambda x: x.image.offset)
    result = compare(state, load.image)
    where = str(load.log_dir)
    if as_json:
        render_diff_json(result, where, sys.stdout)
    else:
        render_diff_text(result, where, sys.stdout, wants_colour(sys.stdout, colour_of(ctx)))
    if not result.passes:
        ctx.exit(EXIT_FINDINGS)


@kraft_migration.command("check")
@click.argument("log_dirs", nargs=-1, metavar="[LOGDIR...]")
@zookeeper_options
@broker_options_for(
    "Kafka brokers: each live broker is asked its inter.broker.protocol.version (DescribeConfigs).",
    "Not used: each broker is asked directly.",
)
@click.option(
    "--bootstrap-controller",
    metavar="HOST:PORT[,…]",
    help="KRaft controllers (their controller listener): the quorum asked with DescribeQuorum, each voter "
    "its zookeeper.metadata.migration.enable (the --broker-* security settings apply).",
)
@json_option("`finding` objects")
@click.pass_context
def check(
    ctx: click.Context,
    log_dirs: tuple[str, ...],
    as_json: bool,
    bootstrap_controller: str | None,
    **options: Any,
) -> None:
    """Before migrating to KRaft: what blocks the migration or makes it risky, each with its reason.

    From ZooKeeper: topics pending deletion (the migration does not copy them), a partition
    reassignment in flight (/admin/reassign_partitions, or adding/removing replicas), a preferred-leader
    election in flight, brokers whose registration predates Kafka 2.7, no /cluster/id; a migration
    already begun (/migration) and a KRaft controller holding /controller are said too. Each LOGDIR (the
    KRaft controllers' log dirs, once formatted) must carry ZooKeeper's cluster id in meta.properties.

    With --bootstrap-server: each live broker's inter.broker.protocol.version (3.4 at least, all
    alike). With --bootstrap-controller: the controller quorum answering DescribeQuorum, and each voter
    running with zookeeper.metadata.migration.enable=true.

    \b
    Exit status:
      0  nothing blocking or risky (notes only)
      1  a blocking (error) or risky (warning) condition
      2  usage error
      3  ZooKeeper unreachable, a malformed znode, a log dir unreadable
    """
    from kafka_tools.cli.broker_options import broker_from_options
    from kafka_tools.log.checks.findings import Severity
    from kafka_tools.metadata.node_files import read_meta_properties
    from kafka_tools.migration.readiness import NodeClusterId, readiness
    from kafka_tools.migration.zk_state import read_zk_state
    from kafka_tools.render.migration import render_check_json, render_check_text
    from kafka_tools.zk.connection import open_zk
    from kafka_tools.zk.reader import read_brokers, read_controller_json

    nodes = []
    for log_dir in log_dirs:
        path = Path(log_dir) / "meta.properties"
        if not path.is_file():
            raise UsageError(f"{log_dir}: no meta.properties (not a formatted log dir)")
        read: list = []
        meta = read_meta_properties(path, read)
        if meta is None or read:
            raise InputError(f"{path}: {read[0].message if read else 'unreadable'}")
        nodes.append(NodeClusterId(str(path), meta.cluster_id))
    with open_zk(zk_config_from_options(**options)) as zk:
        state = read_zk_state(zk)
        brokers = read_brokers(zk)
        controller = read_controller_json(zk)
    findings = readiness(state, brokers, controller, nodes)
    findings += _live_findings(broker_from_options(**options), bootstrap_controller, options)
    if as_json:
        render_check_json(findings, sys.stdout)
    else:
        render_check_text(findings, sys.stdout)
    if any(f.severity in (Severity.ERROR, Severity.WARNING) for f in findings):
        ctx.exit(EXIT_FINDINGS)


def _live_findings(broker, bootstrap_controller: str | None, options: dict[str, Any]) -> list:
    """The brokers' IBPs (--bootstrap-server) and the controller quorum (--bootstrap-controller)."""
    from kafka_tools.migration.live_nodes import broker_ibps, controller_quorum
    from kafka_tools.migration.readiness import broker_protocol_findings, quorum_findings

    out = []
    if broker is not None:
        try:
            out += broker_protocol_findings(broker_ibps(broker))
        finally:
            broker.close()
    if bootstrap_controller:
        from kafka_tools.cli.broker_options import security_from_options

        security = broker.config.security if broker is not None else security_from_options(**options)
        out += quorum_findings(controller_quorum(bootstrap_controller, options["broker_timeout"], security))
    return out
