"""Kafka's request and response framing on a plain socket, for the few requests confluent-kafka's
Python binding does not expose (OffsetDelete, ListGroups v5 with its group types, ConsumerGroupDescribe
with the KIP-848 epochs): a connection, ApiVersions, FindCoordinator, and the readers and writers of
Kafka's primitive types, classic (int16-sized strings) and flexible (compact sizes, tagged fields).
Plain connections only: over TLS or SASL the callers say what they cannot ask, in one line."""

from __future__ import annotations

import socket
import struct
import time
import uuid

from kafka_tools.errors import InputError, os_reason

API_VERSIONS, FIND_COORDINATOR = 18, 10
# Kafka's error codes met while finding a coordinator (org.apache.kafka.common.protocol.Errors)
LOADING, NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16


class Connection:
    def __init__(self, host: str, port: int, timeout: float) -> None:
        self.where = f"{host}:{port}"
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise InputError(f"broker {self.where}: cannot connect ({os_reason(exc)})") from None
        self.sock.settimeout(timeout)
        self.correlation = 0

    def ask(self, key: int, version: int, body: bytes, flexible: bool = False) -> bytes | None:
        """The response's body (after its header), None when the broker closes the connection (a
        broker that does not know the request). `flexible`: request header v2 and response header v1,
        each with its (empty) tagged fields."""
        self.correlation += 1
        head = struct.pack(">hhih", key, version, self.correlation, 5) + b"ktool"
        if flexible:
            head += b"\x00"
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
        if data is None:
            return None
        if not flexible:
            return data[4:]
        r = Reader(data[4:])
        r.skip_tags()
        return data[4 + r.at :]

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


def string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def uvarint(n: int) -> bytes:
    out = b""
    while n >= 0x80:
        out += bytes([(n & 0x7F) | 0x80])
        n >>= 7
    return out + bytes([n])


def compact_string(text: str) -> bytes:
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def compact_strings(texts: list[str]) -> bytes:
    return uvarint(len(texts) + 1) + b"".join(compact_string(t) for t in texts)


class Reader:
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

    def uvarint(self) -> int:
        shift = value = 0
        while True:
            byte = self.data[self.at]
            self.at += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise struct.error("varint too long")

    def compact_string(self) -> str | None:
        """A compact (nullable) string; None for null."""
        n = self.uvarint() - 1
        if n < 0:
            return None
        if self.at + n > len(self.data):
            raise struct.error("string past the end of the answer")
        text = self.data[self.at : self.at + n].decode()
        self.at += n
        return text

    def compact_count(self) -> int:
        """A compact array's length (a null array counts 0); bounded by the bytes left."""
        n = max(self.uvarint() - 1, 0)
        if n > len(self.data) - self.at:
            raise struct.error("array longer than the answer")
        return n

    def uuid(self) -> str:
        raw = self.data[self.at : self.at + 16]
        self.at += 16
        return str(uuid.UUID(bytes=raw))

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.at += self.uvarint()


def api_versions(conn: Connection) -> dict[int, tuple[int, int]] | None:
    """Each request's (lowest, highest) version the broker speaks; None before 0.10 (no ApiVersions)."""
    data = conn.ask(API_VERSIONS, 0, b"")
    if data is None:
        return None
    r = Reader(data)
    r.take(">h")
    return {key: (low, high) for key, low, high in (r.take(">hhh") for _ in range(r.take(">i")))}


def find_coordinator(conn: Connection, group: str, version: int, deadline: float) -> tuple[str, int]:
    """The group's coordinator (host, port), FindCoordinator v0-v2; asked again while it loads."""
    body = string(group) + (b"\x00" if version >= 1 else b"")
    while True:
        data = conn.ask(FIND_COORDINATOR, version, body)
        if data is None:
            raise InputError(f"broker {conn.where} closed the connection on FindCoordinator")
        r = Reader(data)
        if version >= 1:
            r.take(">i")  # throttle
        error = r.take(">h")
        if version >= 1:
            r.string()  # error message
        node, host, port = r.take(">i"), r.string(), r.take(">i")
        if error == 0:
            return host, port
        if error not in (LOADING, NOT_AVAILABLE) or time.monotonic() > deadline:
            raise InputError(
                f"broker {conn.where}: no coordinator for group {group} (error {error}, node {node})"
            )
        time.sleep(0.2)
