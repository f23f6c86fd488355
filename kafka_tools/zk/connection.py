"""The one ZooKeeper connection every command uses: ``open_zk(config)`` and one line per failure.

Where ZooKeeper is and the credentials (command line, environment, config file) are resolved in
zk/config.py, re-exported here. Every failure becomes an :class:`~kafka_tools.errors.InputError`
(exit 3) whose one line names the servers. kazoo is imported only when a connection is opened, so
commands without ZooKeeper never need it.
"""

from __future__ import annotations

import importlib.util
import logging
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from kafka_tools.errors import InputError, KtoolError
from kafka_tools.zk.config import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_PORT,
    DEFAULT_SESSION_TIMEOUT,
    ENV_AUTH,
    ENV_CONFIG,
    ENV_CONNECT,
    ENV_KEY_PASSWORD,
    NoZooKeeperError,
    ZkAuth,
    ZkConfig,
    config_file_path,
    load_config_file,
    parse_auth,
    parse_connect_string,
    read_auth_file,
    resolve_config,
)

if TYPE_CHECKING:
    from kazoo.client import KazooClient

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


# --------------------------------------------------------------------------- errors


def describe(zk: KazooClient) -> str:
    """The servers and chroot of a client, for messages."""
    hosts = ",".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in zk.hosts)
    return hosts + (zk.chroot or "")


def credentials_of(zk: KazooClient) -> ZkAuth | None:
    """The credentials a client of :func:`open_zk` was given (None: none), for ACLs and messages."""
    return getattr(zk, "_ktool_auth", None)


def zk_error(
    exc: BaseException, where: str, path: str | None = None, auth: ZkAuth | None = None, action: str = "read"
) -> KtoolError:
    """One line for a kazoo failure, naming the servers (and the znode when there is one). ``auth``: the
    credentials the client gave, so that an ACL refusal says they were refused rather than missing."""
    from kazoo import exceptions as ke
    from kazoo.handlers.threading import KazooTimeoutError

    if isinstance(exc, KtoolError):
        return exc
    znode = f" {path}" if path else ""
    if isinstance(exc, ke.NoNodeError):
        return ZnodeMissingError(f"no znode{znode} on ZooKeeper {where}", path or "")
    if isinstance(exc, ke.NoAuthError):
        if auth is not None and auth.identities:
            # ZooKeeper takes any digest password at login: a wrong one shows only as this refusal.
            return InputError(
                f"ZooKeeper {where} refused to let the credentials given ({', '.join(auth.identities)}) "
                f"{action}{znode}: a wrong password, or the ACL does not grant that user"
            )
        return InputError(
            f"not allowed to {action}{znode} on ZooKeeper {where} (ACL): give credentials with "
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
        check_client_key(config)
        tls = {
            "use_ssl": True,
            "ca": config.ca,
            "certfile": config.cert,
            "keyfile": config.key,
            "keyfile_password": config.key_password,
        }
    client = KazooClient(
        hosts=config.connect_string,
        timeout=config.session_timeout,
        auth_data=[("digest", d) for d in auth.digest] or None,
        sasl_options=dict(auth.sasl) if auth.sasl else None,
        # Retry refused connections quickly: the connect timeout bounds the whole wait.
        connection_retry={"max_tries": -1, "delay": 0.1, "backoff": 2, "max_delay": 1.0},
        logger=_QUIET,
        **tls,
    )
    client._ktool_auth = config.auth if config.auth and config.auth.identities else None
    return client


def check_client_key(config: ZkConfig) -> None:
    """Load the client certificate and key once before connecting: an encrypted key without its
    password would make OpenSSL prompt on the terminal (or kazoo retry until the timeout), a wrong
    password would look like an unreachable server. One line naming the files instead."""
    import ssl

    if not config.cert and not config.key:
        return
    key = config.key or config.cert
    wanted: list[bool] = []

    def password() -> str:
        wanted.append(True)
        return config.key_password or ""

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_cert_chain(config.cert or key, config.key, password)
    except (ssl.SSLError, OSError) as exc:
        if wanted and not config.key_password:
            raise InputError(
                f"ZooKeeper TLS key {key} is encrypted: give its password with --zk-key-password-file "
                f"or ${ENV_KEY_PASSWORD}"
            ) from None
        if wanted:
            raise InputError(f"ZooKeeper TLS key {key}: the password given does not decrypt it") from None
        reason = getattr(exc, "reason", None) or getattr(exc, "strerror", None) or type(exc).__name__
        raise InputError(
            f"ZooKeeper TLS certificate {config.cert} and key {key} cannot be used together: {reason}"
        ) from None


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
                raise zk_error(exc, str(config), "/", config.auth) from None
            if exists is None:
                raise ZnodeMissingError(
                    f"chroot {config.chroot} does not exist on ZooKeeper {config.hosts}", config.chroot
                )
        yield zk
    except (KazooException, KazooTimeoutError) as exc:
        raise zk_error(exc, str(config), auth=config.auth) from None
    finally:
        _stop(zk)


__all__ = [
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_PORT",
    "DEFAULT_SESSION_TIMEOUT",
    "ENV_AUTH",
    "ENV_CONFIG",
    "ENV_CONNECT",
    "ENV_KEY_PASSWORD",
    "NoZooKeeperError",
    "ZkAuth",
    "ZkConfig",
    "ZnodeMissingError",
    "config_file_path",
    "connect_failure",
    "credentials_of",
    "describe",
    "load_config_file",
    "open_zk",
    "parse_auth",
    "parse_connect_string",
    "probe_servers",
    "read_auth_file",
    "resolve_config",
    "zk_error",
]
