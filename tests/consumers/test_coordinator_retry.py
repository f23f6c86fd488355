"""A group's coordinator that is moving or still loading its offsets partition (a broker just started,
an election) answers NOT_COORDINATOR for a moment: `groups describe` and `migrate-offsets` ask again
within the request's time, as Kafka's own clients do, and fail in one line only past it. (Seen in CI:
`migrate-offsets` on a freshly started 0.9.0.1 broker exited 3 with "Broker: Not coordinator".)"""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_tools.broker.client import Broker, BrokerConfig
from kafka_tools.errors import InputError


class _Admin:
    """describe_consumer_groups answering `errors` first (one a call), then the group."""

    def __init__(self, errors: list[int]) -> None:
        self.errors, self.calls = list(errors), 0

    def describe_consumer_groups(self, groups, request_timeout):
        self.calls += 1
        future: Future = Future()
        if self.errors:
            future.set_exception(KafkaException(KafkaError(self.errors.pop(0))))
        else:
            future.set_result(SimpleNamespace(members=[]))
        return {groups[0]: future}


def _broker(admin: _Admin, timeout: float = 5.0) -> Broker:
    broker = Broker(BrokerConfig("127.0.0.1:1", version="0.9.0.1", timeout=timeout))
    broker._admin_client = admin
    return broker


def test_a_moving_coordinator_is_asked_again_until_it_answers() -> None:
    moving = [
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    ]
    admin = _Admin(moving)
    assert _broker(admin).members("g") == []
    assert admin.calls == 4


def test_a_coordinator_still_moving_after_the_timeout_is_one_error() -> None:
    admin = _Admin([KafkaError.NOT_COORDINATOR] * 100)
    with pytest.raises(InputError, match="group g"):
        _broker(admin, timeout=0.5).members("g")
    assert 2 <= admin.calls < 100


def test_other_errors_are_not_retried() -> None:
    admin = _Admin([KafkaError.GROUP_AUTHORIZATION_FAILED])
    with pytest.raises(InputError):
        _broker(admin).members("g")
    assert admin.calls == 1
