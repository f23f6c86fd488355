"""How segments are read: memory-mapped only while no broker holds the log dir (a broker may truncate a
segment, and a mapped page past a file's end kills the reader); the same entries either way."""

from __future__ import annotations

import shutil
from pathlib import Path

from kafka_tools.format.problems import Problem
from kafka_tools.format.segment import iter_log_entries, safe_to_map
from tests.independent import FIXTURES
from tests.support.locks import lock_held_elsewhere


def test_mapping_is_off_while_a_broker_holds_the_log_dir(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    shutil.copytree(FIXTURES / "generated/v2/none-0", logs / "none-0")
    segment = logs / "none-0/00000000000000000000.log"
    assert safe_to_map(segment)  # no .lock at all: no broker
    (logs / ".lock").touch()
    assert safe_to_map(segment)  # a .lock nobody holds: a stopped broker
    with lock_held_elsewhere(logs / ".lock"):
        assert not safe_to_map(segment)
    assert safe_to_map(segment)


def test_mapped_and_pread_walks_agree(monkeypatch) -> None:
    paths = sorted((FIXTURES / "generated").glob("**/*.log"))
    assert len(paths) > 10  # every generated segment, not none
    for path in paths:
        mapped = [
            (e.position, getattr(e, "crc", None)) if not isinstance(e, Problem) else e.kind
            for e in iter_log_entries(path)
        ]
        monkeypatch.setenv("KTOOL_NO_MMAP", "1")
        read = [
            (e.position, getattr(e, "crc", None)) if not isinstance(e, Problem) else e.kind
            for e in iter_log_entries(path)
        ]
        monkeypatch.delenv("KTOOL_NO_MMAP")
        assert mapped == read, path
