"""Java's hashes as Kafka computes them where a partition or an order depends on them: `String.hashCode`
(RoundRobinAssignor's order, the coordinators' `partitionFor`), `Utils.abs(hashCode) % n`, `Uuid.hashCode`
and `Uuid.compareTo`, and the iteration order of a `java.util.HashMap` (the sticky and uniform assignors
walk one) and of a Scala immutable `Set` (the broker's Metadata response lists requested topics in one's
order).

One home (with `remote_log_partitioner.murmur2` for the murmur2 side) so that the assignors and the
transaction coordinator cannot drift apart.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Callable, Sequence
from typing import TypeVar

K = TypeVar("K")

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


def _uuid_longs(uuid: str | tuple[int, int]) -> tuple[int, int]:
    if isinstance(uuid, str):
        return struct.unpack(">qq", base64.urlsafe_b64decode(uuid + "=="))
    return uuid


def java_uuid_key(uuid: str | tuple[int, int]) -> tuple[int, int]:
    """A sort key ordering Uuids as `Uuid.compareTo` does: most significant long, then least, both
    compared as signed longs (a Uuid given as longs is taken as Java's signed pair)."""
    msb, lsb = _uuid_longs(uuid)
    return _signed64(msb), _signed64(lsb)


def _signed64(x: int) -> int:
    x &= 0xFFFFFFFFFFFFFFFF
    return x - (1 << 64) if x & (1 << 63) else x


def java_uuid_hash(uuid: str | tuple[int, int]) -> int:
    """`Uuid.hashCode` of a Uuid as Kafka prints it (URL-safe base64 of 16 bytes, unpadded) or as its two
    longs (most, least significant): the longs xored, then the halves of that xored, as a signed int32."""
    msb, lsb = _uuid_longs(uuid)
    x = (msb ^ lsb) & 0xFFFFFFFFFFFFFFFF
    h = ((x >> 32) ^ x) & 0xFFFFFFFF
    return h - 0x100000000 if h & 0x80000000 else h


def java_hashmap_order(
    keys: Sequence[K], hash_of: Callable[[K], int], copied: bool = False
) -> tuple[list[K], bool]:
    """Keys in the iteration order of a java.util.HashMap they were put into (a table of 16 doubling past
    3/4 full; bucket `(h ^ h >>> 16) & (n - 1)`), and True when two keys share a bucket: then their order
    is the order they were put in, `keys`' order here, which the caller may not know. `copied`: a HashSet
    made from a collection (`new HashSet<>(c)`) sizes its table to `max(n / .75 + 1, 16)` first, which is
    twice as large when n is exactly 3/4 of a power of two (12 keys: 32 buckets, not 16)."""
    size = 16
    while len(keys) > size * 3 // 4:
        size *= 2
    if copied:
        size = 16
        while size < max(int(len(keys) / 0.75) + 1, 16):
            size *= 2
    buckets: dict[int, list[K]] = {}
    for key in keys:
        h = hash_of(key) & 0xFFFFFFFF
        buckets.setdefault((h ^ (h >> 16)) & (size - 1), []).append(key)
    return [k for b in sorted(buckets) for k in buckets[b]], any(len(b) > 1 for b in buckets.values())


def _scala_improve(hash_code: int) -> int:
    """scala.collection.Hashing.improve, as an unsigned 32-bit value."""
    h = hash_code & 0xFFFFFFFF
    h = (h + (~(h << 9) & 0xFFFFFFFF)) & 0xFFFFFFFF
    h ^= h >> 14
    h = (h + (h << 4)) & 0xFFFFFFFF
    return h ^ (h >> 10)


def scala_set_order(names: Sequence[str]) -> list[str]:
    """The iteration order of Scala 2.13's immutable `Set` built from `names` in turn (KafkaApis'
    `topics.asScala.toSet`): up to 4 in insertion order (Set1..Set4), more as the CHAMP trie of the
    improved `String.hashCode` lays them out, 5 bits a level from the lowest: a node's own entries first,
    by those bits, then its sub-nodes in the same order, each in turn; equal hashes in insertion order."""
    unique = list(dict.fromkeys(names))
    if len(unique) <= 4:
        return unique

    def walk(items: list[tuple[str, int]], shift: int) -> list[str]:
        if shift >= 32:
            return [name for name, _ in items]
        by_bits: dict[int, list[tuple[str, int]]] = {}
        for name, h in items:
            by_bits.setdefault((h >> shift) & 31, []).append((name, h))
        ordered = sorted(by_bits.items())
        entries = [group[0][0] for _, group in ordered if len(group) == 1]
        return entries + [name for _, group in ordered if len(group) > 1 for name in walk(group, shift + 5)]

    return walk([(name, _scala_improve(java_string_hash(name))) for name in unique], 0)
