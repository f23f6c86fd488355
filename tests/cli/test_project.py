"""Project hygiene a user would notice: stale man pages or completions, lint errors."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from kafka_tools.cli import docgen
from kafka_tools.cli.main import cli
from tests.independent import ROOT


def test_man_pages_and_completions_are_generated_from_the_current_commands() -> None:
    stale = docgen.stale_files(cli.load_all())
    assert not stale, f"regenerate with `python -m kafka_tools.cli.docgen`: {stale}"


def test_every_command_has_a_man_page() -> None:
    assert (ROOT / "man/ktool.1").is_file()
    assert (ROOT / "man/ktool-dump-log.1").is_file()
    assert "dump\\-log" in (ROOT / "man/ktool.1").read_text()


def test_ruff_is_clean() -> None:
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed")
    result = subprocess.run(
        [ruff, "check", "kafka_tools", "tests", "fixtures", "bench"], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout


def test_bash_completion_completes_subcommands() -> None:
    env = {"_KTOOL_COMPLETE": "bash_complete", "COMP_WORDS": "ktool dump", "COMP_CWORD": "1", "PATH": ""}
    result = subprocess.run([sys.executable, "-m", "kafka_tools"], env=env, capture_output=True, text=True)
    assert "dump-log" in result.stdout
