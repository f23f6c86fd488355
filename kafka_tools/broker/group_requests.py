"""ListGroups (v4/v5: each group's state and type) and ConsumerGroupDescribe (KIP-848: the group epoch,
the target assignment epoch, each member's epoch, assignment and target assignment) spoken on ktool's
own socket (broker/wire.py, with the security settings of every `--bootstrap-server` command):
confluent-kafka 2.16's AdminClient returns neither the epochs nor the share and streams group types.
ListGroups goes to every broker (each lists the groups it coordinates); ConsumerGroupDescribe to the
group's coordinator, found again while it moves."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from kafka_tools.broker.wire import (
    FIND_COORDINATOR,
    GROUP_AUTHORIZATION_FAILED,
    LOADING,
    NO_TAGS,
    NOT_AVAILABLE,
    NOT_COORDINATOR,
    Connection,
    Reader,
    WireError,
    api_versions,
    at_coordinator,
    compact_array,
    compact_string,
    group_denied,
    pick_version,
    uvarint,
)
from kafka_tools.errors import InputError

if TYPE_CHECKING:
    from kafka_tools.broker.security import BrokerSecurity

LIST_GROUPS, CONSUMER_GROUP_DESCRIBE = 16, 69
GROUP_ID_NOT_FOUND = 69
_MOVING = (LOADING, NOT_AVAILABLE, NOT_COORDINATOR)


@dataclass(frozen=True)
class ListedGroup:
    """One group as ListGroups lists it: its type (`classic`, `consumer`, `share`, `streams`; brokers
    before 3.8 list no type: every group of theirs is classic) and state as the broker spells it."""

    group: str
    protocol_type: str
    state: str | None
    type: str


def list_groups(
    brokers: list[tuple[str, int]], timeout: float, security: BrokerSecurity | None = None
) -> list[ListedGroup]:
    """Every broker's ListGroups (v5, or the highest it speaks), joined; sorted by group id. A group
    the user may not DESCRIBE is left out by the broker, as kafka-consumer-groups --list shows it."""
    out: dict[str, ListedGroup] = {}
    for host, port in brokers:
        conn = Connection(host, port, timeout, security)
        try:
            for g in _list_groups(conn):
                out[g.group] = g
        except WireError as exc:
            raise InputError(
                f"broker {conn.where}: an answer ktool cannot read (ListGroups: {exc})"
            ) from None
        finally:
            conn.close()
    return [out[k] for k in sorted(out)]


def _list_groups(conn: Connection) -> list[ListedGroup]:
    version = pick_version(api_versions(conn), LIST_GROUPS, (0, 5))
    if version is None:
        raise InputError(f"broker {conn.where}: no ListGroups ktool speaks (Kafka 0.10+)")
    flexible = version >= 3
    body = b""
    if version >= 4:
        body += uvarint(1)  # StatesFilter: empty, every state
    if version >= 5:
        body += uvarint(1)  # TypesFilter: empty, every type
    if flexible:
        body += NO_TAGS
    data = conn.ask(LIST_GROUPS, version, body, flexible=flexible)
    if data is None:
        raise InputError(f"broker {conn.where} closed the connection on ListGroups")
    r = Reader(data)
    if version >= 1:
        r.take(">i")  # throttle
    error = r.take(">h")
    if error:
        raise InputError(f"broker {conn.where}: ListGroups refused (error {error})")
    out = []
    count = r.compact_count() if flexible else r.take(">i")
    for _ in range(count):
        if flexible:
            group, protocol = r.compact_string() or "", r.compact_string() or ""
            state = r.compact_string() if version >= 4 else None
            kind = (r.compact_string() or "classic") if version >= 5 else "classic"
            r.skip_tags()
        else:
            group, protocol, state, kind = r.string(), r.string(), None, "classic"
        out.append(ListedGroup(group, protocol, state, kind.lower()))
    return out


@dataclass(frozen=True)
class Assignment:
    partitions: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack: str | None
    member_epoch: int
    client_id: str
    host: str
    subscribed_topics: tuple[str, ...]
    subscribed_regex: str | None
    assignment: tuple[tuple[str, int], ...]
    target_assignment: tuple[tuple[str, int], ...]


@dataclass
class DescribedGroup:
    """A consumer group (KIP-848) as its coordinator describes it; `error` is Kafka's code (0: none;
    GROUP_ID_NOT_FOUND for a group it does not know or that is a classic group)."""

    group: str
    error: int
    message: str | None = None
    state: str = ""
    group_epoch: int = -1
    assignment_epoch: int = -1
    assignor: str = ""
    members: list[DescribedMember] = field(default_factory=list)


def consumer_group_describe(
    bootstrap: tuple[str, int], group: str, timeout: float, security: BrokerSecurity | None = None
) -> DescribedGroup | None:
    """ConsumerGroupDescribe v0 of one group at its coordinator; None when the brokers do not have the
    request (before 3.7, or the new protocol not enabled)."""
    deadline = time.monotonic() + timeout
    conn = Connection(*bootstrap, timeout, security)
    try:
        versions = api_versions(conn)
        if versions is None or CONSUMER_GROUP_DESCRIBE not in versions:
            return None
        find_version = pick_version(versions, FIND_COORDINATOR, (0, 2))
        if find_version is None:
            raise InputError(f"broker {conn.where}: no FindCoordinator version ktool speaks")
        return at_coordinator(conn, group, find_version, timeout, deadline, lambda c: _settled(c, group))
    except WireError as exc:
        raise InputError(
            f"broker {conn.where}: an answer ktool cannot read (ConsumerGroupDescribe: {exc})"
        ) from None
    finally:
        conn.close()


def _settled(conn: Connection, group: str) -> DescribedGroup | None:
    """The group as its coordinator describes it; None while the coordinator moves (found again)."""
    described = _describe(conn, group)
    if described.error == GROUP_AUTHORIZATION_FAILED:
        raise group_denied(conn.where, group, conn.security)
    return None if described.error in _MOVING else described


def _describe(conn: Connection, group: str) -> DescribedGroup:
    body = compact_array([compact_string(group)]) + b"\x00" + NO_TAGS  # IncludeAuthorizedOperations false
    data = conn.ask(CONSUMER_GROUP_DESCRIBE, 0, body, flexible=True)
    if data is None:
        raise InputError(f"broker {conn.where} closed the connection on ConsumerGroupDescribe")
    r = Reader(data)
    r.take(">i")  # throttle
    groups = [_group(r) for _ in range(r.compact_count())]
    for g in groups:
        if g.group == group:
            return g
    raise InputError(f"broker {conn.where}: ConsumerGroupDescribe answered without group {group}")


def _group(r: Reader) -> DescribedGroup:
    error, message = r.take(">h"), r.compact_string()
    g = DescribedGroup(r.compact_string() or "", error, message)
    g.state, g.group_epoch, g.assignment_epoch = r.compact_string() or "", r.take(">i"), r.take(">i")
    g.assignor = r.compact_string() or ""
    for _ in range(r.compact_count()):
        member_id, instance, rack, epoch = (
            r.compact_string(),
            r.compact_string(),
            r.compact_string(),
            r.take(">i"),
        )
        client, host = r.compact_string() or "", r.compact_string() or ""
        topics = tuple(r.compact_string() or "" for _ in range(r.compact_count()))
        regex = r.compact_string()
        current, target = _assignment(r), _assignment(r)
        r.skip_tags()
        g.members.append(
            DescribedMember(
                member_id or "", instance, rack, epoch, client, host, topics, regex, current, target
            )
        )
    r.take(">i")  # authorized operations
    r.skip_tags()
    return g


def _assignment(r: Reader) -> tuple[tuple[str, int], ...]:
    out = []
    for _ in range(r.compact_count()):
        r.uuid()
        topic = r.compact_string() or ""
        out += [(topic, r.take(">i")) for _ in range(r.compact_count())]
        r.skip_tags()
    r.skip_tags()
    return tuple(sorted(out))
