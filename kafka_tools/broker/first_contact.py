"""The first contact with the brokers, watched as it happens: librdkafka tells a failed authentication,
a failed TLS handshake or a connection every broker closed only to its error callback, which runs only
inside a client's poll, while the request itself waits out its whole timeout. So before a Broker's first
request, one small request (DescribeCluster) is sent and the client polled every 0.1 s: what librdkafka
saw is reported as soon as it saw it, not 10 s later as "no answer"."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kafka_tools.broker.librdkafka_words import error_words
from kafka_tools.errors import InputError

_SLICE = 0.1


def wait_for_first_contact(admin: Any, where: str, timeout: float, refused: Callable[[], str | None]) -> None:
    """Until the brokers answer (or refuse) one request: `refused()` says why the brokers cannot be
    spoken to, once the error callback has seen it; then one line, exit 3. No answer within `timeout`
    is said so at once too (the requests that follow would wait as long again)."""
    from confluent_kafka import KafkaError, KafkaException

    try:
        future = admin.describe_cluster(request_timeout=timeout)
    except KafkaException:
        return  # the requests that follow say it
    deadline = time.monotonic() + timeout
    while not future.done() and time.monotonic() < deadline:
        admin.poll(_SLICE)
        why = refused()
        if why is not None:
            raise InputError(why)
    if not future.done():
        raise InputError(
            f"broker {where}: {error_words(KafkaException(KafkaError(KafkaError._TIMED_OUT)), timeout)}"
        )
