"""TAB completion of group and topic names from the configured ZooKeeper or brokers.

A shell waits for completion before it draws anything, so a lookup gets a hard limit (LIMIT seconds of
talking to the servers, after the clients' imports) or gives nothing: it runs in a child forked by
log/workers/children.py's fork_child (the one fork left in ktool: the lookup is a closure over the
options typed so far) that is killed when the time is up, so that no client library, silent server or
blackholed port can hang the shell. Names found are kept a few seconds (TTL) in a small file under
ktool's state directory: pressing TAB again while typing asks no server. Failures are not kept: the
next TAB tries again.

Use as ``click.argument("group", shell_complete=complete_groups)`` or on an option
(``click.option("--topic", shell_complete=complete_topics)``); the servers come from the command's own
options as typed so far (--zookeeper, --bootstrap-server, their environment variables, the config file).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import click

from kafka_tools.keep.state import completion_cache_dir

LIMIT = 0.3  # seconds from the TAB to the names, or nothing
TTL = 5.0  # seconds a list of names is reused
SESSION_TIMEOUT = 4.0  # a lookup's ZooKeeper session (the least ZooKeeper grants with its default tick)
GROUPS = "groups"
TOPICS = "topics"


def complete_groups(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Consumer group names starting with `incomplete` (ZooKeeper's /consumers, the brokers' groups)."""
    return _matching(names(GROUPS, _options(ctx)), incomplete)


def complete_topics(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Topic names starting with `incomplete` (ZooKeeper's /brokers/topics, or the brokers' metadata)."""
    return _matching(names(TOPICS, _options(ctx)), incomplete)


def _matching(found: list[str], incomplete: str) -> list[str]:
    return [n for n in found if n.startswith(incomplete)]


def _options(ctx: click.Context) -> dict[str, Any]:
    """The options typed so far, with those of the enclosing groups (innermost first)."""
    out: dict[str, Any] = {}
    while ctx is not None:
        for key, value in ctx.params.items():
            if out.get(key) is None:
                out[key] = value
        ctx = ctx.parent  # type: ignore[assignment]
    return out


def names(kind: str, options: Mapping[str, Any], limit: float = LIMIT) -> list[str]:
    """The `kind` names (GROUPS or TOPICS) of the servers `options` name, within `limit` seconds of talking
    to them (the clients' imports, bounded and local, before), else []."""
    zk, bootstrap = _source(options)
    if zk is None and bootstrap is None:
        return []
    source = f"zk={zk or ''} bootstrap={bootstrap or ''}"
    _import_clients(zk is not None, bootstrap is not None)
    started = time.monotonic()
    cache = _cache_file(kind, source)
    cached = _read_cache(cache)
    if cached is not None:
        return cached
    if not _any_listening(_servers(options), started + limit):
        return []  # every server refused (or is not a host:port): no child, no wait
    found = _in_child(lambda deliver: _lookup(kind, options, started + limit, deliver), started + limit)
    if found is not None:
        _write_cache(cache, found)
    return found or []


def _import_clients(zk: bool, broker: bool) -> None:
    """The clients ktool's lookup uses (kazoo, librdkafka's bindings, ktool's modules around them, which
    the commands no longer import for their --help) loaded before the clock starts: a tenth of a second
    on a busy machine, the same every time, not what the limit is for (in the child they ate the 0.3 s at
    a load of 20)."""
    with contextlib.suppress(Exception):
        if zk:
            import kazoo.client  # noqa: F401

            import kafka_tools.zk.connection
            import kafka_tools.zk.reader  # noqa: F401
        if broker:
            import confluent_kafka.admin  # noqa: F401

            import kafka_tools.broker.client  # noqa: F401


def _source(options: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """The ZooKeeper (connect string) and the brokers (bootstrap list) configured, each None if not."""
    zk = None
    try:
        from kafka_tools.cli.zk_options import zk_config_from_options

        zk = str(zk_config_from_options(**options))
    except Exception:  # none configured, or a config file in error: no ZooKeeper for completion
        pass
    bootstrap = options.get("bootstrap_server") or os.environ.get("KTOOL_BOOTSTRAP_SERVER")
    return zk, bootstrap or None


def _servers(options: Mapping[str, Any]) -> list[tuple[str, int]]:
    """The ZooKeeper servers and the first bootstrap server the lookup would ask."""
    out: list[tuple[str, int]] = []
    try:
        from kafka_tools.cli.zk_options import zk_config_from_options

        out += list(zk_config_from_options(**options).servers)
    except Exception:
        pass
    bootstrap = options.get("bootstrap_server") or os.environ.get("KTOOL_BOOTSTRAP_SERVER")
    if bootstrap:
        from kafka_tools.broker.probe import first_server

        with contextlib.suppress(Exception):
            out.append(first_server(bootstrap))
    return out


def _any_listening(servers: list[tuple[str, int]], deadline: float) -> bool:
    """Whether some server accepts a TCP connection (one that does not answer in time counts: the child
    finds out within the limit). A refused port, the commonest case of a stopped server, costs nothing."""
    import socket

    for host, port in servers:
        try:
            socket.create_connection((host, port), timeout=max(0.01, deadline - time.monotonic())).close()
            return True
        except TimeoutError:
            return True
        except OSError:
            continue
    return False


def _lookup(
    kind: str, options: Mapping[str, Any], deadline: float, deliver: Callable[[list[str]], None]
) -> None:
    """In the child: the names from ZooKeeper when configured, and from the brokers when given, handed to
    `deliver` before the connections are closed (closing a ZooKeeper session costs more than the lookup:
    the parent has its answer and kills the child meanwhile; the server expires the session after the
    short SESSION_TIMEOUT asked for here)."""
    found: set[str] = set()
    try:
        from kafka_tools.cli.zk_options import zk_config_from_options

        config = zk_config_from_options(**options)
    except Exception:
        config = None
    with contextlib.ExitStack() as stack:
        if config is not None:
            from kafka_tools.zk.connection import open_zk
            from kafka_tools.zk.reader import BROKER_TOPICS, CONSUMERS

            object.__setattr__(config, "connect_timeout", max(0.05, deadline - time.monotonic()))
            object.__setattr__(config, "session_timeout", SESSION_TIMEOUT)
            zk = stack.enter_context(open_zk(config))
            found |= set(zk.get_children(CONSUMERS if kind == GROUPS else BROKER_TOPICS) or [])
        bootstrap = options.get("bootstrap_server") or os.environ.get("KTOOL_BOOTSTRAP_SERVER")
        if bootstrap:
            from kafka_tools.broker.client import Broker, BrokerConfig

            timeout = max(0.05, deadline - time.monotonic())
            broker = Broker(BrokerConfig(bootstrap, options.get("broker_version"), timeout))
            found |= {g for g, _ in broker.groups()} if kind == GROUPS else set(broker.topics())
        deliver(sorted(found))


def _in_child(work: Callable[[Callable[[list[str]], None]], None], deadline: float) -> list[str] | None:
    """`work(deliver)` in a forked child, the names it delivers read through a pipe until `deadline`;
    None when it failed or did not answer in time. The child is then killed, whatever it was doing."""
    import json
    import select

    from kafka_tools.log.workers.children import end_children, fork_child

    read_end, write_end = os.pipe()

    def answer() -> int:  # the child: answer, then leave at once (no atexit, no client threads to join)
        os.close(read_end)

        def deliver(found: list[str]) -> None:  # at once: closing a client afterwards may take long
            data = json.dumps(found).encode()
            while data:  # the parent reads as the child writes
                data = data[os.write(write_end, data) :]
            os.close(write_end)

        work(deliver)
        return 0

    pids: list[int] = []
    try:
        fork_child(answer, pids.append)
    except OSError:
        os.close(read_end)
        return None
    finally:
        os.close(write_end)
    chunks: list[bytes] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_end], [], [], left)[0]:
                return None
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        end_children(pids)  # killed, whatever it was doing, and reaped within a second
    try:
        found = json.loads(b"".join(chunks))
    except ValueError:
        return None  # the child failed: nothing was written
    return [n for n in found if isinstance(n, str)] if isinstance(found, list) else None


def _cache_file(kind: str, source: str) -> Path:
    import hashlib

    digest = hashlib.sha256(f"{kind} {source}".encode()).hexdigest()[:16]
    return completion_cache_dir() / f"{kind}-{digest}.json"


def _read_cache(path: Path) -> list[str] | None:
    import json

    try:
        if time.time() - path.stat().st_mtime > TTL:
            return None
        found = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return [n for n in found if isinstance(n, str)] if isinstance(found, list) else None


def _write_cache(path: Path, found: list[str]) -> None:
    """Replaced whole (a temporary file renamed over it); a cache that cannot be written is no cache."""
    import json

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps(found))
        os.replace(tmp, path)
    except OSError:
        pass
