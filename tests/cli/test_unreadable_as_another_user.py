"""An unreadable path named to a command, as a user other than root (issue 50: `ktool read` of an unreadable
file was exit 2 with the usage text; proven then as root, whom nothing is unreadable to). click's own
readable check answered every path argument and file option so, for every command; now the command's
reader says it: one line naming the path and the reason, exit 3, as the exit-code matrix says."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.as_user import run_ktool_as
from tests.support.json_runs import GENERATED

SEGMENT = "00000000000000000000.log"
COMMANDS = {
    "read": ["read", "--earliest", "{d}/none-0"],
    "validate DIR": ["validate", "{d}/none-0"],
    "validate FILE": ["validate", "{d}/seg.log"],
    "dump-log": ["dump-log", "{d}/seg.log"],
    "offsets-at": ["offsets-at", "{d}/none-0"],
    "retention": ["retention", "{d}/none-0"],
    "truncate --dry-run": ["truncate", "--dry-run", "{d}/none-0"],
    "metadata show": ["metadata", "show", "{d}/none-0"],
    "groups list --broker-auth-file": [
        "groups", "list", "--bootstrap-server", "127.0.0.1:1", "--broker-auth-file", "{d}/auth",
    ],
    "brokers --zk-auth-file": ["brokers", "--zookeeper", "127.0.0.1:1", "--zk-auth-file", "{d}/auth"],
}  # fmt: skip


@pytest.fixture(scope="module")
def places() -> Iterator[tuple[Path, Path]]:
    """(private, readable): the same partition dir, segment and auth file; root's alone (0700, 0600) in
    the first, readable in the second (where the command warms its imports as root)."""
    root = Path(tempfile.mkdtemp(prefix="ktool-unreadable-"))
    root.chmod(0o755)
    out = []
    for name, dir_mode, file_mode in (("private", 0o700, 0o600), ("open", 0o755, 0o644)):
        d = root / name
        shutil.copytree(GENERATED / "v2" / "none-0", d / "none-0")
        shutil.copy(GENERATED / "v2" / "none-0" / SEGMENT, d / "seg.log")
        (d / "auth").write_text("plain alice:secret\n")
        d.chmod(0o755)
        (d / "none-0").chmod(dir_mode)
        (d / "seg.log").chmod(file_mode)
        (d / "auth").chmod(file_mode)
        out.append(d)
    yield out[0], out[1]
    shutil.rmtree(root)


@pytest.mark.parametrize("name", list(COMMANDS))
def test_an_unreadable_path_is_one_line_and_exit_3_not_a_usage_error(places, name) -> None:
    private, readable = places
    args = COMMANDS[name]
    run = run_ktool_as(
        "nobody", [a.format(d=private) for a in args], warm=[a.format(d=readable) for a in args]
    )
    assert run.exit_code == 3, run
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("ktool: "), run.stderr
    assert "permission denied" in run.stderr and str(private) in run.stderr, run.stderr
    assert "Usage" not in run.stderr and "Traceback" not in run.stderr
    assert os.geteuid() == 0  # the test ran as root; the command as another user
