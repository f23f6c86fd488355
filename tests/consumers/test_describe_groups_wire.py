"""DescribeGroups on ktool's own client (broker/group_requests.describe_group): the version both sides
speak (v0-v5, v5 flexible), answers written here by hand from Kafka's DescribeGroupsResponse.json read
whole (state, protocol, each member's client id, host, instance id, JoinGroup metadata and assignment),
every truncation one InputError; a coordinator that loads or moves is found again and asked again; a
group the authorizer keeps from us is the one GROUP_AUTHORIZATION_FAILED line; brokers known to predate
ApiVersions (0.9) are asked v0 without it. The views read the answer as they read librdkafka's
(consumers/coordinated.group_view)."""

from __future__ import annotations

import struct

import pytest

from kafka_tools.broker import group_requests, wire
from kafka_tools.broker.group_requests import (
    CONSUMER_GROUP_DESCRIBE,
    DESCRIBE_GROUPS,
    GROUP_ID_NOT_FOUND,
    describe_group,
)
from kafka_tools.broker.wire import (
    FIND_COORDINATOR,
    GROUP_AUTHORIZATION_FAILED,
    LOADING,
    NOT_COORDINATOR,
    compact_string,
    string,
    uvarint,
)
from kafka_tools.consumers.coordinated import group_view
from kafka_tools.errors import InputError

TAGS = b"\x00"
SUBSCRIPTION = struct.pack(">hi", 0, 1) + string("orders") + struct.pack(">i", -1)  # v0: [orders]
ASSIGNMENT = (
    struct.pack(">hi", 0, 1) + string("orders") + struct.pack(">iii", 2, 2, 0) + struct.pack(">i", -1)
)


def _members(version: int) -> list[tuple[str, str | None, str, str, bytes, bytes]]:
    return [
        ("m-1", "static-1" if version >= 4 else None, "app", "/10.0.0.7", SUBSCRIPTION, ASSIGNMENT),
        ("m-2", None, "app", "/10.0.0.8", SUBSCRIPTION, b""),
    ]


def describe_answer(version: int, error: int = 0, state: str = "Stable") -> bytes:
    """A DescribeGroups answer of `version` for group `g` (protocol type consumer, protocol range)."""
    flexible = version >= 5
    text = compact_string if flexible else string

    def count(n: int) -> bytes:
        return uvarint(n + 1) if flexible else struct.pack(">i", n)

    def raw(data: bytes) -> bytes:
        return (uvarint(len(data) + 1) if flexible else struct.pack(">i", len(data))) + data

    out = struct.pack(">i", 0) if version >= 1 else b""
    out += count(1) + struct.pack(">h", error) + text("g") + text(state) + text("consumer") + text("range")
    members = _members(version) if not error and state != "Dead" else []
    out += count(len(members))
    for member_id, instance, client, host, metadata, assignment in members:
        out += text(member_id)
        if version >= 4:
            null = uvarint(0) if flexible else struct.pack(">h", -1)
            out += null if instance is None else text(instance)
        out += text(client) + text(host) + raw(metadata) + raw(assignment) + (TAGS if flexible else b"")
    out += struct.pack(">i", -(2**31)) if version >= 3 else b""
    return out + (TAGS + TAGS if flexible else b"")


class FakeBroker:
    """The bootstrap broker and the coordinator in one: FindCoordinator names node 7 at coord:9094;
    DescribeGroups answers `answers` in turn; ConsumerGroupDescribe (when offered) does not know `g`."""

    answers: list[bytes] = []
    asked: list[tuple[int, int, bool]] = []

    def __init__(self, host: str, port: int, timeout: float, security=None) -> None:
        self.host, self.port, self.where, self.security, self.node_id = (
            host,
            port,
            f"{host}:{port}",
            security,
            None,
        )

    def ask(self, key: int, version: int, body: bytes, flexible: bool = False) -> bytes:
        FakeBroker.asked.append((key, version, flexible))
        if key == FIND_COORDINATOR:
            head = struct.pack(">ih", 0, 0) + struct.pack(">h", -1) if version >= 1 else struct.pack(">h", 0)
            return head + struct.pack(">i", 7) + string("coord") + struct.pack(">i", 9094)
        if key == CONSUMER_GROUP_DESCRIBE:
            group = (
                struct.pack(">h", GROUP_ID_NOT_FOUND) + uvarint(0) + compact_string("g") + compact_string("")
            )
            group += (
                struct.pack(">ii", -1, -1) + compact_string("") + uvarint(1) + struct.pack(">i", 0) + TAGS
            )
            return struct.pack(">i", 0) + uvarint(2) + group + TAGS
        assert key == DESCRIBE_GROUPS
        return FakeBroker.answers.pop(0)

    def close(self) -> None:
        pass


@pytest.fixture
def broker(monkeypatch):
    """`offer(versions)`: what ApiVersions says (None: a broker that closes the connection on it)."""
    monkeypatch.setattr(group_requests, "Connection", FakeBroker)
    monkeypatch.setattr(wire, "Connection", FakeBroker)
    FakeBroker.answers, FakeBroker.asked = [], []

    def offer(versions):
        monkeypatch.setattr(group_requests, "api_versions", lambda conn: versions)

    return offer


@pytest.mark.parametrize("version", range(6))
def test_each_version_is_read_whole(broker, version: int) -> None:
    broker({FIND_COORDINATOR: (0, 2), DESCRIBE_GROUPS: (0, version)})
    FakeBroker.answers = [describe_answer(version)]
    described = describe_group(("boot", 9092), "g", 5.0)
    assert (DESCRIBE_GROUPS, version, version >= 5) in FakeBroker.asked
    assert described.coordinator == ("coord", 9094, 7)
    classic = described.classic
    assert (classic.state, classic.protocol_type, classic.protocol) == ("Stable", "consumer", "range")
    assert [(m.member_id, m.instance_id, m.client_id, m.host) for m in classic.members] == [
        ("m-1", "static-1" if version >= 4 else None, "app", "/10.0.0.7"),
        ("m-2", None, "app", "/10.0.0.8"),
    ]
    assert classic.members[0].metadata == SUBSCRIPTION and classic.members[1].assignment == b""
    view = group_view(described)
    assert (view.state, view.state_name, view.type, view.assignor) == ("STABLE", "Stable", "classic", "range")
    assert [m.assignment for m in view.members] == [[("orders", 0), ("orders", 2)], []]


@pytest.mark.parametrize("version", [0, 5])
def test_every_truncation_is_one_input_error(broker, version: int) -> None:
    broker({FIND_COORDINATOR: (0, 2), DESCRIBE_GROUPS: (0, version)})
    answer = describe_answer(version)
    for cut in range(len(answer) - 1):
        FakeBroker.answers = [answer[:cut]]
        with pytest.raises(InputError):
            describe_group(("boot", 9092), "g", 5.0)


def test_a_new_broker_is_asked_v5_and_consumer_group_describe_first(broker) -> None:
    broker({FIND_COORDINATOR: (0, 6), DESCRIBE_GROUPS: (0, 6), CONSUMER_GROUP_DESCRIBE: (0, 1)})
    FakeBroker.answers = [describe_answer(5)]
    assert describe_group(("boot", 9092), "g", 5.0).classic.members[0].member_id == "m-1"
    assert FakeBroker.asked == [(FIND_COORDINATOR, 2, False), (CONSUMER_GROUP_DESCRIBE, 0, True),
                                (DESCRIBE_GROUPS, 5, True)]  # fmt: skip


def test_a_broker_before_0_10_is_asked_v0_without_api_versions(broker) -> None:
    broker(None)
    FakeBroker.answers = [describe_answer(0)]
    described = describe_group(("boot", 9092), "g", 5.0, before_0_10=True)
    assert FakeBroker.asked == [(FIND_COORDINATOR, 0, False), (DESCRIBE_GROUPS, 0, False)]
    assert len(described.classic.members) == 2


def test_a_loading_or_moving_coordinator_is_asked_again(broker) -> None:
    broker({FIND_COORDINATOR: (0, 2), DESCRIBE_GROUPS: (0, 3)})
    FakeBroker.answers = [
        describe_answer(3, LOADING),
        describe_answer(3, NOT_COORDINATOR),
        describe_answer(3),
    ]
    described = describe_group(("boot", 9092), "g", 5.0)
    assert described.classic.state == "Stable" and not FakeBroker.answers
    assert [k for k, _, _ in FakeBroker.asked].count(FIND_COORDINATOR) == 3  # found again each time


def test_a_coordinator_still_moving_past_the_timeout_is_one_line(broker) -> None:
    broker({FIND_COORDINATOR: (0, 2), DESCRIBE_GROUPS: (0, 3)})
    FakeBroker.answers = [describe_answer(3, NOT_COORDINATOR)] * 50
    with pytest.raises(InputError, match="the coordinator of group g kept moving"):
        describe_group(("boot", 9092), "g", 0.5)
    assert len(FakeBroker.answers) > 40


def test_a_denied_group_is_the_one_authorization_line(broker) -> None:
    broker({FIND_COORDINATOR: (0, 2), DESCRIBE_GROUPS: (0, 5)})
    FakeBroker.answers = [describe_answer(5, GROUP_AUTHORIZATION_FAILED)]
    with pytest.raises(InputError) as caught:
        describe_group(("boot", 9092), "g", 5.0)
    assert (
        str(caught.value)
        == "broker coord:9094: PLAINTEXT is not authorized for group g (GROUP_AUTHORIZATION_FAILED)"
    )
    assert not FakeBroker.answers  # not asked again


def test_a_group_the_coordinator_does_not_know_is_dead(broker) -> None:
    broker({FIND_COORDINATOR: (0, 2), DESCRIBE_GROUPS: (0, 5)})
    FakeBroker.answers = [describe_answer(5, state="Dead")]
    view = group_view(describe_group(("boot", 9092), "g", 5.0))
    assert (view.known, view.state_name, view.coordinator) == (False, "Dead", ("coord", 9094, 7))


def test_a_group_of_another_protocol_is_refused_as_kafka_consumer_groups_refuses_it(broker) -> None:
    """A Connect cluster's group (protocol type `connect`) is no consumer group: one line, exit 3."""
    from kafka_tools.broker.client import Broker, BrokerConfig

    broker({FIND_COORDINATOR: (0, 2), DESCRIBE_GROUPS: (0, 5)})
    FakeBroker.answers = [describe_answer(5).replace(compact_string("consumer"), compact_string("connect"))]
    kafka = Broker(BrokerConfig("boot:9092", version="2.8.0"))
    kafka._admin_client = object()  # the first contact already watched
    with pytest.raises(InputError) as caught:
        kafka.coordinated_group("g")
    assert (
        str(caught.value) == "broker boot:9092: group g: not a consumer group (its protocol type is connect)"
    )
    assert caught.value.exit_code == 3
