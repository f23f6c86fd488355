"""The service behind `ktool groups reset-offsets`: kafka-consumer-groups' `--reset-offsets` on either
offset store, planned as a migration from a file would be (consumers/migration.py: the same refusals,
journal, read-back and undo).

The new offsets are worked out as Kafka's ConsumerGroupCommand works them out (earliest, latest,
current, an offset, a shift, a time, a CSV plan), then kept inside [log start, log end]: an offset a
consumer cannot fetch would only make it fall back on auto.offset.reset. A time is answered by the
brokers (ListOffsets by timestamp, 0.10.1+) or, for 0.9 or a copy of the data, by ktool's own
offsets-at on log dirs; a time after the last record gives the log end, as kafka-consumer-groups does.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from kafka_tools.broker.client import Broker
from kafka_tools.consumers.migration import (
    FILE,
    KAFKA,
    NO_SOURCE,
    REFUSED_LIVE,
    UNCHANGED,
    WRITE,
    ZK,
    GroupPlan,
    MigrationOptions,
    PartitionMove,
    plan_group,
    read_stores,
    topic_catalog,
)
from kafka_tools.consumers.stores import RESET_METADATA
from kafka_tools.errors import InputError, UsageError
from kafka_tools.zk.connection import ZnodeMissingError
from kafka_tools.zk.reader import read_group

COMMAND = "groups reset-offsets"

# Targets, named as kafka-consumer-groups names them (--to-earliest …).
EARLIEST = "to-earliest"
LATEST = "to-latest"
CURRENT = "to-current"
OFFSET = "to-offset"
SHIFT = "shift-by"
DATETIME = "to-datetime"
DURATION = "by-duration"
FROM_FILE = "from-file"
TARGETS = (EARLIEST, LATEST, CURRENT, OFFSET, SHIFT, DATETIME, DURATION, FROM_FILE)

TP = tuple[str, int]


@dataclass(frozen=True)
class Target:
    """What to reset to: `kind` (one of TARGETS), `value` (the offset, the shift, or the time in epoch
    ms for a datetime or a duration), `offsets` (a --from-file plan)."""

    kind: str
    value: int | None = None
    offsets: dict[TP, int] | None = None


@dataclass
class ResetRequest:
    group: str
    target: Target
    all_topics: bool = False
    topics: tuple[tuple[str, tuple[int, ...] | None], ...] = ()  # --topic T or T:0,2
    store: str | None = None  # None: as `groups describe` reads the group
    log_dirs: tuple[str, ...] = ()  # answer times from these instead of the brokers
    metadata: str = RESET_METADATA


@dataclass
class ResetPlan:
    """The plan (a migration plan from the worked-out offsets), the store, and what stderr says: which
    source answered a time, each clamped partition."""

    plan: GroupPlan
    store: str
    options: MigrationOptions
    notes: list[str] = field(default_factory=list)


def parse_topic(spec: str) -> tuple[str, tuple[int, ...] | None]:
    """`T` (every partition) or `T:0,2`, as kafka-consumer-groups' --topic takes it."""
    topic, colon, numbers = spec.partition(":")
    if not topic:
        raise UsageError(f"--topic {spec!r}: expected TOPIC or TOPIC:P,P…")
    if not colon:
        return topic, None
    try:
        partitions = tuple(sorted({int(p) for p in numbers.split(",")}))
    except ValueError:
        raise UsageError(f"--topic {spec!r}: expected TOPIC or TOPIC:P,P… (partition numbers)") from None
    if any(p < 0 for p in partitions):
        raise UsageError(f"--topic {spec!r}: a partition number is 0 or more")
    return topic, partitions


_DURATION = re.compile(
    r"(?P<sign>[-+]?)P(?:(?P<d>[-+]?\d+)D)?"
    r"(?:T(?:(?P<h>[-+]?\d+)H)?(?:(?P<m>[-+]?\d+)M)?(?:(?P<s>[-+]?\d+)(?:[.,](?P<f>\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> int:
    """Milliseconds of an ISO-8601 duration as Java's Duration.parse reads it (PnDTnHnMn.nS)."""
    m = _DURATION.fullmatch(text.strip())
    if m is None or text.strip().upper().endswith("T") or not any(m.group(k) for k in "dhms"):
        raise UsageError(f"--by-duration {text!r}: expected an ISO-8601 duration PnDTnHnMnS (e.g. PT1H30M)")
    ms = (
        int(m["d"] or 0) * 86_400_000
        + int(m["h"] or 0) * 3_600_000
        + int(m["m"] or 0) * 60_000
        + int(m["s"] or 0) * 1000
        + int((m["f"] or "").ljust(3, "0")[:3] or 0) * (-1 if (m["s"] or "").startswith("-") else 1)
    )
    return -ms if m["sign"] == "-" else ms


def read_plan_csv(path: Path, group: str) -> dict[TP, int]:
    """kafka-consumer-groups' reset plan: `topic,partition,offset` lines, or `group,topic,partition,offset`
    (the rows of `group` taken); errors name the line."""
    if path.exists() and not path.is_dir() and not path.is_file():  # a FIFO would block the read
        raise InputError(f"{path}: not a regular file (expected a CSV reset plan)")
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise InputError(f"{path}: no such file or directory") from None
    except IsADirectoryError:
        raise InputError(f"{path}: a directory (expected a CSV reset plan)") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: {getattr(exc, 'strerror', None) or exc}") from None
    out: dict[TP, int] = {}
    for n, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if not row or not "".join(row).strip():
            continue
        try:
            if len(row) == 3:
                topic, partition, offset = row
            elif len(row) == 4:
                row_group, topic, partition, offset = row
                if row_group != group:
                    continue
            else:
                raise ValueError(row)
            out[(topic, int(partition))] = int(offset)
        except ValueError:
            raise InputError(
                f"{path}:{n}: not `topic,partition,offset` nor `group,topic,partition,offset`"
            ) from None
    return out


def export_csv(moves: list[PartitionMove]) -> str:
    """The plan as kafka-consumer-groups' --export writes it for one group: `topic,partition,offset`."""
    return "".join(f"{m.topic},{m.partition},{m.offset}\n" for m in moves if m.offset is not None)


def choose_store(zk, group: str) -> str:
    """ZooKeeper for a group ZooKeeper knows (offsets or registered consumers: an 0.8-era consumer reads
    its offsets there, as `groups describe` reads them), else Kafka."""
    if zk is None:
        return KAFKA
    try:
        g = read_group(zk, group)
    except ZnodeMissingError:
        return KAFKA
    return ZK if g.offsets or g.members else KAFKA


def plan_reset(zk, broker: Broker, request: ResetRequest) -> ResetPlan:
    """The reset of one group, planned: nothing is written."""
    store = request.store or choose_store(zk, request.group)
    if store == ZK and zk is None:
        raise UsageError("--store zookeeper needs --zookeeper: the offsets are in /consumers")
    names = tuple(sorted({t for t, _ in request.topics}))
    zk_offsets, kafka_offsets, _, _ = read_stores(zk, broker, request.group, names)
    current = {
        k: v for k, v in (zk_offsets if store == ZK else kafka_offsets).items() if isinstance(k[1], int)
    }
    partitions = _partitions(zk, broker, request, current)
    notes: list[str] = []
    if not partitions and request.all_topics:
        notes.append(f"no partition in scope: the group has no offset in {store} (--all-topics takes those)")
    reasons: dict[TP, list[str]] = {}
    marks = broker.watermarks(partitions) if partitions else {}
    wanted, missing = _targets(broker, request, partitions, current, marks, notes, reasons)
    given: dict[TP, int] = {}
    for key, offset in wanted.items():
        low, high = marks[key]
        clamped = min(max(offset, low), high)
        if clamped != offset:
            side = f"below the log start {low}" if offset < low else f"past the log end {high}"
            reasons.setdefault(key, []).append(f"{offset} is {side}: clamped to {clamped}")
            notes.append(f"{key[0]}-{key[1]}: {offset} is {side}: clamped to {clamped}")
        given[key] = clamped
    topics = tuple(sorted({t for t, _ in partitions}))
    options = MigrationOptions(
        FILE, store, allow_rewind=True, metadata=request.metadata, topics=topics, command=COMMAND
    )
    plan = plan_group(zk, broker, request.group, options, given)
    if any(m.status == REFUSED_LIVE for m in plan.moves):  # no --force here: kafka-consumer-groups has none
        plan.refused = "live members: " + ", ".join(plan.live) + " (offsets are reset only while none runs)"
        for m in plan.moves:
            if m.status == REFUSED_LIVE:
                m.reason = plan.refused
    for key, why in missing.items():
        move = PartitionMove(
            request.group, key[0], key[1], zk_offsets.get(key), kafka_offsets.get(key), None, NO_SOURCE, why
        )
        move.log_start, move.log_end = marks.get(key, (None, None))
        plan.moves.append(move)
    plan.moves.sort(key=lambda m: m.key)
    for m in plan.moves:
        if m.key in reasons and m.status in (WRITE, UNCHANGED):
            m.reason = "; ".join(reasons[m.key])
    return ResetPlan(plan, store, options, notes)


def _partitions(zk, broker: Broker, request: ResetRequest, current: dict[TP, int]) -> list[TP]:
    """The partitions in scope: --all-topics, those the group has an offset for (kafka-consumer-groups:
    its committed offsets); --topic T, every partition of T; a --from-file plan, its partitions (within
    the scope when one is given too)."""
    catalog = topic_catalog(zk, broker)
    chosen: set[TP] = set()
    if request.all_topics:
        chosen = set(current)
    for topic, numbers in request.topics:
        if topic not in catalog:
            raise InputError(f"topic {topic} does not exist")
        unknown = sorted(set(numbers or ()) - set(catalog[topic]))
        if unknown:
            raise InputError(f"topic {topic} has no partition {unknown[0]} (it has {len(catalog[topic])})")
        chosen |= {(topic, p) for p in (numbers or catalog[topic])}
    if request.target.kind == FROM_FILE:
        planned = set(request.target.offsets or {})
        absent = sorted(k for k in planned if k[1] not in catalog.get(k[0], []))
        if absent:
            raise InputError(f"the reset plan names {absent[0][0]}-{absent[0][1]}, which does not exist")
        chosen = planned & chosen if (request.all_topics or request.topics) else planned
    return sorted(chosen)


def _targets(
    broker: Broker,
    request: ResetRequest,
    partitions: list[TP],
    current: dict[TP, int],
    marks: dict[TP, tuple[int, int]],
    notes: list[str],
    reasons: dict[TP, list[str]],
) -> tuple[dict[TP, int], dict[TP, str]]:
    """(the offset asked for each partition, before clamping; the partitions left out and why)."""
    target = request.target
    kind = target.kind
    if kind == EARLIEST:
        return {k: marks[k][0] for k in partitions}, {}
    if kind == LATEST:
        return {k: marks[k][1] for k in partitions}, {}
    if kind == OFFSET:
        return {k: int(target.value or 0) for k in partitions}, {}
    if kind == FROM_FILE:
        return {k: (target.offsets or {})[k] for k in partitions}, {}
    if kind == CURRENT:  # kafka-consumer-groups: the log end where the group has no offset
        for k in partitions:
            if k not in current:
                reasons.setdefault(k, []).append("no committed offset: the log end")
        return {k: current.get(k, marks[k][1]) for k in partitions}, {}
    if kind == SHIFT:
        missing = {k: "no committed offset to shift" for k in partitions if k not in current}
        for k in missing:
            notes.append(f"{k[0]}-{k[1]}: no committed offset to shift: left alone")
        return {k: current[k] + int(target.value or 0) for k in partitions if k in current}, missing
    assert kind in (DATETIME, DURATION) and target.value is not None
    at, source = times(broker, request.log_dirs, partitions, target.value)
    notes.append(f"offsets at {_iso(target.value)} ({target.value}) answered by {source}")
    out = {}
    for k in partitions:
        if at.get(k) is None:  # kafka-consumer-groups: "Falling back to latest known offset"
            reasons.setdefault(k, []).append(f"no record at or after {_iso(target.value)}: the log end")
        out[k] = marks[k][1] if at.get(k) is None else at[k]
    return out, {}


def times(
    broker: Broker, log_dirs: tuple[str, ...], partitions: list[TP], timestamp: int
) -> tuple[dict[TP, int | None], str]:
    """Each partition's offset at `timestamp` and what answered it: ktool's offsets-at on `log_dirs`
    when given, else the brokers' ListOffsets (0.10.1+)."""
    if not log_dirs:
        if not broker.answers_times:
            raise InputError(
                f"broker {broker.config.bootstrap}: ListOffsets by timestamp needs Kafka 0.10.1 or later; "
                "give --log-dir (the partitions' log dirs, or a copy) to answer it from the log files"
            )
        return broker.offsets_for_time(partitions, timestamp), "the broker (ListOffsets by timestamp)"
    from kafka_tools.log.reads.offsets_at import PartitionOffset, offsets_at

    found: dict[TP, int | None] = {}
    wanted = set(partitions)
    for log_dir in log_dirs:
        for item in offsets_at(log_dir, timestamp):
            if not isinstance(item, PartitionOffset) or (item.topic, item.partition) not in wanted:
                continue
            if item.error:
                raise InputError(item.error)
            found.setdefault((item.topic, item.partition), item.offset)
    absent = sorted(wanted - set(found))
    if absent:
        raise InputError(f"{absent[0][0]}-{absent[0][1]}: not in --log-dir {', '.join(log_dirs)}")
    return found, "offsets-at on " + ", ".join(log_dirs) + " (ktool reading the log files)"


def _iso(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")
