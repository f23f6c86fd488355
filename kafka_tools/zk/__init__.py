"""The shared ZooKeeper client: one connection layer and Kafka's znode layout as dataclasses.

* `connection`: ZkConfig (connect string, env, config file, timeouts, credentials, TLS) and
  ``open_zk(config)``, a context manager yielding a started KazooClient;
* `layout`: pure parsers, znode bytes → Broker, Topic, PartitionState, ConsumerMember, … for the
  0.8+ layout of the Kafka docs and the 0.7 one;
* `reader`: concurrent bulk readers (``read_cluster``, ``read_brokers``, ``read_topics``,
  ``read_group``, ``list_groups``, ``cluster_id``, ``controller``).

Importing this package does not import kazoo; opening a connection does.
"""

from kafka_tools.zk.connection import (
    ZkAuth,
    ZkConfig,
    ZnodeMissingError,
    open_zk,
    parse_auth,
    resolve_config,
)
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
