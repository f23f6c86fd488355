"""Where ktool keeps what it writes to be read later: journals, truncate backups, completion's cache.

Under the XDG state directory, ``$XDG_STATE_HOME/ktool`` (``~/.local/state/ktool`` when unset), as
operators expect of a tool's state, and never in the working directory: a command run from a checkout or
from /var/lib/kafka must not leave a folder there. Each command has one option to put it elsewhere.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kafka_tools.errors import InputError, os_reason

# How --help names the defaults (the text is the same whatever the environment of the man pages' build).
STATE_HOME_HELP = "$XDG_STATE_HOME/ktool, ~/.local/state/ktool when unset"


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_STATE_HOME/ktool``; the spec's default ``~/.local/state`` when it is unset, empty or
    relative (the XDG Base Directory spec says a relative value is to be ignored)."""
    env = os.environ if env is None else env
    base = env.get("XDG_STATE_HOME", "")
    if not os.path.isabs(base):
        base = str(Path(env.get("HOME") or Path.home()) / ".local" / "state")
    return Path(base) / "ktool"


def journals_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where `ktool migrate-offsets` and `ktool offsets import` write their journals by default."""
    return state_dir(env) / "journals"


def locks_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where a run that moves a group's offsets holds that group's lock (whatever its --journal-dir)."""
    return state_dir(env) / "locks"


def completion_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where TAB completion keeps the group and topic names it found, a few seconds each."""
    return state_dir(env) / "completion"


def backups_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where `ktool truncate` keeps removed bytes and its manifests by default."""
    return state_dir(env) / "backups"


def make_state_dir(directory: Path, what: str) -> Path:
    """`directory` (ktool's state, or any directory a command writes into), created with its parents
    when missing; one line (exit 3) when it cannot be: a file in the way, /proc, no permission."""
    if directory.exists() and not directory.is_dir():
        raise InputError(f"{directory}: cannot be the {what}: a file, not a directory")
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # a file in the way, /proc, no permission
        raise InputError(f"{directory}: cannot create the {what}: {os_reason(exc)}") from None
    if not directory.is_dir():
        raise InputError(f"{directory}: cannot create the {what}: not a directory")
    return directory
