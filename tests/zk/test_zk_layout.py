"""The znode parsers of kafka_tools.zk.layout on the exact bytes each Kafka generation writes."""

from __future__ import annotations

import json

import pytest

from kafka_tools.errors import EXIT_ENVIRONMENT
from kafka_tools.zk.layout import (
    LAYOUT_07,
    LAYOUT_08,
    LAYOUT_MIXED,
    Broker,
    BrokerPartition,
    ConsumerGroupZk,
    MalformedZnodeError,
    PartitionState,
    broker_version_hint,
    build_topic,
    build_topic_07,
    is_topic_07,
    librdkafka_compat,
    parse_broker,
    parse_cluster_id,
    parse_consumer_registration,
    parse_controller,
    parse_offset,
    parse_partition_key,
    parse_partition_state,
)

# As Kafka 0.8.2 (version 1), 0.9.0 (2), 0.10.0 (3) and 2.x (4) write /brokers/ids/N.
REG_V1 = b'{"jmx_port":-1,"timestamp":"1423000000000","host":"k1.example","version":1,"port":9092}'
REG_V2 = (
    b'{"jmx_port":-1,"timestamp":"1463000000000","endpoints":["PLAINTEXT://127.0.0.1:9092"],'
    b'"host":"127.0.0.1","version":2,"port":9092}'
)
REG_V3 = (
    b'{"jmx_port":9999,"timestamp":"1480000000000","endpoints":["PLAINTEXT://k3:9092","SSL://k3:9093"],'
    b'"rack":"eu-west-1a","host":"k3","version":3,"port":9092}'
)
REG_V4 = (
    b'{"listener_security_protocol_map":{"INTERNAL":"PLAINTEXT","EXTERNAL":"SSL"},'
    b'"endpoints":["INTERNAL://10.0.0.4:9092","EXTERNAL://k4.example:9093"],"rack":"r1","jmx_port":-1,'
    b'"host":null,"timestamp":"1590000000000","port":-1,"version":4}'
)
REG_07 = b"10.0.0.7-1300000000000:10.0.0.7:9092"


def test_broker_registration_0_9_is_parsed_field_by_field() -> None:
    b = parse_broker(0, REG_V2, "/brokers/ids/0")
    assert b == Broker(
        id=0,
        host="127.0.0.1",
        port=9092,
        endpoints=("PLAINTEXT://127.0.0.1:9092",),
        jmx_port=-1,
        timestamp=1463000000000,
        version=2,
        layout=LAYOUT_08,
    )
    assert b.version_hint == "0.9.x"


def test_broker_registrations_of_every_generation_give_their_version_hint() -> None:
    hints = {
        REG_V1: ("0.8.x", LAYOUT_08, None),
        REG_V2: ("0.9.x", LAYOUT_08, None),
        REG_V3: ("0.10+", LAYOUT_08, "eu-west-1a"),
        REG_V4: ("0.10+", LAYOUT_08, "r1"),
        REG_07: ("0.7", LAYOUT_07, None),
    }
    for data, (hint, layout, rack) in hints.items():
        b = parse_broker(3, data, "/brokers/ids/3")
        assert (b.version_hint, b.layout, b.rack) == (hint, layout, rack), data


def test_kafka07_string_registration_is_recognised() -> None:
    b = parse_broker(7, REG_07, "/brokers/ids/7")
    assert (b.host, b.port, b.timestamp, b.creator, b.version) == (
        "10.0.0.7",
        9092,
        1300000000000,
        "10.0.0.7-1300000000000",
        None,
    )
    assert b.layout == LAYOUT_07


def test_listener_only_registration_has_no_host() -> None:
    b = parse_broker(4, REG_V4, "/brokers/ids/4")
    assert b.host is None and b.port == -1
    assert b.endpoints == ("INTERNAL://10.0.0.4:9092", "EXTERNAL://k4.example:9093")


def test_oldest_broker_decides_the_version_hint_and_librdkafka_settings() -> None:
    brokers = [parse_broker(i, d, f"/brokers/ids/{i}") for i, d in enumerate([REG_V3, REG_V2, REG_V3])]
    assert broker_version_hint(brokers) == "0.9.x"
    assert librdkafka_compat("0.9.x") == {
        "api.version.request": "false",
        "broker.version.fallback": "0.9.0.1",
    }
    assert librdkafka_compat("0.8.x") == {
        "api.version.request": "false",
        "broker.version.fallback": "0.8.2.2",
    }
    assert librdkafka_compat("0.10+") == {}
    assert librdkafka_compat("0.7") is None
    assert broker_version_hint([parse_broker(1, REG_V1, "/brokers/ids/1"), *brokers]) == "0.8.x"
    assert broker_version_hint([]) is None


@pytest.mark.parametrize(
    "data, problem",
    [
        (b'{"host":"x",', "invalid JSON"),
        (b"", "empty"),
        (b"[1,2]", "expected a JSON object"),
        (b'{"host":"x","port":"ninety"}', "port is 'ninety'"),
        (b"\xff\xfe", "not UTF-8"),
        (b"just some text", "neither a JSON registration"),
    ],
)
def test_malformed_broker_znode_names_its_path(data: bytes, problem: str) -> None:
    with pytest.raises(MalformedZnodeError) as info:
        parse_broker(1, data, "/brokers/ids/1")
    message = str(info.value)
    assert message.startswith("malformed znode /brokers/ids/1: ") and problem in message
    assert "\n" not in message
    assert info.value.exit_code == EXIT_ENVIRONMENT


def test_partition_state_and_topic_assignment_make_a_topic() -> None:
    state = b'{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":4,"isr":[0]}'
    assert parse_partition_state(state, "/s") == PartitionState(0, (0,), 4, 1, 1)
    topic = build_topic(
        "orders",
        b'{"version":1,"partitions":{"1":[1,0],"0":[0,1],"2":[1,0]}}',
        {0: state, 1: b'{"controller_epoch":1,"leader":-1,"version":1,"leader_epoch":2,"isr":[]}', 2: None},
        path="/brokers/topics/orders",
    )
    assert [p.partition for p in topic.partitions] == [0, 1, 2]
    p0, p1, p2 = topic.partitions
    assert (p0.replicas, p0.leader, p0.under_replicated, p0.offline) == ((0, 1), 0, True, False)
    assert (p1.leader, p1.offline) == (-1, True)
    assert (p2.state, p2.leader, p2.under_replicated) == (None, None, False)


def test_kafka07_topic_lists_partitions_per_broker() -> None:
    assert is_topic_07(b"", ["0", "1"]) and not is_topic_07(b'{"version":1}', ["partitions"])
    topic = build_topic_07("logs", {0: b"2", 1: b"1", 2: None}, path="/brokers/topics/logs")
    assert topic.layout == LAYOUT_07
    assert [str(p.partition) for p in topic.partitions] == ["0-0", "0-1", "1-0"]
    assert [p.leader for p in topic.partitions] == [0, 0, 1]


def test_consumer_registrations_0_8_and_0_7() -> None:
    static = parse_consumer_registration(
        "g_h-1463000000000-abcd1234",
        b'{"version":1,"subscription":{"orders":2},"pattern":"static","timestamp":"1463000000000"}',
        "/consumers/g/ids/x",
    )
    assert (static.subscription, static.pattern, static.version, static.timestamp, static.layout) == (
        {"orders": 2},
        "static",
        1,
        1463000000000,
        LAYOUT_08,
    )
    white = parse_consumer_registration(
        "m", b'{"version":1,"subscription":{"orders.*":1},"pattern":"white_list","timestamp":"1"}', "/p"
    )
    assert (white.pattern, white.subscription) == ("white_list", {"orders.*": 1})
    old_static = parse_consumer_registration("m", b'{ "orders": 2, "audit": 1 }', "/p")
    assert (old_static.layout, old_static.pattern, old_static.subscription) == (
        LAYOUT_07,
        "static",
        {"orders": 2, "audit": 1},
    )
    old_white = parse_consumer_registration("m", b"*4*whitetopic.*", "/p")
    assert (old_white.layout, old_white.pattern, old_white.subscription) == (
        LAYOUT_07,
        "white_list",
        {"whitetopic.*": 4},
    )
    old_black = parse_consumer_registration("m", b"!2!internal-.*", "/p")
    assert (old_black.pattern, old_black.subscription) == ("black_list", {"internal-.*": 2})


def test_partition_keys_and_offsets() -> None:
    assert parse_partition_key("12", "/p") == 12
    assert parse_partition_key("3-1", "/p") == BrokerPartition(3, 1)
    assert str(BrokerPartition(3, 1)) == "3-1"
    with pytest.raises(MalformedZnodeError, match="/consumers/g/offsets/t"):
        parse_partition_key("x", "/consumers/g/offsets/t")
    assert parse_offset(b"1234", "/o") == 1234
    with pytest.raises(MalformedZnodeError, match="/consumers/g/offsets/t/0: 'abc' is not a number"):
        parse_offset(b"abc", "/consumers/g/offsets/t/0")


def test_group_layout_label() -> None:
    group = ConsumerGroupZk("g")
    assert group.layout is None
    group.offsets[("t", 0)] = 5
    assert (group.layout, group.offset_unit) == (LAYOUT_08, "offset")
    old = ConsumerGroupZk("g", offsets={("t", BrokerPartition(0, 0)): 4096})
    assert (old.layout, old.offset_unit) == (LAYOUT_07, "byte-position")
    old.owners[("t", 1)] = "g_h-1-0"
    assert old.layout == LAYOUT_MIXED


def test_controller_json_and_0_8_0_plain_id_and_cluster_id() -> None:
    ctrl = parse_controller(b'{"version":1,"brokerid":2,"timestamp":"1463000000000"}', "/controller", 7)
    assert (ctrl.broker_id, ctrl.timestamp, ctrl.epoch) == (2, 1463000000000, 7)
    assert parse_controller(b"5", "/controller").broker_id == 5
    assert parse_cluster_id(json.dumps({"version": "1", "id": "Zb6lX0ZqQ2e"}).encode(), "/c") == "Zb6lX0ZqQ2e"
    with pytest.raises(MalformedZnodeError, match="/cluster/id"):
        parse_cluster_id(b'{"version":"1"}', "/cluster/id")
