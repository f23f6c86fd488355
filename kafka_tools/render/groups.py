"""`ktool groups` output: rich tables on a terminal, aligned text in a pipe, JSON Lines with --json."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import TextIO

from kafka_tools.consumers.groups import GroupDescription, GroupSummary
from kafka_tools.consumers.rebalance import RebalancePlan
from kafka_tools.format.plural import plural
from kafka_tools.render.json_lines import dumps as json_line
from kafka_tools.render.tables import TextTable, make_console


def _console(out: TextIO, colour: bool):
    return make_console(out, colour)


def _table(colour: bool, columns: list[str], right: set[str], drop=(), wrap=()) -> TextTable:
    return TextTable(columns, colour, right=tuple(right), drop=drop, wrap=wrap)


def _s(value: object) -> str:
    return "-" if value is None else str(value)


def _emit(out: TextIO, obj: dict) -> None:
    out.write(json_line(obj) + "\n")


def partition_fields(partition: int | str) -> dict[str, int | None]:
    """`partition` always a number; Kafka 0.7's `brokerId-partition` keys give `broker` too (else None)."""
    if isinstance(partition, str):
        broker, _, number = partition.partition("-")
        return {"partition": int(number), "broker": int(broker)}
    return {"partition": partition, "broker": None}


def render_group_list(
    groups: list[GroupSummary], out: TextIO, colour: bool, as_json: bool, zookeeper: bool = True
) -> None:
    """The groups with their type, state and protocol type as Kafka lists them (`-` for a group only
    ZooKeeper has); `members (ZooKeeper)` only when ZooKeeper was read."""
    if as_json:
        for g in groups:
            _emit(
                out,
                {
                    "type": "group",
                    "group": g.group,
                    "offsetsIn": g.storage,
                    "members": g.members,  # the same field as describe's
                    "protocolType": g.protocol_type,
                    "state": g.state,
                    "groupType": g.type,
                },
            )
        _emit(out, {"type": "summary", "groups": len(groups)})
        return
    columns = ["group", "type", "state", "protocol type", "offsets in"]
    if zookeeper:
        columns.append("members (ZooKeeper)")
    table = _table(colour, columns, {"members (ZooKeeper)"}, drop=("protocol type", "members (ZooKeeper)"))
    for g in groups:
        cells = [g.group, _s(g.type), _s(g.state), _s(g.protocol_type), g.storage]
        table.add_row(*cells, *([_s(g.members)] if zookeeper else []))
    _console(out, colour).print(table)


def render_group(desc: GroupDescription, out: TextIO, colour: bool, as_json: bool) -> None:
    if as_json:
        for r in desc.rows:
            _emit(
                out,
                {
                    "type": "partition",
                    "group": desc.group,
                    "topic": r.topic,
                    **partition_fields(r.partition),
                    "owner": r.owner,
                    "zookeeperOffset": r.zk_offset,
                    "kafkaOffset": r.kafka_offset,
                    "committed": r.committed,
                    "logStartOffset": r.log_start,
                    "logEndOffset": r.log_end,
                    "lag": r.lag,
                    "note": r.note,
                },
            )
        for m in desc.members:
            _emit(
                out,
                {
                    "type": "member",
                    "group": desc.group,
                    "consumerId": m.id,
                    "subscription": m.subscription,
                    "pattern": m.pattern,
                    "timestamp": m.timestamp,
                    "version": m.version,
                },
            )
        _emit(
            out,
            {
                "type": "group",
                "group": desc.group,
                "layout": desc.layout,
                "offsetsIn": desc.storage,
                "members": len(desc.members),
                "partitions": len(desc.rows),
                "unownedPartitions": len(desc.unowned),
                "lag": desc.total_lag,
                "topicLag": desc.topic_lag(),
                "notes": desc.notes,
            },
        )
        return
    console = _console(out, colour)
    console.print(
        f"group {desc.group}: offsets in {desc.storage}, {plural(len(desc.members), 'live member')}"
        + (f", layout {desc.layout}" if desc.layout else ""),
        style="bold" if colour else None,
        markup=False,
    )
    zk = desc.from_zookeeper  # the zk offset column only when ZooKeeper was read for this group
    table = _table(
        colour,
        ["topic", "partition", "owner", *(["zk offset"] if zk else [])]
        + ["kafka offset", "log start", "log end", "lag", "note"],
        {"partition", "zk offset", "kafka offset", "log start", "log end", "lag"},
        drop=("log start", "zk offset", "kafka offset", "owner", "log end"),
        wrap=("note",),
    )
    blank = [""] * (6 if zk else 5)
    for r in desc.rows:
        table.add_row(
            r.topic,
            str(r.partition),
            _s(r.owner),
            *([_s(r.zk_offset)] if zk else []),
            _s(r.kafka_offset),
            _s(r.log_start),
            _s(r.log_end),
            _s(r.lag),
            r.note or "",
        )
    for topic, lag in desc.topic_lag().items():
        table.add_row(topic, "all", *blank[1:], _s(lag), "topic total", style="bold" if colour else None)
    table.add_row("(group)", *blank, _s(desc.total_lag), "group total", style="bold" if colour else None)
    console.print(table)
    if desc.members:
        members = _table(
            colour,
            ["member", "subscription", "pattern", "registered"],
            set(),
            drop=("registered", "pattern"),
            wrap=("subscription",),
        )
        for m in desc.members:
            subs = ", ".join(f"{t}:{n}" for t, n in sorted(m.subscription.items()))
            members.add_row(m.id, subs, m.pattern, _time(m.timestamp))
        console.print(members)
    for note in desc.notes:
        console.print(f"note: {note}", style="yellow" if colour else None, markup=False)


def _time(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def render_plan(group: str, plan: RebalancePlan, out: TextIO, colour: bool, as_json: bool) -> None:
    keys = sorted(set(plan.current) | set(plan.proposed), key=lambda k: (k[0], k[1]))
    moved = {(m.topic, m.partition) for m in plan.moves}
    if as_json:
        for key in keys:
            new = plan.proposed.get(key)
            _emit(
                out,
                {
                    "type": "assignment",
                    "group": group,
                    "topic": key[0],
                    **partition_fields(key[1]),
                    "currentOwner": plan.current.get(key),
                    "proposedOwner": None if new is None else str(new),
                    "moves": key in moved,
                },
            )
        _emit(
            out,
            {
                "type": "plan",
                "group": group,
                "strategy": plan.strategy,
                "partitions": len(keys),
                "moves": len(plan.moves),
                "unassigned": [f"{t}-{p}" for t, p in plan.unassigned],
                "idleThreads": [str(t) for t in plan.idle_threads],
                "idleConsumers": plan.idle_consumers,
                "warnings": plan.warnings,
                **(
                    {"implementation": plan.implementation, "reasons": plan.reasons}
                    if plan.implementation
                    else {}
                ),
            },
        )
        _emit(out, {"type": "summary", "groups": 1, "partitions": len(keys), "moves": len(plan.moves)})
        return
    console = _console(out, colour)
    table = _table(
        colour,
        ["topic", "partition", "current owner", "proposed owner", "moves"],
        {"partition"},
        drop=("current owner",),
    )
    for key in keys:
        new = plan.proposed.get(key)
        table.add_row(
            key[0],
            str(key[1]),
            _s(plan.current.get(key)),
            _s(None if new is None else str(new)),
            "yes" if key in moved else "",
            style=("yellow" if key in moved and colour else None),
        )
    console.print(table)
    console.print(
        f"{len(plan.moves)} of {plural(len(keys), 'partition')} "
        f"{'moves' if len(plan.moves) == 1 else 'move'} ({plan.strategy} assignor)",
        markup=False,
    )
    for reason in plan.reasons:
        console.print(reason, markup=False)
    if plan.unassigned:
        console.print("unassigned: " + ", ".join(f"{t}-{p}" for t, p in plan.unassigned), markup=False)
    if plan.idle_consumers:
        console.print("idle consumers: " + ", ".join(plan.idle_consumers), markup=False)
    if plan.idle_threads:
        console.print("idle threads: " + ", ".join(str(t) for t in plan.idle_threads), markup=False)
    for w in plan.warnings:
        console.print(f"warning: {w}", markup=False)
