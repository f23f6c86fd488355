"""The broker options every Kafka-reading command shares, and the client they make (told the brokers'
version from their ZooKeeper registration when it is known).

A secured cluster's settings come, highest first, from the command line, the environment
(``KTOOL_BROKER_AUTH``: the credentials' text) and the ``[kafka]`` table of the config file that
``[zookeeper]`` lives in (zk/config.py says where)::

    [kafka]
    auth_file = "/etc/ktool/kafka-auth"   # credentials, see broker/security.py
    tls = true
    ca = "/etc/ktool/kafka-ca.pem"
    cert = "/etc/ktool/client.pem"
    key = "/etc/ktool/client.key"         # its password: key-password in the credentials
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from kafka_tools.errors import InputError, UsageError

if TYPE_CHECKING:  # the client (ssl, socket, hashlib: ~20 M instructions) only when a broker is asked
    from kafka_tools.broker.client import Broker
    from kafka_tools.broker.security import BrokerCredentials, BrokerSecurity

F = TypeVar("F", bound=Callable[..., Any])

ENV_BROKER_AUTH = "KTOOL_BROKER_AUTH"


# Not click's dir_okay=False (exit 2 with the usage text): what the file is is said by its reader in one
# line, exit 3 (the exit-code matrix's wrong kind of path).
class _File(click.Path):
    """A credentials or TLS file: read by its reader (kafka_tools/secret_files.py, one line, exit 3),
    not checked by click (cli/paths.py says why)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(readable=False, **kwargs)
        self.name = "file"  # shown as FILE in the help, as a file it is


_FILE = _File(path_type=str)


_BOOTSTRAP_HELP = "Kafka brokers, for offsets in Kafka, log end offsets and lag."
_VERSION_HELP = "The brokers' Kafka version [default: from their ZooKeeper registration, else probed]."


def broker_options_for(bootstrap_help: str = _BOOTSTRAP_HELP, version_help: str = _VERSION_HELP):
    """The one set of broker options (address, version, timeout, SASL and TLS) for a command that
    talks to a broker, with its own words for what it asks the brokers and what the version decides;
    tests/cli/test_broker_options.py checks that every command with --bootstrap-server has them all."""

    def decorate(func: F) -> F:
        options = [
            click.option(
                "--bootstrap-server",
                envvar="KTOOL_BOOTSTRAP_SERVER",
                show_envvar=True,
                metavar="HOST:PORT[,…]",
                help=bootstrap_help,
            ),
            click.option("--broker-version", metavar="X.Y.Z", help=version_help),
            click.option(
                "--broker-timeout",
                type=click.FloatRange(min=0, min_open=True),
                default=10.0,
                show_default=True,
                metavar="SECONDS",
                help="Wait this long for a broker connection and for each request.",
            ),
            click.option(
                "--broker-auth-file",
                type=_FILE,
                help=(
                    "SASL credentials, one line: `plain|scram-sha-256|scram-sha-512 user:password` or "
                    "`gssapi [principal [keytab]] [service=NAME]`; `key-password PASSWORD` for --broker-key. "
                    f"${ENV_BROKER_AUTH} may hold the same text. Never on the command line."
                ),
            ),
            click.option(
                "--broker-tls", is_flag=True, help="Talk TLS to the brokers (implied by --broker-ca/-cert)."
            ),
            click.option(
                "--broker-ca", type=_FILE, help="CA certificates (PEM) to verify the brokers' certificates."
            ),
            click.option(
                "--broker-cert", type=_FILE, help="Client certificate (PEM) for TLS client authentication."
            ),
            click.option("--broker-key", type=_FILE, help="Client private key (PEM) for --broker-cert."),
        ]
        for option in reversed(options):
            func = option(func)
        return func

    return decorate


broker_options = broker_options_for()


def broker_from_options(zk=None, **options: Any) -> Broker | None:
    """A Broker for --bootstrap-server, told the brokers' version when ZooKeeper knows it (brokers
    before 0.10 make librdkafka hang on ApiVersions otherwise); None without --bootstrap-server."""
    bootstrap = options.get("bootstrap_server")
    if not bootstrap:
        return None
    version = options.get("broker_version")
    extra: dict[str, str] = {}
    if version is None and zk is not None:
        # ZooKeeper's reader only where a ZooKeeper is given: `retention` takes these options and
        # loads no ZooKeeper client for a preview (tests/cli/test_startup_imports.py)
        from kafka_tools.zk.layout import broker_version_hint, librdkafka_compat
        from kafka_tools.zk.reader import read_brokers

        hint = broker_version_hint(read_brokers(zk))
        compat = librdkafka_compat(hint)
        if compat is None:
            raise UsageError(f"the brokers are Kafka {hint}: no Kafka protocol client speaks to them")
        extra.update(compat)
        version = compat.get("broker.version.fallback") or ("1.0.0" if hint else None)
    from kafka_tools.broker.client import Broker, BrokerConfig

    security = security_from_options(**options)
    return Broker(BrokerConfig(bootstrap, version, options.get("broker_timeout") or 10.0, extra, security))


def _kafka_table(env: Mapping[str, str]) -> tuple[dict[str, Any], str]:
    """The config file's ``[kafka]`` table ({} without a file or table) and how to name it."""
    from kafka_tools.zk.config import config_file_path

    path, explicit = config_file_path(env)
    if not path.is_file():
        return {}, str(path)  # a named but missing file is reported by the ZooKeeper settings' reader
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10: no config file support
        return {}, str(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(f"config file {path}: cannot be read as TOML: {exc}") from None
    table = data.get("kafka", {})
    if not isinstance(table, dict):
        raise InputError(f"config file {path}: [kafka] must be a table")
    unknown = sorted(set(table) - {"auth_file", "tls", "ca", "cert", "key"})
    if unknown:
        raise InputError(f"config file {path}: unknown [kafka] keys: {', '.join(unknown)}")
    return table, f"config file {path}"


def _read_credentials(path: str) -> BrokerCredentials:
    from kafka_tools.broker.security import parse_credentials
    from kafka_tools.secret_files import read_secret_file

    return parse_credentials(read_secret_file(path, "broker auth file"), f"broker auth file {path}")


def security_from_options(env: Mapping[str, str] | None = None, **options: Any) -> BrokerSecurity | None:
    """SASL and TLS settings from the options, ``$KTOOL_BROKER_AUTH`` and the config file's [kafka];
    None when nothing asks for either (a plain connection)."""
    from kafka_tools.broker.security import BrokerSecurity, parse_credentials

    env = os.environ if env is None else env
    table, where = _kafka_table(env)

    def pick(value: Any, name: str, kind: type) -> Any:
        if value is not None:
            return value
        found = table.get(name)
        if found is not None and not isinstance(found, kind):
            raise InputError(f"{where}: kafka.{name} has the wrong type")
        return found

    credentials = None
    if options.get("broker_auth_file"):
        credentials = _read_credentials(options["broker_auth_file"])
    elif env.get(ENV_BROKER_AUTH):
        credentials = parse_credentials(env[ENV_BROKER_AUTH], f"${ENV_BROKER_AUTH}")
    elif table.get("auth_file"):
        credentials = _read_credentials(str(Path(pick(None, "auth_file", str)).expanduser()))
    files = []
    for name, what in (("ca", "CA"), ("cert", "certificate"), ("key", "key")):
        path = pick(options.get(f"broker_{name}"), name, str)
        if path is not None:
            path = str(Path(path).expanduser())
            if not Path(path).is_file():
                state = "is not a regular file" if Path(path).exists() else "does not exist"
                raise InputError(f"broker TLS {what} file {path} {state}")
        files.append(path)
    ca, cert, key = files
    if key and not cert:
        raise UsageError("--broker-key needs --broker-cert (the certificate the key belongs to)")
    tls = bool(pick(options.get("broker_tls") or None, "tls", bool)) or any(files)
    if credentials is None and not tls:
        return None
    return BrokerSecurity(credentials, tls, ca, cert, key)
