"""Running the installed `ktool` console script in a subprocess, as a user or a runbook runs it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.support.cli import HIDDEN_ENV


def ktool_script() -> str:
    """The `ktool` that `pip install -e .` put beside this interpreter (a venv, or the user scheme)."""
    candidates = [Path(sys.executable).parent / "ktool"]
    candidates.append(Path(sysconfig.get_path("scripts")) / "ktool")
    try:
        candidates.append(Path(sysconfig.get_path("scripts", f"{os.name}_user")) / "ktool")
    except KeyError:
        pass
    for path in candidates:
        if path.is_file() and os.access(path, os.X_OK):
            return str(path)
    found = shutil.which("ktool")
    if found is None:
        pytest.fail("the ktool console script is not installed (pip install -e .)")
    return found


def script_env(env: dict[str, str] | None = None, **extra: str) -> dict[str, str]:
    """The caller's environment with its KTOOL_* settings and config file hidden, plus `env` and `extra`."""
    out = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
    out.update({k: v for k, v in HIDDEN_ENV.items() if v is not None})
    out.update(env or {})
    out.update(extra)
    return out


def run_script(
    *args: str, env: dict[str, str] | None = None, timeout: float = 300, **kwargs
) -> subprocess.CompletedProcess[str]:
    """`ktool ARGS` through the console script: stdout, stderr and the exit code a shell would see."""
    return subprocess.run(
        [ktool_script(), *args],
        env=script_env(env),
        capture_output=True,
        text=True,
        timeout=timeout,
        **kwargs,
    )


def run_pipeline(command: str, **kwargs) -> subprocess.CompletedProcess[str]:
    """A bash pipeline with `set -o pipefail`, `$KTOOL` naming the console script."""
    kwargs.setdefault("timeout", 300)
    env = script_env(KTOOL=ktool_script())
    return subprocess.run(
        ["bash", "-c", "set -o pipefail; " + command], capture_output=True, text=True, env=env, **kwargs
    )


# The worker pool's workers counted as each pool is made: proof that a test ran them
_COUNTING = (
    "import sys\n"
    "from kafka_tools.log.workers import pool\n"
    "made = pool.Pool.__init__\n"
    "def init(self, processes):\n"
    "    sys.stderr.write(f'[{processes} workers]\\n')\n"
    "    made(self, processes)\n"
    "pool.Pool.__init__ = init\n"
    "from kafka_tools.cli.main import main\n"
    "sys.argv[0] = 'ktool'\n"
    "main()\n"
)


def counted_run(*args: str) -> tuple[int, subprocess.CompletedProcess[str]]:
    """`ktool ARGS` (`python -c`, a real process) and how many pool workers it started (its stderr
    without the line saying so)."""
    done = subprocess.run(
        [sys.executable, "-c", _COUNTING, *args],
        capture_output=True,
        text=True,
        env=script_env(),
        timeout=300,
    )
    said, _, rest = done.stderr.partition("\n")
    if not (said.startswith("[") and said.endswith(" workers]")):
        return 0, done
    done.stderr = rest
    return int(said[1:].split()[0]), done
