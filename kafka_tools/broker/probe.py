"""Which Kafka a broker runs, asked before librdkafka is: brokers before 0.10 do not answer ApiVersions,
and librdkafka would wait 10 s on them, then fail (broker/client.py's docstring)."""

from __future__ import annotations

import socket

from kafka_tools.broker.wire import API_VERSIONS, frame, recv_exactly
from kafka_tools.errors import InputError, os_reason


def version_at_least(version: str, minimum: tuple[int, ...]) -> bool:
    parts = tuple(int(p) for p in version.split(".")[: len(minimum)] if p.isdigit())
    return parts >= minimum


def probe_broker_version(
    bootstrap: str, timeout: float = 3.0, connect_timeout: float | None = None
) -> str | None:
    """None when the broker answers ApiVersions (0.10+: librdkafka's defaults work), "0.9.0.1" when it
    closes the connection on it, as brokers before 0.10 do with requests they do not know."""
    host, port = first_server(bootstrap)
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise InputError(f"broker {host}:{port}: host name not resolved") from None
    try:
        s = socket.create_connection((host, port), timeout=connect_timeout or timeout)
    except ConnectionRefusedError:
        raise InputError(f"broker {host}:{port}: connection refused (is a broker listening there?)") from None
    except TimeoutError:
        waited = connect_timeout or timeout
        raise InputError(f"broker {host}:{port}: no answer to a connection within {waited:g} s") from None
    except OSError as exc:
        raise InputError(f"broker {host}:{port}: cannot connect ({os_reason(exc)})") from None
    try:
        with s:
            s.settimeout(timeout)
            s.sendall(frame(API_VERSIONS, 0, 1, b""))
            head = recv_exactly(s, 4)
    except TimeoutError:
        return "0.9.0.1"
    except OSError:
        head = None  # reset by a broker that does not know the request
    if head is not None and head[:1] == b"\x15" and head[1:2] == b"\x03":
        # a TLS alert record (content type 21, version 3.x), not a Kafka response's length
        raise InputError(
            f"broker {host}:{port}: this port speaks TLS (it answered a plaintext request with a TLS "
            "alert): give --broker-tls or --broker-ca, and for SASL_SSL the credentials"
        )
    return "0.9.0.1" if head is None else None


def first_server(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    if "://" in first:
        first = first.split("://", 1)[1]
    host, _, port = first.rpartition(":")
    if not host or not port.isdigit():
        raise InputError(f"{bootstrap}: not a host:port bootstrap server list")
    return host.strip("[]"), int(port)
