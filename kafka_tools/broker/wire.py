"""Kafka's wire protocol on ktool's own socket, for the requests confluent-kafka's Python binding does
not expose or that ktool asks itself (OffsetDelete; ListGroups v5 with its group types, DescribeGroups
and ConsumerGroupDescribe with the KIP-848 epochs; DescribeTopicPartitions, ListPartitionReassignments,
DescribeLogDirs, DescribeQuorum): the one connection (plaintext or TLS; SASL PLAIN, SCRAM or GSSAPI, the
last in kerberos.py), the request frame
(header v1/v2; probe.py's first ApiVersions is framed here too), ApiVersions, FindCoordinator and a
group's coordinator found again while it moves, the writers of Kafka's primitive types and a reader
of both the classic and the flexible (KIP-482: compact strings and arrays, tagged fields) encodings.

Facts from Kafka's clients/src/main/resources/common/message/*.json; versions are always negotiated with
ApiVersions first (`api_versions`): a broker before 0.10 closes the connection on it (None).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import socket
import ssl
import struct
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TypeVar

from kafka_tools.errors import InputError, os_reason

if TYPE_CHECKING:
    from kafka_tools.broker.security import BrokerSecurity

API_VERSIONS, FIND_COORDINATOR, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 10, 17, 36
# Kafka's error codes met while a group's coordinator loads or moves (protocol.Errors)
LOADING, NOT_AVAILABLE, NOT_COORDINATOR = 14, 15, 16
GROUP_AUTHORIZATION_FAILED = 30
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
T = TypeVar("T")


class WireError(InputError):
    """An answer ktool cannot read, or a connection the broker closed mid-request."""


class NoAnswer(InputError):
    """A request the broker did not answer within the connection's timeout (a caller words it as its
    own request: "no answer within N s")."""


def tls_context(security: BrokerSecurity) -> ssl.SSLContext:
    """The brokers verified with --broker-ca (else the system's CAs), the client certificate given."""
    context = ssl.create_default_context(cafile=security.ca)
    if security.cert:
        key_password = security.credentials.key_password if security.credentials else None
        context.load_cert_chain(security.cert, security.key, password=key_password)
    return context


def frame(key: int, version: int, correlation: int, body: bytes, flexible: bool = False) -> bytes:
    """A request as it goes on the wire: its size, then request header v1 (v2 when `flexible`: with its
    empty tagged fields; client id `ktool`), then `body`."""
    head = struct.pack(">hhih", key, version, correlation, 5) + b"ktool" + (NO_TAGS if flexible else b"")
    return struct.pack(">i", len(head) + len(body)) + head + body


def recv_exactly(sock: socket.socket, n: int) -> bytes | None:
    """`n` bytes from `sock`; None when the broker closes the connection first."""
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


class Connection:
    """One socket to one broker; `ask` sends a request and returns its response's body."""

    def __init__(self, host: str, port: int, timeout: float, security: BrokerSecurity | None = None) -> None:
        self.where, self.host, self.port = f"{host}:{port}", host, port
        self.security = security  # the coordinator a request is sent on to is reached the same way
        try:
            sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as exc:
            raise InputError(f"broker {self.where}: cannot connect ({os_reason(exc)})") from None
        sock.settimeout(timeout)
        self.correlation = 0
        self.node_id: int | None = None  # a coordinator's node id, as FindCoordinator named it
        self.sock: socket.socket = sock
        if security is not None and security.protocol in ("SSL", "SASL_SSL"):
            try:
                self.sock = tls_context(security).wrap_socket(sock, server_hostname=host)
            except (ssl.SSLError, OSError) as exc:
                sock.close()
                raise InputError(f"broker {self.where}: TLS handshake failed ({os_reason(exc)})") from None
        if security is not None and security.sasl:
            try:
                self._sasl(security)
            except BaseException:
                self.close()  # a refused, broken or interrupted exchange leaves no socket open
                raise

    def ask(self, key: int, version: int, body: bytes, flexible: bool = False) -> bytes | None:
        """The response's body (after its header), None when the broker closes the connection (a broker
        that does not know the request). `flexible`: request header v2, response header v1."""
        self.correlation += 1
        try:
            self.sock.sendall(frame(key, version, self.correlation, body, flexible))
            size = recv_exactly(self.sock, 4)
            if size is None:
                return None
            data = recv_exactly(self.sock, struct.unpack(">i", size)[0])
        except TimeoutError:
            raise NoAnswer(f"broker {self.where}: no answer to request {key} in time") from None
        except OSError:
            return None
        if data is None:
            return None
        if not flexible:
            return data[4:]
        reader = Reader(data[4:])
        reader.skip_tags()
        return data[4 + reader.at :]

    def _sasl(self, security: BrokerSecurity) -> None:
        """SaslHandshake v1, then SaslAuthenticate v0 rounds: PLAIN (RFC 4616), SCRAM-SHA-256/512
        (RFC 5802, as Kafka's ScramSaslServer takes it) or GSSAPI (RFC 4752, broker/kerberos.py)."""
        creds = security.credentials
        assert creds is not None and creds.mechanism is not None
        if creds.mechanism not in ("PLAIN", "GSSAPI", *SCRAM_HASHES):
            raise InputError(f"ktool's own protocol client does not speak SASL {creds.mechanism}")
        if creds.mechanism == "GSSAPI":
            from kafka_tools.broker.kerberos import authenticate, require_gssapi

            require_gssapi()  # said before the broker is asked anything
        data = self.ask(SASL_HANDSHAKE, 1, string(creds.mechanism))
        if data is None or Reader(data).take(">h") != 0:
            raise InputError(f"broker {self.where}: SASL mechanism {creds.mechanism} not enabled")
        if creds.mechanism == "GSSAPI":
            authenticate(creds, self.host, self.where, lambda token: self._authenticate(security, token))
            return
        user, password = creds.username or "", creds.password or ""
        if creds.mechanism == "PLAIN":
            self._authenticate(security, b"\x00" + user.encode() + b"\x00" + password.encode())
            return
        digest = SCRAM_HASHES[creds.mechanism]
        nonce = base64.b64encode(os.urandom(18)).decode()
        first_bare = f"n={user.replace('=', '=3D').replace(',', '=2C')},r={nonce}"
        server_first = self._authenticate(security, ("n,," + first_bare).encode()).decode()
        fields = dict(part.split("=", 1) for part in server_first.split(",") if "=" in part)
        if not fields.get("r", "").startswith(nonce) or "s" not in fields or "i" not in fields:
            raise InputError(
                f"broker {self.where}: SASL {security.describe()}: a SCRAM answer ktool cannot read"
            )
        salted = hashlib.pbkdf2_hmac(
            digest, password.encode(), base64.b64decode(fields["s"]), int(fields["i"])
        )
        client_key = hmac.digest(salted, b"Client Key", digest)
        without_proof = f"c=biws,r={fields['r']}"
        message = f"{first_bare},{server_first},{without_proof}".encode()
        signature = hmac.digest(hashlib.new(digest, client_key).digest(), message, digest)
        proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, signature, strict=True))).decode()
        server_final = self._authenticate(security, f"{without_proof},p={proof}".encode()).decode()
        expected = hmac.digest(hmac.digest(salted, b"Server Key", digest), message, digest)
        if server_final != "v=" + base64.b64encode(expected).decode():
            raise InputError(
                f"broker {self.where}: SASL {security.describe()}: the broker's SCRAM proof is wrong"
            )

    def _authenticate(self, security: BrokerSecurity, token: bytes) -> bytes:
        """One SaslAuthenticate v0 round: the broker's answer bytes, or one line when it refuses."""
        data = self.ask(SASL_AUTHENTICATE, 0, struct.pack(">i", len(token)) + token)
        if data is None:
            raise InputError(f"broker {self.where}: closed the connection on SASL authentication")
        reader = Reader(data)
        if reader.take(">h") != 0:
            why = reader.nullable_string() or "authentication failed"
            raise InputError(f"broker {self.where}: SASL {security.describe()}: {why}")
        reader.nullable_string()
        size = reader.take(">i")
        return reader.data[reader.at : reader.at + max(size, 0)]

    def close(self) -> None:
        self.sock.close()


def group_denied(where: str, group: str, security: BrokerSecurity | None) -> InputError:
    """The one line for a group the brokers' authorizer keeps from us (GROUP_AUTHORIZATION_FAILED: no
    ACL for the group allows what was asked), whichever client was told."""
    who = security.describe() if security is not None else "PLAINTEXT"
    return InputError(
        f"broker {where}: {who} is not authorized for group {group} (GROUP_AUTHORIZATION_FAILED)"
    )


class Reader:
    """A response body read field by field; a short or malformed one raises WireError."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def take(self, fmt: str):
        try:
            value = struct.unpack_from(fmt, self.data, self.at)
        except struct.error:
            raise WireError("an answer shorter than its fields") from None
        self.at += struct.calcsize(fmt)
        return value[0] if len(value) == 1 else value

    def _text(self, n: int) -> str:
        if n < 0 or self.at + n > len(self.data):
            raise WireError("a string longer than its answer")
        text = self.data[self.at : self.at + n].decode(errors="replace")
        self.at += n
        return text

    def string(self) -> str:
        return self._text(self.take(">h"))

    def nullable_string(self) -> str | None:
        n = self.take(">h")
        return None if n < 0 else self._text(n)

    def uvarint(self) -> int:
        value, shift = 0, 0
        while True:
            byte = self.take(">B")
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 35:
                raise WireError("a varint longer than 5 bytes")

    def compact_string(self) -> str | None:
        n = self.uvarint()
        return None if n == 0 else self._text(n - 1)

    def _raw(self, n: int) -> bytes:
        if n < 0:
            return b""
        if self.at + n > len(self.data):
            raise WireError("bytes longer than their answer")
        raw = self.data[self.at : self.at + n]
        self.at += n
        return raw

    def bytes_field(self) -> bytes:
        """Kafka's `bytes` (int32 length; a null one read as empty)."""
        return self._raw(self.take(">i"))

    def compact_bytes(self) -> bytes:
        """Kafka's compact `bytes` (unsigned varint length + 1; a null one read as empty)."""
        return self._raw(self.uvarint() - 1)

    def _compact_length(self) -> int | None:
        """A compact array's length (None: a null array); bounded by what is left to read."""
        n = self.uvarint()
        if n - 1 > len(self.data) - self.at:
            raise WireError("an array longer than its answer")
        return None if n == 0 else n - 1

    def compact_count(self) -> int:
        """A compact array's length, a null array counting 0 (where null and empty mean the same)."""
        return self._compact_length() or 0

    def compact_array(self, item: Callable[[Reader], T]) -> list[T] | None:
        """A compact array's items; None for a null array (where null means "not held")."""
        n = self._compact_length()
        return None if n is None else [item(self) for _ in range(n)]

    def compact_ints(self) -> list[int] | None:
        return self.compact_array(lambda r: r.take(">i"))

    def array(self, item: Callable[[Reader], T]) -> list[T]:
        n = self.take(">i")
        if n > len(self.data) - self.at:
            raise WireError("an array longer than its answer")
        return [item(self) for _ in range(max(n, 0))]

    def uuid(self) -> str:
        """As Kafka's Uuid.toString writes it: URL-safe base64 without padding."""
        raw = self.data[self.at : self.at + 16]
        if len(raw) != 16:
            raise WireError("an answer shorter than its fields")
        self.at += 16
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    def skip_tags(self) -> None:
        """Tagged fields skipped (none that ktool reads)."""
        for _ in range(self.uvarint()):
            self.uvarint()
            size = self.uvarint()
            self.at += size


def string(text: str) -> bytes:
    raw = text.encode()
    return struct.pack(">h", len(raw)) + raw


def uvarint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def compact_string(text: str) -> bytes:
    raw = text.encode()
    return uvarint(len(raw) + 1) + raw


def compact_array(items: list[bytes] | None) -> bytes:
    return b"\x00" if items is None else uvarint(len(items) + 1) + b"".join(items)


NO_TAGS = b"\x00"


def by_topic(partitions: Iterable[tuple[str, int]]) -> dict[str, list[int]]:
    """(topic, partition) pairs as a request lists them: each topic once, its partitions in the order
    given."""
    topics: dict[str, list[int]] = {}
    for topic, partition in partitions:
        topics.setdefault(topic, []).append(partition)
    return topics


def topic_partitions(partitions: Iterable[tuple[str, int]]) -> bytes:
    """The classic array of topics, each with its int32 partition numbers (OffsetFetch, OffsetDelete)."""
    topics = by_topic(partitions)
    return struct.pack(">i", len(topics)) + b"".join(
        string(topic) + struct.pack(f">i{len(numbers)}i", len(numbers), *numbers)
        for topic, numbers in topics.items()
    )


def api_versions(conn: Connection, answer_within: float = 1.5) -> dict[int, tuple[int, int]] | None:
    """ApiVersions v0: each API key's (lowest, highest) version; None before 0.10, whose brokers close
    the connection on it or let it wait (a 0.10+ broker answers at once: `answer_within` seconds)."""
    timeout = conn.sock.gettimeout()
    conn.sock.settimeout(min(answer_within, timeout or answer_within))
    try:
        data = conn.ask(API_VERSIONS, 0, b"")
    except InputError:
        return None
    finally:
        conn.sock.settimeout(timeout)
    if data is None:
        return None
    r = Reader(data)
    r.take(">h")
    return {key: (low, high) for key, low, high in r.array(lambda r: r.take(">hhh"))}


def pick_version(versions: dict[int, tuple[int, int]] | None, key: int, ours: tuple[int, int]) -> int | None:
    """The highest version both speak, None when the broker lacks the API (or only newer versions)."""
    if versions is None or key not in versions:
        return None
    low, high = versions[key]
    best = min(high, ours[1])
    return best if best >= max(low, ours[0]) else None


def find_coordinator(conn: Connection, group: str, version: int, deadline: float) -> tuple[str, int, int]:
    """The group's coordinator (host, port, node id), FindCoordinator v0-v2; asked again while it loads."""
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
            r.nullable_string()  # error message
        node, host, port = r.take(">i"), r.string(), r.take(">i")
        if error == 0:
            return host, port, node
        if error == GROUP_AUTHORIZATION_FAILED:
            raise group_denied(conn.where, group, conn.security)
        if error not in (LOADING, NOT_AVAILABLE) or time.monotonic() > deadline:
            raise InputError(
                f"broker {conn.where}: no coordinator for group {group} (error {error}, node {node})"
            )
        time.sleep(0.2)


def at_coordinator(
    conn: Connection,
    group: str,
    find_version: int,
    timeout: float,
    deadline: float,
    ask: Callable[[Connection], T | None],
) -> T:
    """`ask` on a connection to the group's coordinator (found through `conn`, reached with the same
    security settings, its node id in `node_id`; `conn` itself when it is the coordinator: no second
    connection, TLS handshake and SASL exchange), found again while it moves: `ask` returns None when
    the coordinator answers LOADING, NOT_AVAILABLE or NOT_COORDINATOR."""
    while True:
        host, port, node = find_coordinator(conn, group, find_version, deadline)
        reused = (host, port) == (conn.host, conn.port)
        coordinator = conn if reused else Connection(host, port, timeout, conn.security)
        coordinator.node_id = node
        try:
            answer = ask(coordinator)
        finally:
            if not reused:
                coordinator.close()
        if answer is not None:
            return answer
        if time.monotonic() > deadline:
            raise InputError(f"broker {conn.where}: the coordinator of group {group} kept moving")
        time.sleep(0.2)
