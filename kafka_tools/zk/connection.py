"""The one ZooKeeper connection every command uses: where, how long to wait, credentials, TLS.

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

Credentials never appear on a command line or in a message: they are read from a file
(``--zk-auth-file``) or ``KTOOL_ZK_AUTH``, one per line: ``digest user:password``,
``sasl user:password`` (SASL DIGEST-MD5) or ``gssapi [principal]`` (SASL Kerberos); ``#`` comments.

Every failure becomes an :class:`~kafka_tools.errors.InputError` (exit 3) whose one line names the
servers. kazoo is imported only when a connection is opened, so commands without ZooKeeper never
need it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import socket
import threading
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kafka_tools.errors import InputError, KtoolError, UsageError

if TYPE_CHECKING:
    from kazoo.client import KazooClient

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: no config file support
    tomllib = None  # type: ignore[assignment]

DEFAULT_PORT = 2181
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_SESSION_TIMEOUT = 30.0

ENV_CONNECT = "KTOOL_ZOOKEEPER"
ENV_AUTH = "KTOOL_ZK_AUTH"
ENV_CONFIG = "KTOOL_CONFIG"

# kazoo logs every refused connection attempt at WARNING; with no handler configured Python would
# print those to stderr. Our one line is the report; `-v` style debugging can re-enable them.
logging.getLogger("kazoo").addHandler(logging.NullHandler())
_QUIET = logging.getLogger("ktool.zk.kazoo")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


class ZnodeMissingError(InputError):
    """A znode the command needs does not exist; the message names it and the servers."""

    def __init__(self, message: str, path: str) -> None:
        super().__init__(message)
        self.path = path


class NoZooKeeperError(UsageError):
    """No ZooKeeper is configured anywhere (command line, environment, config file)."""


# --------------------------------------------------------------------------- credentials


@dataclass(frozen=True)
class ZkAuth:
    """Credentials; ``repr`` shows their kinds only, never a secret."""

    digest: tuple[str, ...] = field(default=(), repr=False)  # "user:password" each
    sasl: Mapping[str, str] | None = field(default=None, repr=False)  # kazoo/pure-sasl options

    def __repr__(self) -> str:
        kinds = [f"digest×{len(self.digest)}"] if self.digest else []
        if self.sasl:
            kinds.append(f"sasl {self.sasl['mechanism']}")
        return f"ZkAuth({', '.join(kinds) or 'none'})"

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
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else type(exc).__name__
        raise InputError(f"cannot read ZooKeeper auth file {path}: {reason}") from None
    return parse_auth(text, f"ZooKeeper auth file {path}")


# --------------------------------------------------------------------------- configuration


@dataclass(frozen=True)
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
    if tomllib is None:
        if explicit:
            raise InputError(f"${ENV_CONFIG}: reading a TOML config file needs Python 3.11")
        return {}, None
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if explicit:
            raise InputError(f"${ENV_CONFIG}: no such file {path}") from None
        return {}, None
    except OSError as exc:
        raise InputError(f"cannot read config file {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"config file {path}: not valid TOML: {exc}") from None
    table = data.get("zookeeper", {})
    if not isinstance(table, dict):
        raise InputError(f"config file {path}: [zookeeper] must be a table")
    known = {"connect", "connect_timeout", "session_timeout", "auth_file", "tls", "ca", "cert", "key"}
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
    env: Mapping[str, str] | None = None,
) -> ZkConfig:
    """A ZkConfig from explicit settings (command line / environment), then the config file, then defaults.

    ``connect`` given here comes from ``--zookeeper`` or ``KTOOL_ZOOKEEPER`` (Click reads the variable);
    when called without Click, ``KTOOL_ZOOKEEPER`` is read here. Credentials: ``auth_file``, else
    ``KTOOL_ZK_AUTH``, else the config file's ``auth_file``.
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
    )


# --------------------------------------------------------------------------- errors


def describe(zk: KazooClient) -> str:
    """The servers and chroot of a client, for messages."""
    hosts = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in zk.hosts)
    return hosts + (zk.chroot or "")


def zk_error(exc: BaseException, where: str, path: str | None = None) -> KtoolError:
    """One line for a kazoo failure, naming the servers (and the znode when there is one)."""
    from kazoo import exceptions as ke
    from kazoo.handlers.threading import KazooTimeoutError

    if isinstance(exc, KtoolError):
        return exc
    znode = f" {path}" if path else ""
    if isinstance(exc, ke.NoNodeError):
        return ZnodeMissingError(f"no znode{znode} on ZooKeeper {where}", path or "")
    if isinstance(exc, ke.NoAuthError):
        return InputError(
            f"not allowed to read{znode} on ZooKeeper {where} (ACL): give credentials with "
            f"--zk-auth-file or ${ENV_AUTH}"
        )
    if isinstance(exc, ke.AuthFailedError):
        return InputError(f"ZooKeeper {where} rejected the credentials (authentication failed)")
    reading = f" while reading {path}" if path else ""
    if isinstance(exc, ke.SessionExpiredError):
        return InputError(f"ZooKeeper session expired on {where}{reading}")
    if isinstance(exc, (ke.ConnectionLoss, ke.ConnectionClosedError)):
        return InputError(f"lost the connection to ZooKeeper {where}{reading}")
    if isinstance(exc, KazooTimeoutError):
        return InputError(f"ZooKeeper {where} did not answer in time{reading}")
    detail = str(exc).strip() or type(exc).__name__
    return InputError(f"ZooKeeper {where}{znode}: {detail.splitlines()[0]}")


# --------------------------------------------------------------------------- connecting


def _client(config: ZkConfig) -> KazooClient:
    try:
        from kazoo.client import KazooClient
    except ImportError:
        raise InputError("the ZooKeeper commands need kazoo: pip install kazoo") from None
    auth = config.auth or ZkAuth()
    if auth.sasl is not None and importlib.util.find_spec("puresasl") is None:
        raise InputError("SASL authentication to ZooKeeper needs pure-sasl: pip install pure-sasl")
    tls: dict[str, Any] = {}
    if config.tls:
        tls = {"use_ssl": True, "ca": config.ca, "certfile": config.cert, "keyfile": config.key}
    return KazooClient(
        hosts=config.connect_string,
        timeout=config.session_timeout,
        auth_data=[("digest", d) for d in auth.digest] or None,
        sasl_options=dict(auth.sasl) if auth.sasl else None,
        # Retry refused connections quickly: the connect timeout bounds the whole wait.
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        logger=_QUIET,
        **tls,
    )


REFUSED = "connection refused"
UNRESOLVED = "host name not resolved"


def _server_name(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def probe_servers(config: ZkConfig, timeout: float) -> dict[str, str | None]:
    """Each server's TCP reachability, all at once: None when it accepts a connection, else why not
    (REFUSED, UNRESOLVED, or no answer within the timeout). Lets a refused or unresolvable server be
    reported at once instead of after the whole connect timeout."""
    results: dict[str, str | None] = {}

    def probe(host: str, port: int) -> None:
        name = _server_name(host, port)
        try:
            socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            results[name] = UNRESOLVED
            return
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            results[name] = None
        except ConnectionRefusedError:
            results[name] = REFUSED
        except TimeoutError:
            results[name] = f"no answer within {timeout:g} s"
        except OSError as exc:
            results[name] = (exc.strerror or str(exc)).lower()

    threads = [
        threading.Thread(target=probe, args=server, name="ktool-zk-probe", daemon=True)
        for server in config.servers
    ]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    for t in threads:
        t.join(max(0.0, deadline - time.monotonic()))
    return {
        _server_name(h, p): results.get(_server_name(h, p), f"no answer within {timeout:g} s")
        for h, p in config.servers
    }


def connect_failure(config: ZkConfig, reasons: dict[str, str]) -> InputError:
    """One line saying why each server could not be used."""
    tls = " over TLS" if config.tls else ""
    if len(reasons) == 1:
        (server, why), *_ = reasons.items()
        return InputError(f"cannot connect to ZooKeeper {server}{tls}: {why}")
    listed = "; ".join(f"{server} {why}" for server, why in reasons.items())
    return InputError(f"cannot connect to ZooKeeper{tls}: {listed}")


def _start(zk: KazooClient, config: ZkConfig) -> None:
    from kazoo.protocol.states import KeeperState

    started = time.monotonic()
    reachable = probe_servers(config, config.connect_timeout)
    if all(why is not None for why in reachable.values()):
        raise connect_failure(config, reachable)  # type: ignore[arg-type]
    event = zk.start_async()
    deadline = started + config.connect_timeout
    while not event.is_set() and time.monotonic() < deadline:
        if zk.client_state == KeeperState.AUTH_FAILED:
            users = ", ".join(config.auth.users) if config.auth else ""
            raise InputError(f"ZooKeeper {config} rejected the credentials of {users or 'this client'}")
        event.wait(0.05)
    if not zk.connected:
        silent = f"accepted the connection but gave no ZooKeeper session within {config.connect_timeout:g} s"
        raise connect_failure(config, {k: (why or silent) for k, why in reachable.items()})


def _stop(zk: KazooClient) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            zk.stop()
            zk.close()
        except Exception:  # closing must never hide the real error
            pass


@contextmanager
def open_zk(config: ZkConfig) -> Iterator[KazooClient]:
    """A started KazooClient for ``config``, stopped on exit.

    Connects within ``config.connect_timeout`` or raises InputError naming the servers; checks that
    the chroot exists. kazoo errors raised inside the block become one-line InputErrors too.
    """
    from kazoo.exceptions import KazooException
    from kazoo.handlers.threading import KazooTimeoutError

    zk = _client(config)
    try:
        _start(zk, config)
    except BaseException:
        # kazoo's stop() waits for its connection thread, which may sit in a handshake read for the
        # whole session timeout (a silent server): let a daemon thread wait instead of the user.
        threading.Thread(target=_stop, args=(zk,), name="ktool-zk-stop", daemon=True).start()
        raise
    try:
        if config.chroot:
            try:
                exists = zk.exists("/")
            except (KazooException, KazooTimeoutError) as exc:
                raise zk_error(exc, str(config), "/") from None
            if exists is None:
                raise ZnodeMissingError(
                    f"chroot {config.chroot} does not exist on ZooKeeper {config.hosts}", config.chroot
                )
        yield zk
    except (KazooException, KazooTimeoutError) as exc:
        raise zk_error(exc, str(config)) from None
    finally:
        _stop(zk)
