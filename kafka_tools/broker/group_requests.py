"""The group requests, spoken on ktool's own socket (broker/wire.py, with the security settings of every
`--bootstrap-server` command): ListGroups (v4/v5: each group's state and type), ConsumerGroupDescribe
(KIP-848: the group epoch, the target assignment epoch, each member's epoch, assignment and target
assignment) and DescribeGroups v0-v5 (a classic group's state, protocol, members with their JoinGroup
metadata and SyncGroup assignment: Kafka 0.9+). confluent-kafka 2.16's AdminClient returns neither the
epochs, nor the share and streams group types, nor a classic member's metadata beside its description.
ListGroups goes to every broker (each lists the groups it coordinates); the describing requests to the
group's coordinator, found again while it moves."""

from __future__ import annotations

import struct
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
    string,
    uvarint,
)
from kafka_tools.errors import InputError

if TYPE_CHECKING:
    from kafka_tools.broker.security import BrokerSecurity

LIST_GROUPS, DESCRIBE_GROUPS, CONSUMER_GROUP_DESCRIBE = 16, 15, 69
GROUP_ID_NOT_FOUND = 69
_MOVING = (LOADING, NOT_AVAILABLE, NOT_COORDINATOR)
# Kafka's names (protocol.Errors) for a described group's error codes other than the ones handled
ERROR_NAMES = {24: "INVALID_GROUP_ID", 30: "GROUP_AUTHORIZATION_FAILED", 69: "GROUP_ID_NOT_FOUND"}


@dataclass(frozen=True)
class ListedGroup:
    """One group as ListGroups lists it: its type (`classic`, `consumer`, `share`, `streams`; brokers
    before 3.8 list no type: every group of theirs is classic) and state as the broker spells it."""

    group: str
    protocol_type: str
    state: str | None
    type: str


def list_groups(
    brokers: list[tuple[str, int]],
    timeout: float,
    security: BrokerSecurity | None = None,
    before_0_10: bool = False,
) -> list[ListedGroup]:
    """Every broker's ListGroups (v5, or the highest it speaks), joined; sorted by group id. A group
    the user may not DESCRIBE is left out by the broker, as kafka-consumer-groups --list shows it.
    Brokers before 0.10 (known so, or closing the connection on ApiVersions) list no state: each
    broker's groups are described there (DescribeGroups v0; it coordinates what it lists)."""
    out: dict[str, ListedGroup] = {}
    for host, port in brokers:
        conn = Connection(host, port, timeout, security)
        try:
            versions = None if before_0_10 else api_versions(conn)
            if versions is None:
                conn.close()
                conn = Connection(host, port, timeout, security)
                listed = _list_described(conn)
            else:
                listed = _list_groups(conn, versions)
            for g in listed:
                out[g.group] = g
        except WireError as exc:
            raise InputError(
                f"broker {conn.where}: an answer ktool cannot read (ListGroups: {exc})"
            ) from None
        finally:
            conn.close()
    return [out[k] for k in sorted(out)]


def _list_groups(conn: Connection, versions: dict[int, tuple[int, int]]) -> list[ListedGroup]:
    version = pick_version(versions, LIST_GROUPS, (0, 5))
    if version is None:
        raise InputError(f"broker {conn.where}: no ListGroups ktool speaks (Kafka 0.9+)")
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


def _list_described(conn: Connection) -> list[ListedGroup]:
    """ListGroups v0 and, for each group's state, DescribeGroups v0 of them all at the same broker."""
    listed = _list_groups(conn, {LIST_GROUPS: (0, 0)})
    if not listed:
        return []
    body = struct.pack(">i", len(listed)) + b"".join(string(g.group) for g in listed)
    data = conn.ask(DESCRIBE_GROUPS, 0, body)
    if data is None:
        raise InputError(f"broker {conn.where} closed the connection on DescribeGroups")
    r = Reader(data)
    states = {g.group: g.state for g in (_classic_group(r, 0) for _ in range(r.take(">i"))) if not g.error}
    return [ListedGroup(g.group, g.protocol_type, states.get(g.group) or None, g.type) for g in listed]


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


@dataclass(frozen=True)
class ClassicGroupMember:
    """One member of a classic group as DescribeGroups returns it: its JoinGroup metadata (for a
    consumer, its subscription) and its SyncGroup assignment, as the bytes the members' protocol wrote."""

    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    metadata: bytes
    assignment: bytes


@dataclass
class ClassicGroup:
    """A classic group as its coordinator describes it (DescribeGroups); a group it does not know is
    state `Dead` with no members. `protocol`: the one its members agreed on (a consumer's assignor)."""

    group: str
    error: int
    state: str = ""
    protocol_type: str = ""
    protocol: str = ""
    members: list[ClassicGroupMember] = field(default_factory=list)


@dataclass
class CoordinatedGroup:
    """A group as its coordinator has it: a consumer group (KIP-848: `consumer`, from
    ConsumerGroupDescribe) or else a classic one (`classic`, from DescribeGroups; None where the brokers
    have no group coordinator: before 0.9); `coordinator` its (host, port, node id)."""

    coordinator: tuple[str, int, int]
    consumer: DescribedGroup | None = None
    classic: ClassicGroup | None = None


def describe_group(
    bootstrap: tuple[str, int],
    group: str,
    timeout: float,
    security: BrokerSecurity | None = None,
    before_0_10: bool = False,
) -> CoordinatedGroup:
    """The group at its coordinator: ConsumerGroupDescribe where the brokers have it (a group of the new
    protocol), else DescribeGroups at the highest version both sides speak (v0-v5). `before_0_10`: the
    brokers are known to predate ApiVersions (0.9: FindCoordinator and DescribeGroups v0, asked without
    it). A coordinator that moves or still loads is found again within `timeout`; a group the
    authorizer keeps from us is the one GROUP_AUTHORIZATION_FAILED line."""
    deadline = time.monotonic() + timeout
    conn = Connection(*bootstrap, timeout, security)
    try:
        if before_0_10:
            find_version, describe_version, consumer = 0, 0, False
        else:
            versions = api_versions(conn)
            if versions is None:  # a broker before 0.10 closes the connection on ApiVersions
                conn.close()
                conn = Connection(*bootstrap, timeout, security)
                versions = {FIND_COORDINATOR: (0, 0), DESCRIBE_GROUPS: (0, 0)}
            find_version = pick_version(versions, FIND_COORDINATOR, (0, 2))
            describe_version = pick_version(versions, DESCRIBE_GROUPS, (0, 5))
            consumer = CONSUMER_GROUP_DESCRIBE in versions
            if find_version is None or describe_version is None:
                raise InputError(f"broker {conn.where}: no FindCoordinator or DescribeGroups ktool speaks")
        return at_coordinator(
            conn, group, find_version, timeout, deadline,
            lambda c: _coordinated(c, group, describe_version, consumer),
        )  # fmt: skip
    except WireError as exc:
        raise InputError(
            f"broker {conn.where}: an answer ktool cannot read (DescribeGroups: {exc})"
        ) from None
    finally:
        conn.close()


def _coordinated(conn: Connection, group: str, version: int, consumer: bool) -> CoordinatedGroup | None:
    """ConsumerGroupDescribe (where the brokers have it), then DescribeGroups for a group it does not
    know as a consumer group; None while the coordinator moves (found again)."""
    coordinator = (conn.host, conn.port, -1 if conn.node_id is None else conn.node_id)
    if consumer:
        described = _settled(conn, group)
        if described is None:
            return None
        if not described.error:
            return CoordinatedGroup(coordinator, consumer=described)
    classic = _describe_classic(conn, group, version)
    if classic is not None and classic.error == GROUP_AUTHORIZATION_FAILED:
        raise group_denied(conn.where, group, conn.security)
    if classic is not None and classic.error in _MOVING:
        return None
    if classic is not None and classic.error and classic.error != GROUP_ID_NOT_FOUND:
        name = ERROR_NAMES.get(classic.error, f"error {classic.error}")
        raise InputError(f"broker {conn.where}: DescribeGroups of group {group} refused ({name})")
    return CoordinatedGroup(coordinator, classic=classic)


def _describe_classic(conn: Connection, group: str, version: int) -> ClassicGroup | None:
    """DescribeGroups of one group (DescribeGroupsRequest.json v0-v5; v5 flexible, authorized operations
    not asked for); None when the broker closes the connection on it (before 0.9: no group coordinator)."""
    flexible = version >= 5
    if flexible:
        body = compact_array([compact_string(group)])
    else:
        body = struct.pack(">i", 1) + string(group)
    if version >= 3:
        body += b"\x00"  # IncludeAuthorizedOperations false
    if flexible:
        body += NO_TAGS
    data = conn.ask(DESCRIBE_GROUPS, version, body, flexible=flexible)
    if data is None:
        return None
    r = Reader(data)
    if version >= 1:
        r.take(">i")  # throttle
    count = r.compact_count() if flexible else r.take(">i")
    groups = [_classic_group(r, version) for _ in range(max(count, 0))]
    for g in groups:
        if g.group == group:
            return g
    raise InputError(f"broker {conn.where}: DescribeGroups answered without group {group}")


def _classic_group(r: Reader, version: int) -> ClassicGroup:
    flexible = version >= 5
    text = (lambda: r.compact_string() or "") if flexible else r.string
    error = r.take(">h")
    g = ClassicGroup(text(), error, text(), text(), text())
    count = r.compact_count() if flexible else r.take(">i")
    if count > len(r.data) - r.at:
        raise WireError("an array longer than its answer")
    for _ in range(max(count, 0)):
        member_id = text()
        instance = (r.compact_string() if flexible else r.nullable_string()) if version >= 4 else None
        client, host = text(), text()
        metadata, assignment = (
            (r.compact_bytes(), r.compact_bytes()) if flexible else (r.bytes_field(), r.bytes_field())
        )
        if flexible:
            r.skip_tags()
        g.members.append(ClassicGroupMember(member_id, instance, client, host, metadata, assignment))
    if version >= 3:
        r.take(">i")  # authorized operations
    if flexible:
        r.skip_tags()
    return g
