"""`ktool groups watch`: consumer registration and rebalances live, through ZooKeeper watches, or
through the groups' coordinators (--bootstrap-server alone: classic and KIP-848 consumer groups)."""

from __future__ import annotations

import sys
from typing import Any

import click

from kafka_tools.cli.broker_options import broker_from_options, broker_options
from kafka_tools.cli.complete_names import complete_groups
from kafka_tools.cli.options import colour_of, json_option
from kafka_tools.cli.zk_options import zk_if_configured, zookeeper_options
from kafka_tools.errors import UsageError

_SECONDS = click.FloatRange(min=0, min_open=True)


@click.command("watch")
@click.argument("group_ids", nargs=-1, metavar="[GROUP]...", shell_complete=complete_groups)
@click.option(
    "--all",
    "all_groups",
    is_flag=True,
    help="Every group in /consumers (through Kafka: every classic and consumer group the brokers list), "
    "also those that appear later.",
)
@zookeeper_options
@broker_options
@json_option("one `event` object per event (ts, event, group and the event's fields)")
@click.option(
    "--lag-interval",
    type=_SECONDS,
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="Read committed and log end offsets this often (needs --bootstrap-server for the log end).",
)
@click.option(
    "--grace",
    type=_SECONDS,
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="A partition not owned by a live member for longer than this is reported as stuck.",
)
@click.option(
    "--until-stable",
    is_flag=True,
    help="Exit 0 once every group has live members that own its partitions as planned.",
)
@click.option(
    "--timeout",
    type=_SECONDS,
    metavar="SECONDS",
    help="With --until-stable: exit 1 (with the last state) when the groups are not stable by then.",
)
@click.option("--once", is_flag=True, help="Print the current state as events and exit.")
@click.option(
    "--interval",
    type=_SECONDS,
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="Through Kafka (--bootstrap-server without ZooKeeper): ask the groups' coordinators this often.",
)
@click.pass_context
def watch(
    ctx: click.Context,
    group_ids: tuple[str, ...],
    all_groups: bool,
    as_json: bool,
    lag_interval: float,
    grace: float,
    until_stable: bool,
    timeout: float | None,
    once: bool,
    interval: float,
    **options: Any,
) -> None:
    """Watch consumer groups' members, owners and rebalances as they happen.

    Sets ZooKeeper watches (kazoo's recipes, no polling) on /consumers/GROUP/ids and /owners, on
    /brokers/ids, /brokers/topics/TOPIC and /controller, and prints one line per event: member
    joined/left, broker joined/left, controller moved, partitions added, rebalance started/finished
    (duration, partitions moved, each owner change), the owners verified against the range assignor's
    plan, partitions stuck longer than --grace, lag status changes (Burrow's OK, WARN, STALL, STOP,
    ERR), connection loss and session expiry. Ctrl-C stops it.

    With --bootstrap-server and no ZooKeeper (KRaft, Kafka 4.x): classic and consumer (KIP-848) groups
    through their coordinators, asked every --interval seconds (DescribeGroups, ConsumerGroupDescribe),
    in the same events: members joining and leaving, the group epoch and target assignment epoch
    moving, rebalance started/finished with each owner change, partitions stuck past --grace, lag. A
    consumer group is stable when every member is at the target assignment epoch and owns its target
    assignment; a classic group when it is Stable with every partition of its topics owned.

    \b
    Exit status:
      0    --once printed the state; --until-stable: every group stable and verified
      1    --until-stable: the --timeout passed first (the last state is printed)
      2    usage error
      3    ZooKeeper or a broker unreachable, credentials or TLS refused, a group the brokers'
           ACLs deny (GROUP_AUTHORIZATION_FAILED)
      130  interrupted (Ctrl-C)
      143  terminated (SIGTERM): the summary printed, as after Ctrl-C
    """
    from kafka_tools.consumers.group_tracker import WatchOptions
    from kafka_tools.render.lines import wants_colour
    from kafka_tools.render.watch import WatchRenderer
    from kafka_tools.zk.names import check_group_name

    if bool(group_ids) == all_groups:
        raise UsageError("give GROUP… or --all (not both)")
    for group in group_ids:
        check_group_name(group)
    if timeout is not None and not until_stable:
        raise UsageError("--timeout goes with --until-stable")
    if once and until_stable:
        raise UsageError("--once and --until-stable exclude each other")
    colour = wants_colour(sys.stdout, colour_of(ctx))
    render = WatchRenderer(sys.stdout, colour, as_json)
    settings = WatchOptions(
        groups=list(group_ids),
        all_groups=all_groups,
        grace=grace,
        lag_interval=lag_interval,
        until_stable=until_stable,
        timeout=timeout,
        once=once,
    )
    with zk_if_configured(**options) as zk:
        broker = broker_from_options(zk, **options)
        try:
            if zk is None:
                from kafka_tools.consumers.coordinator_watch import CoordinatorWatch

                assert broker is not None  # zk_if_configured refuses neither server given
                code = CoordinatorWatch(broker, settings, render, interval).run()
            else:
                from kafka_tools.consumers.watch import GroupWatch  # kazoo's recipes: ZooKeeper's watches

                code = GroupWatch(zk, settings, render, broker).run()
        finally:
            render.finish()
    ctx.exit(code)
