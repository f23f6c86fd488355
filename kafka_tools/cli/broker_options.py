"""The broker options every Kafka-reading command shares, and the client they make (told the brokers'
version from their ZooKeeper registration when it is known)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kafka_tools.broker.client import Broker, BrokerConfig
from kafka_tools.errors import UsageError
from kafka_tools.zk.layout import broker_version_hint, librdkafka_compat
from kafka_tools.zk.reader import read_brokers

F = TypeVar("F", bound=Callable[..., Any])


def broker_options(func: F) -> F:
    options = [
        click.option(
            "--bootstrap-server",
            envvar="KTOOL_BOOTSTRAP_SERVER",
            show_envvar=True,
            metavar="HOST:PORT[,…]",
            help="Kafka brokers, for offsets in Kafka, log end offsets and lag.",
        ),
        click.option(
            "--broker-version",
            metavar="X.Y.Z",
            help="The brokers' Kafka version [default: from their ZooKeeper registration, else probed].",
        ),
        click.option(
            "--broker-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=10.0,
            show_default=True,
            metavar="SECONDS",
            help="Wait this long for a broker connection and for each request.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def broker_from_options(zk=None, **options: Any) -> Broker | None:
    """A Broker for --bootstrap-server, told the brokers' version when ZooKeeper knows it (brokers
    before 0.10 make librdkafka hang on ApiVersions otherwise); None without --bootstrap-server."""
    bootstrap = options.get("bootstrap_server")
    if not bootstrap:
        return None
    version = options.get("broker_version")
    extra: dict[str, str] = {}
    if version is None and zk is not None:
        hint = broker_version_hint(read_brokers(zk))
        compat = librdkafka_compat(hint)
        if compat is None:
            raise UsageError(f"the brokers are Kafka {hint}: no Kafka protocol client speaks to them")
        extra.update(compat)
        version = compat.get("broker.version.fallback") or ("1.0.0" if hint else None)
    return Broker(BrokerConfig(bootstrap, version, options.get("broker_timeout") or 10.0, extra))
