"""`ktool brokers`, `ktool topics`, `ktool cluster-id` through CliRunner against a real ZooKeeper 3.8:
output for people and for jq, and one line with exit code 3 for every way ZooKeeper can fail us."""

from __future__ import annotations

import json
import time

import pytest

from kafka_tools.errors import EXIT_ENVIRONMENT
from kafka_tools.render.contract import problems
from tests.support.servers import free_port
from tests.zk.test_zk_reader import write_kafka07_cluster, write_kafka09_cluster

PASSWORD = "right-horse-battery"


def json_lines(text: str) -> list[dict]:
    """The objects before the summary line that ends every --json stream."""
    objs = [json.loads(line) for line in text.splitlines()]
    assert objs and objs[-1]["type"] == "summary", text
    return objs[:-1]


def table_rows(text: str) -> list[list[str]]:
    """The cells of a table in ktool's piped style (`|` between cells, a `-+-` rule under the header)."""
    return [[c.strip() for c in line.split("|")] for line in text.splitlines() if "|" in line]


def one_line_error(result) -> str:
    assert result.exit_code == EXIT_ENVIRONMENT, (result.exit_code, result.output, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_brokers_table_with_controller_cluster_id_and_version_advice(zk_root, zk_cli) -> None:
    write_kafka09_cluster(zk_root)
    result = zk_cli("brokers", "--zookeeper", zk_root.connect)
    assert result.exit_code == 0, result.stderr
    rows = table_rows(result.stdout)
    assert rows[0] == [
        "id",
        "host",
        "port",
        "endpoints",
        "rack",
        "jmx port",
        "version",
        "kafka",
        "registered",
    ]
    assert rows[1] == [
        "0",
        "127.0.0.1",
        "9092",
        "PLAINTEXT://127.0.0.1:9092",
        "-",
        "-1",
        "2",
        "0.9.x",
        "2016-05-11 20:53:20 UTC",
    ]
    assert rows[2][:3] == ["1", "127.0.0.1", "9093"]
    lines = result.stdout.splitlines()
    assert set(lines[1]) <= {"-", "+"}  # the rule under the header
    del lines[1]
    assert lines[3] == "controller: broker 1 (epoch 3, since 2016-05-11 20:53:20 UTC)"
    assert lines[4] == "cluster id: none (clusters before 0.10.1 have no /cluster/id)"
    assert lines[5] == (
        "oldest broker: Kafka 0.9.x "
        "(librdkafka needs api.version.request=false broker.version.fallback=0.9.0.1)"
    )
    assert "\x1b[" not in result.stdout  # no colour into a pipe


def test_brokers_json_one_object_per_broker_then_cluster(zk_root, zk_cli) -> None:
    write_kafka09_cluster(zk_root)
    zk_root.write("/cluster/id", '{"version":"1","id":"abcDEF123"}')
    result = zk_cli("brokers", "--json", "--zookeeper", zk_root.connect)
    assert result.exit_code == 0, result.stderr
    objs = json_lines(result.stdout)
    assert [o["type"] for o in objs] == ["broker", "broker", "cluster"]
    assert objs[0] == {
        "type": "broker",
        "id": 0,
        "host": "127.0.0.1",
        "port": 9092,
        "endpoints": ["PLAINTEXT://127.0.0.1:9092"],
        "rack": None,
        "jmxPort": -1,
        "version": 2,
        "timestamp": 1463000000000,
        "registeredAt": "2016-05-11T20:53:20.000+00:00",
        "layout": "0.8+",
        "kafkaVersionHint": "0.9.x",
    }
    assert objs[2] == {
        "type": "cluster",
        "clusterId": "abcDEF123",
        "controller": 1,
        "controllerEpoch": 3,
        "controllerSince": "2016-05-11T20:53:20.123+00:00",
        "brokers": 2,
        "kafkaVersionHint": "0.9.x",
        "librdkafka": {"api.version.request": "false", "broker.version.fallback": "0.9.0.1"},
    }


def test_brokers_of_a_kafka07_cluster(zk_root, zk_cli) -> None:
    write_kafka07_cluster(zk_root)
    objs = json_lines(zk_cli("brokers", "--json", "--zookeeper", zk_root.connect).stdout)
    assert [(o["layout"], o["kafkaVersionHint"], o["version"]) for o in objs[:2]] == [
        ("0.7", "0.7", None)
    ] * 2
    assert objs[2]["librdkafka"] is None
    text = zk_cli("brokers", "--zookeeper", zk_root.connect).stdout
    assert "librdkafka cannot talk to 0.7 brokers" in text


def test_topics_table_and_json_mark_under_replicated(zk_root, zk_cli) -> None:
    write_kafka09_cluster(zk_root)
    result = zk_cli("topics", "--zookeeper", zk_root.connect)
    assert result.exit_code == 0, result.stderr
    assert table_rows(result.stdout) == [
        ["topic", "partition", "leader", "replicas", "isr", "elr", "min isr", "leader epoch", "status"],
        ["orders", "0", "0", "0,1", "0,1", "-", "-", "0", ""],
        ["orders", "1", "1", "1,0", "1", "-", "-", "2", "under-replicated"],
    ]
    objs = json_lines(zk_cli("topics", "orders", "--json", "--zookeeper", zk_root.connect).stdout)
    assert objs[1] == {
        "type": "partition",
        "topic": "orders",
        "partition": 1,
        "broker": None,
        "leader": 1,
        "replicas": [1, 0],
        "isr": [1],
        "elr": None,  # ZooKeeper has none
        "lastKnownElr": None,
        "addingReplicas": [],
        "removingReplicas": [],
        "leaderEpoch": 2,
        "minIsr": None,  # no override in /config/topics; the brokers' default is not in ZooKeeper
        "underReplicated": True,
        "underMinIsr": False,
        "offline": False,
        "reassigning": False,
        "statuses": ["under-replicated"],
        "controllerEpoch": 1,
        "layout": "0.8+",
    }


def test_topics_of_a_kafka07_cluster_are_broker_partitions(zk_root, zk_cli) -> None:
    write_kafka07_cluster(zk_root)
    stdout = zk_cli("topics", "--json", "--zookeeper", zk_root.connect).stdout
    assert problems("topics", stdout.splitlines()) == []
    objs = json_lines(stdout)
    assert [(o["partition"], o["broker"], o["leader"], o["layout"]) for o in objs] == [
        (0, 0, 0, "0.7"),  # the partition an integer as in every command; the broker numbers it
        (1, 0, 0, "0.7"),
        (0, 1, 1, "0.7"),
    ]


def test_missing_topic_is_one_line_exit_3(zk_root, zk_cli) -> None:
    write_kafka09_cluster(zk_root)
    line = one_line_error(zk_cli("topics", "nope", "--zookeeper", zk_root.connect))
    assert line == f"ktool: no topic nope in /brokers/topics on ZooKeeper {zk_root.connect}"


def test_a_missing_topic_among_good_ones_is_said_and_the_others_shown(zk_root, zk_cli) -> None:
    write_kafka09_cluster(zk_root)
    result = zk_cli("topics", "nope", "orders", "gone", "--json", "--zookeeper", zk_root.connect)
    assert result.exit_code == EXIT_ENVIRONMENT
    assert result.stderr == f"ktool: no topics nope, gone in /brokers/topics on ZooKeeper {zk_root.connect}\n"
    objs = json_lines(result.stdout)
    assert [(o["topic"], o["partition"]) for o in objs] == [("orders", 0), ("orders", 1)]


def test_cluster_id_prints_the_id_or_says_there_is_none(zk_root, zk_cli) -> None:
    write_kafka09_cluster(zk_root)
    line = one_line_error(zk_cli("cluster-id", "--zookeeper", zk_root.connect))
    assert line == f"ktool: no /cluster/id on ZooKeeper {zk_root.connect}: clusters before 0.10.1 have no id"
    zk_root.write("/cluster/id", '{"version":"1","id":"abcDEF123"}')
    assert zk_cli("cluster-id", "--zookeeper", zk_root.connect).stdout == "abcDEF123\n"
    result = zk_cli("cluster-id", "--json", env={"KTOOL_ZOOKEEPER": zk_root.connect})
    assert json_lines(result.stdout) == [{"type": "cluster", "clusterId": "abcDEF123"}]


def test_unreachable_server_fails_within_the_timeout_naming_it(zk_cli) -> None:
    port = free_port()  # nothing listens here
    t0 = time.monotonic()
    result = zk_cli("brokers", "--zookeeper", f"127.0.0.1:{port}/kafka", "--zk-timeout", "30")
    elapsed = time.monotonic() - t0
    assert (
        one_line_error(result) == f"ktool: cannot connect to ZooKeeper 127.0.0.1:{port}: connection refused"
    )
    assert elapsed < 10, elapsed  # refused is known at once: no waiting for the 30 s timeout


@pytest.mark.slow  # waits out the 1.5 s timeout it gives, as the user would
def test_silent_server_fails_within_the_timeout(zk_cli) -> None:
    """A port that accepts and never answers (e.g. a Kafka port given by mistake) must not hang for the
    session timeout: kazoo's handshake read waits that long, ktool must not."""
    import socket

    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        port = listener.getsockname()[1]
        t0 = time.monotonic()
        result = zk_cli("topics", "--zookeeper", f"127.0.0.1:{port}", "--zk-timeout", "1.5")
        elapsed = time.monotonic() - t0
    assert one_line_error(result) == (
        f"ktool: cannot connect to ZooKeeper 127.0.0.1:{port}: accepted the connection but gave no "
        "ZooKeeper session within 1.5 s"
    )
    assert elapsed < 5, elapsed


def test_wrong_chroot_is_named(zk_root, zk_cli) -> None:
    write_kafka09_cluster(zk_root)
    wrong = f"{zk_root.server.connect_string}/no-such-chroot"
    line = one_line_error(zk_cli("brokers", "--zookeeper", wrong))
    assert (
        line == f"ktool: chroot /no-such-chroot does not exist on ZooKeeper {zk_root.server.connect_string}"
    )
    # an existing znode that is not Kafka's root
    line = one_line_error(zk_cli("brokers", "--zookeeper", f"{zk_root.connect}/consumers"))
    assert line.startswith(f"ktool: no /brokers/ids on ZooKeeper {zk_root.connect}/consumers: ")


def test_malformed_json_in_a_broker_znode_is_one_line(zk_root, zk_cli) -> None:
    write_kafka09_cluster(zk_root)
    zk_root.write("/brokers/ids/2", b'{"jmx_port":-1,"host":"127.0.0.1",')
    line = one_line_error(zk_cli("brokers", "--zookeeper", zk_root.connect))
    assert line.startswith("ktool: malformed znode /brokers/ids/2: invalid JSON: ")


def test_digest_acl_needs_the_right_password(zk_root, zk_cli, tmp_path) -> None:
    """/brokers readable only by digest user `ktool`: the wrong password is refused with one line
    that names the znode and never the password; the right one (file or environment) reads it."""
    from kazoo.security import make_digest_acl

    write_kafka09_cluster(zk_root)
    acl = [make_digest_acl("ktool", PASSWORD, all=True)]
    zk_root.zk.set_acls("/brokers/ids", acl)
    wrong = tmp_path / "wrong"
    wrong.write_text("digest ktool:wrong-password\n")
    right = tmp_path / "right"
    right.write_text(f"# ops team\ndigest ktool:{PASSWORD}\n")

    line = one_line_error(zk_cli("brokers", "--zookeeper", zk_root.connect))
    assert line == (
        f"ktool: not allowed to read /brokers/ids on ZooKeeper {zk_root.connect} (ACL): "
        "give credentials with --zk-auth-file or $KTOOL_ZK_AUTH"
    )
    # ZooKeeper accepts any digest password at login: the refusal names the credentials that were given
    for args, env in (
        (("--zk-auth-file", str(wrong)), None),
        ((), {"KTOOL_ZK_AUTH": "digest ktool:wrong-password"}),
    ):
        result = zk_cli("brokers", "--zookeeper", zk_root.connect, *args, env=env)
        line = one_line_error(result)
        assert line == (
            f"ktool: ZooKeeper {zk_root.connect} refused to let the credentials given (digest user ktool) "
            "read /brokers/ids: a wrong password, or the ACL does not grant that user"
        )
        assert "wrong-password" not in result.stderr

    result = zk_cli("brokers", "--json", "--zookeeper", zk_root.connect, "--zk-auth-file", str(right))
    assert result.exit_code == 0, result.stderr
    assert [o["type"] for o in json_lines(result.stdout)] == ["broker", "broker", "cluster"]
    result = zk_cli(
        "brokers", "--json", "--zookeeper", zk_root.connect, env={"KTOOL_ZK_AUTH": f"digest ktool:{PASSWORD}"}
    )
    assert result.exit_code == 0, result.stderr
    assert PASSWORD not in result.stdout + result.stderr


def test_config_file_supplies_zookeeper_and_timeouts(zk_root, zk_cli, tmp_path) -> None:
    write_kafka09_cluster(zk_root)
    config = tmp_path / "config.toml"
    config.write_text(f'[zookeeper]\nconnect = "{zk_root.connect}"\nconnect_timeout = 5\n')
    result = zk_cli("topics", "--json", env={"KTOOL_CONFIG": str(config)})
    assert result.exit_code == 0, result.stderr
    assert len(json_lines(result.stdout)) == 2
