"""How a refused contact told by librdkafka is said: a TLS handshake librdkafka reports as a transport
error (then every broker down) is still a failed TLS handshake (CI run 10 saw it once in twenty runs)."""

from __future__ import annotations

import pytest

from kafka_tools.broker.librdkafka_words import refusal_line


def test_a_handshake_told_as_a_transport_error_is_said_as_a_tls_failure() -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    down = confluent_kafka.KafkaError(confluent_kafka.KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down")
    told = (
        "sasl_ssl://127.0.0.1:9093/bootstrap: error:0A000086:SSL routines::certificate verify failed "
        "(after 25ms in state SSL_HANDSHAKE)"
    )
    line = refusal_line(down, "127.0.0.1:9093", "SASL_SSL SCRAM-SHA-256 as alice", told)
    assert line == f"broker 127.0.0.1:9093: TLS handshake failed (SASL_SSL SCRAM-SHA-256 as alice): {told}"
    refused = "127.0.0.1:9093/bootstrap: Connect to ipv4#127.0.0.1:9093 failed: Connection refused"
    line = refusal_line(down, "127.0.0.1:9093", "PLAINTEXT", refused)
    assert line == f"broker 127.0.0.1:9093: no connection (PLAINTEXT): {refused}"
