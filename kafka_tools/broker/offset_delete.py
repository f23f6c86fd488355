"""OffsetDelete (KIP-496, Kafka 2.4+): a group's committed offsets removed, so an undo can put back "no
offset". confluent-kafka's Python binding does not expose it (librdkafka has it), so it is spoken here
on a socket (broker/wire.py): ApiVersions says whether the broker has it, FindCoordinator
finds the group's coordinator, OffsetDelete v0 asks it, with the security settings of every
`--bootstrap-server` command (SASL GSSAPI included: broker/kerberos.py).

The coordinator refuses a partition of a topic the group's live members subscribe to
(GROUP_SUBSCRIBED_TO_TOPIC): the answer is per partition, for the caller to say.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafka_tools.broker.client import BrokerConfig
from kafka_tools.broker.probe import first_server, version_at_least
from kafka_tools.broker.wire import (
    FIND_COORDINATOR,
    LOADING,
    NOT_AVAILABLE,
    NOT_COORDINATOR,
    Connection,
    Reader,
    WireError,
    api_versions,
    at_coordinator,
    pick_version,
    string,
    topic_partitions,
)
from kafka_tools.errors import InputError

if TYPE_CHECKING:
    from kafka_tools.broker.security import BrokerSecurity

_OFFSET_DELETE = 47
ERROR_NAMES = {
    3: "UNKNOWN_TOPIC_OR_PARTITION",
    29: "TOPIC_AUTHORIZATION_FAILED",
    30: "GROUP_AUTHORIZATION_FAILED",
    69: "GROUP_ID_NOT_FOUND",
    86: "GROUP_SUBSCRIBED_TO_TOPIC",
}
SUBSCRIBED = 86


@dataclass
class OffsetDeleteAnswer:
    """Per partition: 0 (deleted) or Kafka's error code; `unsupported`: why nothing could be asked."""

    errors: dict[tuple[str, int], int]
    unsupported: str | None = None


def delete_offsets(
    bootstrap: str,
    group: str,
    partitions: list[tuple[str, int]],
    timeout: float,
    security: BrokerSecurity | None = None,
) -> OffsetDeleteAnswer:
    """Ask the group's coordinator to delete the group's offsets of `partitions`."""
    deadline = time.monotonic() + timeout
    host, port = first_server(bootstrap)
    conn = Connection(host, port, timeout, security)
    try:
        return _delete(conn, group, partitions, timeout, deadline)
    except WireError as exc:
        raise InputError(f"broker {conn.where}: an answer ktool cannot read (OffsetDelete: {exc})") from None
    finally:
        conn.close()


def _delete(
    conn: Connection, group: str, partitions: list[tuple[str, int]], timeout: float, deadline: float
) -> OffsetDeleteAnswer:
    """ApiVersions, FindCoordinator, OffsetDelete: the coordinator asked again while it moves."""
    versions = api_versions(conn)
    if versions is None or _OFFSET_DELETE not in versions:
        what = "before 0.10" if versions is None else "before 2.4"
        return OffsetDeleteAnswer({}, f"broker {conn.where} runs Kafka {what}: it has no OffsetDelete (2.4+)")
    find_version = pick_version(versions, FIND_COORDINATOR, (0, 2))
    if find_version is None:
        return OffsetDeleteAnswer({}, f"broker {conn.where}: no FindCoordinator version ktool speaks")
    return at_coordinator(
        conn, group, find_version, timeout, deadline, lambda c: _ask_delete(c, group, partitions)
    )


def _ask_delete(conn: Connection, group: str, partitions: list[tuple[str, int]]) -> OffsetDeleteAnswer | None:
    """The coordinator's answer; None when it is moving (ask again after finding it again)."""
    data = conn.ask(_OFFSET_DELETE, 0, string(group) + topic_partitions(sorted(partitions)))
    if data is None:
        raise InputError(f"broker {conn.where} closed the connection on OffsetDelete")
    r = Reader(data)
    error = r.take(">h")
    r.take(">i")  # throttle
    if error in (LOADING, NOT_AVAILABLE, NOT_COORDINATOR):
        return None
    out: dict[tuple[str, int], int] = {}
    for _ in range(r.take(">i")):
        topic = r.string()
        for _ in range(r.take(">i")):
            partition, code = r.take(">ih")
            out[(topic, partition)] = code
    if error:
        out = {key: error for key in partitions}
    return OffsetDeleteAnswer(out)


def delete_group_offsets(
    config: BrokerConfig, group: str, partitions: list[tuple[str, int]]
) -> OffsetDeleteAnswer:
    """OffsetDelete through the brokers `config` names; `unsupported` says why it cannot be asked
    (brokers known to be before 2.4)."""
    where = f"broker {config.bootstrap}"
    known = config.version or config.extra.get("broker.version.fallback")
    if known and not version_at_least(known, (2, 4)):
        return OffsetDeleteAnswer({}, f"{where} runs Kafka {known}: it has no OffsetDelete (2.4+)")
    return delete_offsets(config.bootstrap, group, partitions, config.timeout, config.security)
