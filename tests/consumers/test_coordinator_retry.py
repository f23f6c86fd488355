"""A group's coordinator that is moving or still loading its offsets partition (a broker just started,
an election) answers NOT_COORDINATOR for a moment: every request to it (describe, OffsetFetch, the
commit of `migrate-offsets`) is asked again within the request's time, as Kafka's own clients do, and
fails in one line only past it (DescribeGroups, on ktool's own client: test_describe_groups_wire.py).
(Seen in CI: `migrate-offsets` on a freshly started 0.9.0.1 broker exited 3 with "Broker: Not
coordinator".)"""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError, KafkaException

from kafka_tools.broker.client import Broker, BrokerConfig
from kafka_tools.errors import FindingsError, InputError


class _Admin:
    """Each group request answering `errors` first (one a call), then an empty answer."""

    def __init__(self, errors: list[int]) -> None:
        self.errors, self.calls = list(errors), 0

    def poll(self, timeout: float = 0) -> int:
        """No callbacks waiting (a real client serves librdkafka's error_cb here)."""
        return 0

    def _answer(self, group: str, result) -> dict:
        self.calls += 1
        future: Future = Future()
        if self.errors:
            future.set_exception(KafkaException(KafkaError(self.errors.pop(0))))
        else:
            future.set_result(result)
        return {group: future}

    def list_consumer_group_offsets(self, requests, request_timeout):
        return self._answer(requests[0].group_id, SimpleNamespace(topic_partitions=[]))

    def alter_consumer_group_offsets(self, requests, request_timeout):
        return self._answer(requests[0].group_id, SimpleNamespace(topic_partitions=[]))


def _broker(admin: _Admin, timeout: float = 5.0) -> Broker:
    broker = Broker(BrokerConfig("127.0.0.1:1", version="0.9.0.1", timeout=timeout))
    broker._admin_client = admin
    return broker


# every request that goes to the group's coordinator, and what it gives for an empty answer
REQUESTS = {
    "group_offsets": (lambda b: b.group_offsets("g"), {}),
    "committed": (lambda b: b.committed("g", [("t", 0)]), {}),
    "committed_many": (lambda b: b.committed_many({"g": [("t", 0)], "h": []}), {"g": {}, "h": {}}),
    "commit": (lambda b: b.commit("g", {("t", 0): 5}, "ktool"), None),
}


@pytest.mark.parametrize("request_name", sorted(REQUESTS))
def test_a_moving_coordinator_is_asked_again_until_it_answers(request_name) -> None:
    moving = [
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    ]
    call, empty = REQUESTS[request_name]
    admin = _Admin(moving)
    assert call(_broker(admin)) == empty
    assert admin.calls == 4


@pytest.mark.parametrize("request_name", sorted(REQUESTS))
def test_a_coordinator_still_moving_after_the_timeout_is_one_error(request_name) -> None:
    admin = _Admin([KafkaError.NOT_COORDINATOR] * 100)
    with pytest.raises(InputError, match="group g"):
        REQUESTS[request_name][0](_broker(admin, timeout=0.5))
    assert 2 <= admin.calls < 100


@pytest.mark.parametrize("request_name", sorted(REQUESTS))
def test_other_errors_are_not_retried(request_name) -> None:
    admin = _Admin([KafkaError.GROUP_AUTHORIZATION_FAILED])
    with pytest.raises(InputError):
        REQUESTS[request_name][0](_broker(admin))
    assert admin.calls == 1


def test_a_commit_refused_for_live_members_is_a_finding_not_retried() -> None:
    admin = _Admin([KafkaError.REBALANCE_IN_PROGRESS])
    with pytest.raises(FindingsError, match="live members"):
        _broker(admin).commit("g", {("t", 0): 5}, "ktool")
    assert admin.calls == 1
