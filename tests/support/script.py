"""Running the installed `ktool` console script in a subprocess, as a runbook would."""

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


def script_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
    env.update({k: v for k, v in HIDDEN_ENV.items() if v is not None})
    env.update(extra)
    return env


def run_script(*args: str, **kwargs) -> subprocess.CompletedProcess:
    """`ktool ARGS` through the console script: stdout, stderr (text) and the exit status."""
    kwargs.setdefault("timeout", 300)
    return subprocess.run([ktool_script(), *args], capture_output=True, text=True, env=script_env(), **kwargs)


def run_pipeline(command: str, **kwargs) -> subprocess.CompletedProcess:
    """A bash pipeline with `set -o pipefail`, `$KTOOL` naming the console script."""
    kwargs.setdefault("timeout", 300)
    env = script_env(KTOOL=ktool_script())
    return subprocess.run(
        ["bash", "-c", "set -o pipefail; " + command], capture_output=True, text=True, env=env, **kwargs
    )
