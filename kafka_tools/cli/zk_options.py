"""The ZooKeeper options every ZooKeeper-reading command shares, apart from the commands and the
connection: `ktool retention` takes them and, without a ZooKeeper configured, must not import the
ZooKeeper client layers to find that out.

Decorate a command with :func:`zookeeper_options` and turn its keyword arguments into a ZkConfig
with :func:`zk_config_from_options`::

    @click.command("groups")
    @zookeeper_options
    def groups(**options):
        with open_zk(zk_config_from_options(**options)) as zk:
            ...
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kafka_tools.cli.paths import path_type
from kafka_tools.zk.environment import ENV_AUTH, ENV_CONNECT, ENV_KEY_PASSWORD

# The settings themselves (zk/config.py) are read when a command runs: declaring the options (its
# --help, a usage error) needs only the variables' names.
if TYPE_CHECKING:
    from kazoo.client import KazooClient

    from kafka_tools.zk.config import ZkConfig

F = TypeVar("F", bound=Callable[..., Any])

ZK_OPTION_NAMES = (
    "zookeeper",
    "zk_timeout",
    "zk_session_timeout",
    "zk_auth_file",
    "zk_tls",
    "zk_ca",
    "zk_cert",
    "zk_key",
    "zk_key_password_file",
)

_SECONDS = click.FloatRange(min=0, min_open=True)
_FILE = path_type(dir_okay=False, path_type=str)


def zookeeper_options(func: F) -> F:
    """Add the shared ZooKeeper options (connect string, timeouts, credentials file, TLS) to a command."""
    options = [
        click.option(
            "--zookeeper",
            envvar=ENV_CONNECT,
            show_envvar=True,
            metavar="HOST:PORT[,…][/CHROOT]",
            help="ZooKeeper servers and Kafka's chroot [default: the config file's zookeeper.connect].",
        ),
        click.option(
            "--zk-timeout",
            type=_SECONDS,
            metavar="SECONDS",
            help="Wait this long for a ZooKeeper connection [default: 10].",
        ),
        click.option(
            "--zk-session-timeout",
            type=_SECONDS,
            metavar="SECONDS",
            help="ZooKeeper session timeout [default: 30].",
        ),
        click.option(
            "--zk-auth-file",
            type=_FILE,
            help=(
                "Credentials, one per line: `digest user:password`, `sasl user:password` (DIGEST-MD5) or "
                f"`gssapi [principal]`. ${ENV_AUTH} may hold the same text. Never on the command line."
            ),
        ),
        click.option("--zk-tls", is_flag=True, help="Talk TLS to ZooKeeper (implied by --zk-ca/--zk-cert)."),
        click.option("--zk-ca", type=_FILE, help="CA certificates (PEM) to verify ZooKeeper's certificate."),
        click.option("--zk-cert", type=_FILE, help="Client certificate (PEM) for TLS client authentication."),
        click.option("--zk-key", type=_FILE, help="Client private key (PEM) for --zk-cert."),
        click.option(
            "--zk-key-password-file",
            type=_FILE,
            help=f"The password of an encrypted --zk-key, its first line; ${ENV_KEY_PASSWORD} may hold it.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def zk_config_from_options(**options: Any) -> ZkConfig:
    """The ZkConfig for the values of :func:`zookeeper_options` (other keyword arguments are ignored)."""
    from kafka_tools.zk.config import resolve_config

    return resolve_config(
        connect=options.get("zookeeper"),
        connect_timeout=options.get("zk_timeout"),
        session_timeout=options.get("zk_session_timeout"),
        auth_file=options.get("zk_auth_file"),
        tls=options.get("zk_tls") or None,
        ca=options.get("zk_ca"),
        cert=options.get("zk_cert"),
        key=options.get("zk_key"),
        key_password_file=options.get("zk_key_password_file"),
    )


def check_zk_groups(groups: Iterable[str], **options: Any) -> None:
    """Before connecting: when ZooKeeper is configured (the command will look the groups up there), each
    group must be a name ZooKeeper can hold (zk/names.py), else one line and exit 2."""
    from kafka_tools.zk.config import NoZooKeeperError
    from kafka_tools.zk.names import check_group_name

    groups = list(groups)
    if not groups:
        return
    try:
        zk_config_from_options(**options)
    except NoZooKeeperError:
        return
    for group in groups:
        check_group_name(group)


@contextmanager
def zk_if_configured(*, needed_for: str | None = None, **options: Any) -> Iterator[KazooClient | None]:
    """An open ZooKeeper when one is configured, else None: commands whose data lives in Kafka work
    with --bootstrap-server alone (KRaft and Kafka 4.x clusters have no ZooKeeper). `needed_for` says
    what could not be done without it, for the one line when neither server is given."""
    from kafka_tools.zk.config import NoZooKeeperError

    try:
        config = zk_config_from_options(**options)
    except NoZooKeeperError as exc:
        if needed_for is not None or not options.get("bootstrap_server"):
            what = needed_for or "give --bootstrap-server host:port for the groups and offsets in Kafka"
            raise NoZooKeeperError(f"{exc}; {what}") from None
        yield None
        return
    from kafka_tools.zk.connection import open_zk  # the client: only when ZooKeeper is configured

    with open_zk(config) as zk:
        yield zk
