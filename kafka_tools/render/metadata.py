"""`ktool metadata …` output: the KRaft image as tables in ktool's one style (render/tables.py) or as
JSON Lines with stable camelCase fields, one object per broker, partition, config, … Config values
whose names say they are secret (passwords, JAAS) are never printed, nor SCRAM salts and keys (the
image does not even keep them)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from kafka_tools.format.plural import plural
from kafka_tools.log.checks.findings import Finding
from kafka_tools.metadata.delta_base import Event
from kafka_tools.metadata.image import (
    ACL_OPERATIONS,
    ACL_PATTERN_TYPES,
    ACL_PERMISSIONS,
    ACL_RESOURCE_TYPES,
    CONFIG_RESOURCE_TYPES,
    SCRAM_MECHANISMS,
    SECURITY_PROTOCOLS,
    Broker,
    Endpoint,
    Image,
    code_name,
)
from kafka_tools.metadata.load import MetadataLoad
from kafka_tools.render.json_lines import dumps as json_line
from kafka_tools.render.tables import TextTable, make_console

NONE = "-"
REDACTED = "<redacted>"
_SECRET_WORDS = ("password", "secret", "jaas", "credential")


def config_value(name: str, value: str) -> str:
    return REDACTED if any(w in name.lower() for w in _SECRET_WORDS) else value


def _cell(value: object) -> str:
    if value is None or value == "":
        return NONE
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value) or NONE
    return str(value)


def _endpoint(e: Endpoint) -> str:
    proto = code_name(SECURITY_PROTOCOLS, e.security_protocol) if e.security_protocol is not None else ""
    return f"{e.name}://{e.host}:{e.port}" + (f" ({proto})" if proto and proto != e.name else "")


def _endpoint_json(e: Endpoint) -> dict[str, Any]:
    return {"name": e.name, "host": e.host, "port": e.port, "securityProtocol": e.security_protocol}


def broker_state(b: Broker) -> str:
    if b.in_controlled_shutdown:
        return "controlled-shutdown"
    return "fenced" if b.fenced else "unfenced"


# --------------------------------------------------------------------------- JSON


def image_header(load: MetadataLoad) -> dict[str, Any]:
    img, r, meta, quorum = load.image, load.replayer, load.node.meta, load.node.quorum
    return {
        "type": "image",
        "logDir": str(load.log_dir),
        "clusterId": meta.cluster_id if meta else None,
        "nodeId": meta.node_id if meta else None,
        "directoryId": meta.directory_id if meta else None,
        "offset": img.offset,
        "snapshot": load.snapshot.path.name if load.snapshot else None,
        "logStart": load.log_start,
        "logEnd": load.log_end,
        "recordsRead": load.records_read,
        "recordsApplied": sum(r.applied.values()),
        "recordsUnknown": sum(r.unknown.values()),
        "recordsAborted": r.aborted,
        "openTransactionAt": r.transaction_start,
        "recordTypes": dict(sorted(r.applied.items())),
        "metadataVersion": img.metadata_version,
        "kraftVersion": img.kraft_version,
        "zkMigrationState": img.zk_migration_state,
        "raftLeader": img.raft_leader,
        "quorumState": None
        if quorum is None
        else {
            "dataVersion": quorum.data_version,
            "leaderId": quorum.leader_id,
            "leaderEpoch": quorum.leader_epoch,
            "votedId": quorum.voted_id,
            "votedDirectoryId": quorum.voted_directory_id,
            "currentVoters": quorum.current_voters,
        },
        "bootstrap": None
        if load.bootstrap is None
        else {"metadataVersion": load.bootstrap.metadata_version, "records": load.bootstrap.records},
    }


def broker_objects(img: Image) -> Iterator[dict[str, Any]]:
    for b in sorted(img.brokers.values(), key=lambda b: b.broker_id):
        yield {
            "type": "broker",
            "id": b.broker_id,
            "epoch": b.epoch,
            "incarnationId": b.incarnation_id,
            "endpoints": [_endpoint_json(e) for e in b.endpoints],
            "rack": b.rack,
            "fenced": b.fenced,
            "inControlledShutdown": b.in_controlled_shutdown,
            "logDirs": b.log_dirs,
            "features": {k: {"min": lo, "max": hi} for k, (lo, hi) in b.features.items()},
        }


def partition_objects(img: Image) -> Iterator[dict[str, Any]]:
    for t in sorted(img.topics.values(), key=lambda t: t.name):
        for p in sorted(t.partitions.values(), key=lambda p: p.partition_id):
            yield {
                "type": "partition",
                "topic": t.name,
                "topicId": t.topic_id,
                "partition": p.partition_id,
                "leader": p.leader,
                "leaderEpoch": p.leader_epoch,
                "partitionEpoch": p.partition_epoch,
                "replicas": p.replicas,
                "isr": p.isr,
                "elr": p.elr,
                "lastKnownElr": p.last_known_elr,
                "addingReplicas": p.adding_replicas,
                "removingReplicas": p.removing_replicas,
                "directories": p.directories,
                "leaderRecoveryState": p.leader_recovery_state,
            }


def image_objects(load: MetadataLoad) -> Iterator[dict[str, Any]]:
    """Everything `metadata show --json` prints, in order (findings come separately)."""
    img = load.image
    yield image_header(load)
    for name, level in sorted(img.features.items()):
        yield {"type": "feature", "name": name, "level": level}
    yield from broker_objects(img)
    for c in sorted(img.controllers.values(), key=lambda c: c.controller_id):
        yield {
            "type": "controller",
            "id": c.controller_id,
            "incarnationId": c.incarnation_id,
            "endpoints": [_endpoint_json(e) for e in c.endpoints],
            "zkMigrationReady": c.zk_migration_ready,
        }
    for v in img.voters or ():
        yield {
            "type": "voter",
            "id": v.voter_id,
            "directoryId": v.directory_id,
            "endpoints": [_endpoint_json(e) for e in v.endpoints],
            "kraftVersion": None if v.kraft_version_range is None else list(v.kraft_version_range),
        }
    for t in sorted(img.topics.values(), key=lambda t: t.name):
        yield {"type": "topic", "name": t.name, "topicId": t.topic_id, "partitions": len(t.partitions)}
    yield from partition_objects(img)
    for (rtype, rname), settings in sorted(img.configs.items()):
        for name, value in sorted(settings.items()):
            yield {
                "type": "config",
                "resourceType": code_name(CONFIG_RESOURCE_TYPES, rtype),
                "resourceName": rname,
                "name": name,
                "value": config_value(name, value),
            }
    for a in sorted(img.acls.values(), key=lambda a: a.acl_id):
        yield {
            "type": "acl",
            "id": a.acl_id,
            "resourceType": code_name(ACL_RESOURCE_TYPES, a.resource_type),
            "resourceName": a.resource_name,
            "patternType": code_name(ACL_PATTERN_TYPES, a.pattern_type),
            "principal": a.principal,
            "host": a.host,
            "operation": code_name(ACL_OPERATIONS, a.operation),
            "permission": code_name(ACL_PERMISSIONS, a.permission_type),
        }
    for entity, values in sorted(img.client_quotas.items(), key=lambda kv: repr(kv[0])):
        for key, value in sorted(values.items()):
            yield {"type": "quota", "entity": {t: n for t, n in entity}, "key": key, "value": value}
    if img.producer_ids is not None:
        p = img.producer_ids
        yield {
            "type": "producerIds",
            "brokerId": p.broker_id,
            "brokerEpoch": p.broker_epoch,
            "nextProducerId": p.next_producer_id,
        }
    for tok in sorted(img.delegation_tokens.values(), key=lambda t: t.token_id):
        yield {
            "type": "delegationToken",
            "tokenId": tok.token_id,
            "owner": tok.owner,
            "requester": tok.requester,
            "renewers": tok.renewers,
            "issueTimestamp": tok.issue_timestamp,
            "maxTimestamp": tok.max_timestamp,
            "expirationTimestamp": tok.expiration_timestamp,
        }
    for (user, mechanism), iterations in sorted(img.scram_users.items()):
        yield {
            "type": "scramUser",
            "name": user,
            "mechanism": code_name(SCRAM_MECHANISMS, mechanism),
            "iterations": iterations,
        }


def finding_object(f: Finding) -> dict[str, Any]:
    return {"type": "finding", **f.fields()}


def event_object(e: Event) -> dict[str, Any]:
    return {
        "type": "event",
        "offset": e.offset,
        "kind": e.kind,
        "subject": e.subject,
        "detail": e.detail,
        **e.data,
    }


def write_json(out: TextIO, objects: Iterable[dict[str, Any]]) -> None:
    for obj in objects:
        out.write(json_line(obj) + "\n")


# --------------------------------------------------------------------------- text


class MetadataText:
    """Tables in ktool's one style, one section per part of the image."""

    def __init__(self, out: TextIO, colour: bool) -> None:
        self.out = out
        self.colour = colour
        self.console = make_console(out, colour)

    def line(self, text: str) -> None:
        if self.colour:
            self.console.print(text, markup=False, highlight=False)
        else:
            self.out.write(text + "\n")

    def table(
        self, title: str, headers: list[str], rows: list[list[str]], right=(), drop=(), wrap=()
    ) -> None:
        if not rows:
            return
        self.line("")
        table = TextTable(headers, self.colour, title=None, right=right, drop=drop, wrap=wrap)
        for row in rows:
            table.add_row(*row)
        self.line(f"{title} ({len(rows)})")
        self.console.print(table)

    def header(self, load: MetadataLoad) -> None:
        h = image_header(load)
        img = load.image
        self.line(f"log dir: {h['logDir']}")
        node = [f"node {h['nodeId']}"] if h["nodeId"] is not None else []
        if h["directoryId"]:
            node.append(f"directory {h['directoryId']}")
        self.line(f"cluster id: {h['clusterId'] or NONE}" + (f" ({', '.join(node)})" if node else ""))
        source = f"snapshot {h['snapshot']} + " if h["snapshot"] else ""
        log = f"log {h['logStart']}..{h['logEnd'] - 1}" if h["logStart"] is not None else "no log records"
        self.line(
            f"image at offset {img.offset} ({source}{log}): {plural(h['recordsApplied'], 'record')} applied, "
            f"{h['recordsUnknown']} unknown, {h['recordsAborted']} aborted"
            + (
                f", transaction open since offset {h['openTransactionAt']} (not applied)"
                if h["openTransactionAt"] is not None
                else ""
            )
        )
        features = ", ".join(f"{k}={v}" for k, v in sorted(img.features.items())) or NONE
        self.line(
            f"features: {features}"
            + (f"; kraft.version={img.kraft_version}" if img.kraft_version is not None else "")
        )
        q = load.node.quorum
        if q is not None:
            voters = f", voters {q.current_voters}" if q.current_voters is not None else ""
            self.line(
                f"quorum-state: leader {q.leader_id}, epoch {q.leader_epoch}, voted {q.voted_id}{voters} "
                f"(data_version {q.data_version})"
            )
        if load.bootstrap is not None:
            self.line(
                f"bootstrap.checkpoint: metadata.version {load.bootstrap.metadata_version}, "
                f"{plural(load.bootstrap.records, 'record')}"
            )

    def brokers(self, img: Image) -> None:
        rows = [
            [
                str(b.broker_id),
                str(b.epoch),
                b.incarnation_id,
                " ".join(_endpoint(e) for e in b.endpoints) or NONE,
                _cell(b.rack),
                broker_state(b),
                _cell(b.log_dirs),
            ]
            for b in sorted(img.brokers.values(), key=lambda b: b.broker_id)
        ]
        self.table(
            "brokers",
            ["id", "epoch", "incarnation", "endpoints", "rack", "state", "log dirs"],
            rows,
            right=("id", "epoch"),
            drop=("log dirs", "incarnation", "rack"),
        )

    def quorum(self, img: Image) -> None:
        rows = [
            [str(c.controller_id), c.incarnation_id, " ".join(_endpoint(e) for e in c.endpoints) or NONE]
            for c in sorted(img.controllers.values(), key=lambda c: c.controller_id)
        ]
        self.table(
            "controllers", ["id", "incarnation", "endpoints"], rows, right=("id",), drop=("incarnation",)
        )
        rows = [
            [str(v.voter_id), _cell(v.directory_id), " ".join(_endpoint(e) for e in v.endpoints) or NONE]
            for v in img.voters or ()
        ]
        self.table("voters", ["id", "directory", "endpoints"], rows, right=("id",))

    def partitions(self, img: Image) -> None:
        rows = [
            [
                o["topic"],
                str(o["partition"]),
                str(o["leader"]),
                str(o["leaderEpoch"]),
                _cell(o["replicas"]),
                _cell(o["isr"]),
                _cell(o["elr"]),
                _cell(o["addingReplicas"]),
                _cell(o["removingReplicas"]),
                _cell(o["directories"]),
                o["topicId"],
            ]
            for o in partition_objects(img)
        ]
        empty = [
            [t.name, NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE, NONE, t.topic_id]
            for t in img.topics.values()
            if not t.partitions
        ]
        self.table(
            "partitions",
            [
                "topic",
                "partition",
                "leader",
                "epoch",
                "replicas",
                "isr",
                "elr",
                "adding",
                "removing",
                "directories",
                "topic id",
            ],
            rows + empty,
            right=("partition", "leader", "epoch"),
            drop=("directories", "topic id", "removing", "adding", "elr"),
        )

    def rest(self, img: Image) -> None:
        rows = [
            [f"{code_name(CONFIG_RESOURCE_TYPES, rt)} {rn or '<default>'}", k, config_value(k, v)]
            for (rt, rn), settings in sorted(img.configs.items())
            for k, v in sorted(settings.items())
        ]
        self.table("configs", ["resource", "name", "value"], rows, wrap=("value",))
        rows = [
            [
                a.principal,
                code_name(ACL_PERMISSIONS, a.permission_type),
                code_name(ACL_OPERATIONS, a.operation),
                f"{code_name(ACL_RESOURCE_TYPES, a.resource_type)}:{a.resource_name}",
                code_name(ACL_PATTERN_TYPES, a.pattern_type),
                a.host,
            ]
            for a in sorted(img.acls.values(), key=lambda a: (a.principal, a.resource_name))
        ]
        self.table("acls", ["principal", "permission", "operation", "resource", "pattern", "host"], rows)
        rows = [
            [",".join(f"{t}={n if n is not None else '<default>'}" for t, n in entity), k, str(v)]
            for entity, values in sorted(img.client_quotas.items(), key=lambda kv: repr(kv[0]))
            for k, v in sorted(values.items())
        ]
        self.table("client quotas", ["entity", "quota", "value"], rows, right=("value",))
        if img.producer_ids is not None:
            p = img.producer_ids
            self.line("")
            self.line(
                f"producer ids: next block from {p.next_producer_id} "
                f"(broker {p.broker_id}, epoch {p.broker_epoch})"
            )
        rows = [
            [
                t.token_id,
                t.owner,
                t.requester,
                _cell(t.renewers),
                str(t.expiration_timestamp),
                str(t.max_timestamp),
            ]
            for t in sorted(img.delegation_tokens.values(), key=lambda t: t.token_id)
        ]
        self.table(
            "delegation tokens", ["token id", "owner", "requester", "renewers", "expires", "max"], rows
        )
        rows = [[u, code_name(SCRAM_MECHANISMS, m), str(i)] for (u, m), i in sorted(img.scram_users.items())]
        self.table("scram users", ["user", "mechanism", "iterations"], rows, right=("iterations",))

    def show(self, load: MetadataLoad) -> None:
        self.header(load)
        self.brokers(load.image)
        self.quorum(load.image)
        self.partitions(load.image)
        self.rest(load.image)

    def events(self, events: list[Event]) -> None:
        table = TextTable(
            ["offset", "event", "subject", "change"], self.colour, right=("offset",), wrap=("change",)
        )
        for e in events:
            table.add_row(str(e.offset), e.kind, e.subject, e.detail)
        self.console.print(table)


def finding_line(f: Finding) -> str:
    where = f"position {f.position}" if f.position is not None else ""
    if f.offset is not None:
        where += f" (offset {f.offset})" if where else f"offset {f.offset}"
    return f"{f.file}: " + (f"{where}: " if where else "") + f"{f.kind}: {f.message}"
