"""SASL GSSAPI's one-line errors that need no KDC: the `gssapi` package missing (what to install, exit 3),
and a command whose requests go through librdkafka (built here without GSSAPI) saying so. The exchange
itself is proven against a real KDC and broker in tests/modern/test_gssapi_modern.py."""

from __future__ import annotations

import socket
import sys

import pytest

from tests.support.cli import run_ktool


@pytest.fixture
def listening():
    """A port that accepts connections (the kernel's backlog) and never answers."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(8)
        yield f"127.0.0.1:{server.getsockname()[1]}"


def test_gssapi_without_the_gssapi_package_says_what_to_install(monkeypatch, listening):
    monkeypatch.setitem(sys.modules, "gssapi", None)  # as when it is not installed
    result = run_ktool(
        "groups", "list", "--bootstrap-server", listening, "--broker-timeout", "2",
        env={"KTOOL_BROKER_AUTH": "gssapi ktool@EXAMPLE.COM /nonexistent.keytab"},
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert "gssapi" in result.output and "pip install 'kafka-ktool[kerberos]'" in result.output


def test_a_librdkafka_request_over_gssapi_says_it_is_not_built_in(listening):
    result = run_ktool(
        "groups", "delete", "g", "--dry-run", "--bootstrap-server", listening, "--broker-timeout", "2",
        env={"KTOOL_BROKER_AUTH": "gssapi ktool@EXAMPLE.COM"},
    )  # fmt: skip
    assert result.exit_code == 3, result.output
    assert result.output.count("\n") == 1 and "Traceback" not in result.output
    assert "go through librdkafka, built here without SASL GSSAPI" in result.output
