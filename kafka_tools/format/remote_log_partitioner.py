"""Which `__remote_log_metadata` partition holds a user partition's events, computed as Kafka's
`RemoteLogMetadataTopicPartitioner.metadataPartition` does: murmur2 of the 4 big-endian bytes of
`Objects.hash(topicId.leastSignificantBits, topicId.mostSignificantBits, partition)`, made positive,
modulo the metadata topic's partition count."""

from __future__ import annotations

import base64

DEFAULT_METADATA_PARTITIONS = 50  # remote.log.metadata.topic.num.partitions' default

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def _int32(n: int) -> int:
    n &= _MASK
    return n - (1 << 32) if n & 0x80000000 else n


def murmur2(data: bytes) -> int:
    """Kafka's `Utils.murmur2` (seed 0x9747b28c), as a signed int32."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    whole = length - length % 4
    for i in range(0, whole, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    tail = length % 4
    if tail == 3:
        h ^= data[whole + 2] << 16
    if tail >= 2:
        h ^= data[whole + 1] << 8
    if tail >= 1:
        h ^= data[whole]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return _int32(h)


def _long_hash(v: int) -> int:
    """`Long.hashCode`: the two halves xor-ed, as an int32."""
    v &= 0xFFFFFFFFFFFFFFFF
    return _int32(v ^ (v >> 32))


def uuid_bits(topic_id: str) -> tuple[int, int]:
    """(most, least) significant bits of a Kafka uuid in its base64 form."""
    raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {topic_id!r}")
    return int.from_bytes(raw[:8], "big"), int.from_bytes(raw[8:], "big")


def metadata_partition(topic_id: str, partition: int, partitions: int = DEFAULT_METADATA_PARTITIONS) -> int:
    """The `__remote_log_metadata` partition of (topic id, partition)."""
    most, least = uuid_bits(topic_id)
    h = 1
    for part in (_long_hash(least), _long_hash(most), partition):  # Arrays.hashCode of the three
        h = _int32(31 * h + part)
    positive = murmur2((h & _MASK).to_bytes(4, "big")) & 0x7FFFFFFF  # Utils.toPositive
    return positive % partitions
