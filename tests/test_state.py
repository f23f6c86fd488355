"""Where ktool keeps its state (kafka_tools/state.py): the XDG state directory, never the working one."""

from __future__ import annotations

from pathlib import Path

from kafka_tools.state import backups_dir, journals_dir, state_dir


def test_xdg_state_home_is_used_when_absolute() -> None:
    env = {"XDG_STATE_HOME": "/srv/state", "HOME": "/home/op"}
    assert state_dir(env) == Path("/srv/state/ktool")
    assert journals_dir(env) == Path("/srv/state/ktool/journals")
    assert backups_dir(env) == Path("/srv/state/ktool/backups")


def test_unset_empty_or_relative_xdg_state_home_means_the_home_default() -> None:
    # The XDG Base Directory spec: a relative path is invalid and ignored (it would be the working dir).
    for value in (None, "", "state", "./state"):
        env = {"HOME": "/home/op"} | ({} if value is None else {"XDG_STATE_HOME": value})
        assert state_dir(env) == Path("/home/op/.local/state/ktool"), value
