"""`ktool brokers`, `ktool topics`, `ktool cluster-id` output: tables in ktool's one style
(render/tables.py) or JSON Lines with stable camelCase fields, one object per broker or partition."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TextIO

from kafka_tools.render.json_lines import dumps as json_line
from kafka_tools.render.tables import TextTable, make_console
from kafka_tools.zk.layout import (
    LAYOUT_07,
    Broker,
    BrokerPartition,
    Controller,
    Topic,
    TopicPartition,
    broker_version_hint,
    librdkafka_compat,
)
from kafka_tools.zk.reader import Cluster

NONE = "-"


def human_time(ms: int | None) -> str:
    """Milliseconds since the epoch as UTC wall time; '-' when unknown."""
    if ms is None:
        return NONE
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, OSError, ValueError):
        return str(ms)


def iso_time(ms: int | None) -> str | None:
    if ms is None:
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
    except (OverflowError, OSError, ValueError):
        return None


def _cell(value: object) -> str:
    if value is None or value == "":
        return NONE
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or NONE
    return str(value)


def controller_line(ctrl: Controller | None) -> str:
    if ctrl is None:
        return "controller: none elected (no /controller)"
    details = []
    if ctrl.epoch is not None:
        details.append(f"epoch {ctrl.epoch}")
    if ctrl.timestamp is not None:
        details.append(f"since {human_time(ctrl.timestamp)}")
    return f"controller: broker {ctrl.broker_id}" + (f" ({', '.join(details)})" if details else "")


def cluster_id_line(cid: str | None) -> str:
    return f"cluster id: {cid}" if cid else "cluster id: none (clusters before 0.10.1 have no /cluster/id)"


def version_line(brokers: Sequence[Broker]) -> str | None:
    hint = broker_version_hint(brokers)
    if hint is None:
        return None
    compat = librdkafka_compat(hint)
    if compat is None:
        note = "librdkafka cannot talk to 0.7 brokers"
    elif compat:
        note = "librdkafka needs " + " ".join(f"{k}={v}" for k, v in compat.items())
    else:
        note = "ApiVersions works"
    return f"oldest broker: Kafka {hint} ({note})"


def _partition_status(p: TopicPartition) -> str:
    if isinstance(p.partition, BrokerPartition):
        return ""
    if p.state is None:
        return "no state"
    if p.offline:
        return "offline"
    if p.under_replicated:
        return "under-replicated"
    return ""


class TableWriter:
    """Tables in ktool's one style (render/tables.py) and plain lines."""

    _STATUS_STYLE = {"offline": "bold red", "under-replicated": "yellow", "no state": "yellow"}

    def __init__(self, out: TextIO, colour: bool) -> None:
        self.out = out
        self.colour = colour
        self._console = make_console(out, colour)

    def table(
        self,
        headers: Sequence[str],
        rows: Sequence[Sequence[str]],
        right: frozenset[str],
        status: bool = False,
        drop: Sequence[str] = (),
    ) -> None:
        """``right``: right-aligned columns; ``status``: the last column colours its row; ``drop``: the
        lesser columns, left out first when the terminal is too narrow."""
        table = TextTable(headers, self.colour, right=tuple(right), drop=drop)
        for row in rows:
            table.add_row(*row, style=self._STATUS_STYLE.get(row[-1]) if status else None)
        self._console.print(table)

    def line(self, text: str) -> None:
        if self.colour:
            self._console.print(text, style="bold", markup=False)
        else:
            self.out.write(text + "\n")


# --------------------------------------------------------------------------- text


_BROKER_HEADERS = (
    "id",
    "host",
    "port",
    "endpoints",
    "rack",
    "jmx port",
    "version",
    "kafka",
    "registered",
)


def render_brokers_text(cluster: Cluster, out: TextIO, colour: bool) -> None:
    writer = TableWriter(out, colour)
    rows = [
        (
            str(b.id),
            _cell(b.host),
            _cell(b.port),
            _cell(b.endpoints),
            _cell(b.rack),
            _cell(b.jmx_port),
            LAYOUT_07 if b.layout == LAYOUT_07 else _cell(b.version),
            _cell(b.version_hint),
            human_time(b.timestamp),
        )
        for b in cluster.brokers
    ]
    if rows:
        writer.table(
            _BROKER_HEADERS,
            rows,
            right=frozenset({"id", "port", "jmx port", "version"}),
            drop=("jmx port", "rack", "version", "registered", "endpoints"),
        )
    else:
        writer.line("no broker is registered (/brokers/ids is empty)")
    writer.line(controller_line(cluster.controller))
    writer.line(cluster_id_line(cluster.cluster_id))
    versions = version_line(cluster.brokers)
    if versions:
        writer.line(versions)


_TOPIC_HEADERS = ("topic", "partition", "leader", "replicas", "isr", "leader epoch", "status")


def render_topics_text(topics: Sequence[Topic], out: TextIO, colour: bool) -> None:
    rows = []
    for topic in topics:
        for p in topic.partitions:
            state = p.state
            rows.append(
                (
                    topic.name,
                    str(p.partition),
                    _cell(p.leader),
                    _cell(p.replicas),
                    _cell(state.isr if state else None),
                    _cell(state.leader_epoch if state else None),
                    _partition_status(p),
                )
            )
    writer = TableWriter(out, colour)
    if rows:
        writer.table(
            _TOPIC_HEADERS,
            rows,
            frozenset({"partition", "leader", "leader epoch"}),
            status=True,
            drop=("leader epoch",),
        )
    else:
        writer.line("no partitions")


# --------------------------------------------------------------------------- JSON Lines


def _emit(out: TextIO, obj: dict) -> None:
    out.write(json_line(obj) + "\n")


def broker_json(b: Broker) -> dict:
    return {
        "type": "broker",
        "id": b.id,
        "host": b.host,
        "port": b.port,
        "endpoints": list(b.endpoints),
        "rack": b.rack,
        "jmxPort": b.jmx_port,
        "version": b.version,
        "timestamp": b.timestamp,
        "registeredAt": iso_time(b.timestamp),
        "layout": b.layout,
        "kafkaVersionHint": b.version_hint,
    }


def cluster_json(cluster: Cluster) -> dict:
    ctrl = cluster.controller
    hint = broker_version_hint(cluster.brokers)
    return {
        "type": "cluster",
        "clusterId": cluster.cluster_id,
        "controller": None if ctrl is None else ctrl.broker_id,
        "controllerEpoch": None if ctrl is None else ctrl.epoch,
        "controllerSince": None if ctrl is None else iso_time(ctrl.timestamp),
        "brokers": len(cluster.brokers),
        "kafkaVersionHint": hint,
        "librdkafka": librdkafka_compat(hint) if hint else None,
    }


def render_brokers_json(cluster: Cluster, out: TextIO) -> None:
    for b in cluster.brokers:
        _emit(out, broker_json(b))
    _emit(out, cluster_json(cluster))


def partition_json(topic: Topic, p: TopicPartition) -> dict:
    state = p.state
    old = isinstance(p.partition, BrokerPartition)
    return {
        "type": "partition",
        "topic": topic.name,
        "partition": p.partition.partition if old else p.partition,  # 0.7: numbered per broker
        "broker": p.partition.broker if old else None,
        "leader": p.leader,
        "replicas": list(p.replicas),
        "isr": list(state.isr) if state else None,
        "leaderEpoch": state.leader_epoch if state else None,
        "controllerEpoch": state.controller_epoch if state else None,
        "underReplicated": p.under_replicated,
        "offline": p.offline,
        "layout": topic.layout,
    }


def render_topics_json(topics: Sequence[Topic], out: TextIO) -> None:
    for topic in topics:
        for p in topic.partitions:
            _emit(out, partition_json(topic, p))


def render_cluster_id_json(cid: str, out: TextIO) -> None:
    _emit(out, {"type": "cluster", "clusterId": cid})
