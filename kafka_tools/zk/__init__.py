"""The shared ZooKeeper client: one connection layer and Kafka's znode layout as dataclasses.

* `config`: ZkConfig (connect string, env, config file, timeouts, credentials, TLS);
* `connection`: ``open_zk(config)``, a context manager yielding a started KazooClient;
* `layout`: pure parsers, znode bytes → Broker, Topic, PartitionState, ConsumerMember, … for the
  0.8+ layout of the Kafka docs and the 0.7 one;
* `reader`: concurrent bulk readers (``read_cluster``, ``read_brokers``, ``read_topics``,
  ``read_group``, ``list_groups``, ``cluster_id``, ``controller``).

Importing this package imports none of them (each name on first use), nor kazoo: opening a
connection does.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

# Each name's module, imported when the name is first used: importing the package (as
# `kafka_tools.zk.config` does) must not pull in the connection's sockets and logging.
_WHERE = {
    "Broker": "layout",
    "BrokerPartition": "layout",
    "Cluster": "reader",
    "ConsumerGroupZk": "layout",
    "ConsumerMember": "layout",
    "Controller": "layout",
    "LAYOUT_07": "layout",
    "LAYOUT_08": "layout",
    "MalformedZnodeError": "layout",
    "PartitionKey": "layout",
    "PartitionState": "layout",
    "Topic": "layout",
    "TopicPartition": "layout",
    "ZkAuth": "config",
    "ZkConfig": "config",
    "ZnodeMissingError": "connection",
    "broker_version_hint": "layout",
    "cluster_id": "reader",
    "controller": "reader",
    "librdkafka_compat": "layout",
    "list_groups": "reader",
    "list_topics": "reader",
    "open_zk": "connection",
    "parse_auth": "config",
    "read_brokers": "reader",
    "read_cluster": "reader",
    "read_group": "reader",
    "read_topics": "reader",
    "resolve_config": "config",
}

if TYPE_CHECKING:
    from kafka_tools.zk.config import ZkAuth, ZkConfig, parse_auth, resolve_config
    from kafka_tools.zk.connection import ZnodeMissingError, open_zk
    from kafka_tools.zk.layout import (
        LAYOUT_07,
        LAYOUT_08,
        Broker,
        BrokerPartition,
        ConsumerGroupZk,
        ConsumerMember,
        Controller,
        MalformedZnodeError,
        PartitionKey,
        PartitionState,
        Topic,
        TopicPartition,
        broker_version_hint,
        librdkafka_compat,
    )
    from kafka_tools.zk.reader import (
        Cluster,
        cluster_id,
        controller,
        list_groups,
        list_topics,
        read_brokers,
        read_cluster,
        read_group,
        read_topics,
    )


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "LAYOUT_07",
    "LAYOUT_08",
    "Broker",
    "BrokerPartition",
    "Cluster",
    "ConsumerGroupZk",
    "ConsumerMember",
    "Controller",
    "MalformedZnodeError",
    "PartitionKey",
    "PartitionState",
    "Topic",
    "TopicPartition",
    "ZkAuth",
    "ZkConfig",
    "ZnodeMissingError",
    "broker_version_hint",
    "cluster_id",
    "controller",
    "librdkafka_compat",
    "list_groups",
    "list_topics",
    "open_zk",
    "parse_auth",
    "read_brokers",
    "read_cluster",
    "read_group",
    "read_topics",
    "resolve_config",
]
