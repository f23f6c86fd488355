"""The znode layout Kafka keeps in ZooKeeper, parsed into dataclasses. Pure: bytes in, dataclass out.

Two generations are recognised, and every parsed object says which one it came from (`layout`):

* ``"0.8+"``, the layout of the Kafka docs: ``/brokers/ids/N`` and ``/controller`` are JSON,
  ``/brokers/topics/T`` maps partition → replicas, ``/brokers/topics/T/partitions/P/state`` holds
  leader and ISR, ``/consumers/G/{offsets,owners}/T/P`` are keyed by partition number;
* ``"0.7"``: brokers register ``/brokers/ids/N`` as the string ``host-ts:host:port``, topics are
  ``/brokers/topics/T/<brokerId>`` = partition count on that broker, and consumer offsets/owners are
  keyed ``brokerId-partition`` (a :class:`BrokerPartition`); 0.7 offsets are byte positions in the log.

A znode that is neither raises :class:`MalformedZnodeError` naming its path (exit code 3).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafka_tools import bounded_json
from kafka_tools.errors import InputError

LAYOUT_07 = "0.7"
LAYOUT_08 = "0.8+"
LAYOUT_MIXED = "mixed"  # a consumer group holding both 0.7 and 0.8+ keys (a name reused after a migration)

PATTERN_STATIC = "static"
PATTERN_WHITELIST = "white_list"
PATTERN_BLACKLIST = "black_list"

NO_LEADER = -1


class MalformedZnodeError(InputError):
    """A znode's data is not what Kafka writes there; the message names the path."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"malformed znode {path}: {problem}")
        self.path = path


# --------------------------------------------------------------------------- value helpers


def _text(data: bytes | None, path: str) -> str:
    try:
        return (data or b"").decode("utf-8").strip()
    except UnicodeDecodeError as exc:
        raise MalformedZnodeError(path, f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None


def _json_object(data: bytes | None, path: str) -> dict[str, Any]:
    text = _text(data, path)
    if not text:
        raise MalformedZnodeError(path, "empty, expected a JSON object")
    try:
        value = bounded_json.loads(text)
    except bounded_json.JsonRejected as exc:
        raise MalformedZnodeError(path, str(exc)) from None
    if not isinstance(value, dict):
        raise MalformedZnodeError(path, f"expected a JSON object, found {type(value).__name__}")
    return value


def znode_json(data: bytes | None, path: str) -> dict[str, Any]:
    """A znode holding one JSON object, read through the one bounded reader (MalformedZnodeError)."""
    return _json_object(data, path)


def _as_int(value: Any, path: str, name: str) -> int:
    """Kafka writes some numbers as JSON strings (``"timestamp":"1463…"``); accept both."""
    if isinstance(value, bool):
        raise MalformedZnodeError(path, f"{name} is {value!r}, expected an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    raise MalformedZnodeError(path, f"{name} is {value!r}, expected an integer")


def _opt_int(obj: Mapping[str, Any], key: str, path: str) -> int | None:
    value = obj.get(key)
    return None if value is None else _as_int(value, path, key)


def _req_int(obj: Mapping[str, Any], key: str, path: str) -> int:
    if key not in obj:
        raise MalformedZnodeError(path, f"no field {key!r}")
    return _as_int(obj[key], path, key)


def _int_list(value: Any, path: str, name: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise MalformedZnodeError(path, f"{name} is {value!r}, expected a list of broker ids")
    return tuple(_as_int(v, path, name) for v in value)


def parse_int(data: bytes | None, path: str) -> int:
    """A znode holding one decimal number: offsets, ``/controller_epoch``, 0.7 partition counts."""
    text = _text(data, path)
    if not re.fullmatch(r"-?\d+", text):
        raise MalformedZnodeError(path, f"{text[:40]!r} is not a number")
    return int(text)


# --------------------------------------------------------------------------- brokers


@dataclass(frozen=True)
class Broker:
    """``/brokers/ids/N``: a live broker's registration (an ephemeral znode)."""

    id: int
    host: str | None
    port: int | None
    endpoints: tuple[str, ...] = ()
    jmx_port: int | None = None
    timestamp: int | None = None  # registration time, ms since the epoch
    version: int | None = None  # registration format: 1 = 0.8, 2 = 0.9, 3+ = 0.10+; None for 0.7
    rack: str | None = None
    layout: str = LAYOUT_08
    creator: str | None = None  # 0.7 only: "host-timestamp"

    @property
    def version_hint(self) -> str | None:
        """The broker's Kafka version as far as its registration tells: 0.7, 0.8.x, 0.9.x, 0.10+."""
        return _hint(self)


_REGISTRATION_07 = re.compile(r"(?P<creator>.*-(?P<ts>\d+)):(?P<host>[^:]*):(?P<port>\d+)")


def parse_broker(broker_id: int, data: bytes | None, path: str) -> Broker:
    """``/brokers/ids/N``: JSON (0.8+) or the 0.7 string ``host-ts:host:port``."""
    text = _text(data, path)
    match = _REGISTRATION_07.fullmatch(text)
    if text and text[0] not in "{[" and match is None:
        raise MalformedZnodeError(
            path, "neither a JSON registration (0.8+) nor a 0.7 one (host-timestamp:host:port)"
        )
    if match is not None:
        return Broker(
            id=broker_id,
            host=match["host"],
            port=int(match["port"]),
            timestamp=int(match["ts"]),
            layout=LAYOUT_07,
            creator=match["creator"],
        )
    obj = _json_object(data, path)
    host = obj.get("host")
    if host is not None and not isinstance(host, str):
        raise MalformedZnodeError(path, f"host is {host!r}, expected a string")
    endpoints = obj.get("endpoints") or []
    if not isinstance(endpoints, list) or not all(isinstance(e, str) for e in endpoints):
        raise MalformedZnodeError(path, f"endpoints is {endpoints!r}, expected a list of strings")
    rack = obj.get("rack")
    return Broker(
        id=broker_id,
        host=host,
        port=_opt_int(obj, "port", path),
        endpoints=tuple(endpoints),
        jmx_port=_opt_int(obj, "jmx_port", path),
        timestamp=_opt_int(obj, "timestamp", path),
        version=_opt_int(obj, "version", path),
        rack=None if rack is None else str(rack),
    )


_HINT_ORDER = ("0.7", "0.8.x", "0.9.x", "0.10+")


def _hint(broker: Broker) -> str | None:
    if broker.layout == LAYOUT_07:
        return "0.7"
    if broker.version is None or broker.version < 1:
        return None
    return {1: "0.8.x", 2: "0.9.x"}.get(broker.version, "0.10+")


def broker_version_hint(brokers: Iterable[Broker]) -> str | None:
    """The oldest Kafka version among the registered brokers: ``0.7``, ``0.8.x``, ``0.9.x`` or ``0.10+``.

    From the registration's ``version`` field: 1 is written by 0.8, 2 by 0.9 (no ApiVersions request
    yet), 3 and later by 0.10+ (ApiVersions works); a 0.7 string registration is 0.7. The oldest broker
    decides, since a client must talk to every broker. None when no broker says.
    """
    hints = [h for h in (_hint(b) for b in brokers) if h is not None]
    return min(hints, key=_HINT_ORDER.index) if hints else None


def librdkafka_compat(hint: str | None) -> dict[str, str] | None:
    """librdkafka settings a client needs for brokers of this version; None if it cannot talk to them.

    Brokers before 0.10 do not answer ApiVersions: the client must not ask, and must be told the
    version instead.
    """
    if hint == "0.9.x":
        return {"api.version.request": "false", "broker.version.fallback": "0.9.0.1"}
    if hint == "0.8.x":
        return {"api.version.request": "false", "broker.version.fallback": "0.8.2.2"}
    if hint == "0.7":
        return None  # librdkafka speaks no 0.7 protocol
    return {}


# --------------------------------------------------------------------------- controller, cluster id


@dataclass(frozen=True)
class Controller:
    """``/controller`` (and ``/controller_epoch``): which broker is the controller."""

    broker_id: int
    timestamp: int | None = None
    version: int | None = None
    epoch: int | None = None


def parse_controller(data: bytes | None, path: str, epoch: int | None = None) -> Controller:
    """JSON ``{"version":1,"brokerid":0,"timestamp":"…"}``; Kafka 0.8.0 wrote the bare broker id."""
    text = _text(data, path)
    if re.fullmatch(r"-?\d+", text):
        return Controller(broker_id=int(text), epoch=epoch)
    obj = _json_object(data, path)
    return Controller(
        broker_id=_req_int(obj, "brokerid", path),
        timestamp=_opt_int(obj, "timestamp", path),
        version=_opt_int(obj, "version", path),
        epoch=epoch,
    )


def parse_cluster_id(data: bytes | None, path: str) -> str:
    """``/cluster/id``: ``{"version":"1","id":"…"}`` (Kafka 0.10.1+)."""
    obj = _json_object(data, path)
    cid = obj.get("id")
    if not isinstance(cid, str) or not cid:
        raise MalformedZnodeError(path, f"id is {cid!r}, expected a non-empty string")
    return cid


# --------------------------------------------------------------------------- topics and partitions


class BrokerPartition(NamedTuple):
    """A Kafka 0.7 partition: partitions were numbered per broker, keyed ``brokerId-partition``."""

    broker: int
    partition: int

    def __str__(self) -> str:
        return f"{self.broker}-{self.partition}"


PartitionKey = int | BrokerPartition


def parse_partition_key(name: str, path: str) -> PartitionKey:
    """A child name under ``offsets/T`` or ``owners/T``: ``3`` (0.8+) or ``1-3`` (0.7)."""
    if re.fullmatch(r"\d+", name):
        return int(name)
    match = re.fullmatch(r"(\d+)-(\d+)", name)
    if match is None:
        raise MalformedZnodeError(path, f"child {name!r} is neither a partition nor a 0.7 brokerId-partition")
    return BrokerPartition(int(match[1]), int(match[2]))


def partition_sort_key(key: PartitionKey) -> tuple[int, int]:
    return (key.broker, key.partition) if isinstance(key, BrokerPartition) else (-1, key)


@dataclass(frozen=True)
class PartitionState:
    """``/brokers/topics/T/partitions/P/state``: the controller's view of leader and ISR."""

    leader: int
    isr: tuple[int, ...]
    leader_epoch: int
    controller_epoch: int
    version: int | None = None


def parse_partition_state(data: bytes | None, path: str) -> PartitionState:
    obj = _json_object(data, path)
    if "isr" not in obj:
        raise MalformedZnodeError(path, "no field 'isr'")
    return PartitionState(
        leader=_req_int(obj, "leader", path),
        isr=_int_list(obj["isr"], path, "isr"),
        leader_epoch=_req_int(obj, "leader_epoch", path),
        controller_epoch=_req_int(obj, "controller_epoch", path),
        version=_opt_int(obj, "version", path),
    )


def parse_topic_assignment(data: bytes | None, path: str) -> tuple[int | None, dict[int, tuple[int, ...]]]:
    """``/brokers/topics/T`` (0.8+): ``{"version":1,"partitions":{"0":[0,1]}}`` → (version, replicas)."""
    obj = _json_object(data, path)
    parts = obj.get("partitions")
    if not isinstance(parts, dict):
        raise MalformedZnodeError(path, f"partitions is {parts!r}, expected an object partition → replicas")
    assignment: dict[int, tuple[int, ...]] = {}
    for name, replicas in parts.items():
        if not re.fullmatch(r"\d+", name):
            raise MalformedZnodeError(path, f"partition {name!r} is not a number")
        assignment[int(name)] = _int_list(replicas, path, f"partitions[{name}]")
    return _opt_int(obj, "version", path), dict(sorted(assignment.items()))


@dataclass(frozen=True)
class TopicPartition:
    """One partition of a topic with its replicas and, when the controller wrote one, its state."""

    topic: str
    partition: PartitionKey
    replicas: tuple[int, ...]
    state: PartitionState | None = None

    @property
    def leader(self) -> int | None:
        if self.state is not None:
            return self.state.leader
        if isinstance(self.partition, BrokerPartition):
            return self.partition.broker  # 0.7: no replication, the broker serves its own partitions
        return None

    @property
    def under_replicated(self) -> bool:
        return self.state is not None and len(self.state.isr) < len(self.replicas)

    @property
    def offline(self) -> bool:
        return self.state is not None and self.state.leader == NO_LEADER


@dataclass(frozen=True)
class Topic:
    name: str
    layout: str
    partitions: tuple[TopicPartition, ...]
    version: int | None = None


def build_topic(
    name: str,
    assignment: bytes | None,
    states: Mapping[int, bytes | None],
    *,
    path: str,
) -> Topic:
    """A 0.8+ topic from ``/brokers/topics/T`` and the state znodes read for its partitions.

    ``states`` maps partition → the state znode's data, None when there is none (yet).
    """
    version, replicas = parse_topic_assignment(assignment, path)
    partitions = []
    for p, reps in replicas.items():
        raw = states.get(p)
        state = None if raw is None else parse_partition_state(raw, f"{path}/partitions/{p}/state")
        partitions.append(TopicPartition(name, p, reps, state))
    return Topic(name, LAYOUT_08, tuple(partitions), version)


def build_topic_07(name: str, broker_counts: Mapping[int, bytes | None], *, path: str) -> Topic:
    """A 0.7 topic from its ``/brokers/topics/T/<brokerId>`` children (partition count each)."""
    partitions = []
    for broker in sorted(broker_counts):
        raw = broker_counts[broker]
        if raw is None:
            continue  # the broker went away while we read (0.7 registrations are ephemeral)
        count = parse_int(raw, f"{path}/{broker}")
        partitions += [TopicPartition(name, BrokerPartition(broker, p), (broker,)) for p in range(count)]
    return Topic(name, LAYOUT_07, tuple(partitions))


def is_topic_07(data: bytes | None, children: Iterable[str]) -> bool:
    """0.7 topic znodes carry no data and have broker ids as children; 0.8+ ones hold JSON."""
    return not (data or b"").strip() and all(c.isdigit() for c in children)


# --------------------------------------------------------------------------- consumers (ZooKeeper-based)


@dataclass(frozen=True)
class ConsumerMember:
    """``/consumers/G/ids/C``: a live consumer's registration and subscription."""

    id: str
    subscription: dict[str, int]  # topic (static) or regex (white_list/black_list) → stream count
    pattern: str
    version: int | None = None
    timestamp: int | None = None
    layout: str = LAYOUT_08


_WILDCARD_07 = re.compile(r"(?P<marker>[*!])(?P<streams>\d+)(?P=marker)(?P<regex>.*)", re.DOTALL)


def parse_consumer_registration(member_id: str, data: bytes | None, path: str) -> ConsumerMember:
    """0.8+: ``{"version":1,"subscription":{"orders":2},"pattern":"static","timestamp":"…"}``.

    0.7: a JSON map topic → streams for a static subscription, or ``*N*regex`` (whitelist) /
    ``!N!regex`` (blacklist) for a wildcard one.
    """
    text = _text(data, path)
    wildcard = _WILDCARD_07.fullmatch(text)
    if wildcard is not None:
        pattern = PATTERN_WHITELIST if wildcard["marker"] == "*" else PATTERN_BLACKLIST
        return ConsumerMember(
            member_id, {wildcard["regex"]: int(wildcard["streams"])}, pattern, layout=LAYOUT_07
        )
    obj = _json_object(data, path)
    if "subscription" not in obj:
        subscription = _subscription(obj, path)
        return ConsumerMember(member_id, subscription, PATTERN_STATIC, layout=LAYOUT_07)
    pattern = obj.get("pattern", PATTERN_STATIC)
    if pattern not in (PATTERN_STATIC, PATTERN_WHITELIST, PATTERN_BLACKLIST):
        raise MalformedZnodeError(path, f"pattern is {pattern!r}, expected static, white_list or black_list")
    return ConsumerMember(
        member_id,
        _subscription(obj["subscription"], path),
        pattern,
        version=_opt_int(obj, "version", path),
        timestamp=_opt_int(obj, "timestamp", path),
    )


def _subscription(value: Any, path: str) -> dict[str, int]:
    if not isinstance(value, dict):
        raise MalformedZnodeError(path, f"subscription is {value!r}, expected an object topic → streams")
    return {str(k): _as_int(v, path, f"subscription[{k}]") for k, v in value.items()}


def parse_offset(data: bytes | None, path: str) -> int:
    """``/consumers/G/offsets/T/P``: a decimal offset (0.7: a byte position in the partition's log)."""
    return parse_int(data, path)


def parse_owner(data: bytes | None, path: str) -> str:
    """``/consumers/G/owners/T/P``: the consumer thread id owning the partition."""
    return _text(data, path)


@dataclass
class ConsumerGroupZk:
    """Everything ZooKeeper holds about a ZooKeeper-based (pre-0.9 style) consumer group."""

    group: str
    members: list[ConsumerMember] = field(default_factory=list)
    offsets: dict[tuple[str, PartitionKey], int] = field(default_factory=dict)
    owners: dict[tuple[str, PartitionKey], str] = field(default_factory=dict)
    known_topics: list[str] = field(default_factory=list)  # children of /consumers/G/owners and /offsets

    @property
    def layout(self) -> str | None:
        """``0.7``, ``0.8+``, ``mixed``, or None for a group with nothing in it."""
        keys = list(self.offsets) + list(self.owners)
        kinds = {LAYOUT_07 if isinstance(p, BrokerPartition) else LAYOUT_08 for _, p in keys}
        kinds |= {m.layout for m in self.members}
        if not kinds:
            return None
        return kinds.pop() if len(kinds) == 1 else LAYOUT_MIXED

    @property
    def offset_unit(self) -> str:
        """What the offsets count: 0.7 stored byte positions, 0.8+ message offsets."""
        return "byte-position" if self.layout == LAYOUT_07 else "offset"

    def topics(self) -> list[str]:
        """Every topic the group has offsets, owners or an (emptied) owners/offsets znode for."""
        return sorted({t for t, _ in self.offsets} | {t for t, _ in self.owners} | set(self.known_topics))


# --------------------------------------------------------------------------- topic configs

CONFIG_TOPICS = "/config/topics"


def parse_topic_config(data: bytes | None, path: str) -> dict[str, str]:
    """`/config/topics/<topic>`: {"version": 1, "config": {name: value}} → the overrides as text."""
    obj = _json_object(data, path)
    config = obj.get("config", {})
    if not isinstance(config, dict):
        raise MalformedZnodeError(path, f"config is {type(config).__name__}, expected an object")
    return {str(k): str(v) for k, v in config.items()}
