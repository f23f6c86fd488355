"""The small files that say which KRaft node a log dir belongs to: `meta.properties` (v0: broker.id;
v1: node.id, cluster.id, directory.id) and `__cluster_metadata-0/quorum-state` (QuorumStateData as
JSON, data_version 0 and 1). Read with format/checkpoints.py; what cannot be read is a Finding."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from kafka_tools.errors import os_reason
from kafka_tools.format.checkpoints import CheckpointError, meta_node_id, read_properties, read_quorum_state
from kafka_tools.log.checks.findings import Finding, Severity

T = TypeVar("T")

META_PROPERTIES = "meta.properties"
METADATA_PARTITION = "__cluster_metadata-0"
QUORUM_STATE_VERSIONS = (0, 1)


@dataclass(slots=True)
class MetaProperties:
    version: int
    node_id: int | None  # node.id (v1) or broker.id (v0)
    cluster_id: str | None
    directory_id: str | None


@dataclass(slots=True)
class QuorumState:
    data_version: int
    leader_id: int
    leader_epoch: int
    voted_id: int
    voted_directory_id: str | None
    current_voters: list[int] | None  # data_version 0 only; version 1 keeps the voters in the log
    cluster_id: str | None
    applied_offset: int | None


@dataclass(slots=True)
class NodeFiles:
    meta: MetaProperties | None = None
    quorum: QuorumState | None = None
    findings: list[Finding] = field(default_factory=list)


def _int(value: object) -> int | None:
    try:
        return int(str(value))
    except ValueError:
        return None


def _num(state: dict, key: str) -> int:
    value = _int(state.get(key, -1))
    return -1 if value is None else value


def _read(path: Path, reader: Callable[[Path], T], malformed: str, findings: list[Finding]) -> T | None:
    """`reader(path)`, or None with a finding: `malformed` (with its line) or `unreadable-file`."""
    try:
        return reader(path)
    except CheckpointError as exc:
        findings.append(
            Finding(
                file=str(path), kind=malformed, severity=Severity.ERROR, message=f"line {exc.line}: {exc}"
            )
        )
    except OSError as exc:
        findings.append(
            Finding(file=str(path), kind="unreadable-file", severity=Severity.ERROR, message=os_reason(exc))
        )
    return None


def read_meta_properties(path: Path, findings: list[Finding]) -> MetaProperties | None:
    props = _read(path, read_properties, "malformed-meta-properties", findings)
    if props is None:
        return None
    version = _int(props.get("version", "0"))
    if version not in (0, 1):
        findings.append(
            Finding(
                file=str(path),
                kind="unknown-version",
                severity=Severity.ERROR,
                message=f"meta.properties version {props.get('version')}",
            )
        )
    raw_id = meta_node_id(props)
    node_id = _int(raw_id) if raw_id is not None else None
    if raw_id is not None and node_id is None:
        findings.append(
            Finding(
                file=str(path),
                kind="malformed-meta-properties",
                severity=Severity.ERROR,
                message=f"node id {raw_id!r}",
            )
        )
    return MetaProperties(version or 0, node_id, props.get("cluster.id"), props.get("directory.id"))


def read_quorum(path: Path, findings: list[Finding]) -> QuorumState | None:
    state = _read(path, read_quorum_state, "malformed-quorum-state", findings)
    if state is None:
        return None
    version = state.get("data_version")
    if version not in QUORUM_STATE_VERSIONS:
        findings.append(
            Finding(
                file=str(path),
                kind="unknown-version",
                severity=Severity.ERROR,
                message=f"quorum-state data_version {version!r} is not one ktool knows "
                f"{QUORUM_STATE_VERSIONS}",
            )
        )
        return None
    voters = state.get("currentVoters")
    return QuorumState(
        data_version=version,
        leader_id=_num(state, "leaderId"),
        leader_epoch=_num(state, "leaderEpoch"),
        voted_id=_num(state, "votedId"),
        voted_directory_id=state.get("votedDirectoryId"),
        current_voters=[v.get("voterId") for v in voters if isinstance(v, dict)]
        if isinstance(voters, list)
        else None,
        cluster_id=state.get("clusterId") or None,
        applied_offset=state.get("appliedOffset"),
    )


def read_node_files(log_dir: Path) -> NodeFiles:
    """meta.properties and quorum-state of a log dir, each when present."""
    out = NodeFiles()
    meta = log_dir / META_PROPERTIES
    if meta.exists():
        out.meta = read_meta_properties(meta, out.findings)
    quorum = log_dir / METADATA_PARTITION / "quorum-state"
    if quorum.exists():
        out.quorum = read_quorum(quorum, out.findings)
    return out
