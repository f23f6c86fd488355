"""OffsetDelete (KIP-496, Kafka 2.4+): a group's committed offsets removed, so an undo can put back "no
offset". confluent-kafka's Python binding does not expose it (librdkafka has it), so it is spoken here
on a socket, as probe.py speaks ApiVersions: ApiVersions says whether the broker has it, FindCoordinator
finds the group's coordinator, OffsetDelete v0 asks it. Plain connections only: over TLS or SASL ktool
says it cannot, in one line, and deletes nothing.

The coordinator refuses a partition of a topic the group's live members subscribe to
(GROUP_SUBSCRIBED_TO_TOPIC): the answer is per partition, for the caller to say.
"""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

from kafka_tools.broker.client import BrokerConfig
from kafka_tools.broker.probe import first_server, version_at_least
from kafka_tools.errors import InputError, os_reason

_API_VERSIONS, _FIND_COORDINATOR, _OFFSET_DELETE = 18, 10, 47
# Kafka's error codes met here (org.apache.kafka.common.protocol.Errors)
_LOADING, _NOT_AVAILABLE, _NOT_COORDINATOR = 14, 15, 16
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


class _Connection:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.where = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise InputError(f"broker {self.where}: cannot connect ({os_reason(exc)})") from None
        self.sock.settimeout(timeout)
        self.correlation = 0

    def ask(self, key: int, version: int, body: bytes) -> bytes | None:
        """The response's body (after its correlation id), None when the broker closes the connection
        (a broker that does not know the request)."""
        self.correlation += 1
        head = struct.pack(">hhih", key, version, self.correlation, 5) + b"ktool"
        try:
            self.sock.sendall(struct.pack(">i", len(head) + len(body)) + head + body)
            size = self._exactly(4)
            if size is None:
                return None
            data = self._exactly(struct.unpack(">i", size)[0])
        except TimeoutError:
            raise InputError(f"broker {self.where}: no answer to request {key} in time") from None
        except OSError:
            return None
        return None if data is None else data[4:]

    def _exactly(self, n: int) -> bytes | None:
        data = b""
        while len(data) < n:
            chunk = self.sock.recv(n - len(data))
            if not chunk:
                return None
            data += chunk
        return data

    def close(self) -> None:
        self.sock.close()


def _string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str):
        value = struct.unpack_from(fmt, self.data, self.at)
        self.at += struct.calcsize(fmt)
        return value[0] if len(value) == 1 else value

    def string(self) -> str:
        n = self.take(">h")
        text = self.data[self.at : self.at + max(n, 0)].decode()
        self.at += max(n, 0)
        return text


def _versions(conn: _Connection) -> dict[int, tuple[int, int]] | None:
    data = conn.ask(_API_VERSIONS, 0, b"")
    if data is None:
        return None  # before 0.10: no ApiVersions
    r = _Reader(data)
    r.take(">h")
    return {key: (low, high) for key, low, high in (r.take(">hhh") for _ in range(r.take(">i")))}


def _coordinator(conn: _Connection, group: str, version: int, deadline: float) -> tuple[str, int]:
    body = _string(group) + (b"\x00" if version >= 1 else b"")
    while True:
        data = conn.ask(_FIND_COORDINATOR, version, body)
        if data is None:
            raise InputError(f"broker {conn.where} closed the connection on FindCoordinator")
        r = _Reader(data)
        if version >= 1:
            r.take(">i")  # throttle
        error = r.take(">h")
        if version >= 1:
            r.string()  # error message
        node, host, port = r.take(">i"), r.string(), r.take(">i")
        if error == 0:
            return host, port
        if error not in (_LOADING, _NOT_AVAILABLE) or time.monotonic() > deadline:
            raise InputError(
                f"broker {conn.where}: no coordinator for group {group} (error {error}, node {node})"
            )
        time.sleep(0.2)


def delete_offsets(
    bootstrap: str, group: str, partitions: list[tuple[str, int]], timeout: float
) -> OffsetDeleteAnswer:
    """Ask the group's coordinator to delete the group's offsets of `partitions`."""
    deadline = time.monotonic() + timeout
    host, port = first_server(bootstrap)
    conn = _Connection(host, port, timeout)
    try:
        return _delete(conn, group, partitions, timeout, deadline)
    except (struct.error, UnicodeDecodeError):
        raise InputError(f"broker {conn.where}: an answer ktool cannot read (OffsetDelete)") from None
    finally:
        conn.close()


def _delete(
    conn: _Connection, group: str, partitions: list[tuple[str, int]], timeout: float, deadline: float
) -> OffsetDeleteAnswer:
    """ApiVersions, FindCoordinator, OffsetDelete: the coordinator asked again while it moves."""
    versions = _versions(conn)
    if versions is None or _OFFSET_DELETE not in versions:
        what = "before 0.10" if versions is None else "before 2.4"
        return OffsetDeleteAnswer({}, f"broker {conn.where} runs Kafka {what}: it has no OffsetDelete (2.4+)")
    low, high = versions[_FIND_COORDINATOR]
    find_version = min(high, 2)
    if find_version < low:
        return OffsetDeleteAnswer({}, f"broker {conn.where}: no FindCoordinator version ktool speaks")
    while True:
        coordinator = _Connection(*_coordinator(conn, group, find_version, deadline), timeout)
        try:
            answer = _ask_delete(coordinator, group, partitions)
        finally:
            coordinator.close()
        if answer is not None:
            return answer
        if time.monotonic() > deadline:
            raise InputError(f"broker {conn.where}: the coordinator of group {group} kept moving")
        time.sleep(0.2)


def _ask_delete(
    conn: _Connection, group: str, partitions: list[tuple[str, int]]
) -> OffsetDeleteAnswer | None:
    """The coordinator's answer; None when it is moving (ask again after finding it again)."""
    topics: dict[str, list[int]] = {}
    for topic, partition in sorted(partitions):
        topics.setdefault(topic, []).append(partition)
    body = _string(group) + struct.pack(">i", len(topics))
    for topic, numbers in topics.items():
        body += (
            _string(topic) + struct.pack(">i", len(numbers)) + b"".join(struct.pack(">i", p) for p in numbers)
        )
    data = conn.ask(_OFFSET_DELETE, 0, body)
    if data is None:
        raise InputError(f"broker {conn.where} closed the connection on OffsetDelete")
    r = _Reader(data)
    error = r.take(">h")
    r.take(">i")  # throttle
    if error in (_LOADING, _NOT_AVAILABLE, _NOT_COORDINATOR):
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
    """OffsetDelete through the brokers `config` names; `unsupported` says why it cannot be asked (a
    secured connection, which this plain socket does not speak; brokers known to be before 2.4)."""
    where = f"broker {config.bootstrap}"
    if config.secured:
        return OffsetDeleteAnswer({}, f"ktool sends OffsetDelete over plain connections only, not to {where}")
    known = config.version or config.extra.get("broker.version.fallback")
    if known and not version_at_least(known, (2, 4)):
        return OffsetDeleteAnswer({}, f"{where} runs Kafka {known}: it has no OffsetDelete (2.4+)")
    return delete_offsets(config.bootstrap, group, partitions, config.timeout)
