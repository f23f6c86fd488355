"""TAB completion of group and topic names (kafka_tools/cli/complete_names.py): the names come from a real
ZooKeeper and a real broker, through the shell's own protocol (Click's `_KTOOL_COMPLETE`), and a server
that accepts a connection but never answers, or nothing listening at all, gives no names instead of a
shell that hangs."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import uuid

import pytest

from kafka_tools.cli import complete_names
from tests.support.servers import free_port

# The hard limit is 0.3 s of talking to the servers; a shell that hung would wait for the whole ZooKeeper
# or broker timeout (10 s). The bound between them leaves room for a fork, a kill and a reap on a machine
# at load 35 (the 1 s it was failed there), and the clients' imports are done before the clock starts,
# as `names` itself does them before its limit.
HANG = 3.0


def _complete(*words: str, env: dict[str, str] | None = None) -> list[str]:
    """What bash would offer after `ktool WORDS… <TAB>` (the last word is the one being completed)."""
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("KTOOL_")},
        "XDG_CONFIG_HOME": "/nonexistent-ktool-test-config",
        "_KTOOL_COMPLETE": "bash_complete",
        "COMP_WORDS": " ".join(["ktool", *words]),
        "COMP_CWORD": str(len(words)),
        **(env or {}),
    }
    code = "from kafka_tools.cli.main import main; main()"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()  # bash_complete: `type,value` per candidate
    return [line.split(",", 1)[1] for line in lines if line.startswith("plain,")]


def test_group_and_topic_names_complete_from_zookeeper(zk_root, tmp_path) -> None:
    from tests.zk.test_zk_reader import write_kafka09_cluster

    write_kafka09_cluster(zk_root)
    zk_root.write("/consumers/billing-v2/offsets/orders/0", "1")
    zk_root.write("/consumers/reports/offsets/orders/0", "1")
    state = {"XDG_STATE_HOME": str(tmp_path)}
    zk = ["--zookeeper", zk_root.connect]
    assert _tab("groups", "delete", *zk, "bil", env=state) == ["billing", "billing-v2"]
    assert _tab("groups", "describe", *zk, "", env=state) == ["billing", "billing-v2", "reports"]
    assert _tab("migrate-offsets", *zk, "--topic", "or", env=state) == ["orders"]
    # The environment names the server as well as the option does.
    assert _tab("groups", "watch", "re", env={**state, "KTOOL_ZOOKEEPER": zk_root.connect}) == ["reports"]


def _tab(*words: str, env: dict[str, str]) -> list[str]:
    """What a TAB offers, pressed again while it offers nothing: a lookup gives up past its time limit on
    a loaded machine (the shell then offers nothing, and the user presses TAB again)."""
    deadline = time.monotonic() + 30
    while True:
        found = _complete(*words, env=env)
        if found or time.monotonic() > deadline:
            return found


def test_names_are_cached_a_few_seconds_then_asked_again(zk_root, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    zk_root.write("/consumers/first/offsets/t/0", "1")
    options = {"zookeeper": zk_root.connect}
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # a TAB gives up past its time limit on a loaded machine: ask again
        first = complete_names.names(complete_names.GROUPS, options)
        if first:
            break
    assert first == ["first"]
    zk_root.write("/consumers/second/offsets/t/0", "1")
    assert complete_names.names(complete_names.GROUPS, options) == ["first"]  # from the cache
    (cache,) = (tmp_path / "ktool" / "completion").iterdir()
    old = time.time() - complete_names.TTL - 1
    os.utime(cache, (old, old))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        again = complete_names.names(complete_names.GROUPS, options)
        if again != ["first"] or os.stat(cache).st_mtime > old + 1:  # asked again (or given up: retried)
            if again:
                break
    assert again == ["first", "second"]


def test_group_and_topic_names_complete_from_a_broker(modern_kafka, tmp_path) -> None:
    from tests.support.modern import commit_offsets, create_topic

    topic, group = f"tab-{uuid.uuid4().hex[:8]}", f"tabgroup-{uuid.uuid4().hex[:8]}"
    create_topic(modern_kafka, topic)
    commit_offsets(modern_kafka, group, {(topic, 0): 0})
    state = {"XDG_STATE_HOME": str(tmp_path)}
    server = ["--bootstrap-server", modern_kafka.bootstrap]
    assert _tab("offsets", "export", *server, "--topic", topic[:6], env=state) == [topic]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # each TAB may ask (the cache keeps only what was found)
        found = _complete("groups", "delete", *server, "tabgroup-", env=state)
        if group in found:
            break
        time.sleep(complete_names.TTL)
    assert group in found


@pytest.fixture
def silent_port():
    """A port that accepts connections (the kernel's backlog) and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    try:
        yield listener.getsockname()[1]
    finally:
        listener.close()


@pytest.mark.parametrize("option", ["zookeeper", "bootstrap_server"])
def test_a_server_that_never_answers_gives_no_names_instead_of_a_hang(silent_port, option, tmp_path,
                                                                      monkeypatch) -> None:  # fmt: skip
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    complete_names._import_clients(zk=True, broker=True)
    started = time.monotonic()
    found = complete_names.names(complete_names.GROUPS, {option: f"127.0.0.1:{silent_port}"})
    assert (found, time.monotonic() - started < HANG) == ([], True)


@pytest.mark.parametrize("option", ["zookeeper", "bootstrap_server"])
def test_nothing_listening_gives_no_names_at_once(option, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    asked = []
    monkeypatch.setattr(complete_names, "_in_child", lambda *args: asked.append(args))
    complete_names._import_clients(zk=True, broker=True)
    started = time.monotonic()
    found = complete_names.names(complete_names.TOPICS, {option: f"127.0.0.1:{free_port()}"})
    # A refused connection is known at once: no lookup child is started, so the limit is not waited out.
    assert (found, asked, time.monotonic() - started < HANG) == ([], [], True)


def test_no_server_configured_gives_no_names_and_asks_nobody(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "no-config"))
    for name in ("KTOOL_ZOOKEEPER", "KTOOL_BOOTSTRAP_SERVER", "KTOOL_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    assert complete_names.names(complete_names.GROUPS, {}) == []
    assert not (tmp_path / "ktool").exists()
