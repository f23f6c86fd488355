"""Offset moves (migrate-offsets, offsets import) as a table or JSON Lines: one row a partition with
both stores before and after."""

from __future__ import annotations

import sys

from kafka_tools.compact_json import dumps
from kafka_tools.consumers.migration import (
    UNCHANGED,
    VERIFIED,
    WRITE,
    PartitionMove,
)
from kafka_tools.render.tables import TextTable, make_console


def _s(v: object) -> str:
    return "-" if v is None else str(v)


def render_moves(moves: list[PartitionMove], colour: bool, as_json: bool, title: str) -> None:
    if as_json:
        for m in moves:
            sys.stdout.write(
                dumps(
                    {
                        "type": "partition",
                        "group": m.group,
                        "topic": m.topic,
                        "partition": m.partition,
                        "zookeeperOffset": m.zookeeper,
                        "kafkaOffset": m.kafka,
                        "offset": m.offset,
                        "zookeeperAfter": m.zookeeper_after,
                        "kafkaAfter": m.kafka_after,
                        "logStartOffset": m.log_start,
                        "logEndOffset": m.log_end,
                        "status": m.status,
                        "reason": m.reason or None,
                    },
                )
                + "\n"
            )
        statuses: dict[str, int] = {}
        for m in moves:
            statuses[m.status] = statuses.get(m.status, 0) + 1
        summary = {"type": "summary", "stage": title, "partitions": len(moves), "statuses": statuses}
        sys.stdout.write(dumps(summary) + "\n")
        return
    right = ["partition", "zookeeper", "kafka before", "offset", "zookeeper after", "kafka after"]
    table = TextTable(
        [
            "group",
            "topic",
            "partition",
            "zookeeper",
            "kafka before",
            "offset",
            "zookeeper after",
            "kafka after",
            "status",
            "reason",
        ],
        colour,
        title,
        right=right,
        drop=("zookeeper after", "kafka after", "kafka before", "zookeeper"),
        wrap=("reason",),
    )
    styles = {VERIFIED: "green", UNCHANGED: "dim", WRITE: "cyan"}
    for m in moves:
        style = styles.get(m.status, "bold red") if colour else None
        table.add_row(
            m.group,
            m.topic,
            str(m.partition),
            _s(m.zookeeper),
            _s(m.kafka),
            _s(m.offset),
            _s(m.zookeeper_after),
            _s(m.kafka_after),
            m.status,
            m.reason,
            style=style,
        )
    make_console(sys.stdout, colour).print(table)
