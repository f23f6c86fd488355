"""A classic group of confluent-kafka (librdkafka) consumers on librdkafka's own mock cluster, in one
process: the oracle for ktool's model of librdkafka's cooperative-sticky assignor.

`python -m tests.support.rdkafka_mock_group` reads a scenario as JSON on stdin ({"topics": {name: count},
"steps": [["join", [topics]] | ["leave", member index]]}) and writes one JSON line per settled step: the
members in the order the mock coordinator keeps them (the order they joined: its JoinGroup lists them so,
and its leader is the first), their subscriptions and what each holds. Settled: every member steady
(librdkafka's statistics: its join state), every subscribed partition held once, nothing changed for
2.5 s. A child process, because a librdkafka leader that fails an assertion aborts its whole
process.

The mock cluster is made through librdkafka's C API (ctypes on the library confluent-kafka loads):
Python has no handle on it, and only the C API creates a topic with a chosen partition count.
"""

from __future__ import annotations

import ctypes
import json
import sys
import time

# the mock waits session - 1 s for members to rejoin, then runs the rebalance with those it has (a member
# late keeps its previous JoinGroup's metadata): long enough for a loaded machine, short enough for CI
SESSION_MS = 5000


def _librdkafka() -> ctypes.CDLL:
    import confluent_kafka  # noqa: F401  (loads the bundled librdkafka)

    with open("/proc/self/maps") as maps:
        path = next(line.split()[-1] for line in maps if "librdkafka" in line.split()[-1])
    lib = ctypes.CDLL(path)
    lib.rd_kafka_conf_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.restype = ctypes.c_void_p
    lib.rd_kafka_new.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.rd_kafka_mock_cluster_new.restype = ctypes.c_void_p
    lib.rd_kafka_mock_cluster_new.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.rd_kafka_mock_cluster_bootstraps.restype = ctypes.c_char_p
    lib.rd_kafka_mock_cluster_bootstraps.argtypes = [ctypes.c_void_p]
    lib.rd_kafka_mock_topic_create.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
    lib.rd_kafka_mock_group_initial_rebalance_delay_ms.argtypes = [ctypes.c_void_p, ctypes.c_int]
    return lib


def mock_cluster(topics: dict[str, int]) -> str:
    """A one-broker mock cluster holding `topics`; its bootstrap servers."""
    lib = _librdkafka()
    errstr = ctypes.create_string_buffer(512)
    handle = lib.rd_kafka_new(0, lib.rd_kafka_conf_new(), errstr, len(errstr))  # a producer owns it
    cluster = lib.rd_kafka_mock_cluster_new(handle, 1)
    lib.rd_kafka_mock_group_initial_rebalance_delay_ms(cluster, 0)
    for topic, count in topics.items():
        lib.rd_kafka_mock_topic_create(cluster, topic.encode(), count, 1)
    return lib.rd_kafka_mock_cluster_bootstraps(cluster).decode()


class Member:
    def __init__(self, bootstrap: str, group: str, topics: list[str]) -> None:
        from confluent_kafka import Consumer

        self.topics = sorted(topics)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": SESSION_MS,
                "heartbeat.interval.ms": 300,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "statistics.interval.ms": 200,
                "stats_cb": self._stats,
                # the leader's assignor logs each member on stderr from its own thread, before it runs:
                # an aborted leader still names the newcomer of its last rebalance
                "debug": "assignor",
            }
        )
        self.consumer.subscribe(self.topics)
        self.join_state = ""

    def _stats(self, text: str) -> None:
        self.join_state = json.loads(text).get("cgrp", {}).get("join_state", "")

    @property
    def id(self) -> str:
        return self.consumer.memberid() or ""

    def owned(self) -> list[list]:
        return sorted([tp.topic, tp.partition] for tp in self.consumer.assignment())


def settle(members: list[Member], topics: dict[str, int], timeout: float = 90) -> None:
    """Until every subscribed partition is held once, by joined members, and nothing changed for 2.5 s."""
    wanted = {(t, p) for m in members for t in m.topics for p in range(topics[t])}
    deadline, last, since = time.monotonic() + timeout, None, time.monotonic()
    while time.monotonic() < deadline:
        for m in members:
            m.consumer.poll(0.01)
        held = [tuple(tp) for m in members for tp in m.owned()]
        now = (tuple(m.id for m in members), tuple(sorted(held)))
        steady = all(m.id and m.join_state == "steady" for m in members)  # a newcomer after its first sync
        settled = steady and set(held) >= wanted and len(held) == len(set(held))
        if now != last or not settled:
            last, since = now, time.monotonic()
        elif time.monotonic() - since > 2.5:
            return
        time.sleep(0.02)
    raise SystemExit(f"the group did not settle: {last}")


def main() -> None:
    scenario = json.load(sys.stdin)
    topics = scenario["topics"]
    bootstrap = mock_cluster(topics)
    members: list[Member] = []
    for step in scenario["steps"]:
        print(f"STEP {json.dumps(step)}", file=sys.stderr, flush=True)  # marks the leader's log
        if step[0] == "join":
            members.append(Member(bootstrap, "oracle", step[1]))
        else:
            members.pop(step[1]).consumer.close()
        settle(members, topics)
        state = [{"id": m.id, "topics": m.topics, "owned": m.owned()} for m in members]
        print(json.dumps({"step": step, "members": state}), flush=True)
    for m in members:
        m.consumer.close()


if __name__ == "__main__":
    main()
