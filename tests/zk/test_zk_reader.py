"""kafka_tools.zk.reader against a real ZooKeeper 3.8, on znodes written as Kafka 0.7 and 0.9 write them."""

from __future__ import annotations

import json

import pytest

from kafka_tools.zk.connection import ZkConfig, ZnodeMissingError, open_zk
from kafka_tools.zk.layout import LAYOUT_07, LAYOUT_08, BrokerPartition, MalformedZnodeError
from kafka_tools.zk.reader import (
    cluster_id,
    controller,
    list_groups,
    read_brokers,
    read_cluster,
    read_group,
    read_topics,
)

TS = "1463000000000"


def broker_json(broker_id: int, port: int = 9092, version: int = 2) -> bytes:
    """/brokers/ids/N exactly as Kafka 0.9.0 registers it (ZkUtils.registerBrokerInZk)."""
    return json.dumps(
        {
            "jmx_port": -1,
            "timestamp": TS,
            "endpoints": [f"PLAINTEXT://127.0.0.1:{port + broker_id}"],
            "host": "127.0.0.1",
            "version": version,
            "port": port + broker_id,
        },
        separators=(",", ":"),
    ).encode()


def state_json(leader: int, isr: list[int], leader_epoch: int = 0) -> bytes:
    return json.dumps(
        {"controller_epoch": 1, "leader": leader, "version": 1, "leader_epoch": leader_epoch, "isr": isr},
        separators=(",", ":"),
    ).encode()


def write_kafka09_cluster(root) -> None:
    """Two brokers, a controller, topic `orders` (2 partitions, RF 2) and an old-consumer group."""
    for b in (0, 1):
        root.write(f"/brokers/ids/{b}", broker_json(b))
    root.write("/controller", '{"version":1,"brokerid":1,"timestamp":"1463000000123"}')
    root.write("/controller_epoch", "3")
    root.write("/brokers/topics/orders", '{"version":1,"partitions":{"1":[1,0],"0":[0,1]}}')
    root.write("/brokers/topics/orders/partitions/0/state", state_json(0, [0, 1]))
    root.write("/brokers/topics/orders/partitions/1/state", state_json(1, [1], leader_epoch=2))
    member = "billing_host1-1463000000000-1a2b3c4d"
    root.write(
        f"/consumers/billing/ids/{member}",
        json.dumps({"version": 1, "subscription": {"orders": 2}, "pattern": "static", "timestamp": TS}),
    )
    for p, offset in ((0, 42), (1, 7)):
        root.write(f"/consumers/billing/offsets/orders/{p}", str(offset))
        root.write(f"/consumers/billing/owners/orders/{p}", f"{member}-{p}")


def write_kafka07_cluster(root) -> None:
    """Kafka 0.7: string registrations, topics per broker, offsets/owners keyed brokerId-partition."""
    root.write("/brokers/ids/0", "127.0.0.1-1300000000000:127.0.0.1:9092")
    root.write("/brokers/ids/1", "127.0.0.1-1300000000001:127.0.0.1:9093")
    root.write("/brokers/topics/logs/0", "2")
    root.write("/brokers/topics/logs/1", "1")
    member = "legacy_host1-1300000000000-5e6f7a8b"
    root.write(f"/consumers/legacy/ids/{member}", '{ "logs": 1 }')
    for key, pos in (("0-0", 1048576), ("0-1", 0), ("1-0", 73)):
        root.write(f"/consumers/legacy/offsets/logs/{key}", str(pos))
    root.write("/consumers/legacy/owners/logs/0-0", f"{member}-0")


def test_read_cluster_brokers_controller_and_no_cluster_id(zk_root) -> None:
    write_kafka09_cluster(zk_root)
    with open_zk(ZkConfig.parse(zk_root.connect)) as zk:
        cluster = read_cluster(zk)
        assert [b.id for b in read_brokers(zk)] == [0, 1]
        assert controller(zk).broker_id == 1
        assert cluster_id(zk) is None
    assert [(b.id, b.port, b.version_hint) for b in cluster.brokers] == [
        (0, 9092, "0.9.x"),
        (1, 9093, "0.9.x"),
    ]
    assert (cluster.controller.broker_id, cluster.controller.epoch) == (1, 3)
    assert cluster.controller.timestamp == 1463000000123
    assert cluster.cluster_id is None


def test_cluster_id_of_a_0_10_1_cluster(zk_root) -> None:
    zk_root.write("/cluster/id", '{"version":"1","id":"4kV2vWdtQbqZLl0zaW1jAw"}')
    with open_zk(ZkConfig.parse(zk_root.connect)) as zk:
        assert cluster_id(zk) == "4kV2vWdtQbqZLl0zaW1jAw"


def test_read_topics_with_partition_states(zk_root) -> None:
    write_kafka09_cluster(zk_root)
    zk_root.write("/brokers/topics/fresh", '{"version":1,"partitions":{"0":[1]}}')  # no state yet
    with open_zk(ZkConfig.parse(zk_root.connect)) as zk:
        topics = read_topics(zk)
        only = read_topics(zk, ["orders"])
        with pytest.raises(ZnodeMissingError, match=r"no topics missing, nope in /brokers/topics"):
            read_topics(zk, ["orders", "nope", "missing"])
    assert [t.name for t in topics] == ["fresh", "orders"]
    assert [t.name for t in only] == ["orders"]
    orders = only[0]
    assert orders.layout == LAYOUT_08
    assert [
        (p.partition, p.replicas, p.leader, p.state.isr, p.under_replicated) for p in orders.partitions
    ] == [
        (0, (0, 1), 0, (0, 1), False),
        (1, (1, 0), 1, (1,), True),
    ]
    assert topics[0].partitions[0].state is None


def test_read_group_members_offsets_owners(zk_root) -> None:
    write_kafka09_cluster(zk_root)
    zk_root.write("/consumers/idle/offsets/orders/0", "5")  # no members, no owners
    with open_zk(ZkConfig.parse(zk_root.connect)) as zk:
        group = read_group(zk, "billing")
        idle = read_group(zk, "idle")
        assert list_groups(zk) == ["billing", "idle"]
        with pytest.raises(ZnodeMissingError, match="no consumer group 'ghost' \\(/consumers/ghost\\)"):
            read_group(zk, "ghost")
    assert group.layout == LAYOUT_08
    assert [(m.id, m.subscription, m.pattern) for m in group.members] == [
        ("billing_host1-1463000000000-1a2b3c4d", {"orders": 2}, "static")
    ]
    assert group.offsets == {("orders", 0): 42, ("orders", 1): 7}
    assert group.owners == {
        ("orders", 0): "billing_host1-1463000000000-1a2b3c4d-0",
        ("orders", 1): "billing_host1-1463000000000-1a2b3c4d-1",
    }
    assert (idle.members, idle.offsets, idle.owners) == ([], {("orders", 0): 5}, {})


def test_kafka07_layout_is_recognised_and_labelled(zk_root) -> None:
    write_kafka07_cluster(zk_root)
    with open_zk(ZkConfig.parse(zk_root.connect)) as zk:
        cluster = read_cluster(zk)
        (logs,) = read_topics(zk)
        group = read_group(zk, "legacy")
    assert [(b.layout, b.version_hint, b.port) for b in cluster.brokers] == [
        (LAYOUT_07, "0.7", 9092),
        (LAYOUT_07, "0.7", 9093),
    ]
    assert logs.layout == LAYOUT_07
    assert [p.partition for p in logs.partitions] == [
        BrokerPartition(0, 0),
        BrokerPartition(0, 1),
        BrokerPartition(1, 0),
    ]
    assert (group.layout, group.offset_unit) == (LAYOUT_07, "byte-position")
    assert group.offsets == {
        ("logs", BrokerPartition(0, 0)): 1048576,
        ("logs", BrokerPartition(0, 1)): 0,
        ("logs", BrokerPartition(1, 0)): 73,
    }
    assert group.owners == {("logs", BrokerPartition(0, 0)): "legacy_host1-1300000000000-5e6f7a8b-0"}
    assert group.members[0].layout == LAYOUT_07


def test_malformed_offset_znode_names_its_path(zk_root) -> None:
    zk_root.write("/consumers/g/offsets/orders/0", "not-a-number")
    with open_zk(ZkConfig.parse(zk_root.connect)) as zk, pytest.raises(MalformedZnodeError) as info:
        read_group(zk, "g")
    assert str(info.value) == "malformed znode /consumers/g/offsets/orders/0: 'not-a-number' is not a number"


def test_root_without_brokers_says_so(zk_root) -> None:
    with open_zk(ZkConfig.parse(zk_root.connect)) as zk, pytest.raises(ZnodeMissingError) as info:
        read_cluster(zk)
    assert str(info.value).startswith(f"no /brokers/ids on ZooKeeper {zk_root.connect}: ")
    assert "chroot" in str(info.value)
