"""The collector is paused while ktool starts and frozen once the command runs (cli/start_up.py): the
command itself runs with collection on, and a CLI called in-process keeps its caller's collector."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_tools.cli.main import cli

V2 = Path(__file__).resolve().parents[2] / "fixtures" / "generated" / "v2"
SEGMENT = V2 / "none-0" / "00000000000000000000.log"

# What the `ktool` console script runs (pyproject's [project.scripts]), with the collector's state
# printed when the command's work begins and at exit.
_RUN_AS_THE_SCRIPT = """
import atexit, gc, sys
import kafka_tools.log.validate as service
work = service.validate_paths
def watched(*a, **k):
    print("WORK", gc.isenabled(), gc.get_freeze_count(), file=sys.stderr)
    return work(*a, **k)
service.validate_paths = watched
atexit.register(lambda: print("EXIT", gc.isenabled(), file=sys.stderr))
sys.argv = ["ktool", "validate", {segment!r}]
from kafka_tools.__main__ import main
main()
"""


def test_the_command_runs_with_collection_on_and_start_up_frozen() -> None:
    out = subprocess.run(
        [sys.executable, "-c", _RUN_AS_THE_SCRIPT.format(segment=str(SEGMENT))],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0 and out.stdout.startswith("clean: 1 segment")
    work = next(ln.split() for ln in out.stderr.splitlines() if ln.startswith("WORK "))
    assert work[1] == "True"  # the command's own garbage is collected as usual
    assert int(work[2]) > 10_000  # Click and the command's modules: out of every later collection
    assert "EXIT True" in out.stderr


def test_a_cli_called_in_process_leaves_the_callers_collector_alone() -> None:
    frozen = gc.get_freeze_count()
    try:
        cli.main(["validate", str(SEGMENT)], prog_name="ktool")
    except SystemExit as exc:
        assert exc.code in (0, None)
    assert gc.isenabled() and gc.get_freeze_count() == frozen


_VERSION_AS_THE_SCRIPT = """
import atexit, gc, sys
atexit.register(lambda: print("FROZEN", gc.get_freeze_count(), file=sys.stderr))
sys.argv = ["ktool", {arg!r}]
from kafka_tools.__main__ import main
main()
"""


@pytest.mark.parametrize("arg", ["--version", "--help", "--no-such-option"])
def test_an_exit_before_any_command_freezes_what_start_up_built(arg: str) -> None:
    """Click exits before a command runs: start-up's objects are frozen all the same, so the
    interpreter's last collection skips them (`ktool --version` 231 -> 214 M instructions)."""
    out = subprocess.run(
        [sys.executable, "-c", _VERSION_AS_THE_SCRIPT.format(arg=arg)], capture_output=True, text=True
    )
    assert out.returncode == (2 if arg.startswith("--no") else 0), out.stderr
    frozen = next(int(ln.split()[1]) for ln in out.stderr.splitlines() if ln.startswith("FROZEN "))
    assert frozen > 10_000
