"""Options that mean the same in every command (kafka_tools/cli/options.py), and the words a script or
an operator reads, checked command by command."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from kafka_tools.cli.main import cli
from tests.support.cli import run_ktool
from tests.support.json_runs import GENERATED, KAFKA09
from tests.support.script import run_script

V2_LOG = str(GENERATED / "v2/none-0/00000000000000000000.log")
CORRUPT = str(GENERATED / "corrupt/v2-trailing-garbage-0")


@pytest.mark.parametrize(
    "args",
    [
        ["validate", CORRUPT],
        ["dump-log", V2_LOG],
        ["retention", str(GENERATED / "v2")],
        ["truncate", "--dry-run", CORRUPT],
    ],
)
@pytest.mark.slow  # the console script three times per command: 12 fresh interpreters
def test_color_is_taken_before_or_after_the_command(args) -> None:
    if args[0] == "retention":
        args = [*args, "--now", "2026-11-25T00:00:00Z"]
    before = run_script("--color", "always", *args)
    after = run_script(*args, "--color", "always")
    assert before.returncode == after.returncode and before.returncode in (0, 1)
    assert after.stdout == before.stdout and after.stderr == before.stderr
    if args[0] in ("validate", "dump-log"):  # retention and truncate print plain text
        assert "\x1b[" in after.stdout, args
    plain = run_script(*args, "--color", "never")
    assert "\x1b[" not in plain.stdout and plain.returncode == after.returncode


def test_every_command_takes_color() -> None:
    for name, command in cli.load_all().commands.items():
        leaves = list(command.commands.values()) if hasattr(command, "commands") else [command]
        for leaf in leaves:
            assert any(p.name == "color" for p in leaf.params), (name, leaf.name)


def _commands(group=None, prefix=""):
    import click

    for name, command in (group or cli.load_all()).commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix}{name} ")
        else:
            yield f"{prefix}{name}", command


def test_the_decoder_options_mean_the_same_in_every_command() -> None:
    """--key-decoder and --value-decoder: one definition, the same choices, default and help wherever
    records are printed."""
    seen: dict[str, dict[str, tuple]] = {}
    for name, command in _commands():
        for param in command.params:
            if param.name in ("key_decoder", "value_decoder"):
                shape = (tuple(param.opts), tuple(param.type.choices), param.default, param.help)
                seen.setdefault(param.name, {})[name] = shape
    assert set(seen["key_decoder"]) == set(seen["value_decoder"]) >= {"dump-log", "read", "replicas diff"}
    for per_command in seen.values():
        assert len(set(per_command.values())) == 1, per_command


def test_negative_offsets_and_an_empty_range_are_usage_errors() -> None:
    for args in (["--from-offset", "-5"], ["--to-offset", "-1"], ["--from-offset", "3", "--to-offset", "2"]):
        result = run_ktool("dump-log", *args, V2_LOG)
        assert result.exit_code == 2 and result.stdout == "", args


def test_time_values_share_one_grammar() -> None:
    v2 = str(GENERATED / "v2")
    latest = run_ktool("offsets-at", "--time", "latest", v2)
    assert run_ktool("offsets-at", "--time", "-1", v2).stdout == latest.stdout
    assert "none:0:21" in latest.stdout.splitlines()
    earliest = run_ktool("offsets-at", "--time", "-2", v2)
    assert "none:0:0" in earliest.stdout.splitlines()
    largest = run_ktool("offsets-at", "--time", "-3", v2)
    assert largest.stdout == run_ktool("offsets-at", "--time", "max-timestamp", v2).stdout
    assert "none:0:20" in largest.stdout.splitlines()  # the last record holds the largest timestamp
    bad = run_ktool("offsets-at", "--time", "-4", v2)
    assert bad.exit_code == 2 and "-3 (max-timestamp)" in bad.stderr
    words = run_ktool("retention", "--now", "latest", v2)
    assert words.exit_code == 2 and "--now" in words.stderr  # a wall-clock time: no partition words


def test_dump_log_counts_records_without_deep_and_names_offset_0_for_any_log_name(tmp_path: Path) -> None:
    plain = json.loads(run_ktool("dump-log", "--json", V2_LOG).stdout.splitlines()[-1])
    deep = json.loads(run_ktool("dump-log", "--json", "--deep", V2_LOG).stdout.splitlines()[-1])
    assert plain["records"] == deep["records"] == 21
    v1 = str(GENERATED / "v1/gzip-0/00000000000000000000.log")
    assert json.loads(run_ktool("dump-log", "--json", v1).stdout.splitlines()[-1])["records"] is None
    renamed = tmp_path / "wrongname.log"
    shutil.copy(V2_LOG, renamed)
    text = run_ktool("dump-log", str(renamed)).stdout
    first = json.loads(run_ktool("dump-log", "--json", str(renamed)).stdout.splitlines()[0])
    assert "Starting offset: 0" in text and first["baseOffset"] == 0


def test_validate_of_several_log_dirs_names_each_partitions_log_dir(tmp_path: Path) -> None:
    for broker in ("a", "b"):
        shutil.copytree(GENERATED / "v2/none-0", tmp_path / broker / "none-0")
    text = run_ktool("validate", "--color", "never", str(tmp_path / "a"), str(tmp_path / "b"))
    rows = [line for line in text.stdout.splitlines() if "none-0" in line]
    assert len(rows) == 2 and str(tmp_path / "a") in rows[0] and str(tmp_path / "b") in rows[1]
    objs = [json.loads(line) for line in run_ktool("validate", "--json", str(tmp_path)).stdout.splitlines()]
    assert sorted(o["logDir"] for o in objs if o["type"] == "partition") == [
        str(tmp_path / "a"),
        str(tmp_path / "b"),
    ]


def test_an_unreadable_partition_counts_as_unreadable_not_as_an_error(tmp_path: Path) -> None:
    part = tmp_path / "logs" / "stuck-0"
    part.mkdir(parents=True)
    os.mkfifo(part / "00000000000000000000.log")
    objs = [
        json.loads(line)
        for line in run_ktool("validate", "--json", str(tmp_path / "logs")).stdout.splitlines()
    ]
    (partition,) = [o for o in objs if o["type"] == "partition"]
    assert (
        (partition["errors"], partition["unreadable"])
        == (objs[-1]["errors"], objs[-1]["unreadable"])
        == (0, 1)
    )


def test_counts_are_said_in_words_not_as_1_records() -> None:
    result = run_ktool("retention", "--color", "never", "--all-segments", str(GENERATED / "v2/none-0"))
    assert "1 segment," in result.stdout and "1 segments" not in result.stdout
    assert "1 partitions" not in result.stdout


def test_tab_after_ktool_man_completes_the_command_names() -> None:
    def complete(words: str, cword: str) -> set[str]:
        env = {"_KTOOL_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": cword}
        return {line.partition(",")[2] for line in run_script(env=env).stdout.splitlines()}

    assert complete("ktool man gr", "2") == {"groups"}
    assert {"describe", "list", "watch"} <= complete("ktool man groups ", "3")


def test_help_promises_no_lag_threshold_and_install_lines_make_their_directories() -> None:
    assert "threshold" not in run_ktool("--help").stdout
    completion_help = run_ktool("completion", "--help").stdout
    assert completion_help.count("mkdir -p") == 3


def test_offsets_at_reports_a_failed_partition_in_its_json() -> None:
    # max-timestamp has no answer on message format v0 (no timestamps, and no broker before 0.10.1 had it)
    result = run_ktool("offsets-at", "--json", "--time", "max-timestamp", str(KAFKA09))
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 1
    failed = [o for o in objs if o["type"] == "offset" and o["error"]]
    assert failed and all("has no timestamps" in o["error"] for o in failed)
    offsets = [o for o in objs if o["type"] == "offset"]
    assert objs[-1] == {"type": "summary", "partitions": len(offsets), "failed": len(failed), "unreadable": 0}


def test_read_warns_once_of_an_index_it_passes_twice(tmp_path: Path) -> None:
    part = tmp_path / "segmented-0"
    shutil.copytree(GENERATED / "v2/segmented-0", part)
    indexes = [*part.glob("*.index"), *part.glob("*.timeindex")]
    assert indexes
    for index in indexes:
        index.write_bytes(b"garbage!garbage!x")  # not a whole number of entries: not used, said
    for args in (["--latest"], ["--timestamp", "0", "-n", "1"], ["--timestamp", "max-timestamp"]):
        result = run_ktool("read", str(part), *args)
        lines = result.stderr.splitlines()
        assert result.exit_code == 0 and lines, args
        assert len(lines) == len(set(lines)), (args, lines)


def test_every_command_that_talks_to_a_broker_takes_the_one_set_of_broker_options() -> None:
    """docs/security.md: every command with --bootstrap-server takes the same security options. Each
    such command has every option of broker_options (the same names, types, defaults; only the words
    of --bootstrap-server and --broker-version may say what it asks and decides), so a new command that
    talks to a broker cannot miss --broker-auth-file or the TLS files (`retention` once did)."""
    import click

    from kafka_tools.cli.broker_options import broker_options

    def shape(param: click.Parameter, words: bool) -> tuple:
        help_ = param.help if words and param.name not in ("bootstrap_server", "broker_version") else None
        return (tuple(param.opts), param.name, type(param.type), param.default, param.envvar, help_)

    want = {shape(p, True) for p in broker_options(click.command()(lambda **_: None)).params}
    assert len(want) == 8
    talking = {
        name: command
        for name, command in _commands()
        if any(p.name == "bootstrap_server" for p in command.params)
    }
    assert {"retention", "groups describe", "groups reset-offsets", "offsets export"} <= set(talking)
    for name, command in talking.items():
        got = {shape(p, True) for p in command.params if p.name in {w[1] for w in want}}
        assert got == want, (name, want - got)
