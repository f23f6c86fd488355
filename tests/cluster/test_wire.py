"""ktool's own protocol client reads an answer field by field (broker/wire.py): a DescribeQuorum v2
answer written here by hand from Kafka's DescribeQuorumResponse.json is read whole, and every truncation
of it, or an array claiming more items than the answer has bytes, is one InputError (one line, exit 3):
never a struct.error, an IndexError or an allocation the size of a hostile count."""

from __future__ import annotations

import struct

import pytest

from kafka_tools.broker.cluster_wire import DESCRIBE_QUORUM, ReplicaState, describe_quorum
from kafka_tools.broker.wire import compact_string, uvarint
from kafka_tools.errors import InputError

TAGS = b"\x00"


def _answer() -> bytes:
    voter = struct.pack(">i", 100) + bytes(16) + struct.pack(">qqq", 139, -1, -1) + TAGS
    observer = struct.pack(">i", 1) + bytes(range(16)) + struct.pack(">qqq", 137, 5, 4) + TAGS
    partition = (
        struct.pack(">ih", 0, 0) + b"\x00" + struct.pack(">iiq", 100, 7, 139)
        + uvarint(2) + voter + uvarint(2) + observer + TAGS
    )  # fmt: skip
    topic = compact_string("__cluster_metadata") + uvarint(2) + partition + TAGS
    listener = compact_string("CONTROLLER") + compact_string("h") + struct.pack(">H", 9093) + TAGS
    node = struct.pack(">i", 100) + uvarint(2) + listener + TAGS
    return struct.pack(">h", 0) + b"\x00" + uvarint(2) + topic + uvarint(2) + node + TAGS


class _Canned:
    """A connection whose every answer is `data` (flexible: its response header already taken off)."""

    where = "broker-under-test:9092"

    def __init__(self, data: bytes) -> None:
        self.data = data

    def ask(self, key: int, version: int, body: bytes, flexible: bool = False) -> bytes:
        assert (key, version, flexible) == (DESCRIBE_QUORUM, 2, True)
        return self.data


VERSIONS = {DESCRIBE_QUORUM: (0, 2)}


def test_a_describe_quorum_answer_is_read_whole() -> None:
    quorum = describe_quorum(_Canned(_answer()), VERSIONS)
    assert (quorum.leader, quorum.leader_epoch, quorum.high_watermark) == (100, 7, 139)
    assert quorum.voters == [ReplicaState(100, "AAAAAAAAAAAAAAAAAAAAAA", 139, -1, -1)]
    assert quorum.observers == [ReplicaState(1, "AAECAwQFBgcICQoLDA0ODw", 137, 5, 4)]
    assert quorum.endpoints == {100: ["CONTROLLER://h:9093"]}


@pytest.mark.parametrize("cut", range(len(_answer()) - 1))
def test_every_truncation_is_one_input_error(cut: int) -> None:
    with pytest.raises(InputError):
        describe_quorum(_Canned(_answer()[:cut]), VERSIONS)


def test_a_huge_array_count_is_refused_before_it_is_allocated() -> None:
    hostile = struct.pack(">h", 0) + b"\x00" + uvarint(2**31)
    with pytest.raises(InputError, match="longer than its answer"):
        describe_quorum(_Canned(hostile), VERSIONS)


def test_a_broker_without_describe_quorum_is_none() -> None:
    assert describe_quorum(_Canned(b""), {}) is None
