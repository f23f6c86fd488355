"""The --json contract (kafka_tools/render/contract.py) holds in every command: each run of
tests/support/json_runs.py prints compact JSON objects of documented kinds and types, ending with a
summary. A new command is one entry there and its kinds in the contract."""

from __future__ import annotations

import json

import pytest

from kafka_tools.cli.main import LAZY_COMMANDS, cli
from kafka_tools.render.contract import COMMAND_KINDS, problems
from tests.support.cli import run_ktool
from tests.support.json_runs import OFFLINE_RUNS, ZOOKEEPER_RUNS, Place


def _check(command: str, args: list[str]) -> None:
    result = run_ktool(*args)
    assert result.exit_code in (0, 1, 3), (args, result.exit_code, result.stderr)  # 3: a path not there
    lines = result.stdout.splitlines()
    assert lines, (args, result.stderr)
    assert problems(command, lines) == [], args


@pytest.mark.parametrize("run", OFFLINE_RUNS, ids=[f"{c}-{i}" for i, (c, _) in enumerate(OFFLINE_RUNS)])
def test_every_json_line_keeps_the_contract(run, tmp_path) -> None:
    command, build = run
    _check(command, build(Place(tmp_path)))


@pytest.mark.slow
@pytest.mark.parametrize("run", ZOOKEEPER_RUNS, ids=[c for c, _ in ZOOKEEPER_RUNS])
def test_every_json_line_of_the_zookeeper_commands_keeps_the_contract(run, zk_root, tmp_path) -> None:
    from tests.zk.test_zk_reader import write_kafka09_cluster

    write_kafka09_cluster(zk_root)
    zk_root.write("/cluster/id", '{"version":"1","id":"Y2x1c3Rlci1pZA"}')
    command, build = run
    _check(command, build(Place(tmp_path, zk_root.connect)))


def _json_commands() -> set[str]:
    """Every command (`groups describe` for subcommands) that takes --json."""
    found = set()
    for name, command in cli.load_all().commands.items():
        subs = command.commands.items() if hasattr(command, "commands") else [(None, command)]
        for sub, leaf in subs:
            if any(p.name == "as_json" for p in leaf.params):
                found.add(name if sub is None else f"{name} {sub}")
    return found


def test_every_command_with_json_is_in_the_contract_and_run_here() -> None:
    assert set(LAZY_COMMANDS)  # the group is loaded
    commands = _json_commands()
    assert commands == set(COMMAND_KINDS)
    run_here = {c for c, _ in OFFLINE_RUNS + ZOOKEEPER_RUNS}
    # migrate-offsets, offsets import and groups reset-offsets need a Kafka broker:
    # tests/consumers/test_migrate_offsets_e2e.py and tests/modern/test_reset_offsets_modern.py check
    # their lines with contract.problems; scan's run in tests/pipeline/test_scan.py.
    # quorum needs a KRaft cluster: tests/modern/test_cluster_live.py checks its lines.
    assert commands - run_here == {
        "migrate-offsets",
        "offsets import",
        "groups reset-offsets",
        "scan",
        "quorum",
    }


def test_a_line_that_breaks_the_contract_is_named() -> None:
    good = '{"type":"offset","logDir":"/d","topic":"t","partition":0,"offset":5,"time":-1,"error":null}'
    summary = '{"type":"summary","partitions":1,"failed":0,"unreadable":0}'
    assert problems("offsets-at", [good, summary]) == []
    spaced = json.dumps(json.loads(good))
    assert problems("offsets-at", [spaced, summary]) == ["line 1: not compact JSON"]
    as_text = good.replace('"partition":0', '"partition":"0"')
    assert problems("offsets-at", [as_text, summary]) == ["line 1: offset.partition: '0' is not int"]
    assert problems("offsets-at", [good]) == ["offsets-at: the last line is not a summary"]
    extra = good.replace('"time"', '"extra":1,"time"')
    assert problems("offsets-at", [extra, summary]) == ["line 1: offset: undocumented field 'extra'"]


def _non_null(types: str) -> frozenset[str]:
    return frozenset(types.split("|")) - {"null"}


def test_one_shape_per_kind_across_commands() -> None:
    """Two commands' objects of the same `type` give a field they share one JSON type (a partition is an
    integer in every command, never `orders-0` in one and `0` in another); summaries are each command's
    own, but a count keeps its type (`unreadable` a count everywhere)."""
    seen: dict[tuple[str, str], tuple[str, frozenset[str]]] = {}
    clashes = []
    for command, kinds in COMMAND_KINDS.items():
        for kind in kinds:
            for name, types in kind.fields.items():
                key = (kind.type, name)
                first = seen.setdefault(key, (command, _non_null(types)))
                if first[1] != _non_null(types):
                    clashes.append(f"{kind.type}.{name}: {first[0]} {sorted(first[1])}, {command} {types}")
    assert clashes == []


def test_a_partition_is_a_topic_and_an_integer_everywhere() -> None:
    """Every `type:"partition"` object: `topic` (str|null) and `partition` (int|null); the commands that
    read log dirs name the directory as `dir` and its `path`."""
    reads_log_dirs = {"validate", "retention", "scan"}
    for command, kinds in COMMAND_KINDS.items():
        for kind in kinds:
            if "partition" in kind.fields:  # whatever the object, `partition` is never a directory's name
                assert _non_null(kind.fields["partition"]) == {"int"}, (command, kind.type)
            if kind.type != "partition":
                continue
            assert _non_null(kind.fields.get("topic", "")) == {"str"}, (command, kind.fields)
            assert _non_null(kind.fields.get("partition", "")) == {"int"}, (command, kind.fields)
            if command in reads_log_dirs:
                assert {"dir", "path"} <= set(kind.fields) - kind.optional, command


def test_one_name_per_count() -> None:
    """A count of errors is `errors` in every command (never `problems`); a count of members `members`."""
    for command, kinds in COMMAND_KINDS.items():
        for kind in kinds:
            assert "problems" not in kind.fields, (command, kind.type)
            assert "zookeeperMembers" not in kind.fields, (command, kind.type)
