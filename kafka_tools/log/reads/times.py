"""Times as operators type them: epoch milliseconds, the unit of every Kafka timestamp, or ISO-8601.

The digits after the seconds' point are read as kafka-consumer-groups reads them (`Utils.getDateTime`:
the pattern `yyyy-MM-dd'T'HH:mm:ss.SSSXXX`, then `…SSSX`, in Java's SimpleDateFormat): a count of
milliseconds, so `.5` is 5 ms and `.50` 50 ms, not half a second. A reset planned by ktool and by Kafka's
tool from the same words then lands on the same offsets. Where the two readings cannot agree, ktool
refuses rather than guess: more than 3 digits (Kafka refuses above 999, and `.0005` would be 5 ms to
it, 0.5 ms to ISO-8601), and a `+HHMM` zone with minutes (Kafka reads `+0530` as `+05`).
"""

from __future__ import annotations

import re

from kafka_tools.errors import UsageError

# ListOffsets' special timestamps, as GetOffsetShell's --time takes them (-3: Kafka 3.0+, KIP-734).
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3

_DATE_TIME = re.compile(
    r"(?P<date>\d{4}-\d{2}-\d{2})[T ](?P<clock>\d{2}:\d{2}(?::\d{2})?)(?:[.,](?P<fraction>\d+))?"
    r"(?P<zone>[Zz]|[+-]\d{2}(?::?\d{2})?)?"
)
_EXPECTED = "expected epoch milliseconds or an ISO-8601 time (2024-05-01T12:00:00.000Z)"


def parse_time(text: str, option: str) -> int:
    """Epoch milliseconds from `text` (digits, or an ISO-8601 time: UTC unless it names a zone; the
    fraction of a second in milliseconds, as kafka-consumer-groups reads it: see the module's words).

    `option` names the flag in the usage error (`--timestamp '…': expected …`).
    """
    t = text.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    from datetime import datetime, timedelta, timezone  # not on the path of `ktool read --offset`

    shape = _DATE_TIME.fullmatch(t)
    try:
        if shape is None:  # a date alone, or another ISO-8601 form with no fraction of a second
            if re.search(r"\d[.,]\d", t):
                raise ValueError(t)
            when = datetime.fromisoformat(t)
        else:
            if shape["fraction"] is not None and shape["clock"].count(":") < 2:
                raise ValueError(t)  # a fraction of a minute: Kafka's pattern has seconds
            when = datetime.fromisoformat(f"{shape['date']}T{shape['clock']}")
            when += timedelta(milliseconds=_milliseconds(shape["fraction"], text, option))
            when = when.replace(tzinfo=_zone(shape["zone"], text, option))
    except ValueError:
        raise UsageError(f"{option} {text!r}: {_EXPECTED}") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)


def _milliseconds(fraction: str | None, text: str, option: str) -> int:
    if fraction is None:
        return 0
    if len(fraction) > 3:
        raise UsageError(
            f"{option} {text!r}: at most 3 digits after the seconds' point: they count milliseconds, as "
            "kafka-consumer-groups reads them (.5 is 5 ms, .500 half a second)"
        )
    return int(fraction)


def _zone(zone: str | None, text: str, option: str):
    from datetime import timedelta, timezone

    if zone is None or zone in "Zz":
        return timezone.utc
    sign = -1 if zone[0] == "-" else 1
    hours, minutes = int(zone[1:3]), int(zone[3:].lstrip(":") or 0)
    if minutes and ":" not in zone:
        raise UsageError(
            f"{option} {text!r}: write the zone {zone[:3]}:{zone[3:]} (kafka-consumer-groups reads {zone} "
            f"as {zone[:3]}, without its minutes)"
        )
    if hours > 23 or minutes > 59:
        raise ValueError(zone)
    return timezone(sign * timedelta(hours=hours, minutes=minutes))
