"""The same cause, said in the same words by every command: a segment that is missing, cannot be
opened (permission denied), is a loop of symbolic links or is a directory (errors.os_reason)."""

from __future__ import annotations

import builtins
import errno
import io
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from kafka_tools.cli.main import cli
from kafka_tools.errors import os_reason
from tests.support.json_runs import GENERATED

SEGMENT = "00000000000000000000.log"
CAUSES = {
    "missing": errno.ENOENT,
    "denied": errno.EACCES,
    "loop": errno.ELOOP,
    "directory": errno.EISDIR,
}


def _commands(part: Path, segment: Path) -> dict[str, list[str]]:
    return {
        "dump-log": ["dump-log", str(segment)],
        "validate": ["validate", str(part)],
        "read": ["read", "--earliest", str(part)],
        "truncate": ["truncate", "--dry-run", "--backup-dir", str(part.parent.parent / "bk"), str(part)],
        "offsets-at": ["offsets-at", "--time", "latest", str(part)],
        "retention": ["retention", "--now", "2026-01-01T00:00:00Z", str(part)],
    }


def _partition(tmp_path: Path, cause: str) -> tuple[Path, Path]:
    """A partition directory and the path the cause is about (the partition itself when missing)."""
    part = tmp_path / "logs" / "none-0"
    shutil.copytree(GENERATED / "v2/none-0", part)
    segment = part / SEGMENT
    if cause == "missing":
        shutil.rmtree(part)
        return part, part
    if cause == "loop":
        segment.unlink()
        segment.symlink_to(part / "other.log")
        (part / "other.log").symlink_to(segment)
    elif cause == "directory":
        segment.unlink()
        segment.mkdir()
    return part, segment


def _deny(monkeypatch, target: Path) -> None:
    """Opening `target` fails as it does for a user without read permission (the tests may run as root,
    whom no mode stops)."""
    real_open, real_os_open = builtins.open, os.open

    def refuse(path):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))

    def names_target(path) -> bool:  # truncate reads through its held directory: /proc/self/fd/N/NAME
        return os.path.realpath(os.fspath(path)) == str(target)

    def fake_open(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and names_target(file):
            refuse(file)
        return real_open(file, *args, **kwargs)

    def fake_os_open(path, *args, **kwargs):
        if names_target(path):
            refuse(path)
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", fake_open)
    monkeypatch.setattr(io, "open", fake_open)
    monkeypatch.setattr(os, "open", fake_os_open)


def _words(line: str, about: Path, part: Path) -> str:
    """What the line says of the cause, without the command's context around it."""
    prefix = f"ktool: {about}: "
    assert line.startswith(prefix), line
    said = line[len(prefix) :]
    said = said.removeprefix("cannot be read: ").removesuffix(f"; {part.name} left unchanged")
    return said.split(" (", 1)[0]  # a hint in brackets (what the command expected instead)


@pytest.mark.parametrize("cause", list(CAUSES))
def test_one_cause_is_said_in_the_same_words_by_every_command(
    cause: str, tmp_path: Path, monkeypatch
) -> None:
    said: dict[str, str] = {}
    for name in _commands(tmp_path, tmp_path):
        where = tmp_path / name
        part, about = _partition(where, cause)
        args = _commands(part, part / SEGMENT)[name]
        if name == "dump-log" and cause == "missing":
            about = part / SEGMENT
        with monkeypatch.context() as m:
            if cause == "denied":
                _deny(m, about)
            result = CliRunner().invoke(cli, args)
        assert result.exit_code == 3, (name, result.output)
        assert result.stderr.count("\n") == 1, (name, result.stderr)
        said[name] = _words(result.stderr.rstrip("\n"), about, part)
    expected = os_reason(OSError(CAUSES[cause], os.strerror(CAUSES[cause])))
    assert said == dict.fromkeys(said, expected)
