"""The settings the broker's delete policy and log cleaner read, and where each one came from.

Precedence, as the broker applies it: a topic override (ZooKeeper `/config/topics/<topic>`, or a
broker's DescribeConfigs on KRaft clusters) beats the broker's `server.properties`, which beats Kafka's
default; ktool's flags beat all three. A broker asked reports its own settings too (its
server.properties, dynamic broker configs): they beat a `--server-properties` file. Within
server.properties `log.retention.ms` beats `log.retention.minutes`, which beats `log.retention.hours`
(KafkaConfig.logRetentionTimeMillis).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

from kafka_tools.errors import InputError, UsageError, os_reason
from kafka_tools.format.shared_methods import FrozenSharedMethods, SharedMethods

HOUR_MS = 3_600_000
# Kafka's defaults (KafkaConfig / LogConfig Defaults).
DEFAULT_RETENTION_MS = 168 * HOUR_MS
DEFAULT_RETENTION_BYTES = -1
DEFAULT_CLEANUP_POLICY = "delete"
DEFAULT_MIN_CLEANABLE_RATIO = 0.5
DEFAULT_DELETE_RETENTION_MS = 24 * HOUR_MS
# Internal topics the broker itself creates compacted (GroupMetadataManager, TransactionStateManager).
COMPACTED_INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
POLICIES = frozenset({"delete", "compact"})


@dataclass(init=False, repr=False, eq=False)
class Setting(FrozenSharedMethods):
    """A value and where it came from (`--retention-ms`, `zookeeper /config/topics/t`, …)."""

    value: object
    source: str

    def __init__(self, value: object, source: str) -> None:
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "source", source)


@dataclass(init=False, repr=False, eq=False)
class TopicSettings(FrozenSharedMethods):
    retention_ms: Setting
    retention_bytes: Setting
    cleanup_policy: Setting  # a frozenset of "delete" / "compact"
    min_cleanable_ratio: Setting
    delete_retention_ms: Setting
    cleaner_enable: Setting | None = None  # log.cleaner.enable, when server.properties sets it

    def __init__(
        self,
        retention_ms: Setting,
        retention_bytes: Setting,
        cleanup_policy: Setting,
        min_cleanable_ratio: Setting,
        delete_retention_ms: Setting,
        cleaner_enable: Setting | None = None,
    ) -> None:
        object.__setattr__(self, "retention_ms", retention_ms)
        object.__setattr__(self, "retention_bytes", retention_bytes)
        object.__setattr__(self, "cleanup_policy", cleanup_policy)
        object.__setattr__(self, "min_cleanable_ratio", min_cleanable_ratio)
        object.__setattr__(self, "delete_retention_ms", delete_retention_ms)
        object.__setattr__(self, "cleaner_enable", cleaner_enable)

    @property
    def deletes(self) -> bool:
        return "delete" in self.cleanup_policy.value  # type: ignore[operator]

    @property
    def compacts(self) -> bool:
        return "compact" in self.cleanup_policy.value  # type: ignore[operator]

    def as_dict(self) -> dict[str, dict[str, object]]:
        """camelCase names for --json; each {value, source}."""

        def one(s: Setting) -> dict[str, object]:
            v = ",".join(sorted(s.value)) if isinstance(s.value, frozenset) else s.value
            return {"value": v, "source": s.source}

        return {
            "retentionMs": one(self.retention_ms),
            "retentionBytes": one(self.retention_bytes),
            "cleanupPolicy": one(self.cleanup_policy),
            "minCleanableDirtyRatio": one(self.min_cleanable_ratio),
            "deleteRetentionMs": one(self.delete_retention_ms),
        }


@dataclass(init=False, repr=False, eq=False)
class SettingSources(SharedMethods):
    """Everything a topic's settings are resolved from."""

    flags: dict[str, Setting] = field(default_factory=dict)  # keys: retention.ms, retention.bytes
    broker: dict[str, Setting] = field(default_factory=dict)  # topic-level names, from server.properties
    topic_overrides: dict[str, dict[str, str]] = field(default_factory=dict)  # topic -> ZooKeeper config
    # topic -> name -> where a value of topic_overrides came from, when not ZooKeeper's /config/topics
    # (a broker's DescribeConfigs: the topic's override or the broker's own setting)
    override_sources: dict[str, dict[str, str]] = field(default_factory=dict)

    def __init__(
        self,
        flags: dict[str, Setting] | None = None,
        broker: dict[str, Setting] | None = None,
        topic_overrides: dict[str, dict[str, str]] | None = None,
        override_sources: dict[str, dict[str, str]] | None = None,
    ) -> None:
        self.flags = {} if flags is None else flags
        self.broker = {} if broker is None else broker
        self.topic_overrides = {} if topic_overrides is None else topic_overrides
        self.override_sources = {} if override_sources is None else override_sources

    def for_topic(self, topic: str) -> TopicSettings:
        settings = self._for_topic(topic)
        if "log.cleaner.enable" in self.broker:
            settings = replace(settings, cleaner_enable=self.broker["log.cleaner.enable"])
        return settings

    def _for_topic(self, topic: str) -> TopicSettings:
        overrides = self.topic_overrides.get(topic, {})
        where = f"zookeeper /config/topics/{topic}"

        def pick(name: str, default: object, parse, default_source: str = "Kafka default") -> Setting:
            if name in self.flags:
                return self.flags[name]
            if name in overrides:
                source = self.override_sources.get(topic, {}).get(name, where)
                return Setting(parse(overrides[name], f"{source}: {name}"), source)
            if name in self.broker:
                return self.broker[name]
            return Setting(default, default_source)

        policy_default: object = frozenset({DEFAULT_CLEANUP_POLICY})
        policy_source = "Kafka default"
        if topic in COMPACTED_INTERNAL_TOPICS and "cleanup.policy" not in overrides:
            # The broker creates these with cleanup.policy=compact as a topic config; without
            # ZooKeeper that override is unseen, but it is always there.
            return TopicSettings(
                pick("retention.ms", DEFAULT_RETENTION_MS, parse_long),
                pick("retention.bytes", DEFAULT_RETENTION_BYTES, parse_long),
                Setting(frozenset({"compact"}), "internal topic (the broker creates it compacted)"),
                pick("min.cleanable.dirty.ratio", DEFAULT_MIN_CLEANABLE_RATIO, parse_ratio),
                pick("delete.retention.ms", DEFAULT_DELETE_RETENTION_MS, parse_long),
            )
        return TopicSettings(
            pick("retention.ms", DEFAULT_RETENTION_MS, parse_long),
            pick("retention.bytes", DEFAULT_RETENTION_BYTES, parse_long),
            pick("cleanup.policy", policy_default, parse_policy, policy_source),
            pick("min.cleanable.dirty.ratio", DEFAULT_MIN_CLEANABLE_RATIO, parse_ratio),
            pick("delete.retention.ms", DEFAULT_DELETE_RETENTION_MS, parse_long),
        )


def parse_long(text: str, where: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise InputError(f"{where}: {str(text)[:40]!r} is not a whole number") from None


def parse_ratio(text: str, where: str) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise InputError(f"{where}: {str(text)[:40]!r} is not a number") from None
    if not 0 <= value <= 1:
        raise InputError(f"{where}: {value} is outside 0..1")
    return value


def parse_policy(text: str, where: str) -> frozenset[str]:
    words = frozenset(w.strip().lower() for w in str(text).replace("[", "").replace("]", "").split(","))
    words = frozenset(w for w in words if w)
    if not words or not words <= POLICIES:
        raise InputError(f"{where}: {str(text)[:40]!r} is not a cleanup policy (delete, compact, or both)")
    return words


def read_server_properties(path: str | os.PathLike) -> dict[str, str]:
    """A Java properties file of `key=value` lines; unreadable is InputError (exit 3)."""
    try:
        with open(path, "rb") as f:
            raw = f.read(16 * 1024 * 1024 + 1)
    except OSError as exc:
        raise InputError(f"{path}: cannot read server.properties: {os_reason(exc)}") from None
    if len(raw) > 16 * 1024 * 1024:
        raise InputError(f"{path}: larger than 16 MiB, not a server.properties file")
    text = raw.decode("utf-8", "replace")
    props: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped[0] in "#!":
            continue
        seps = [i for i in (stripped.find("="), stripped.find(":")) if i >= 0]
        if not seps:
            continue  # Java reads a bare key as key="", which sets nothing ktool reads
        sep = min(seps)
        props[stripped[:sep].strip()] = stripped[sep + 1 :].strip()
    return props


def layered_broker_settings(layers: list[tuple[str, dict[str, str]]]) -> dict[str, Setting]:
    """The broker's log.* defaults from its config layers, weakest first (server.properties, then the
    dynamic cluster-wide default, then the node's own: DynamicBrokerConfig overlays the static props and
    the broker then reads the merged ones, so a static log.retention.ms still beats a dynamic
    log.retention.hours), each value named by the layer it came from."""
    merged: dict[str, str] = {}
    labels: dict[str, str] = {}
    for label, props in layers:
        merged.update(props)
        labels.update(dict.fromkeys(props, label))
    return broker_settings(merged, "", labels)


def broker_settings(
    props: dict[str, str], path: str, labels: dict[str, str] | None = None
) -> dict[str, Setting]:
    """server.properties' log.* defaults under their topic-level names, each with its source (`path`, or
    the key's own label in `labels`)."""
    out: dict[str, Setting] = {}

    def src(key: str) -> str:
        return f"{(labels or {}).get(key, path)} ({key})"

    for key, factor in (
        ("log.retention.ms", 1),
        ("log.retention.minutes", 60_000),
        ("log.retention.hours", HOUR_MS),
    ):
        if key in props:
            out["retention.ms"] = Setting(parse_long(props[key], src(key)) * factor, src(key))
            break
    simple = (
        ("log.retention.bytes", "retention.bytes", parse_long),
        ("log.cleanup.policy", "cleanup.policy", parse_policy),
        ("log.cleaner.min.cleanable.ratio", "min.cleanable.dirty.ratio", parse_ratio),
        ("log.cleaner.delete.retention.ms", "delete.retention.ms", parse_long),
    )
    for key, name, parse in simple:
        if key in props:
            out[name] = Setting(parse(props[key], src(key)), src(key))
    if "log.cleaner.enable" in props:
        key = "log.cleaner.enable"
        value = props[key].strip().lower()
        if value not in ("true", "false"):
            raise InputError(f"{src(key)}: {props[key][:40]!r} is not true or false")
        out[key] = Setting(value == "true", src(key))
    return out


def flag_settings(
    retention_ms: int | None, retention_hours: int | None, retention_bytes: int | None
) -> dict[str, Setting]:
    if retention_ms is not None and retention_hours is not None:
        raise UsageError("give --retention-ms or --retention-hours, not both")
    out: dict[str, Setting] = {}
    if retention_ms is not None:
        out["retention.ms"] = Setting(retention_ms, "--retention-ms")
    elif retention_hours is not None:
        out["retention.ms"] = Setting(
            retention_hours * HOUR_MS if retention_hours >= 0 else -1, "--retention-hours"
        )
    if retention_bytes is not None:
        out["retention.bytes"] = Setting(retention_bytes, "--retention-bytes")
    return out
