"""What every part of the metadata replay shares (metadata/replay.py's Replayer is made of the deltas):
the image it changes, the changes it describes (Event, from `events_from` on: `ktool metadata diff`) and
the records the image cannot take (Inconsistency)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from kafka_tools.metadata.image import Image


@dataclass(slots=True)
class Event:
    """One change to the image: what changed, at which offset, in words and as data."""

    offset: int
    kind: str  # topic-created, leader-changed, isr-shrunk, config-set, broker-fenced, …
    subject: str  # the topic, partition (`orders-3`), broker (`broker 1`) or resource it concerns
    detail: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class Inconsistency:
    """A record the image cannot take as it stands (a partition of an unknown topic, …): Kafka's own
    replay would fail on it; ktool says so and goes on."""

    offset: int
    record_type: str
    message: str


class Delta:
    """The state a delta's handlers read and write; one method per metadata record type, each taking
    (offset, fields) as Kafka's MetadataDelta classes replay them."""

    image: Image
    events_from: int | None
    events: list[Event]
    inconsistencies: list[Inconsistency]
    applied: Counter[str]

    def _wants(self, offset: int) -> bool:
        since = self.events_from
        return since is not None and offset >= since

    def _event(self, offset: int, kind: str, subject: str, detail: str, **data: Any) -> None:
        self.events.append(Event(offset, kind, subject, detail, data))

    def _inconsistent(self, offset: int, record_type: str, message: str) -> None:
        self.inconsistencies.append(Inconsistency(offset, record_type, message))
