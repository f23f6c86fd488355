"""`ktool groups list|describe|rebalance-plan`: consumer groups as ZooKeeper and the brokers see them."""

from __future__ import annotations

import sys
from typing import Any

import click

from kafka_tools.cli.broker_options import broker_from_options, broker_options
from kafka_tools.cli.complete_names import complete_groups
from kafka_tools.cli.options import colour_of, json_option
from kafka_tools.cli.zk_options import (
    check_zk_groups,
    zk_config_from_options,
    zk_if_configured,
    zookeeper_options,
)
from kafka_tools.errors import FindingsError, KtoolError, UsageError

# The services, renderers and clients are imported by the command that runs them: `groups X --help`
# and a usage error build only the commands (tests/cli/startup_budget.json).

_json_option = json_option("`group`, `partition`, `member`, `assignment` or `plan` objects")


def _colour(ctx: click.Context) -> bool:
    from kafka_tools.render.lines import wants_colour

    return wants_colour(sys.stdout, colour_of(ctx))


@click.group("groups")
def groups() -> None:
    """Consumer groups: where their offsets live, who owns what, lag, rebalance plans.

    \b
    Exit status:
      0  ok
      1  a refused plan (e.g. round-robin with unequal subscriptions), a group not deleted
      2  usage error
      3  ZooKeeper or a broker unreachable, credentials or TLS refused, a group the brokers' ACLs
         deny (GROUP_AUTHORIZATION_FAILED), a group or topic missing, a malformed znode
    """


GROUP_TYPES = ("classic", "consumer", "share", "streams")


def _names(values: tuple[str, ...]) -> list[str]:
    """Values given as kafka-consumer-groups takes them (`Stable,Empty`) or repeated."""
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


@groups.command("list")
@click.option(
    "--state",
    "states",
    multiple=True,
    metavar="STATE[,STATE]",
    help="Only groups in one of these states as Kafka names them (Stable, Empty, PreparingRebalance, "
    "CompletingRebalance, Assigning, Reconciling, Dead; any case).",
)
@click.option(
    "--type",
    "types",
    multiple=True,
    metavar="TYPE[,TYPE]",
    help="Only groups of one of these types: classic, consumer (KIP-848), share, streams.",
)
@zookeeper_options
@broker_options
@_json_option
@click.pass_context
def list_cmd(
    ctx: click.Context, states: tuple[str, ...], types: tuple[str, ...], as_json: bool, **options: Any
) -> None:
    """List consumer groups: type, state, protocol type, and where their offsets live.

    Groups in ZooKeeper (/consumers) and, with --bootstrap-server, those Kafka coordinates, each with its
    type (classic, consumer, share, streams) and state as kafka-consumer-groups `--list --state --type`
    shows them (ListGroups, from every broker) and where its offsets live (zookeeper, kafka, both,
    none). The `members (ZooKeeper)` column only when ZooKeeper is read. With --bootstrap-server alone
    (KRaft and Kafka 4.x clusters have no ZooKeeper): the groups Kafka coordinates. --state and --type
    keep the groups Kafka lists in one of those (a group only ZooKeeper has has neither).

    \b
    Exit status:
      0  ok
      2  usage error
      3  ZooKeeper or a broker unreachable, credentials or TLS refused, a malformed znode (a group
         the brokers' ACLs deny is not listed, as Kafka lists it)
    """
    from kafka_tools.consumers.groups import list_all_groups
    from kafka_tools.render.groups import render_group_list

    wanted_types = _names(types)
    unknown = [t for t in wanted_types if t.lower() not in GROUP_TYPES]
    if unknown:
        choices = ", ".join(GROUP_TYPES)
        raise click.BadParameter(f"{unknown[0]!r} is not one of {choices}", param_hint="--type")
    with zk_if_configured(**options) as zk:
        broker = broker_from_options(zk, **options)
        if (states or types) and broker is None:
            raise UsageError("--state and --type are Kafka's: give --bootstrap-server")
        found = list_all_groups(zk, broker, _names(states), wanted_types)
    render_group_list(found, sys.stdout, _colour(ctx), as_json, zookeeper=zk is not None)


@groups.command("describe")
@click.argument("group_ids", nargs=-1, metavar="[GROUP]...", shell_complete=complete_groups)
@click.option(
    "--members",
    "view",
    flag_value="members",
    help="The members: id, host, client id, partition count (kafka-consumer-groups --members).",
)
@click.option(
    "--state",
    "view",
    flag_value="state",
    help="The group: coordinator, assignment strategy, state, member count (kafka-consumer-groups --state).",
)
@click.option(
    "--verbose",
    is_flag=True,
    help="With --members: each member's epoch, assignment, target epoch and target assignment; with "
    "--state: the group epoch and target assignment epoch (consumer groups, KIP-848).",
)
@zookeeper_options
@broker_options
@_json_option
@click.pass_context
def describe_cmd(
    ctx: click.Context,
    group_ids: tuple[str, ...],
    view: str | None,
    verbose: bool,
    as_json: bool,
    **options: Any,
) -> None:
    """Show owners, committed offsets and lag of consumer groups; or their members, or their state.

    Per topic-partition: owner (consumer thread), committed offset in ZooKeeper (the zk offset column,
    when ZooKeeper is read) and in Kafka, and with --bootstrap-server the log start and end offsets and
    lag; members with their subscriptions; sums per topic and group. Impossible lag (a committed offset
    past the log end or below its start) is clamped and explained. Without GROUP: every group in
    ZooKeeper. With --bootstrap-server alone: the group as its coordinator knows it (members and their
    assignments, offsets in Kafka, lag), and without GROUP every group Kafka coordinates. --members and
    --state [--verbose] are kafka-consumer-groups' views of the same name, a consumer group's (KIP-848)
    epochs included (DescribeGroups and ConsumerGroupDescribe on ktool's own client, over plaintext, TLS
    or SASL PLAIN, SCRAM and GSSAPI alike). A
    GROUP that no store given knows (no /consumers/GROUP in ZooKeeper; unknown to Kafka's coordinator,
    with no committed offset) is said in one line, and the others shown.

    \b
    Exit status:
      0  ok
      2  usage error
      3  ZooKeeper or a broker unreachable, credentials or TLS refused, a group not found or
         denied by the brokers' ACLs (GROUP_AUTHORIZATION_FAILED), a malformed znode
    """
    from kafka_tools.consumers.groups import GroupNotFoundError, describe_group
    from kafka_tools.render.group_views import render_members, render_state
    from kafka_tools.render.groups import render_group
    from kafka_tools.render.json_lines import emit
    from kafka_tools.zk.connection import ZnodeMissingError
    from kafka_tools.zk.reader import list_groups

    if verbose and view is None:
        raise UsageError("--verbose goes with --members or --state")
    failed: list[KtoolError] = []
    shown = 0
    colour = _colour(ctx)
    check_zk_groups(group_ids, **options)
    with zk_if_configured(**options) as zk:
        broker = broker_from_options(zk, **options)
        names = list(group_ids) or (list_groups(zk) if zk is not None else [g for g, _ in broker.groups()])
        for g in dict.fromkeys(names):
            # A group that cannot be described is said, and the others are shown (worst code at the end).
            try:
                desc = describe_group(zk, g, broker)
            except (ZnodeMissingError, GroupNotFoundError, FindingsError) as exc:
                sys.stdout.flush()
                click.echo(f"ktool: {exc}", err=True)
                failed.append(exc)
                continue
            if view == "members":
                render_members(desc, sys.stdout, colour, as_json, verbose)
            elif view == "state":
                render_state(desc, sys.stdout, colour, as_json, verbose)
            else:
                render_group(desc, sys.stdout, colour, as_json)
            shown += 1
    if as_json:
        emit(sys.stdout, {"type": "summary", "groups": shown, "failed": len(failed)})
    if failed:
        ctx.exit(max(exc.exit_code for exc in failed))


@groups.command("rebalance-plan")
@click.argument("group", shell_complete=complete_groups)
@click.option(
    "--add-consumer",
    "add",
    multiple=True,
    metavar="ID[:STREAMS]",
    help="ZooKeeper: a consumer that joins, subscribed like the others, with STREAMS streams (default 1).",
)
@click.option(
    "--remove-consumer", "remove", multiple=True, metavar="ID", help="ZooKeeper: a consumer that leaves."
)
@click.option(
    "--add-member",
    "add_members",
    multiple=True,
    metavar="ID",
    help="--bootstrap-server: a member that joins, subscribed to the topics of the others, owning nothing.",
)
@click.option(
    "--remove-member",
    "remove_members",
    multiple=True,
    metavar="ID",
    help="--bootstrap-server: a member that leaves.",
)
@click.option(
    "--partitions",
    "partition_counts",
    multiple=True,
    metavar="TOPIC=N",
    help="Plan as if TOPIC had N partitions.",
)
@click.option(
    "--strategy",
    type=click.Choice(["range", "roundrobin", "sticky", "cooperative-sticky", "uniform"]),
    default=None,
    help="The assignor to plan with. Default: ZooKeeper range; through Kafka the group's own (the protocol "
    "a classic group's members agreed on, the broker's assignor of a consumer group).",
)
@click.option(
    "--implementation",
    type=click.Choice(["java", "librdkafka"]),
    default=None,
    help="The client library of a classic group's leader. Default: the one every member's client id names "
    "(kafka-clients when they do not agree).",
)
@zookeeper_options
@broker_options
@_json_option
@click.pass_context
def rebalance_plan_cmd(
    ctx: click.Context,
    group: str,
    add: tuple[str, ...],
    remove: tuple[str, ...],
    add_members: tuple[str, ...],
    remove_members: tuple[str, ...],
    partition_counts: tuple[str, ...],
    strategy: str | None,
    implementation: str | None,
    as_json: bool,
    **options: Any,
) -> None:
    """Plan the assignment a group's next rebalance computes, and which partitions move.

    With ZooKeeper: the ZooKeeper-based consumer's own range assignor (per topic, partitions by number,
    thread ids `consumerId-N` sorted as strings, the first P % C threads one extra) or its round-robin
    assignor, against today's /owners. With --bootstrap-server alone: the live group its coordinator
    describes. A classic group is assigned by its leader, a client: range, roundrobin, sticky or
    cooperative-sticky as kafka-clients or librdkafka runs them (they order members differently), from
    each member's subscription and what it owns in which generation. A consumer group (KIP-848) is
    assigned by the broker (uniform or range), from each member's target assignment. The plan says which
    assignor and implementation it used and why; what ktool does not model (uniform with unequal
    subscriptions, librdkafka's sticky) is refused in one line.

    \b
    Exit status:
      0  ok
      1  a refused plan (round-robin with unequal subscriptions, an assignor ktool does not model)
      2  usage error
      3  ZooKeeper or a broker unreachable, a group or topic missing, a malformed znode or metadata
    """
    from kafka_tools.consumers.rebalance import parse_partition_count
    from kafka_tools.render.groups import render_plan
    from kafka_tools.zk.names import check_group_name

    counts = dict(parse_partition_count(spec) for spec in partition_counts)
    check_group_name(group)
    if options.get("bootstrap_server") and not _zookeeper_given(options):
        if add or remove:
            raise UsageError(
                "--add-consumer and --remove-consumer are ZooKeeper's; through Kafka: --add-member, "
                "--remove-member"
            )
        from kafka_tools.consumers.modern_plan import plan_live_group, read_live_group

        broker = broker_from_options(None, **options)
        try:
            live = read_live_group(broker, group)
        finally:
            broker.close()
        plan = plan_live_group(live, add_members, remove_members, counts, strategy, implementation)
        render_plan(group, plan, sys.stdout, _colour(ctx), as_json)
        return
    if add_members or remove_members or implementation:
        raise UsageError(
            "--add-member, --remove-member and --implementation plan a group through --bootstrap-server"
        )
    if strategy not in (None, "range", "roundrobin"):
        raise UsageError(f"--strategy {strategy}: ZooKeeper-based consumers have range and roundrobin")
    from kafka_tools.consumers.assignors import Member, consumers_per_topic
    from kafka_tools.consumers.rebalance import plan_rebalance
    from kafka_tools.zk.connection import open_zk
    from kafka_tools.zk.reader import list_topics, read_group, read_topics

    with open_zk(zk_config_from_options(**options)) as zk:
        g = read_group(zk, group)
        members = [Member(m.id, dict(m.subscription), m.pattern) for m in g.members]
        all_topics = list_topics(zk)
        # The topics in play: those a member subscribes to (wildcards matched as Kafka matches them),
        # and those the group owns partitions of today.
        subscribed = set(consumers_per_topic(members, all_topics)) | {t for t, _ in g.owners}
        topics = read_topics(zk, sorted(t for t in subscribed if t in all_topics)) if subscribed else []
    partitions = {t.name: [p.partition for p in t.partitions] for t in topics}
    current = {(t, p): owner for (t, p), owner in g.owners.items()}
    plan = plan_rebalance(
        members,
        partitions,
        current,
        strategy=strategy or "range",
        add=list(add),
        remove=list(remove),
        partition_counts=counts,
        all_topics=all_topics,
    )
    render_plan(group, plan, sys.stdout, _colour(ctx), as_json)


def _zookeeper_given(options: dict[str, Any]) -> bool:
    from kafka_tools.zk.config import NoZooKeeperError

    try:
        zk_config_from_options(**options)
    except NoZooKeeperError:
        return False
    return True


def _add_subcommands() -> None:
    # `groups watch` (kazoo watches, the event renderer), `groups delete` and `groups reset-offsets`
    # (journal, undo) live in their own modules; they join the group here so that loading `groups`
    # lazily brings them along.
    from kafka_tools.cli.groups_delete import delete
    from kafka_tools.cli.groups_watch import watch
    from kafka_tools.cli.reset_offsets import reset_offsets

    groups.add_command(watch)
    groups.add_command(delete)
    groups.add_command(reset_offsets)


_add_subcommands()
