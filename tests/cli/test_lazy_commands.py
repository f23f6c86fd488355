"""Start-up cost: `ktool X` imports only X's module, and the lazy table names every command right."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from kafka_tools.cli.main import LAZY_COMMANDS, SUMMARIES, cli

HEAVY = ("rich", "kazoo", "pyspark", "confluent_kafka", "kafka_tools.pipeline", "kafka_tools.zk")


def _modules_after(args: list[str], env: dict[str, str] | None = None) -> set[str]:
    code = (
        "import sys\nfrom kafka_tools.cli.main import cli\n"
        f"try:\n    cli.main({args!r}, prog_name='ktool')\nexcept SystemExit:\n    pass\n"
        "print('\\n'.join(sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return set(out.stdout.split())


def test_version_imports_no_command_module():
    loaded = _modules_after(["--version"])
    assert not [m for m in loaded if m.startswith(HEAVY)], "ktool --version pulled in heavy modules"
    assert {m for m in loaded if m.startswith("kafka_tools.cli.")} == BASE


BASE = {
    "kafka_tools.cli.interrupts",  # Ctrl-C and SIGTERM handled from the first line
    "kafka_tools.cli.main",
    "kafka_tools.cli.pipe",
    "kafka_tools.cli.help",
    "kafka_tools.cli.options",
    "kafka_tools.cli.start_up",
}


def test_help_lists_every_command_without_importing_one():
    loaded = _modules_after(["--help"])
    assert {m for m in loaded if m.startswith("kafka_tools.cli.")} == BASE
    assert not [m for m in loaded if m.startswith(HEAVY)]


def test_tab_after_ktool_imports_no_command_module():
    import os

    env = {**os.environ, "_KTOOL_COMPLETE": "bash_complete", "COMP_WORDS": "ktool ", "COMP_CWORD": "1"}
    loaded = _modules_after([], env)
    assert {m for m in loaded if m.startswith("kafka_tools.cli.")} == BASE


@pytest.mark.parametrize("limit", [40, 70, 200])
def test_the_summaries_help_lists_are_each_commands_own(limit: int):
    cli.load_all()
    assert set(SUMMARIES) == set(LAZY_COMMANDS), "add the new command's first sentence to SUMMARIES"
    for name, summary in SUMMARIES.items():
        own = cli.commands[name].get_short_help_str(limit)
        assert click.Command(name, help=summary).get_short_help_str(limit) == own, name


def test_every_lazy_entry_loads_the_command_of_that_name():
    cli.load_all()
    for name in LAZY_COMMANDS:
        assert cli.commands[name].name == name
    assert cli.list_commands(None) == sorted(cli.commands)  # type: ignore[arg-type]


def test_the_decoder_choices_are_the_renderers():
    from kafka_tools.cli.options import DECODERS
    from kafka_tools.render.values import DECODERS as RENDERED

    assert DECODERS == tuple(RENDERED)


def test_tab_after_an_option_prefix_imports_no_decoder():
    import os

    for command in ("dump-log", "validate"):
        words = f"ktool {command} --"
        env = {**os.environ, "_KTOOL_COMPLETE": "bash_complete", "COMP_WORDS": words, "COMP_CWORD": "2"}
        loaded = _modules_after([], env)
        decoders = (
            "kafka_tools.format",
            "kafka_tools.log.reads.dump",
            "kafka_tools.log.checks.validate",
            "kafka_tools.render",
        )
        # format.mapping (the memory-map policy log/ installs) imports nothing: it is not a decoder
        light = {"kafka_tools.format", "kafka_tools.format.mapping"}
        assert not [m for m in loaded if m.startswith((*decoders, "rich")) and m not in light], command


def test_the_topic_filters_are_the_views():
    """`topics` names its filters' values without importing the view: they are cluster/view.py's Filter."""
    from kafka_tools.cli.cluster import topics
    from kafka_tools.cluster.view import Filter

    flags = {p.flag_value for p in topics.params if p.name == "filters"}
    assert flags == {f.value for f in Filter}


def test_truncate_index_interval_default_is_the_planners():
    from kafka_tools.cli.truncate import INDEX_INTERVAL_BYTES
    from kafka_tools.log.checks.recovery import DEFAULT_INDEX_INTERVAL

    assert INDEX_INTERVAL_BYTES == DEFAULT_INDEX_INTERVAL
