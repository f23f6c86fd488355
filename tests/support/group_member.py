"""A real consumer (confluent-kafka) of one group, run as its own process so that a test can SIGKILL
it: ``python -m tests.support.group_member BOOTSTRAP GROUP TOPIC PROTOCOL CLIENT_ID``. PROTOCOL is
`consumer` (KIP-848) or `classic` (cooperative-sticky). It prints one JSON line per assignment callback,
as the consumer itself sees its partitions: ``{"t": time.time(), "member": its member id, "event":
"assigned"|"revoked"|"lost", "partitions": [[topic, partition], …]}`` (incremental, as both protocols
hand them here), flushed at once."""

from __future__ import annotations

import json
import sys
import time


def main(bootstrap: str, group: str, topic: str, protocol: str, client_id: str) -> None:
    from confluent_kafka import Consumer

    conf = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "group.protocol": protocol,
        "client.id": client_id,
        "auto.offset.reset": "earliest",
        "topic.metadata.refresh.interval.ms": 1000,  # a classic member sees new partitions in a second
    }
    if protocol == "classic":
        conf.update(
            {
                "partition.assignment.strategy": "cooperative-sticky",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 1000,
            }
        )
    consumer = Consumer(conf)

    def tell(event: str):
        def callback(c, partitions) -> None:
            parts = sorted([p.topic, p.partition] for p in partitions)
            print(json.dumps({"t": time.time(), "member": c.memberid(), "event": event, "partitions": parts}),
                  flush=True)  # fmt: skip

        return callback

    consumer.subscribe([topic], on_assign=tell("assigned"), on_revoke=tell("revoked"), on_lost=tell("lost"))
    try:
        while True:
            consumer.poll(0.2)
    except KeyboardInterrupt:
        consumer.close()


if __name__ == "__main__":
    main(*sys.argv[1:6])
