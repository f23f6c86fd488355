"""Java's hashes as Kafka computes them where a partition or an order depends on them: `String.hashCode`
(RoundRobinAssignor's order, the coordinators' `partitionFor`) and `Utils.abs(hashCode) % n`.

One home (with `remote_log_partitioner.murmur2` for the murmur2 side) so that the assignors and the
transaction coordinator cannot drift apart.
"""

from __future__ import annotations

import struct

INT32_MIN = -(1 << 31)


def java_string_key(text: str) -> bytes:
    """A sort key ordering strings as Java's `String.compareTo` does (by UTF-16 code unit)."""
    return text.encode("utf-16-be", "surrogatepass")


def java_string_hash(text: str) -> int:
    """Java's `String.hashCode`: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as a signed int32."""
    h = 0
    for (unit,) in struct.iter_unpack(">H", java_string_key(text)):
        h = (31 * h + unit) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def partition_for(key: str, partitions: int) -> int:
    """`Utils.abs(key.hashCode) % partitions`: the coordinators' `partitionFor` (TransactionStateManager's
    for a transactional id, GroupMetadataManager's for a group id); Utils.abs(Integer.MIN_VALUE) is 0."""
    h = java_string_hash(key)
    return (0 if h == INT32_MIN else abs(h)) % partitions
