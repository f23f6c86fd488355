"""Segments with valid frames and CRCs around contents that once reached undefined behaviour or an
uncaught error in the C decoder (a header count whose double wraps, offset and timestamp sums past
int64, a v1 shift of 2^63): every command that reads them says so in one line and exits 1, with the
C extension and without it, in the same words."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kafka_tools.format import record_reader as rr
from tests.support import hostile
from tests.support.script import ktool_script, script_env

WANTED = {
    "header-count-overflow": (61, "record 0: header count 8460809781839223477 is impossible"),
    "offset-overflow": (61, "record 0: offset delta 1 takes the offset past int64"),
    "timestamp-overflow": (61, "record 0: timestamp delta -1 takes the timestamp past int64"),
    "v1-shift-overflow": (
        34,
        "inner message 0: relative offset 0 moved by 9223372036854775808 is past int64",
    ),
}
COMMANDS = {
    "dump-log": ["dump-log", "--deep-iteration", "--print-data-log"],
    "dump-log-json": ["dump-log", "--deep-iteration", "--print-data-log", "--json"],
    "read": ["read", "--earliest"],
}
MODES = ["c", "python"] if rr.HAS_SPEEDUPS else ["python"]


def _run(args: list[str], pure: bool) -> subprocess.CompletedProcess:
    env = script_env(KTOOL_PURE_PYTHON="1") if pure else script_env()
    return subprocess.run([ktool_script(), *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.slow  # the console script in a fresh interpreter per case
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", sorted(WANTED))
def test_hostile_segment_is_one_finding(case: str, command: str, mode: str, tmp_path: Path) -> None:
    path = hostile.write(tmp_path, case)
    target = path.parent if command == "read" else path
    result = _run([*COMMANDS[command], str(target)], pure=mode == "python")
    position, message = WANTED[case]
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "Error" not in result.stderr.replace("Decode", "")
    said = result.stdout if command == "dump-log-json" else result.stderr
    lines = [line for line in said.splitlines() if message in line]
    assert len(lines) == 1, said
    assert f"position {position}" in lines[0] or f'"position":{position}' in lines[0]


@pytest.mark.skipif(not rr.HAS_SPEEDUPS, reason="C extension not built")
@pytest.mark.parametrize("case", sorted(WANTED))
def test_hostile_segment_dumps_the_same_in_c_and_python(case: str, tmp_path: Path) -> None:
    path = hostile.write(tmp_path, case)
    for args in COMMANDS.values():
        target = path.parent if args[0] == "read" else path
        fast, pure = _run([*args, str(target)], False), _run([*args, str(target)], True)
        assert (fast.returncode, fast.stdout, fast.stderr) == (pure.returncode, pure.stdout, pure.stderr)
