"""Running the installed `ktool` console script in a subprocess, as a user or a runbook runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.cli import HIDDEN_ENV


def ktool_script() -> Path:
    """The `ktool` entry point installed beside this interpreter (`pip install -e .` puts it there)."""
    path = Path(sys.executable).parent / "ktool"
    if not path.is_file():
        raise RuntimeError(f"no ktool console script beside {sys.executable}: pip install -e . first")
    return path


def script_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment with its KTOOL_* settings and config file hidden, plus `env`."""
    out = {k: v for k, v in os.environ.items() if k not in HIDDEN_ENV}
    out.update({k: v for k, v in HIDDEN_ENV.items() if v is not None})
    out.update(env or {})
    return out


def run_script(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`ktool ARGS` through the console script: stdout, stderr and the exit code a shell would see."""
    return subprocess.run(
        [str(ktool_script()), *args], env=script_env(env), capture_output=True, text=True, timeout=timeout
    )
