"""The Kafka side, over confluent-kafka (librdkafka): log start/end offsets, group offsets, topics; the
groups themselves (ListGroups, DescribeGroups, ConsumerGroupDescribe) on ktool's own client.

librdkafka asks a broker for its API versions first; brokers before 0.10 do not answer that request and
librdkafka waits 10 s, then fails. So ktool finds out first: the `version` of a broker's ZooKeeper
registration when ZooKeeper is at hand (1: 0.8, 2: 0.9, 3+: 0.10+), otherwise one raw ApiVersions
request with a short timeout (an old broker closes the connection), or the user's --broker-version.
A secured cluster (TLS, SASL: broker/security.py) is never probed: the raw request would meet a TLS or
SASL handshake and misjudge the broker, and librdkafka's SASL needs 0.10+ anyway.

Why one module of this size: one Broker holds the clients and the one error callback every request's
failure is told through; its requests share them (the wire-level OffsetDelete lives in offset_delete.py,
ListGroups, DescribeGroups and ConsumerGroupDescribe in group_requests.py: this module only joins their
answers in, after the first contact is watched). Over SASL GSSAPI, which confluent-kafka's wheels lack,
the reads the groups commands make go on ktool's own client too (own_reads.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kafka_tools.broker.first_contact import wait_for_first_contact
from kafka_tools.broker.librdkafka_words import (
    QuietLogger,
    coordinator_moving,
    error_words,
    is_refusal,
    is_transport,
    no_answer_words,
    one_line,
    refusal_line,
)
from kafka_tools.broker.probe import first_server, probe_broker_version, version_at_least
from kafka_tools.broker.security import BrokerSecurity
from kafka_tools.errors import FindingsError, InputError, KtoolError

if TYPE_CHECKING:
    from concurrent.futures import Future

    from kafka_tools.broker.group_requests import CoordinatedGroup, ListedGroup

DEFAULT_TIMEOUT = 10.0
# Commit errors that mean "the group is active in Kafka", not "the broker is gone".
_MEMBER_ERRORS = (
    "UNKNOWN_MEMBER_ID",
    "ILLEGAL_GENERATION",
    "REBALANCE_IN_PROGRESS",
    "Unknown member",
    "generation",
    "rebalance",
)
_NO_DELETE_GROUPS = (
    "{where} runs {version}: it has no DeleteGroups request (Kafka 1.1+); a group's offsets there expire "
    "after offsets.retention.minutes"
)


@dataclass
class BrokerConfig:
    bootstrap: str
    version: str | None = None  # e.g. "0.9.0.1"; None: found out by probing
    timeout: float = DEFAULT_TIMEOUT
    extra: dict[str, str] = field(default_factory=dict)  # further librdkafka settings
    security: BrokerSecurity | None = None  # SASL and TLS; its repr shows no secret

    @property
    def secured(self) -> bool:
        return self.security is not None and self.security.protocol != "PLAINTEXT"

    def librdkafka(self) -> dict[str, object]:
        conf: dict[str, object] = {"bootstrap.servers": self.bootstrap, **self.extra}
        if self.security is not None:
            conf.update(self.security.librdkafka())
        # The connection gets the user's timeout; the answer to the probe only a short one (an old
        # broker closes the connection at once, a new one answers at once).
        version = self.version
        if version is None and not self.secured:
            version = probe_broker_version(self.bootstrap, min(self.timeout, 1.5), self.timeout)
        if version and not version_at_least(version, (0, 10)):
            conf["api.version.request"] = False
            conf["broker.version.fallback"] = version
        return conf


@dataclass
class KafkaMember:
    """A member of a group the brokers coordinate, as DescribeGroups reports it; a member of a consumer
    group (KIP-848) adds its epoch and target assignment (ConsumerGroupDescribe)."""

    member_id: str
    client_id: str
    host: str
    assignment: list[tuple[str, int]]
    instance_id: str | None = None
    member_epoch: int | None = None
    target_assignment: list[tuple[str, int]] | None = None


@dataclass
class KafkaGroup:
    """A group as its coordinator describes it: state (`STABLE`, `EMPTY`, …; `DEAD`: it does not know
    the group; `state_name` as Kafka spells it), members, and for the views of kafka-consumer-groups
    `--state [--verbose]`: type, assignor, coordinator, and a consumer group's epochs."""

    state: str
    members: list[KafkaMember]
    state_name: str | None = None
    type: str | None = None
    assignor: str | None = None
    coordinator: tuple[str, int, int] | None = None  # host, port, node id
    group_epoch: int | None = None
    assignment_epoch: int | None = None
    known = property(lambda self: self.state != "DEAD")


class Broker:
    """One client per command: consumer handles for offsets, an admin handle for groups."""

    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self._conf = config.librdkafka()
        self._conf["error_cb"] = self._note_error
        self._refused: str | None = None  # why the brokers refused us (authentication, TLS), once seen
        self._transport: str | None = None  # the last connection failure librdkafka told
        self._admin_client = None
        self._reader = None  # one consumer for ListOffsets, made on first use
        self._marks: dict[tuple[str, int], tuple[int, int]] = {}
        self._own_reads = None  # ktool's own client for what librdkafka cannot speak here (GSSAPI)

    @property
    def own_client(self):
        """ktool's own client for the reads librdkafka would make (this class's and the cluster views'),
        when the mechanism is SASL GSSAPI: confluent-kafka's wheels are built without libsasl2
        (own_reads.py); None otherwise."""
        security = self.config.security
        if security is None or security.credentials is None or security.credentials.mechanism != "GSSAPI":
            return None
        if self._own_reads is None:
            from kafka_tools.broker.own_reads import OwnReads

            self._own_reads = OwnReads(first_server(self.config.bootstrap), self.config.timeout, security)
        return self._own_reads

    def _consumer(self, group: str | None = None):
        from confluent_kafka import Consumer

        conf = dict(self._conf)
        conf.update(
            {
                "group.id": group or "ktool-offset-reader",
                "enable.auto.commit": False,
                "socket.timeout.ms": int(self.config.timeout * 1000),
            }
        )
        return self._client(Consumer, conf)

    def _client(self, kind, conf: dict):
        from confluent_kafka import KafkaException

        try:
            return kind(conf, logger=QuietLogger())
        except KafkaException as exc:  # e.g. a SASL mechanism this librdkafka was built without
            why = error_words(exc)
            security = self.config.security
            if "ssl.key.location" in why and security is not None:
                why = f"TLS client key {security.key} cannot be read (a wrong key-password, or not a PEM key)"
            if "No provider for SASL mechanism GSSAPI" in why:  # confluent-kafka's wheels: no libsasl2
                why = (
                    "this command's requests go through librdkafka, built here without SASL GSSAPI "
                    "(ktool's own client speaks it for groups list, describe, watch, rebalance-plan, topics "
                    "and brokers)"
                )
            raise InputError(f"broker {self.config.bootstrap}: {why}") from None

    def _note_error(self, err) -> None:
        """librdkafka's error callback: a refused authentication or TLS handshake, or every broker's
        connection closed, is told only here (the request times out), so it is kept to be the one line a
        failed request reports (first_contact.py reports it at once)."""
        security = self.config.security.describe() if self.config.security else "PLAINTEXT"
        if self._refused is None:
            self._refused = refusal_line(err, self.config.bootstrap, security, self._transport)
        if is_transport(err):
            self._transport = one_line(err.str())

    def _serve_callbacks(self) -> None:
        """librdkafka calls error_cb only from a client's poll: give it the chance before reporting."""
        for client in (self._admin_client, self._reader):
            if client is not None:
                client.poll(0)

    def _error(self, what: str, exc: Exception) -> InputError:
        self._serve_callbacks()
        if self._refused is not None or is_refusal(exc.args[0] if exc.args else None):
            self._note_error(exc.args[0])
            return InputError(self._refused or "")
        return InputError(f"broker {self.config.bootstrap}: {what}: {error_words(exc, self.config.timeout)}")

    def _no_answer(self, what: str) -> InputError:
        self._serve_callbacks()
        if self._refused is not None:
            return InputError(self._refused)
        return InputError(f"broker {self.config.bootstrap}: {what} within {self.config.timeout + 5:g} s")

    def watermarks(self, partitions: Iterable[tuple[str, int]]) -> dict[tuple[str, int], tuple[int, int]]:
        """(log start, log end) offset of each partition, as ListOffsets reports them; each partition is
        asked once per Broker (a command over many groups reads the same partitions again and again)."""
        from confluent_kafka import KafkaException, TopicPartition

        wanted = list(partitions)
        missing = [tp for tp in wanted if tp not in self._marks]
        if missing and (own := self.own_client) is not None:
            self._marks.update(own.watermarks(missing))
        elif missing:
            if self._reader is None:
                self._reader = self._consumer()
            for topic, partition in missing:
                try:
                    low, high = self._reader.get_watermark_offsets(
                        TopicPartition(topic, partition), timeout=self.config.timeout, cached=False
                    )
                except KafkaException as exc:
                    raise self._error(f"offsets of {topic}-{partition}", exc) from None
                self._marks[(topic, partition)] = (low, high)
        return {tp: self._marks[tp] for tp in wanted}

    @property
    def answers_times(self) -> bool:
        """Whether the brokers answer ListOffsets by timestamp (0.10.1+; a 0.9 or 0.10.0 broker named by
        its ZooKeeper registration, --broker-version or the probe does not)."""
        fallback = self._conf.get("broker.version.fallback")
        return fallback is None or version_at_least(str(fallback), (0, 10, 1))

    def offsets_for_time(
        self, partitions: Iterable[tuple[str, int]], timestamp: int
    ) -> dict[tuple[str, int], int | None]:
        """ListOffsets by timestamp: each partition's first offset whose record's timestamp is at or after
        `timestamp` (epoch ms); None where no record is (the time is after the last one)."""
        from confluent_kafka import KafkaException, TopicPartition

        wanted = [TopicPartition(t, p, timestamp) for t, p in partitions]
        if not wanted:
            return {}
        if self._reader is None:
            self._reader = self._consumer()
        try:
            answered = self._reader.offsets_for_times(wanted, timeout=self.config.timeout)
        except KafkaException as exc:
            raise self._error(f"offsets at {timestamp}", exc) from None
        failed = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in answered if tp.error]
        if failed:
            raise InputError(f"broker {self.config.bootstrap}: offsets at {timestamp}: " + ", ".join(failed))
        return {(tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None) for tp in answered}

    def committed(
        self, group: str, partitions: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], int | None]:
        """The group's offsets stored in Kafka (`__consumer_offsets`); None where it has none."""
        return self.committed_many({group: list(partitions)})[group]

    def committed_many(
        self, wanted: dict[str, list[tuple[str, int]]]
    ) -> dict[str, dict[tuple[str, int], int | None]]:
        """OffsetFetch for many groups at once: every request in flight, then every answer collected."""
        if (own := self.own_client) is not None:
            return {group: own.committed(group, tps) if tps else {} for group, tps in wanted.items()}
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        admin = self._admin()
        futures = {}
        requests = {}
        out: dict[str, dict[tuple[str, int], int | None]] = {}
        for group, partitions in wanted.items():
            tps = [TopicPartition(t, p) for t, p in partitions]
            if not tps:
                out[group] = {}
                continue
            request = [ConsumerGroupTopicPartitions(group, tps)]

            def send(group: str = group, request: list = request) -> Future:
                return admin.list_consumer_group_offsets(request, request_timeout=self.config.timeout)[group]

            requests[group] = send
            futures[group] = requests[group]()
        for group, future in futures.items():
            result = self._coordinated(
                f"offsets of group {group}",
                requests[group],
                f"no answer for the offsets of group {group}",
                first=future,
                group=group,
            )
            out[group] = {
                (tp.topic, tp.partition): (tp.offset if tp.offset >= 0 else None)
                for tp in result.topic_partitions
            }
        return out

    def close(self) -> None:
        if self._own_reads is not None:
            self._own_reads.close()
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    # What a service that asks the brokers itself (cluster/live.py) uses: the one admin client, the one
    # way a failure becomes a line, and whether the brokers predate ApiVersions.
    def admin(self):
        return self._admin()

    def failure(self, what: str, exc: Exception) -> InputError:
        return self._error(what, exc)

    def timed_out(self, what: str) -> InputError:
        return self._no_answer(what)

    @property
    def before_0_10(self) -> bool:
        return "broker.version.fallback" in self._conf

    def _admin(self):
        # Kept for the Broker's life: a dropped AdminClient stops its thread, and its futures never finish.
        if self._admin_client is None:
            from confluent_kafka.admin import AdminClient

            self._admin_client = self._client(AdminClient, dict(self._conf))
            if "broker.version.fallback" not in self._conf:  # before 0.10: no DescribeCluster, no TLS
                wait_for_first_contact(
                    self._admin_client, self.config.bootstrap, self.config.timeout, lambda: self._refused
                )
        return self._admin_client

    def group_offsets(self, group: str) -> dict[tuple[str, int], int]:
        """Every offset the group has in Kafka (OffsetFetch for all partitions)."""
        from confluent_kafka import ConsumerGroupTopicPartitions

        result = self._coordinated(
            f"offsets of group {group}",
            lambda: self._admin().list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group)], request_timeout=self.config.timeout
            )[group],
            f"no answer for the offsets of group {group}",
            group=group,
        )
        return {(tp.topic, tp.partition): tp.offset for tp in result.topic_partitions if tp.offset >= 0}

    def commit(self, group: str, offsets: dict[tuple[str, int], int], metadata: str) -> None:
        """Store offsets for the group in `__consumer_offsets`, in one request (AlterConsumerGroupOffsets);
        asked again, the same offsets, while the coordinator moves."""
        from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

        tps = [TopicPartition(t, p, o, metadata=metadata) for (t, p), o in sorted(offsets.items())]

        def refused(exc: Exception) -> KtoolError:
            if self._refused is not None or is_refusal(exc.args[0] if exc.args else None):
                return self._error(f"commit for group {group}", exc)
            why = error_words(exc, self.config.timeout)
            if any(code in why for code in _MEMBER_ERRORS):
                return FindingsError(
                    f"broker {self.config.bootstrap} refuses offsets for group {group} while it has "
                    f"live members in Kafka ({why}); stop them first"
                )
            return InputError(f"broker {self.config.bootstrap}: commit for group {group}: {why}")

        result = self._coordinated(
            f"commit for group {group}",
            lambda: self._admin().alter_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(group, tps)], request_timeout=self.config.timeout
            )[group],
            f"no answer to the commit for group {group}",
            error=refused,
            group=group,
        )
        failed = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in result.topic_partitions if tp.error]
        if any(code in text for text in failed for code in _MEMBER_ERRORS):
            raise FindingsError(
                f"broker {self.config.bootstrap} refuses offsets for group {group} while it has live "
                "members in Kafka (" + failed[0] + "); stop them first"
            )
        if failed:
            raise InputError(
                f"broker {self.config.bootstrap}: commit for group {group} failed for " + ", ".join(failed)
            )

    def delete_groups_unsupported(self) -> str | None:
        """Why these brokers cannot delete a group (they are known to be older than 0.10: from ZooKeeper,
        --broker-version or the probe), or None when they may (a 0.10-1.0 broker says so when asked)."""
        old = self._conf.get("broker.version.fallback")
        if old is not None and not version_at_least(str(old), (1, 1)):
            return _NO_DELETE_GROUPS.format(where=f"broker {self.config.bootstrap}", version=f"Kafka {old}")
        return None

    def delete_group(self, group: str) -> None:
        """DeleteGroups (Kafka 1.1+): the group and its offsets removed from `__consumer_offsets`.
        FindingsError (one line) for a broker without it, a group with live members, an unknown group."""
        from confluent_kafka import KafkaError

        where = f"broker {self.config.bootstrap}"
        unsupported = self.delete_groups_unsupported()
        if unsupported is not None:
            raise FindingsError(unsupported)

        def refused(exc: Exception) -> KtoolError:
            err = exc.args[0] if exc.args else None
            code = err.code() if isinstance(err, KafkaError) else None
            if code == KafkaError.GROUP_ID_NOT_FOUND:
                return FindingsError(f"{where}: no consumer group {group} in Kafka")
            if code == KafkaError.NON_EMPTY_GROUP:
                return FindingsError(f"{where} refuses to delete group {group}: it has live members")
            if code in (KafkaError._UNSUPPORTED_FEATURE, KafkaError.UNSUPPORTED_VERSION):
                return FindingsError(_NO_DELETE_GROUPS.format(where=where, version="Kafka before 1.1"))
            return self._error(f"delete group {group}", exc)

        self._coordinated(
            f"delete group {group}",
            lambda: self._admin().delete_consumer_groups([group], request_timeout=self.config.timeout)[group],
            f"no answer to deleting group {group}",
            error=refused,
            group=group,
        )

    def topics(self) -> dict[str, list[int]]:
        """Every topic's partition numbers, from the brokers' metadata (the catalog ZooKeeper would give
        otherwise; KRaft clusters have no ZooKeeper)."""
        if (own := self.own_client) is not None:
            return {name: sorted(ps) for name, ps in sorted(own.metadata().partitions.items())}
        from confluent_kafka import KafkaException

        try:
            metadata = self._admin().list_topics(timeout=self.config.timeout)
        except KafkaException as exc:
            raise self._error("cannot list topics", exc) from None
        return {name: sorted(t.partitions) for name, t in sorted(metadata.topics.items()) if not t.error}

    def topic_configs(
        self, topics: Iterable[str], names: Iterable[str]
    ) -> dict[str, dict[str, tuple[str, str]]]:
        """DescribeConfigs (Kafka 0.11+) for each topic: name -> (value, source) for the `names` whose
        value is set somewhere (the source is Kafka's: DYNAMIC_TOPIC_CONFIG for a topic override,
        STATIC_BROKER_CONFIG for the broker's server.properties, …); Kafka's own defaults are left out.
        A topic the brokers do not have gets {}."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import ConfigResource, ConfigSource, ResourceType

        if (own := self.own_client) is not None:
            return own.topic_configs(sorted(set(topics)), list(names))
        where = f"broker {self.config.bootstrap}"
        old = self._conf.get("broker.version.fallback")
        if old is not None:
            raise InputError(
                f"{where} runs Kafka {old}: it has no DescribeConfigs (Kafka 0.11+); give --zookeeper for "
                "the topic overrides in /config/topics"
            )
        wanted = set(names)
        asked = {t: ConfigResource(ResourceType.TOPIC, t) for t in sorted(set(topics))}
        if not asked:
            return {}
        try:
            futures = self._admin().describe_configs(
                list(asked.values()), request_timeout=self.config.timeout
            )
        except KafkaException as exc:
            raise self._error("topic configs", exc) from None
        out: dict[str, dict[str, tuple[str, str]]] = {}
        for topic, resource in asked.items():
            try:
                entries = futures[resource].result(timeout=self.config.timeout + 5)
            except KafkaException as exc:
                err = exc.args[0] if exc.args else None
                if isinstance(err, KafkaError) and err.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                    out[topic] = {}
                    continue
                raise self._error(f"configs of topic {topic}", exc) from None
            except TimeoutError:
                raise self._no_answer(f"no answer for the configs of topic {topic}") from None
            out[topic] = {
                name: (entry.value, ConfigSource(entry.source).name)
                for name, entry in entries.items()
                if name in wanted
                and entry.value is not None
                and entry.source not in (ConfigSource.DEFAULT_CONFIG.value, ConfigSource.DEFAULT_CONFIG)
            }
        return out

    def coordinated_group(self, group: str) -> CoordinatedGroup:
        """The group as its coordinator has it now, over ktool's own client (broker/group_requests.py):
        ConsumerGroupDescribe for a group of the new protocol, else DescribeGroups, each member's
        metadata and assignment as bytes (consumers/coordinated.py reads them). The first contact is
        watched first (a refused or silent port is said as for every request); a request left
        unanswered is "no answer within" the timeout; a group of another protocol type than
        `consumer` (Connect's, …) is refused as kafka-consumer-groups refuses it."""
        from kafka_tools.broker.group_requests import describe_group
        from kafka_tools.broker.wire import NoAnswer

        if self.own_client is None:
            self._admin()  # its first contact watched: a refusal said at once
        try:
            described = describe_group(
                first_server(self.config.bootstrap),
                group,
                self.config.timeout,
                self.config.security,
                before_0_10=self.before_0_10,
            )
        except NoAnswer:
            words = no_answer_words(self.config.timeout)
            raise InputError(f"broker {self.config.bootstrap}: group {group}: {words}") from None
        classic = described.classic
        if classic is not None and classic.protocol_type not in ("", "consumer"):
            raise InputError(
                f"broker {self.config.bootstrap}: group {group}: not a consumer group (its protocol type is "
                f"{classic.protocol_type})"
            )
        return described

    def replica_racks(self, topics: Iterable[str]) -> dict[tuple[str, int], frozenset[str]]:
        """Each partition's replica racks, as a classic group's leader reads them for KIP-881's rack-aware
        assignors: the replicas from the Metadata response, each broker's `broker.rack` from
        DescribeCluster (Kafka 2.8+). A replica on a broker without a rack (or not alive) adds none."""
        from confluent_kafka import KafkaError, KafkaException

        wanted = set(topics)
        admin, timeout = self._admin(), self.config.timeout
        if self.before_0_10:
            raise InputError(
                f"broker {self.config.bootstrap}: no DescribeCluster to learn the brokers' racks"
            )
        try:
            nodes = admin.describe_cluster(request_timeout=timeout).result(timeout=timeout + 5).nodes
            metadata = admin.list_topics(timeout=timeout)
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            if isinstance(err, KafkaError) and err.code() == KafkaError._UNSUPPORTED_FEATURE:
                where = f"broker {self.config.bootstrap}"
                raise InputError(
                    f"{where}: no DescribeCluster (Kafka 2.8+) to learn the brokers' racks"
                ) from None
            raise self._error("cannot read the brokers' racks", exc) from None
        except TimeoutError:
            raise self._no_answer("no answer to DescribeCluster") from None
        rack = {n.id: n.rack for n in nodes if n.rack}
        return {
            (name, p.id): frozenset(rack[r] for r in p.replicas if r in rack)
            for name, t in metadata.topics.items()
            if name in wanted and not t.error
            for p in t.partitions.values()
        }

    def topic_ids(self, topics: Iterable[str]) -> dict[str, tuple[int, int]]:
        """Each topic's id as its two longs (DescribeTopicPartitions / Metadata): the broker's uniform
        assignor orders topics by their ids' hashes. A topic that cannot be described is left out."""
        from confluent_kafka import KafkaException, TopicCollection

        names = sorted(set(topics))
        if not names:
            return {}
        futures = self._admin().describe_topics(TopicCollection(names), request_timeout=self.config.timeout)
        out = {}
        for name, future in futures.items():
            try:
                uuid = future.result(timeout=self.config.timeout + 5).topic_id
            except (KafkaException, TimeoutError):
                continue
            out[name] = (uuid.get_most_significant_bits(), uuid.get_least_significant_bits())
        return out

    def listed_groups(self) -> list[ListedGroup]:
        """Every group the brokers coordinate with its protocol type, state and type (classic, consumer,
        share, streams), as ListGroups v5 lists them (before 0.10: v0, each group's state from
        DescribeGroups v0 at the broker that lists it), from every broker, over ktool's own client
        whatever the security (the brokers themselves from its Metadata over SASL GSSAPI)."""
        from confluent_kafka import KafkaException

        from kafka_tools.broker.group_requests import list_groups

        if (own := self.own_client) is not None:
            brokers = sorted(own.metadata([]).brokers.values())
            return list_groups(brokers, self.config.timeout, self.config.security, self.before_0_10)
        started = time.monotonic()
        admin = self._admin()  # its first contact watched for up to the timeout: the rest is the list's
        left = max(1.0, self.config.timeout - (time.monotonic() - started))
        try:
            metadata = admin.list_topics(timeout=left)
        except KafkaException as exc:
            raise self._error("cannot list brokers", exc) from None
        brokers = sorted((b.host, b.port) for b in metadata.brokers.values())
        return list_groups(brokers, self.config.timeout, self.config.security, self.before_0_10)

    def _coordinated(
        self,
        what: str,
        request: Callable[[], Future],
        unanswered: str,
        first: Future | None = None,
        error: Callable[[Exception], KtoolError] | None = None,
        group: str | None = None,
    ) -> Any:
        """The answer to a request to a group's coordinator (`request()` sends it and returns its future;
        `first`: one already sent). A coordinator that is moving or still loading its offsets partition
        (a broker just started, an election) answers again in a moment: Kafka's own clients look it up
        again and retry, within the request's time; so does ktool, then fails in one line. A `group`
        the authorizer keeps from us is said as such (GROUP_AUTHORIZATION_FAILED), whatever was asked."""
        from confluent_kafka import KafkaError, KafkaException

        from kafka_tools.broker.wire import group_denied

        deadline, pause = time.monotonic() + self.config.timeout, 0.1
        future = first if first is not None else request()
        while True:
            try:
                return future.result(timeout=self.config.timeout + 5)
            except KafkaException as exc:
                if coordinator_moving(exc) and time.monotonic() + pause < deadline:
                    time.sleep(pause)
                    pause = min(2 * pause, 1.0)
                    future = request()
                    continue
                err = exc.args[0] if exc.args else None
                if group is not None and isinstance(err, KafkaError):
                    if err.code() == KafkaError.GROUP_AUTHORIZATION_FAILED:
                        raise group_denied(self.config.bootstrap, group, self.config.security) from None
                raise (error(exc) if error else self._error(what, exc)) from None
            except TimeoutError:
                raise self._no_answer(unanswered) from None

    def groups(self) -> list[tuple[str, str]]:
        """(group id, protocol type) of the consumer groups the brokers coordinate, classic and of the new
        protocol (KIP-848): what `groups describe` describes."""
        return [(g.group, g.protocol_type) for g in self.listed_groups() if g.type in ("classic", "consumer")]
