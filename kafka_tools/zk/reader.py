"""Bulk readers over a started KazooClient: many znodes read concurrently, parsed by `layout`.

Every reader fires all the requests of one level of the tree at once (kazoo's ``get_async`` /
``get_children_async``) and only then collects the answers, so a read costs one round trip per level
of the tree, not one per znode: a group with thousands of partitions is three waves.

A znode that vanishes between listing and reading (a consumer leaving, a broker stopping) is skipped;
a znode the command needs raises :class:`~kafka_tools.zk.connection.ZnodeMissingError`; every other
failure is an InputError naming the servers and the znode.
"""

from __future__ import annotations

import re
import time
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_tools.zk.connection import ZnodeMissingError, credentials_of, describe, zk_error
from kafka_tools.zk.layout import (
    CONFIG_TOPICS,
    Broker,
    ConsumerGroupZk,
    Controller,
    MalformedZnodeError,
    Topic,
    build_topic,
    build_topic_07,
    is_topic_07,
    parse_broker,
    parse_cluster_id,
    parse_consumer_registration,
    parse_controller,
    parse_int,
    parse_offset,
    parse_owner,
    parse_partition_key,
    parse_topic_assignment,
    parse_topic_config,
    partition_sort_key,
    znode_json,
)
from kafka_tools.zk.names import CONSUMERS, LEGAL_TOPIC, group_path

if TYPE_CHECKING:
    from kazoo.client import KazooClient

READ_TIMEOUT = 60.0  # for one wave; kazoo itself fails the requests sooner if the connection dies

BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CLUSTER_ID = "/cluster/id"


class Wave:
    """Requests fired together and collected together: one round trip for all of them.

    ``get``/``children`` queue a request under a key; ``collect()`` waits for every answer and
    returns key → data (bytes) or children (list of names), None where the znode does not exist.
    """

    def __init__(self, zk: KazooClient, timeout: float = READ_TIMEOUT) -> None:
        self.zk = zk
        self.timeout = timeout
        self._pending: list[tuple[Hashable, str, Any]] = []
        self._versioned: set[Hashable] = set()

    def get(self, key: Hashable, path: str) -> None:
        self._pending.append((key, path, self.zk.get_async(path)))

    def get_versioned(self, key: Hashable, path: str) -> None:
        """Like ``get``, answered as (data, the znode's version): the KRaft migration reads a partition's
        epoch from its state znode's version."""
        self._versioned.add(key)
        self.get(key, path)

    def children(self, key: Hashable, path: str) -> None:
        self._pending.append((key, path, self.zk.get_children_async(path)))

    def __len__(self) -> int:
        return len(self._pending)

    def collect(self) -> dict[Hashable, Any]:
        from kazoo.exceptions import NoNodeError

        deadline = time.monotonic() + self.timeout
        answers: dict[Hashable, Any] = {}
        pending, self._pending = self._pending, []
        versioned, self._versioned = self._versioned, set()
        for key, path, result in pending:
            try:
                value = result.get(timeout=max(0.0, deadline - time.monotonic()))
            except NoNodeError:
                value = None
            except Exception as exc:
                raise zk_error(exc, describe(self.zk), path, credentials_of(self.zk)) from None
            # get_async answers (data, stat); get_children_async a list of names
            if key in versioned:
                answers[key] = None if value is None else (value[0], value[1].version)
            else:
                answers[key] = value[0] if isinstance(value, tuple) else value
        return answers


def _root_missing(zk: KazooClient, path: str, what: str) -> ZnodeMissingError:
    return ZnodeMissingError(f"no {path} on ZooKeeper {describe(zk)}: {what} (is this Kafka's chroot?)", path)


# --------------------------------------------------------------------------- brokers and cluster


@dataclass
class Cluster:
    """The cluster as ZooKeeper shows it: live brokers, the controller, the cluster id (0.10.1+)."""

    brokers: list[Broker] = field(default_factory=list)
    controller: Controller | None = None
    cluster_id: str | None = None


def read_cluster(zk: KazooClient) -> Cluster:
    """Brokers, controller and cluster id in two waves."""
    wave = Wave(zk)
    wave.children("ids", BROKER_IDS)
    _ask_cluster_parts(wave)
    first = wave.collect()
    if first["ids"] is None:
        raise _root_missing(zk, BROKER_IDS, "no Kafka broker ever registered under this root")
    cluster = _cluster_parts(first)
    cluster.brokers = _read_brokers(zk, first["ids"])
    return cluster


def _ask_cluster_parts(wave: Wave) -> None:
    wave.get("controller", CONTROLLER)
    wave.get("epoch", CONTROLLER_EPOCH)
    wave.get("cluster", CLUSTER_ID)


def _cluster_parts(got: dict[Hashable, Any]) -> Cluster:
    epoch = None if got["epoch"] is None else parse_int(got["epoch"], CONTROLLER_EPOCH)
    ctrl = None if got["controller"] is None else parse_controller(got["controller"], CONTROLLER, epoch)
    cid = None if got["cluster"] is None else parse_cluster_id(got["cluster"], CLUSTER_ID)
    return Cluster([], ctrl, cid)


def _read_brokers(zk: KazooClient, ids: Iterable[str]) -> list[Broker]:
    wave = Wave(zk)
    for name in ids:
        if not name.isdigit():
            raise MalformedZnodeError(BROKER_IDS, f"child {name!r} is not a broker id")
        wave.get(int(name), f"{BROKER_IDS}/{name}")
    found = wave.collect()
    return [
        parse_broker(bid, data, f"{BROKER_IDS}/{bid}")
        for bid, data in sorted(found.items())
        if data is not None  # stopped while we read
    ]


def read_brokers(zk: KazooClient) -> list[Broker]:
    """Every live broker registration under ``/brokers/ids``, by id."""
    ids = zk_children(zk, BROKER_IDS)
    if ids is None:
        raise _root_missing(zk, BROKER_IDS, "no Kafka broker ever registered under this root")
    return _read_brokers(zk, ids)


def controller(zk: KazooClient) -> Controller | None:
    """``/controller`` with ``/controller_epoch``; None when no controller is elected."""
    wave = Wave(zk)
    _ask_cluster_parts(wave)
    return _cluster_parts(wave.collect()).controller


def read_controller_json(zk: KazooClient) -> dict | None:
    """``/controller`` as its JSON object (the KRaft migration reads its ``kraftControllerEpoch``);
    None when no controller is elected or an 0.8.0 controller wrote a bare id."""
    wave = Wave(zk)
    wave.get("controller", CONTROLLER)
    data = wave.collect()["controller"]
    if data is None or re.fullmatch(rb"\s*-?\d+\s*", data):
        return None
    return znode_json(data, CONTROLLER)


def cluster_id(zk: KazooClient) -> str | None:
    """``/cluster/id``; None on clusters before 0.10.1, which have none."""
    wave = Wave(zk)
    wave.get("id", CLUSTER_ID)
    data = wave.collect()["id"]
    return None if data is None else parse_cluster_id(data, CLUSTER_ID)


def zk_children(zk: KazooClient, path: str) -> list[str] | None:
    """Children of one znode, sorted; None when it does not exist."""
    wave = Wave(zk)
    wave.children(path, path)
    names = wave.collect()[path]
    return None if names is None else sorted(names)


# --------------------------------------------------------------------------- topics


def list_topics(zk: KazooClient) -> list[str]:
    names = zk_children(zk, BROKER_TOPICS)
    if names is None:
        raise _root_missing(zk, BROKER_TOPICS, "no topic was ever created under this root")
    return names


def read_topics(zk: KazooClient, topics: Iterable[str] | None = None) -> list[Topic]:
    """Topics with every partition's replicas and state (0.8+) or per-broker partitions (0.7).

    ``topics`` None reads them all; a named topic that does not exist raises ZnodeMissingError.
    """
    names = sorted(set(topics)) if topics is not None else list_topics(zk)
    wave = Wave(zk)
    for name in filter(LEGAL_TOPIC.fullmatch, names):
        wave.get(("data", name), f"{BROKER_TOPICS}/{name}")
        wave.children(("children", name), f"{BROKER_TOPICS}/{name}")
    first = wave.collect()
    missing = [n for n in names if first.get(("data", n)) is None]
    if missing and topics is not None:
        if zk_children(zk, BROKER_TOPICS) is None:
            raise _root_missing(zk, BROKER_TOPICS, "no topic was ever created under this root")
        plural = "s" if len(missing) > 1 else ""
        raise ZnodeMissingError(
            f"no topic{plural} {', '.join(missing)} in {BROKER_TOPICS} on ZooKeeper {describe(zk)}",
            f"{BROKER_TOPICS}/{missing[0]}",
        )
    names = [n for n in names if n not in missing]  # deleted while we read

    second = Wave(zk)
    old: dict[str, list[int]] = {}
    for name in names:
        data, children = first[("data", name)], first[("children", name)] or []
        base = f"{BROKER_TOPICS}/{name}"
        if is_topic_07(data, children):
            old[name] = sorted(int(c) for c in children)
            for broker in old[name]:
                second.get((name, broker), f"{base}/{broker}")
        else:
            _, assignment = parse_topic_assignment(data, base)
            for p in assignment:
                second.get((name, p), f"{base}/partitions/{p}/state")
    got = second.collect()

    result = []
    for name in names:
        base = f"{BROKER_TOPICS}/{name}"
        if name in old:
            result.append(build_topic_07(name, {b: got[(name, b)] for b in old[name]}, path=base))
        else:
            states = {p: data for (t, p), data in got.items() if t == name}
            result.append(build_topic(name, first[("data", name)], states, path=base))
    return result


def read_topic_configs(zk: KazooClient, topics: Iterable[str]) -> dict[str, dict[str, str]]:
    """Each topic's config overrides (`/config/topics/<topic>`); {} for a topic with none."""
    wave = Wave(zk)
    names = sorted(set(topics))
    for name in filter(LEGAL_TOPIC.fullmatch, names):
        wave.get(name, f"{CONFIG_TOPICS}/{name}")
    got = wave.collect()
    return {
        name: parse_topic_config(got[name], f"{CONFIG_TOPICS}/{name}") if got.get(name) is not None else {}
        for name in names
    }


# --------------------------------------------------------------------------- consumer groups


def list_groups(zk: KazooClient) -> list[str]:
    """ZooKeeper-based consumer groups (``/consumers/G``); [] when there are none."""
    return zk_children(zk, CONSUMERS) or []


def read_group(zk: KazooClient, group: str, topics: Iterable[str] | None = None) -> ConsumerGroupZk:
    """Members with subscriptions, committed offsets and partition owners of one group, in three waves.

    ``topics`` limits offsets and owners to those topics. 0.7 groups come back keyed by
    :class:`~kafka_tools.zk.layout.BrokerPartition`, their offsets byte positions (see ``layout``).
    """
    base = group_path(group)
    wave = Wave(zk)
    wave.get("group", base)
    wave.children("ids", f"{base}/ids")
    wave.children("offsets", f"{base}/offsets")
    wave.children("owners", f"{base}/owners")
    first = wave.collect()
    if first["group"] is None:
        raise ZnodeMissingError(f"no consumer group {group!r} ({base}) on ZooKeeper {describe(zk)}", base)
    wanted = None if topics is None else set(topics)

    def keep(names: list[str] | None) -> list[str]:
        return sorted(n for n in names or [] if wanted is None or n in wanted)

    second = Wave(zk)
    members = sorted(first["ids"] or [])
    for member in members:
        second.get(("member", member), f"{base}/ids/{member}")
    for kind in ("offsets", "owners"):
        for topic in keep(first[kind]):
            second.children((kind, topic), f"{base}/{kind}/{topic}")
    got = second.collect()

    third = Wave(zk)
    for (kind, topic), names in got.items():
        if kind == "member" or names is None:
            continue
        parent = f"{base}/{kind}/{topic}"
        for name in names:
            key = parse_partition_key(name, parent)
            third.get((kind, topic, key), f"{parent}/{name}")
    leaves = third.collect()

    result = ConsumerGroupZk(group)
    # /consumers/G/owners/T and /offsets/T stay after the consumers leave: the topics the group read.
    result.known_topics = sorted(set(keep(first["owners"])) | set(keep(first["offsets"])))
    for member in members:
        data = got[("member", member)]
        if data is not None:
            result.members.append(parse_consumer_registration(member, data, f"{base}/ids/{member}"))
    for (kind, topic, key), data in sorted(
        leaves.items(), key=lambda kv: (kv[0][0], kv[0][1], partition_sort_key(kv[0][2]))
    ):
        if data is None:
            continue  # an owner released its partition while we read
        path = f"{base}/{kind}/{topic}/{key}"
        if kind == "offsets":
            result.offsets[(topic, key)] = parse_offset(data, path)
        else:
            result.owners[(topic, key)] = parse_owner(data, path)
    return result
