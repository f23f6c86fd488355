"""Start-up of a small command: what it must not import (work done, not time). The `crc32c` package
pulls in `importlib.metadata` (a third of a small command's imports), rich another fifth; with the C
extension built, CRC-32C comes from it and rich is imported only to draw a table, colour or a bar."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_tools.format import accel
from tests.support.fresh_imports import FreshImports, command_env

V2 = Path(__file__).resolve().parents[2] / "fixtures" / "generated" / "v2"
SEGMENT = V2 / "none-0" / "00000000000000000000.log"
NOT_AT_START_UP = ("crc32c", "rich", "importlib.metadata")  # and their submodules

pytestmark = pytest.mark.skipif(not accel.BUILT, reason="the C extension is what replaces the crc32c package")


@pytest.fixture(scope="module")
def fresh() -> Iterator[FreshImports]:
    """Commands run as from a fresh start: one interpreter, a forked child each (tests/support)."""
    server = FreshImports(command_env())
    yield server
    server.close()


def _loaded_after(fresh: FreshImports, args: list[str]) -> tuple[int, set[str], str]:
    run = fresh.run(args)
    return run.code, set(run.modules), run.stdout


def _heavy(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if m in NOT_AT_START_UP or m.startswith(("rich.", "crc32c.")))


@pytest.mark.parametrize(
    "args",
    [
        ["validate", str(SEGMENT)],
        ["validate", "--json", str(SEGMENT)],
        ["dump-log", str(SEGMENT)],
        ["dump-log", "--deep-iteration", "--json", str(SEGMENT)],
        ["read", str(V2 / "none-0"), "--offset", "1"],
    ],
    ids=["validate", "validate-json", "dump-log", "dump-log-deep-json", "read"],
)
def test_a_small_command_imports_neither_crc32c_nor_rich(fresh, args: list[str]) -> None:
    code, loaded, stdout = _loaded_after(fresh, args)
    assert code == 0 and stdout  # it did its work
    assert _heavy(loaded) == []


def test_validate_checks_crcs_with_the_extension(fresh) -> None:
    """The batches' CRCs were checked (a clean verdict), and not by the package: it was never imported."""
    code, loaded, stdout = _loaded_after(fresh, ["validate", str(SEGMENT)])
    assert code == 0 and stdout.startswith("clean: 1 segment, 4 batches")
    assert "kafka_tools.format._speedups" in loaded and "crc32c" not in loaded


# What no small command needs, whichever it is: thread pools and worker processes (one core's work),
# the Spark and Arrow pipeline, the servers' clients, the ZooKeeper connection, a TOML parser.
NO_SMALL_COMMAND_NEEDS = (
    "concurrent.futures",
    "multiprocessing",
    "pyarrow",
    "pyspark",
    "kazoo",
    "confluent_kafka",
    "tomllib",
    "kafka_tools.zk.connection",
    "kafka_tools.pipeline",
    "kafka_tools.format.kraft",
)

SMALL_COMMANDS = {
    "validate-file": ["validate", str(SEGMENT)],
    "validate-log-dir": ["validate", str(V2)],
    "dump-log": ["dump-log", str(SEGMENT)],
    "read": ["read", str(V2 / "none-0"), "--offset", "1"],
    "offsets-at": ["offsets-at", str(V2), "--time", "earliest"],
    "truncate-dry-run": ["truncate", "--dry-run", str(V2 / "none-0")],
    "retention": ["retention", str(V2)],
}


@pytest.mark.parametrize("name", list(SMALL_COMMANDS))
def test_a_small_command_on_a_pipe_imports_no_machinery_it_does_not_use(fresh, name: str) -> None:
    """Tables into a pipe are drawn without rich (render/tables.PlainConsole); `retention` without a
    ZooKeeper configured opens no client layer; one core's work starts no pool."""
    code, loaded, stdout = _loaded_after(fresh, SMALL_COMMANDS[name])
    assert code == 0 and stdout  # it did its work
    heavy = _heavy(loaded) + sorted(m for m in loaded if m.startswith(NO_SMALL_COMMAND_NEEDS))
    assert heavy == []


def test_validate_of_a_segment_file_loads_only_the_segment_checks(fresh) -> None:
    """A segment named alone: no index, snapshot or checkpoint checks, no table renderer, no JSON
    encoder for text output, no dump machinery."""
    code, loaded, stdout = _loaded_after(fresh, ["validate", str(SEGMENT)])
    assert code == 0 and stdout.startswith("clean: 1 segment")
    not_needed = {
        "kafka_tools.format.index",
        "kafka_tools.format.snapshot",
        "kafka_tools.format.checkpoints",
        "kafka_tools.log.checks.index_checks",
        "kafka_tools.log.reads.dump",
        "kafka_tools.render.tables",
        "json",
        "kafka_tools.format.kafka07",  # the 0.7 reader: for .kafka files
        "kafka_tools.format.lz4_frames",  # the LZ4 frame reader: for LZ4 batches (this segment has none)
        "kafka_tools.render.json_kinds",  # the --json objects
    }
    assert sorted(not_needed & loaded) == []


def test_retention_text_needs_no_json_encoder(fresh) -> None:
    """The preview as text: the JSON Lines renderer's encoder and its objects are imported for --json only."""
    code, loaded, stdout = _loaded_after(fresh, ["retention", str(V2)])
    assert code == 0 and "retention.bytes -1: no size limit" in stdout
    assert sorted({"json", "kafka_tools.render.json_lines", "kafka_tools.render.json_kinds"} & loaded) == []


def test_dump_log_of_one_file_starts_no_worker_machinery(fresh) -> None:
    """One file: no second core to use, so neither multiprocessing nor its pickling is imported."""
    code, loaded, stdout = _loaded_after(fresh, ["dump-log", str(SEGMENT)])
    assert code == 0 and "baseOffset: 0" in stdout
    assert "multiprocessing" not in loaded and "kafka_tools.cli.dump_parallel" not in loaded


def test_validate_of_a_log_dir_checks_its_side_files_without_the_dump_machinery(fresh) -> None:
    """meta.properties and a partition's `.txnindex` are checked by the side-file checks dump-log also
    runs, without dump-log's event machinery; a clean partition needs no JSON encoder."""
    code, loaded, stdout = _loaded_after(fresh, ["validate", str(V2)])
    assert code == 0 and "clean: 10 segments" in stdout
    assert "kafka_tools.log.files.side_files" in loaded  # the side files were checked
    not_needed = {
        "kafka_tools.log.reads.dump",
        "kafka_tools.log.reads.dump_events",
        "kafka_tools.log.checks.kraft_snapshots",
        "json",
        # its small gzip and snappy batches were looked into by zlib and the C snappy decoder
        "isal",
        "snappy",
        "cramjam",
    }
    assert sorted(not_needed & loaded) == []


def test_offsets_at_earliest_reads_names_and_checkpoints_only(fresh) -> None:
    """The log start offset comes from the segment names and log-start-offset-checkpoint: no segment
    or index reader, no record decoder, no JSON encoder for text output."""
    code, loaded, stdout = _loaded_after(fresh, ["offsets-at", str(V2), "--time", "earliest"])
    assert code == 0 and "none:0:0" in stdout.splitlines()
    not_needed = {
        "kafka_tools.log.reads.locate",
        "kafka_tools.log.reads.read",
        "kafka_tools.format.index",
        "kafka_tools.format.segment",
        "kafka_tools.format.record_batch",
        "kafka_tools.render.json_lines",
        "kafka_tools.render.json_kinds",
        "json",
    }
    assert sorted(not_needed & loaded) == []


def test_truncate_dry_run_plans_without_the_repair_machinery(fresh) -> None:
    """A dry run plans (the validation behind it) but changes nothing: no backup, hashing or journal
    code, no JSON encoder for text output; a partition without indexes or snapshots reads neither."""
    code, loaded, stdout = _loaded_after(fresh, ["truncate", "--dry-run", str(V2 / "none-0")])
    assert code == 0 and "nothing to do" in stdout and "dry run: nothing changed" in stdout
    assert "kafka_tools.log.checks.recovery" in loaded  # it did plan
    not_needed = {
        "kafka_tools.log.repair.apply",
        "kafka_tools.keep.durable",
        "hashlib",
        "json",
        "kafka_tools.log.checks.index_checks",
        "kafka_tools.format.index",
        "kafka_tools.format.snapshot",
    }
    assert sorted(not_needed & loaded) == []


def test_validate_of_a_small_log_dir_imports_no_walker_machinery(fresh) -> None:
    """A small input is walked as `--jobs 1` (log/workers/parallel.py): neither the worker pool nor its
    wire format (nor pickle) is imported, whatever --jobs says."""
    code, loaded, stdout = _loaded_after(fresh, ["validate", "--jobs", "2", str(V2)])
    assert code == 0 and stdout
    machinery = {
        "kafka_tools.log.workers.pool",
        "kafka_tools.log.workers.pooled_scans",
        "kafka_tools.log.workers.report_wire",
        "pickle",
    }
    assert sorted(machinery & loaded) == []


# -- --help of the commands that talk to servers or replay a metadata log ------------------------------
#
# Their help (and a usage error, which Click finds before the command runs) is the commands' options and
# text: none of the clients, services or renderers behind them (issue 51: each --help within 0.06 s of
# `python -c pass`; the broker client alone was 23 ms of `groups describe --help`).

NOT_FOR_HELP = (
    "kafka_tools.broker",
    "kafka_tools.zk.config",  # the settings are read when a command runs; the options name only variables
    "kafka_tools.secret_files",
    "kafka_tools.zk.connection",
    "kafka_tools.zk.reader",
    "kafka_tools.zk.layout",
    "kafka_tools.zk.write",
    "kafka_tools.consumers.",
    "kafka_tools.cluster",
    "kafka_tools.metadata",
    "kafka_tools.migration",
    "kafka_tools.log.retention",
    "kafka_tools.render.",
    "kazoo",
    "confluent_kafka",
    "ssl",
    "socket",
    "json",
    "csv",
)
# what declaring the options takes: the offset stores' names (--store, --from, --to), colour on a terminal
HELP_MAY_USE = {"kafka_tools.consumers.stores", "kafka_tools.render.lines"}

SERVER_COMMANDS = [
    ["brokers"],
    ["cluster-id"],
    ["quorum"],
    ["topics"],
    ["groups", "list"],
    ["groups", "describe"],
    ["groups", "rebalance-plan"],
    ["groups", "reset-offsets"],
    ["groups", "watch"],
    ["groups", "delete"],
    ["metadata", "show"],
    ["metadata", "topics"],
    ["metadata", "brokers"],
    ["metadata", "diff"],
    ["metadata", "check"],
    ["migrate-offsets"],
    ["offsets", "export"],
    ["offsets", "import"],
    ["retention"],
    ["kraft-migration", "check"],
    ["kraft-migration", "diff"],
]


def _not_for_help(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if m.startswith(NOT_FOR_HELP) and m not in HELP_MAY_USE)


@pytest.mark.parametrize("words", SERVER_COMMANDS, ids=" ".join)
def test_help_of_a_server_command_imports_no_client_service_or_renderer(fresh, words: list[str]) -> None:
    code, loaded, stdout = _loaded_after(fresh, [*words, "--help"])
    assert code == 0 and "Exit status" in stdout  # the help was printed
    assert _not_for_help(loaded) == []


@pytest.mark.parametrize(
    "args",
    [
        ["groups", "describe", "--no-such-option"],
        ["topics", "--broker-timeout", "0"],
        ["offsets", "export", "--from", "nowhere"],
        ["metadata", "diff"],
    ],
    ids=["unknown-option", "bad-value", "bad-choice", "missing-argument"],
)
def test_a_usage_error_of_a_server_command_is_found_before_any_client_is_imported(fresh, args) -> None:
    code, loaded, _ = _loaded_after(fresh, args)
    assert code == 2  # Click's usage error, said before the command runs
    assert _not_for_help(loaded) == []


def test_truncate_help_imports_neither_the_planner_nor_the_repair(fresh) -> None:
    """Its help is long (formatting it is most of what `truncate --help` does): the recovery planner, the
    repair and its renderer wait for a run."""
    code, loaded, stdout = _loaded_after(fresh, ["truncate", "--help"])
    assert code == 0 and "--index-interval-bytes" in stdout and "[default: 4096; x>=1]" in stdout
    heavy = ("kafka_tools.log.checks", "kafka_tools.log.repair", "kafka_tools.render.")
    heavy += ("kafka_tools.format.segment", "kafka_tools.format.record_batch")  # the decoder
    assert sorted(m for m in loaded if m.startswith(heavy)) == []


# -- the start-up budget: every command's modules, against the list allowed at start-up --------------
#
# tests/cli/startup_budget.json holds, for every command (each subcommand's `--help`, and the small
# commands on the 4 KiB fixtures), the ktool modules it may import before it is done. A module a
# command newly pulls in at start-up (a dataclass module, a service it does not run) fails here, named;
# the seconds are bench/startup.py's (every command within 0.06 s of `python -c pass`). After a change
# that deliberately adds one, rewrite the file with KTOOL_WRITE_STARTUP_BUDGET=1 and review its diff.

BUDGET_FILE = Path(__file__).with_name("startup_budget.json")
FIXTURE_ARGS = {"SEGMENT": str(SEGMENT), "V2": str(V2), "PART": str(V2 / "none-0")}
BUDGET_COMMANDS = {
    "validate FILE": ["validate", "SEGMENT"],
    "validate --json FILE": ["validate", "--json", "SEGMENT"],
    "validate LOGDIR": ["validate", "V2"],
    "dump-log FILE": ["dump-log", "SEGMENT"],
    "dump-log --deep --json FILE": ["dump-log", "--deep-iteration", "--json", "SEGMENT"],
    "read PART": ["read", "PART", "--offset", "1"],
    "offsets-at LOGDIR": ["offsets-at", "V2", "--time", "earliest"],
    "truncate --dry-run PART": ["truncate", "--dry-run", "PART"],
    "retention LOGDIR": ["retention", "V2"],
}


def _every_command() -> list[list[str]]:
    """Each leaf command of the tree (`groups list`, `validate`, …), as its words."""
    import click

    from kafka_tools.cli.main import cli

    def walk(cmd: click.Command, words: list[str]) -> list[list[str]]:
        if isinstance(cmd, click.Group):
            return [w for name, sub in sorted(cmd.commands.items()) for w in walk(sub, [*words, name])]
        return [words]

    return walk(cli.load_all(), [])


def _budget_cases() -> dict[str, list[str]]:
    cases = {"--version": ["--version"], "--help": ["--help"]}
    cases.update({" ".join(words) + " --help": [*words, "--help"] for words in _every_command()})
    cases.update(BUDGET_COMMANDS)
    return cases


def _ktool_modules_of_all(fresh: FreshImports, cases: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each case run as from a fresh start: the ktool modules it imported."""
    found: dict[str, list[str]] = {}
    for name, case in cases.items():
        run = fresh.run([FIXTURE_ARGS.get(a, a) for a in case], prefix="kafka_tools")
        found[name] = sorted(run.modules)
    return found


def test_every_command_starts_within_its_module_budget(fresh) -> None:
    """No command imports a ktool module its budget does not list; every command has a budget."""
    import json

    found = _ktool_modules_of_all(fresh, _budget_cases())
    if os.environ.get("KTOOL_WRITE_STARTUP_BUDGET"):
        BUDGET_FILE.write_text(json.dumps(found, indent=1) + "\n")
    budget = json.loads(BUDGET_FILE.read_text())
    assert sorted(set(found) - set(budget)) == []  # a new command: give it a budget
    over = {name: sorted(set(mods) - set(budget[name])) for name, mods in found.items()}
    assert {name: extra for name, extra in over.items() if extra} == {}
