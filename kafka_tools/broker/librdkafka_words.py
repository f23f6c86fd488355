"""librdkafka's errors in ktool's words, and the logger that keeps its own lines off the terminal."""

from __future__ import annotations

from typing import Any


def coordinator_moving(exc: Exception) -> bool:
    """Whether `exc` says the group's coordinator is moving or loading (NOT_COORDINATOR,
    COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE): retriable in Kafka's protocol."""
    from confluent_kafka import KafkaError

    err = exc.args[0] if exc.args else None
    moving = (
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
    )
    return isinstance(err, KafkaError) and err.code() in moving


def no_answer_words(timeout: float | None) -> str:
    """A broker that never answered, in one phrase."""
    within = f" within {timeout:g} s" if timeout else ""
    return f"no answer{within} (is the broker running, and is this its Kafka port?)"


def error_words(exc: Exception, timeout: float | None = None) -> str:
    """librdkafka's error in ktool's words: what failed, not "Local: Timed out"."""
    from confluent_kafka import KafkaError

    err = exc.args[0] if exc.args else exc
    code = err.code() if isinstance(err, KafkaError) else None
    if code in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError._TIMED_OUT_QUEUE):
        return no_answer_words(timeout)
    if code == KafkaError._RESOLVE:
        return "broker host name not resolved"
    if code in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT):
        return "the connection to the broker failed or was closed"
    return getattr(err, "str", lambda: str(err))()


def is_refusal(err: Any) -> bool:
    """Whether a librdkafka error says the brokers refused who we are (SASL) or our TLS."""
    from confluent_kafka import KafkaError

    return isinstance(err, KafkaError) and (err.code() == KafkaError._AUTHENTICATION or is_tls(err))


def is_tls(err: Any) -> bool:
    """A TLS failure: librdkafka's _SSL, or a connection its TLS layer lost (a broker that wants a
    client certificate answers the handshake's end with `ssl/tls alert bad certificate`)."""
    from confluent_kafka import KafkaError

    return isinstance(err, KafkaError) and (
        err.code() == KafkaError._SSL
        or "SSL handshake failed" in err.str()
        or "ssl/tls alert" in err.str().lower()
    )


def is_transport(err: Any) -> bool:
    """A connection that failed or was closed (librdkafka's _TRANSPORT)."""
    from confluent_kafka import KafkaError

    return isinstance(err, KafkaError) and err.code() == KafkaError._TRANSPORT


def all_down(err: Any) -> bool:
    """Every broker's connection is down (librdkafka's _ALL_BROKERS_DOWN, told after each failed once)."""
    from confluent_kafka import KafkaError

    return isinstance(err, KafkaError) and err.code() == KafkaError._ALL_BROKERS_DOWN


def refusal_line(err: Any, where: str, security: str, transport: str | None) -> str | None:
    """The one line a refused contact is: a failed authentication or TLS handshake, or every broker
    down after a connection failure (`transport`: the last one librdkafka told); None for the rest."""
    if is_refusal(err):
        kind = "TLS handshake failed" if is_tls(err) else "authentication failed"
        return f"broker {where}: {kind} ({security}): {one_line(err.str())}"
    if all_down(err) and transport is not None:
        # librdkafka tells a failed TLS handshake as a transport error too, now and then (CI run 10)
        kind = "TLS handshake failed" if "state SSL_HANDSHAKE" in transport else "no connection"
        return f"broker {where}: {kind} ({security}): {transport}"
    return None


def one_line(text: str) -> str:
    return " ".join(text.split())


class QuietLogger:
    """librdkafka's own log lines stay out of the terminal: errors surface as one ktool line instead."""

    def log(self, *args, **kwargs) -> None:
        pass

    def __getattr__(self, name):
        return self.log
