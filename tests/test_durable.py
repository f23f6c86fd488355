"""kafka_tools/keep/durable.py: a document is visible only whole, under a name of its own; the temporary
file a killed writer left is removed by the next write in the directory, never one a live writer holds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_tools.keep import durable

HOLD = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.read()
"""


def _left_temp(directory: Path, name: str) -> Path:
    """What a writer killed between its link and its rename leaves: the whole document, temporary name."""
    temp = directory / f".{name}.0123456789abcdef.ktool.tmp"
    temp.write_text('{"format": 1}\n')
    return temp


def test_a_temporary_file_is_removed_once_its_writer_is_gone_never_while_it_holds_it(tmp_path) -> None:
    temp = _left_temp(tmp_path, "groups-delete-1.json")
    mine = tmp_path / ".notes.0123456789abcdef.tmp"  # not a name durable.py makes: left alone
    mine.write_text("user's")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(temp)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout.readline() == b"held\n"
        path, swept = durable.create_json(tmp_path, "groups-delete-2", {"format": 1})
        assert swept == [] and temp.exists()  # a live writer's
    finally:
        holder.communicate(b"")
    path2, swept = durable.create_json(tmp_path, "groups-delete-2", {"format": 1})
    assert swept == [temp] and not temp.exists() and mine.exists()
    assert (path.name, path2.name) == ("groups-delete-2.json", "groups-delete-2-2.json")


@pytest.mark.parametrize("tmpfile", [True, False], ids=["O_TMPFILE", "named temporary file"])
def test_create_then_replace_leaves_the_documents_and_nothing_else(tmp_path, monkeypatch, tmpfile) -> None:
    if not tmpfile:  # NFS and other file systems without O_TMPFILE
        monkeypatch.setattr(durable, "_unnamed", lambda directory: None)
    path, _ = durable.create_json(tmp_path, "doc", {"format": 1, "state": "prepared"})
    assert json.loads(path.read_text())["state"] == "prepared" and path.stat().st_mode & 0o777 == 0o600
    assert durable.write_json(path, {"format": 1, "state": "finished"}) == []
    assert json.loads(path.read_text())["state"] == "finished"
    assert [p.name for p in tmp_path.iterdir()] == ["doc.json"]
