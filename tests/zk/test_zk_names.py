"""Group names ZooKeeper cannot hold (`.`, `..`, a `/`, NUL) are one line and exit 2 before anything is
asked of ZooKeeper, for every command that builds a znode path from a group's name (zk/names.py). The
ZooKeeper given is one nobody listens on: a command that tried to reach it would fail otherwise (exit 3),
as every one of them did before (and with a reachable one, kazoo's ValueError traceback, exit 1)."""

from __future__ import annotations

import pytest

from kafka_tools.errors import UsageError
from kafka_tools.zk.names import group_path, offset_path, znode_name_problem
from tests.support.cli import run_ktool
from tests.support.servers import free_port

NOBODY = f"127.0.0.1:{free_port('127.0.0.1')}"
KAFKA = f"127.0.0.1:{free_port('127.0.0.1')}"

COMMANDS = {
    "groups describe": ["groups", "describe", "{g}", "--zookeeper", NOBODY],
    "groups describe, both servers": ["groups", "describe", "ok", "{g}", "--zookeeper", NOBODY,
                                      "--bootstrap-server", KAFKA],
    "groups delete": ["groups", "delete", "{g}", "--zookeeper", NOBODY],
    "groups delete --store zookeeper": ["groups", "delete", "{g}", "--store", "zookeeper",
                                        "--zookeeper", NOBODY, "--bootstrap-server", KAFKA],
    "groups delete --dry-run": ["groups", "delete", "{g}", "--dry-run", "--zookeeper", NOBODY],
    "groups watch": ["groups", "watch", "{g}", "--once", "--zookeeper", NOBODY],
    "groups rebalance-plan": ["groups", "rebalance-plan", "{g}", "--zookeeper", NOBODY],
    "groups reset-offsets": ["groups", "reset-offsets", "{g}", "--all-topics", "--to-earliest", "--zookeeper",
                             NOBODY, "--bootstrap-server", KAFKA],
    "offsets export": ["offsets", "export", "--group", "{g}", "--zookeeper", NOBODY],
    "migrate-offsets": ["migrate-offsets", "--group", "{g}", "--zookeeper", NOBODY,
                        "--bootstrap-server", KAFKA],
}  # fmt: skip


@pytest.mark.parametrize("group", ["..", ".", "a/b", "a\x00b"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_group_name_zookeeper_cannot_hold_is_one_line_exit_2_before_connecting(command, group) -> None:
    result = run_ktool(*(a.format(g=group) for a in COMMANDS[command]))
    assert result.exit_code == 2, (result.exit_code, result.output)
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"ktool: group {group!r} cannot be a consumer group in ZooKeeper: "), line
    assert NOBODY not in line  # said before any connection was tried


@pytest.mark.parametrize(
    "name, problem",
    [
        ("..", "`..` is a relative path in ZooKeeper"),
        (".", "`.` is a relative path in ZooKeeper"),
        ("", "it is empty"),
        ("a/b", "ZooKeeper refuses '/' in a znode name"),
        ("a\x00b", "ZooKeeper refuses '\\x00' in a znode name"),
        ("tab\there", "ZooKeeper refuses '\\t' in a znode name"),
        ("...", None),  # a name ZooKeeper holds (and the 0.8 consumer's group.id check let through)
        ("billing.v2_x-1", None),
        ("grüppe", None),
    ],
)
def test_the_rule_is_zookeepers_path_rule(name, problem) -> None:
    assert znode_name_problem(name) == problem
    if problem is not None:
        with pytest.raises(UsageError):
            group_path(name)
    else:
        assert group_path(name, "offsets") == f"/consumers/{name}/offsets"


@pytest.mark.parametrize("topic", ["..", ".", "a/b", "x" * 250, ""])
def test_a_topic_name_kafka_refuses_never_reaches_a_path(topic) -> None:
    with pytest.raises(UsageError, match="is not a Kafka topic name"):
        offset_path("g", topic, 0)
    assert offset_path("g", "orders.v2", 3) == "/consumers/g/offsets/orders.v2/3"


def test_with_both_servers_and_no_store_such_a_name_is_kafkas_group() -> None:
    """Kafka's group ids may be `..`: groups delete, given both servers, sends it there without asking
    ZooKeeper (an object that is no client: any call on it would fail)."""
    from kafka_tools.consumers.group_delete import KAFKA, choose_store

    assert choose_store(object(), object(), "..", None) == KAFKA  # type: ignore[arg-type]
