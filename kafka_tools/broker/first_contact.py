"""The first contact with the brokers, watched as it happens: librdkafka tells a failed authentication,
a failed TLS handshake or a connection every broker closed only to its error callback, which runs only
inside a client's poll, while the request itself waits out its whole timeout. So before a Broker's first
request, one small request (DescribeCluster) is sent and the client polled every 0.1 s: what librdkafka
saw is reported as soon as it saw it, not 10 s later as "no answer". And the other way round: a first
contact that ends only as its time runs out, timed out or as a transport failure (librdkafka gives up a
silent port's TLS handshake so), is a port that never answered, said so here for every
`--bootstrap-server` command; a fast refusal (a certificate refused, a plaintext port spoken to in TLS)
keeps its own words."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from kafka_tools.broker.librdkafka_words import is_refusal, no_answer_words
from kafka_tools.errors import InputError

_SLICE = 0.1


def wait_for_first_contact(admin: Any, where: str, timeout: float, refused: Callable[[], str | None]) -> None:
    """Until the brokers answer (or refuse) one request: `refused()` says why the brokers cannot be
    spoken to, once the error callback has seen it; then one line, exit 3. No answer within `timeout`
    is said so at once too (the requests that follow would wait as long again)."""
    from confluent_kafka import KafkaException

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
    ran_out = time.monotonic() >= deadline - max(_SLICE, timeout / 10)
    if not future.done() or _unanswered(future.exception(), ran_out):
        raise InputError(f"broker {where}: {no_answer_words(timeout)}")


def _unanswered(exc: BaseException | None, ran_out: bool) -> bool:
    """A first contact that timed out, or failed without a refusal only as its time ran out (its
    connection given up): nothing ever answered."""
    from confluent_kafka import KafkaError

    err = exc.args[0] if exc is not None and exc.args else None
    if not isinstance(err, KafkaError) or is_refusal(err):
        return False
    timed_out = (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError._TIMED_OUT_QUEUE)
    return err.code() in timed_out or ran_out
