"""Times as operators type them: epoch milliseconds, the unit of every Kafka timestamp, or ISO-8601."""

from __future__ import annotations

import re

from kafka_tools.errors import UsageError

# ListOffsets' special timestamps, as GetOffsetShell's --time takes them (-3: Kafka 3.0+, KIP-734).
LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3


def parse_time(text: str, option: str) -> int:
    """Epoch milliseconds from `text` (digits, or an ISO-8601 time: UTC unless it names a zone).

    `option` names the flag in the usage error (`--timestamp '…': expected …`).
    """
    t = text.strip()
    if re.fullmatch(r"-?\d+", t):
        return int(t)
    from datetime import datetime, timezone  # not on the path of `ktool read --offset`

    try:
        when = datetime.fromisoformat(t.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise UsageError(
            f"{option} {text!r}: expected epoch milliseconds or an ISO-8601 time (2024-05-01T12:00:00Z)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return int(when.timestamp() * 1000)
