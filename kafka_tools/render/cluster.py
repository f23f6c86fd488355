"""`ktool brokers`, `ktool topics`, `ktool cluster-id` output: tables in ktool's one style
(render/tables.py) or JSON Lines with stable camelCase fields, one object per broker or partition."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TextIO

from kafka_tools.cluster.quorum import QuorumReplica, QuorumStatus
from kafka_tools.cluster.view import BrokerView, ClusterView, PartitionView
from kafka_tools.render.json_lines import dumps as json_line
from kafka_tools.render.tables import TextTable, make_console
from kafka_tools.zk.layout import (
    LAYOUT_07,
    Broker,
    Controller,
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


class TableWriter:
    """Tables in ktool's one style (render/tables.py) and plain lines."""

    _STATUS_STYLE = {
        "offline": "bold red",
        "under-min-isr": "red",
        "under-replicated": "yellow",
        "no state": "yellow",
    }

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
            worst = row[-1].split(",")[0] if status else ""
            table.add_row(*row, style=self._STATUS_STYLE.get(worst) if status else None)
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


_TOPIC_HEADERS = (
    "topic",
    "partition",
    "leader",
    "replicas",
    "isr",
    "elr",
    "min isr",
    "leader epoch",
    "status",
)


def _status(p: PartitionView) -> str:
    if p.extra.get("noState"):
        return "no state"
    return ",".join(p.statuses)


def render_topics_text(partitions: Sequence[PartitionView], out: TextIO, colour: bool) -> None:
    """One row per partition, whatever the source (cluster/view.py); a partition under reassignment
    shows the replicas being added (+) and removed (-) after its replicas."""
    sized = any(p.sizes is not None for p in partitions)
    rows = []
    for p in partitions:
        replicas = _cell(p.replicas)
        if p.adding or p.removing:
            replicas += "".join(f" +{b}" for b in p.adding) + "".join(f" -{b}" for b in p.removing)
        rows.append(
            (
                p.topic,
                str(p.partition),
                _cell(p.leader),
                replicas,
                _cell(p.isr),
                _cell(p.elr),
                _cell(p.min_isr),
                _cell(p.leader_epoch),
                *((_size_cell(p),) if sized else ()),
                _status(p),
            )
        )
    writer = TableWriter(out, colour)
    if rows:
        headers = _TOPIC_HEADERS[:-1] + ("size",) + _TOPIC_HEADERS[-1:] if sized else _TOPIC_HEADERS
        writer.table(
            headers,
            rows,
            frozenset({"partition", "leader", "min isr", "leader epoch", "size"}),
            status=True,
            drop=("leader epoch", "min isr", "elr"),
        )
    else:
        writer.line("no partitions")


def _size_cell(p: PartitionView) -> str:
    """The leader's replica's size in bytes (each replica's: --json `sizes`)."""
    if not p.sizes or p.leader not in p.sizes:
        return NONE
    return str(p.sizes[p.leader])


_VIEW_BROKER_HEADERS = ("id", "host", "port", "rack", "state", "endpoints")


def render_cluster_text(cluster: ClusterView, out: TextIO, colour: bool) -> None:
    """Brokers read from a live broker or a metadata log: the same columns from both."""
    writer = TableWriter(out, colour)
    rows = [
        (str(b.id), _cell(b.host), _cell(b.port), _cell(b.rack), _cell(b.state), _cell(b.endpoints))
        for b in cluster.brokers
    ]
    if rows:
        writer.table(
            _VIEW_BROKER_HEADERS, rows, right=frozenset({"id", "port"}), drop=("endpoints", "rack", "state")
        )
    else:
        writer.line(f"no broker ({cluster.source})")
    writer.line(f"controller: {_cell(cluster.controller)}")
    writer.line(cluster_id_line(cluster.cluster_id) if cluster.cluster_id else "cluster id: unknown")


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


def partition_json(p: PartitionView) -> dict:
    """The one `partition` shape of `topics` from every source (render/contract.py TOPIC_PARTITION)."""
    obj = {
        "type": "partition",
        "topic": p.topic,
        "partition": p.partition,
        "leader": p.leader,
        "replicas": list(p.replicas),
        "isr": p.isr,
        "elr": p.elr,
        "lastKnownElr": p.last_known_elr,
        "addingReplicas": list(p.adding),
        "removingReplicas": list(p.removing),
        "leaderEpoch": p.leader_epoch,
        "minIsr": p.min_isr,
        "underReplicated": p.under_replicated,
        "underMinIsr": p.under_min_isr,
        "offline": p.unavailable,
        "reassigning": p.reassigning,
        "statuses": p.statuses,
    }
    obj.update((k, v) for k, v in p.extra.items() if k != "noState")
    if p.sizes is not None:
        obj["sizes"] = {str(broker): size for broker, size in sorted(p.sizes.items())}
    return obj


def render_topics_json(partitions: Sequence[PartitionView], out: TextIO) -> None:
    for p in partitions:
        _emit(out, partition_json(p))


def view_broker_json(b: BrokerView) -> dict:
    return {
        "type": "broker",
        "id": b.id,
        "host": b.host,
        "port": b.port,
        "rack": b.rack,
        "state": b.state,
        "endpoints": list(b.endpoints),
    }


def render_cluster_json(cluster: ClusterView, out: TextIO) -> None:
    for b in cluster.brokers:
        _emit(out, view_broker_json(b))
    _emit(
        out,
        {
            "type": "cluster",
            "clusterId": cluster.cluster_id,
            "controller": cluster.controller,
            "brokers": len(cluster.brokers),
        },
    )


def render_cluster_id_json(cid: str, out: TextIO) -> None:
    _emit(out, {"type": "cluster", "clusterId": cid})


# --------------------------------------------------------------------------- the controller quorum


def _replica_brief(r: QuorumReplica) -> dict:
    """As MetadataQuorumCommand's CurrentVoters / CurrentObservers list a replica."""
    out: dict = {"id": r.node, "directoryId": r.directory_id}
    if r.endpoints:
        out["endpoints"] = list(r.endpoints)
    return out


def render_quorum_text(q: QuorumStatus, out: TextIO, colour: bool) -> None:
    """kafka-metadata-quorum `describe --status`, then its `--replication` table."""
    writer = TableWriter(out, colour)
    voters = [r for r in q.replicas if r.status != "Observer"]
    observers = [r for r in q.replicas if r.status == "Observer"]
    for name, value in (
        ("cluster id", _cell(q.cluster_id)),
        ("leader", q.leader),
        ("leader epoch", q.leader_epoch),
        ("high watermark", q.high_watermark),
        ("max follower lag", q.max_follower_lag),
        ("max follower lag ms", q.max_follower_lag_ms),
        ("voters", ", ".join(str(r.node) for r in voters) or NONE),
        ("observers", ", ".join(str(r.node) for r in observers) or NONE),
    ):
        writer.line(f"{name}: {value}")
    rows = [
        (
            str(r.node),
            _cell(r.directory_id),
            str(r.log_end_offset),
            str(r.lag),
            str(r.last_fetch_ms),
            str(r.last_caught_up_ms),
            r.status,
        )
        for r in q.replicas
    ]
    headers = ("node", "directory", "log end", "lag", "last fetch ms", "last caught up ms", "status")
    writer.table(
        headers,
        rows,
        right=frozenset({"node", "log end", "lag", "last fetch ms", "last caught up ms"}),
        drop=("directory", "last fetch ms", "last caught up ms"),
    )


def render_quorum_json(q: QuorumStatus, out: TextIO) -> None:
    _emit(
        out,
        {
            "type": "quorum",
            "clusterId": q.cluster_id,
            "leaderId": q.leader,
            "leaderEpoch": q.leader_epoch,
            "highWatermark": q.high_watermark,
            "maxFollowerLag": q.max_follower_lag,
            "maxFollowerLagTimeMs": q.max_follower_lag_ms,
            "voters": [_replica_brief(r) for r in q.replicas if r.status != "Observer"],
            "observers": [_replica_brief(r) for r in q.replicas if r.status == "Observer"],
        },
    )
    for r in q.replicas:
        _emit(
            out,
            {
                "type": "replica",
                "nodeId": r.node,
                "directoryId": r.directory_id,
                "logEndOffset": r.log_end_offset,
                "lag": r.lag,
                "lastFetchTimestamp": r.last_fetch_ms,
                "lastCaughtUpTimestamp": r.last_caught_up_ms,
                "status": r.status,
            },
        )
