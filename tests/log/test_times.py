"""Times typed on the command line (`kafka_tools/log/reads/times.py`): the fraction of a second is read as
kafka-consumer-groups reads it (`Utils.getDateTime`, SimpleDateFormat `yyyy-MM-dd'T'HH:mm:ss.SSSXXX`,
then `…SSSX`: `SSS` is a count of milliseconds), so a reset planned from the same words lands on the
same offsets; forms the two readings would take differently are refused. The real tool's plans are
compared in tests/modern/test_reset_offsets_modern.py."""

from __future__ import annotations

import pytest

from kafka_tools.errors import UsageError
from kafka_tools.log.reads.times import parse_time

NOON = 1_767_268_800_000  # 2026-01-01T12:00:00Z


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("2026-01-01T12:00:00.5", 5),  # Kafka's reading; ISO-8601's would be 500
        ("2026-01-01T12:00:00.05", 5),
        ("2026-01-01T12:00:00.50", 50),
        ("2026-01-01T12:00:00.500", 500),
        ("2026-01-01T12:00:00.005Z", 5),
        ("2026-01-01T12:00:00.198Z", 198),
        ("2026-01-01T14:00:00.5+02:00", 5),  # XXX
        ("2026-01-01T14:00:00.5+02", 5),  # X
        ("2026-01-01T14:00:00.5+0200", 5),  # X reads +02 and leaves 00: right only with no minutes
        ("2026-01-01T06:30:00.250-05:30", 250),
        ("2026-01-01 12:00:00.5", 5),
        ("2026-01-01T12:00:00", 0),
        ("2026-01-01T12:00:00Z", 0),
        ("2026-01-01T12:00", 0),
        ("1767268800005", 5),
    ],
)
def test_a_fraction_of_a_second_counts_milliseconds_as_kafka_reads_it(text, ms):
    assert parse_time(text, "--to-datetime") == NOON + ms


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("2026-01-01T12:00:00.1234", "at most 3 digits after the seconds' point"),
        ("2026-01-01T12:00:00.123456Z", "at most 3 digits after the seconds' point"),
        ("2026-01-01T14:30:00.5+0230", "write the zone +02:30 (kafka-consumer-groups reads +0230 as +02"),
        ("2026-01-01T12:00.5", "expected epoch milliseconds or an ISO-8601 time"),
        ("20260101T120000.5", "expected epoch milliseconds or an ISO-8601 time"),
        ("2026-01-01T24:00:00.5", "expected epoch milliseconds or an ISO-8601 time"),
        ("2026-01-01T12:00:00.5+24:00", "expected epoch milliseconds or an ISO-8601 time"),
    ],
)
def test_a_time_the_two_readings_would_take_differently_is_refused(text, why):
    with pytest.raises(UsageError, match="^--to-datetime '") as refused:
        parse_time(text, "--to-datetime")
    assert why in str(refused.value)
