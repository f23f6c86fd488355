"""Where ktool keeps its state (kafka_tools/keep/state.py): the XDG state directory, never the working one."""

from __future__ import annotations

from pathlib import Path

from kafka_tools.keep.state import backups_dir, journals_dir, state_dir


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


def test_a_file_where_a_directory_goes_is_one_line(tmp_path) -> None:
    """--journal-dir, --backup-dir, man --output-dir naming a file: the environment's, exit 3, one line."""
    import pytest

    from kafka_tools.errors import InputError
    from kafka_tools.keep.state import make_state_dir

    (tmp_path / "f").write_text("")
    with pytest.raises(InputError) as raised:
        make_state_dir(tmp_path / "f", "journal directory")
    assert str(raised.value) == f"{tmp_path / 'f'}: cannot be the journal directory: a file, not a directory"
    assert raised.value.exit_code == 3
    assert make_state_dir(tmp_path / "a" / "b", "journal directory").is_dir()


def test_retention_given_a_directory_for_server_properties_is_one_line_exit_3(tmp_path) -> None:
    from tests.independent import FIXTURES
    from tests.support.cli import run_ktool

    result = run_ktool("retention", "--server-properties", str(tmp_path), str(FIXTURES / "generated" / "v2"))
    assert (
        result.exit_code == 3
        and result.stderr == f"ktool: {tmp_path}: cannot read server.properties: is a directory\n"
    )
