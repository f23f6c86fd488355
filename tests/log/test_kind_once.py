"""A file's kind (format/kinds.kind_of, from its name) is decided once on validate's path and carried:
by the listing for a partition's segments, by `discover` for a file named alone."""

from __future__ import annotations

import cProfile
import shutil
from pathlib import Path

from kafka_tools.format import kinds
from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.validate import validate_paths
from tests.independent import FIXTURES


def _kind_of_calls(paths: list[Path]) -> tuple[int, int]:
    """(kind_of's calls, the entries validated) of validate_paths on `paths`."""
    profile = cProfile.Profile()
    result = profile.runcall(validate_paths, paths, ValidateOptions())
    profile.create_stats()
    code = kinds.kind_of.__code__
    calls = sum(
        stats[1]
        for (file, line, name), stats in profile.stats.items()
        if name == code.co_name and file == code.co_filename
    )
    return calls, result.summary().entries


def test_a_partitions_segments_carry_their_kind_from_the_listing(tmp_path: Path) -> None:
    part = shutil.copytree(FIXTURES / "generated/v2/segmented-0", tmp_path / "segmented-0")
    logs = sorted(part.glob("*.log"))
    assert len(logs) >= 3
    calls, entries = _kind_of_calls([part])
    assert entries > 0
    # none per segment (the listing names them .log); the producer snapshots' dump checks ask theirs
    snapshots = len(list(part.glob("*.snapshot")))
    assert calls <= snapshots, f"kind_of called {calls} times for {len(logs)} segments"


def test_a_segment_named_alone_is_kind_decided_once() -> None:
    log = FIXTURES / "generated/v2/segmented-0/00000000000000000000.log"
    calls, entries = _kind_of_calls([log])
    assert entries > 0
    assert calls == 1
