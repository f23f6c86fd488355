"""Where ZooKeeper is and how to talk to it, from the command line, the environment and the config file.

Settings come, highest first, from the command line, the environment (``KTOOL_ZOOKEEPER``,
``KTOOL_ZK_AUTH``) and the config file (``$KTOOL_CONFIG``, else ``$XDG_CONFIG_HOME/ktool/config.toml``,
else ``~/.config/ktool/config.toml``)::

    [zookeeper]
    connect = "zk1:2181,zk2:2181/kafka"
    connect_timeout = 10       # seconds to wait for a connection
    session_timeout = 30       # seconds
    auth_file = "/etc/ktool/zk-auth"
    tls = true
    ca = "/etc/ktool/zk-ca.pem"
    cert = "/etc/ktool/client.pem"
    key = "/etc/ktool/client.key"
    key_password_file = "/etc/ktool/client.key.pass"   # when the key is encrypted

Credentials never appear on a command line or in a message: they are read from a file
(``--zk-auth-file``) or ``KTOOL_ZK_AUTH``, one per line: ``digest user:password``,
``sasl user:password`` (SASL DIGEST-MD5) or ``gssapi [principal]`` (SASL Kerberos); ``#`` comments.
An encrypted TLS key's password likewise: the first line of ``--zk-key-password-file``, else
``KTOOL_ZK_KEY_PASSWORD``, else the config file's ``key_password_file``.

Apart from the connection (zk/connection.py) so that a command that only asks whether ZooKeeper is
configured (`ktool retention` without one) imports neither sockets, logging nor a TOML parser.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafka_tools.errors import InputError, UsageError, os_error_line, os_reason
from kafka_tools.secret_files import read_secret_file
from kafka_tools.zk.environment import ENV_AUTH, ENV_CONFIG, ENV_CONNECT, ENV_KEY_PASSWORD

DEFAULT_PORT = 2181
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_SESSION_TIMEOUT = 30.0


class NoZooKeeperError(UsageError):
    """No ZooKeeper is configured anywhere (command line, environment, config file)."""


# --------------------------------------------------------------------------- credentials


@dataclass(init=False, frozen=True)
class ZkAuth:
    """Credentials; ``repr`` shows their kinds only, never a secret."""

    digest: tuple[str, ...] = field(default=(), repr=False)  # "user:password" each
    sasl: Mapping[str, str] | None = field(default=None, repr=False)  # kazoo/pure-sasl options

    def __init__(self, digest: tuple[str, ...] = (), sasl: Mapping[str, str] | None = None) -> None:
        object.__setattr__(self, "digest", digest)
        object.__setattr__(self, "sasl", sasl)

    def __repr__(self) -> str:
        kinds = [f"digest×{len(self.digest)}"] if self.digest else []
        if self.sasl:
            kinds.append(f"sasl {self.sasl['mechanism']}")
        return f"ZkAuth({', '.join(kinds) or 'none'})"

    @property
    def identities(self) -> list[str]:
        """Scheme and user of each credential, for messages (never a password): ``digest user kafka``."""
        named = [f"digest user {d.split(':', 1)[0]}" for d in self.digest]
        if self.sasl:
            who = self.sasl.get("username") or self.sasl.get("principal")
            named.append(f"sasl {self.sasl['mechanism']}" + (f" user {who}" if who else ""))
        return named

    @property
    def users(self) -> list[str]:
        """User names, for messages (never passwords)."""
        names = [d.split(":", 1)[0] for d in self.digest]
        if self.sasl and "username" in self.sasl:
            names.append(self.sasl["username"])
        return names


def parse_auth(text: str, source: str) -> ZkAuth:
    """``digest user:password`` / ``sasl user:password`` / ``gssapi [principal]`` lines.

    Errors name the source and the line number, never the line: it holds a password.
    """
    digest: list[str] = []
    sasl: dict[str, str] | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        scheme, _, rest = line.partition(" ")
        scheme, rest = scheme.lower(), rest.strip()
        if scheme in ("digest", "sasl"):
            user, sep, password = rest.partition(":")
            if not sep or not user:
                raise InputError(f"{source}: line {number}: expected `{scheme} user:password`")
            if scheme == "digest":
                digest.append(rest)
                continue
            new = {"mechanism": "DIGEST-MD5", "username": user, "password": password}
        elif scheme == "gssapi":
            new = {"mechanism": "GSSAPI", **({"principal": rest} if rest else {})}
        else:
            raise InputError(f"{source}: line {number}: unknown scheme (expected digest, sasl or gssapi)")
        if sasl is not None:
            raise InputError(f"{source}: line {number}: only one SASL identity can be used")
        sasl = new
    if not digest and sasl is None:
        raise InputError(f"{source}: no credentials in it")
    return ZkAuth(tuple(digest), sasl)


def read_auth_file(path: str | os.PathLike) -> ZkAuth:
    return parse_auth(read_secret_file(path, "ZooKeeper auth file"), f"ZooKeeper auth file {path}")


def read_key_password(path: str | os.PathLike) -> str:
    """The first line of a file holding a TLS key's password (never echoed, nor on a command line)."""
    text = read_secret_file(path, "ZooKeeper TLS key password file")
    password = text.splitlines()[0] if text else ""
    if not password:
        raise InputError(f"ZooKeeper TLS key password file {path}: its first line is empty")
    return password


# --------------------------------------------------------------------------- configuration


@dataclass(init=False, frozen=True)
class ZkConfig:
    """Where ZooKeeper is and how to talk to it."""

    servers: tuple[tuple[str, int], ...]
    chroot: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    session_timeout: float = DEFAULT_SESSION_TIMEOUT
    auth: ZkAuth | None = None
    tls: bool = False
    ca: str | None = None
    cert: str | None = None
    key: str | None = None
    key_password: str | None = field(default=None, repr=False)  # of an encrypted key; never shown

    def __init__(
        self,
        servers: tuple[tuple[str, int], ...],
        chroot: str | None = None,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
        session_timeout: float = DEFAULT_SESSION_TIMEOUT,
        auth: ZkAuth | None = None,
        tls: bool = False,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        key_password: str | None = None,
    ) -> None:
        object.__setattr__(self, "servers", servers)
        object.__setattr__(self, "chroot", chroot)
        object.__setattr__(self, "connect_timeout", connect_timeout)
        object.__setattr__(self, "session_timeout", session_timeout)
        object.__setattr__(self, "auth", auth)
        object.__setattr__(self, "tls", tls)
        object.__setattr__(self, "ca", ca)
        object.__setattr__(self, "cert", cert)
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "key_password", key_password)

    @property
    def hosts(self) -> str:
        """``host:port,host:port`` (IPv6 hosts in brackets)."""
        return ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.servers)

    @property
    def connect_string(self) -> str:
        """The connect string as ZooKeeper clients take it: servers, then the chroot."""
        return self.hosts + (self.chroot or "")

    def __str__(self) -> str:
        return self.connect_string

    @classmethod
    def parse(cls, connect: str, **settings: Any) -> ZkConfig:
        """From ``host:port[,host:port][/chroot]``; a missing port is 2181. ValueError when malformed."""
        servers, chroot = parse_connect_string(connect)
        return cls(servers=servers, chroot=chroot, **settings)


def parse_connect_string(connect: str) -> tuple[tuple[tuple[str, int], ...], str | None]:
    text = connect.strip()
    if not text:
        raise ValueError("empty connect string")
    hosts_part, slash, chroot = text.partition("/")
    servers: list[tuple[str, int]] = []
    for item in hosts_part.split(","):
        item = item.strip()
        match = re.fullmatch(
            r"\[(?P<v6>[0-9A-Fa-f:.]+)\](?::(?P<p6>\w*))?|(?P<host>[^:\[\]]+)(?::(?P<port>\w*))?", item
        )
        if not item or match is None:
            raise ValueError(f"{item!r} is not host[:port]")
        host = match["v6"] or match["host"]
        port_text = match["p6"] if match["v6"] else match["port"]
        if port_text is None or port_text == "":
            port = DEFAULT_PORT
        elif port_text.isdigit() and 0 < int(port_text) < 65536:
            port = int(port_text)
        else:
            raise ValueError(f"port {port_text!r} of {host} is not a port number")
        servers.append((host, port))
    root = None
    if slash:
        parts = [p for p in chroot.split("/") if p]
        if any(p in (".", "..") for p in parts):
            raise ValueError(f"chroot /{chroot} has . or .. in it")
        root = "/" + "/".join(parts) if parts else None
    return tuple(servers), root


def config_file_path(env: Mapping[str, str]) -> tuple[Path, bool]:
    """The config file and whether it was named explicitly ($KTOOL_CONFIG: then it must exist)."""
    if env.get(ENV_CONFIG):
        return Path(env[ENV_CONFIG]).expanduser(), True
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / "ktool" / "config.toml", False


def load_config_file(env: Mapping[str, str]) -> tuple[dict[str, Any], Path | None]:
    """The ``[zookeeper]`` table of the config file ({} when there is no file)."""
    path, explicit = config_file_path(env)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        if explicit:
            raise InputError(f"${ENV_CONFIG}: {os_error_line(path, exc)}") from None
        return {}, None
    except OSError as exc:
        raise InputError(f"cannot read config file {path}: {os_reason(exc)}") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"config file {path}: not valid TOML: {exc}") from None
    try:
        import tomllib  # only when there is a file to parse: most runs have none
    except ModuleNotFoundError:  # Python 3.10: no config file support
        if explicit:
            raise InputError(f"${ENV_CONFIG}: reading a TOML config file needs Python 3.11") from None
        return {}, None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"config file {path}: not valid TOML: {exc}") from None
    table = data.get("zookeeper", {})
    if not isinstance(table, dict):
        raise InputError(f"config file {path}: [zookeeper] must be a table")
    known = {
        "connect",
        "connect_timeout",
        "session_timeout",
        "auth_file",
        "tls",
        "ca",
        "cert",
        "key",
        "key_password_file",
    }
    unknown = sorted(set(table) - known)
    if unknown:
        raise InputError(f"config file {path}: unknown [zookeeper] keys: {', '.join(unknown)}")
    return table, path


def resolve_config(
    *,
    connect: str | None = None,
    connect_timeout: float | None = None,
    session_timeout: float | None = None,
    auth_file: str | None = None,
    tls: bool | None = None,
    ca: str | None = None,
    cert: str | None = None,
    key: str | None = None,
    key_password_file: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ZkConfig:
    """A ZkConfig from explicit settings (command line / environment), then the config file, then defaults.

    ``connect`` given here comes from ``--zookeeper`` or ``KTOOL_ZOOKEEPER`` (Click reads the variable);
    when called without Click, ``KTOOL_ZOOKEEPER`` is read here. Credentials: ``auth_file``, else
    ``KTOOL_ZK_AUTH``, else the config file's ``auth_file``; a TLS key's password likewise
    (``key_password_file``, ``KTOOL_ZK_KEY_PASSWORD``, the config file's ``key_password_file``).
    """
    env = os.environ if env is None else env
    file, file_path = load_config_file(env)
    where = f"config file {file_path}"

    def pick(value: Any, name: str, kind: type | tuple[type, ...]) -> Any:
        if value is not None:
            return value
        found = file.get(name)
        if found is not None and not isinstance(found, kind):
            raise InputError(f"{where}: zookeeper.{name} has the wrong type")
        return found

    source = f"--zookeeper/{ENV_CONNECT}"
    if connect is None and env.get(ENV_CONNECT):
        connect, source = env[ENV_CONNECT], ENV_CONNECT
    if connect is None:
        connect, source = pick(None, "connect", str), f"{where}: zookeeper.connect"
    if not connect:
        raise NoZooKeeperError(
            f"no ZooKeeper to talk to: give --zookeeper host:port[/chroot], set {ENV_CONNECT}, "
            'or put connect = "…" under [zookeeper] in the config file'
        )
    try:
        servers, chroot = parse_connect_string(connect)
    except ValueError as exc:
        error = InputError if source.startswith("config") else UsageError
        raise error(f"{source}: {exc}") from None

    auth: ZkAuth | None = None
    if auth_file is not None:
        auth = read_auth_file(auth_file)
    elif env.get(ENV_AUTH):
        auth = parse_auth(env[ENV_AUTH], f"${ENV_AUTH}")
    elif file.get("auth_file"):
        auth = read_auth_file(Path(pick(None, "auth_file", str)).expanduser())

    timeouts = []
    for value, name, default in (
        (connect_timeout, "connect_timeout", DEFAULT_CONNECT_TIMEOUT),
        (session_timeout, "session_timeout", DEFAULT_SESSION_TIMEOUT),
    ):
        seconds = pick(value, name, (int, float))
        if seconds is not None and seconds <= 0:
            raise InputError(f"{where}: zookeeper.{name} must be positive")
        timeouts.append(float(default if seconds is None else seconds))
    connect_timeout, session_timeout = timeouts
    files = []
    for value, name, what in ((ca, "ca", "CA"), (cert, "cert", "certificate"), (key, "key", "key")):
        path = pick(value, name, str)
        if path is not None:
            path = str(Path(path).expanduser())
            if not Path(path).is_file():
                raise InputError(f"ZooKeeper TLS {what} file {path} does not exist")
        files.append(path)
    ca, cert, key = files
    key_password = None
    if key_password_file is not None:
        key_password = read_key_password(key_password_file)
    elif env.get(ENV_KEY_PASSWORD):
        key_password = env[ENV_KEY_PASSWORD]
    elif file.get("key_password_file"):
        key_password = read_key_password(Path(pick(None, "key_password_file", str)).expanduser())
    tls_on = bool(pick(tls or None, "tls", bool)) or any(files)
    return ZkConfig(
        servers=servers,
        chroot=chroot,
        connect_timeout=connect_timeout,
        session_timeout=session_timeout,
        auth=auth,
        tls=tls_on,
        ca=ca,
        cert=cert,
        key=key,
        key_password=key_password,
    )
