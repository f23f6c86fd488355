"""A group's coordinator is reached as the bootstrap broker is (broker/wire.at_coordinator): with the
same TLS and SASL settings, so ListGroups' and ConsumerGroupDescribe's and OffsetDelete's second
connection is not a plaintext one to a secured listener; and a FindCoordinator that the authorizer
refuses (GROUP_AUTHORIZATION_FAILED) is one line naming the group and the identity, not "no coordinator"."""

from __future__ import annotations

import struct

import pytest

from kafka_tools.broker import wire
from kafka_tools.broker.security import BrokerCredentials, BrokerSecurity
from kafka_tools.broker.wire import FIND_COORDINATOR, GROUP_AUTHORIZATION_FAILED, at_coordinator, string
from kafka_tools.errors import InputError

SECURITY = BrokerSecurity(BrokerCredentials("SCRAM-SHA-512", "dave", "dave-secret"), tls=True)


class _Bootstrap:
    """The bootstrap connection: FindCoordinator v1 answered with `error` (0: node 1 at coord:9094)."""

    where, host, port = "boot:9094", "boot", 9094
    security = SECURITY

    def __init__(self, error: int) -> None:
        self.error = error

    def ask(self, key: int, version: int, body: bytes, flexible: bool = False) -> bytes:
        assert (key, version) == (FIND_COORDINATOR, 1)
        head = struct.pack(">ih", 0, self.error) + struct.pack(">h", -1) + struct.pack(">i", 1)
        return head + string("coord") + struct.pack(">i", 9094)


def test_the_coordinator_is_reached_with_the_bootstrap_brokers_security(monkeypatch) -> None:
    opened: list[tuple] = []

    class _Coordinator:
        def __init__(self, host: str, port: int, timeout: float, security=None) -> None:
            opened.append((host, port, security))

        def close(self) -> None:
            pass

    monkeypatch.setattr(wire, "Connection", _Coordinator)
    answer = at_coordinator(_Bootstrap(0), "orders", 1, 5.0, float("inf"), lambda c: "asked")
    assert answer == "asked"
    assert opened == [("coord", 9094, SECURITY)]


def test_a_refused_find_coordinator_names_the_group_and_the_identity() -> None:
    with pytest.raises(InputError) as caught:
        at_coordinator(_Bootstrap(GROUP_AUTHORIZATION_FAILED), "secret", 1, 5.0, float("inf"), lambda c: 1)
    assert str(caught.value) == (
        "broker boot:9094: SASL_SSL SCRAM-SHA-512 as dave is not authorized for group secret "
        "(GROUP_AUTHORIZATION_FAILED)"
    )


def test_a_bootstrap_broker_that_is_the_coordinator_is_asked_on_the_same_connection(monkeypatch) -> None:
    """No second connection (a second TLS handshake and SASL exchange) to the broker already spoken to."""
    opened: list[tuple] = []
    monkeypatch.setattr(wire, "Connection", lambda *args: opened.append(args))
    bootstrap = _Bootstrap(0)
    bootstrap.where, bootstrap.host = "coord:9094", "coord"
    assert at_coordinator(bootstrap, "orders", 1, 5.0, float("inf"), lambda c: c) is bootstrap
    assert opened == [] and bootstrap.node_id == 1
