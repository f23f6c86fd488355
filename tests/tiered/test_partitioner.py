"""RemoteLogMetadataTopicPartitioner's arithmetic: Kafka's murmur2 on UtilsTest's vectors, and the
metadata partition spread and stable as the broker's."""

from __future__ import annotations

import pytest

from kafka_tools.format.remote_log_partitioner import metadata_partition, murmur2, uuid_bits


@pytest.mark.parametrize(
    "text, expected",
    [  # org.apache.kafka.common.utils.UtilsTest.testMurmur2
        ("21", -973932308),
        ("foobar", -790332482),
        ("a-little-bit-long-string", -985981536),
        ("a-little-bit-longer-string", -1486304829),
        ("lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        ("abc", 479470107),
    ],
)
def test_murmur2_equals_kafkas(text, expected):
    assert murmur2(text.encode()) == expected


def test_uuid_bits_of_a_kafka_uuid():
    assert uuid_bits("AAAAAAAAAAEAAAAAAAAAAg") == (1, 2)
    with pytest.raises(ValueError):
        uuid_bits("AAAA")


def test_metadata_partitions_are_in_range_and_spread():
    got = {metadata_partition("AAAAAAAAAAEAAAAAAAAAAg", p, 50) for p in range(200)}
    assert got <= set(range(50)) and len(got) > 30
    assert metadata_partition("AAAAAAAAAAEAAAAAAAAAAg", 3, 1) == 0
