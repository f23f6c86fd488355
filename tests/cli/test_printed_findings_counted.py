"""A finding that is printed is counted (issue 40): every command that reads files, run on every damaged
fixture (fixtures/generated/corrupt/*, tests/support/hostile.py) with and without --json. What it says
on stderr must be in its --json stream (an object whose message, reason or error the line carries), the
two runs must exit alike, and a stream holding an error (a finding, a problem, an error note, an
unreadable or refused partition, an offset not answered) or counting one must not exit 0."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.independent import FIXTURES
from tests.support import hostile
from tests.support.cli import run_ktool
from tests.support.json_runs import KAFKA09, Place

CORRUPT = FIXTURES / "generated" / "corrupt"

# Where a stream says something went wrong, and the counts a summary keeps of it.
_SAID = ("message", "reason", "error")
_COUNTS = ("errors", "unreadable", "refused", "failed")
_BAD_STATUS = ("diverged", "CORRUPT", "tail", "unreadable")  # validate/scan partitions, replicas diff


def _damaged(root: Path) -> list[Path]:
    """Every damaged partition: the corrupt fixtures and the hostile segments (valid CRCs, bad insides)."""
    logs = root / "damaged"
    if not logs.exists():
        shutil.copytree(CORRUPT, logs, ignore=shutil.ignore_patterns("manifest.json"))
        for name in hostile.CASES:
            hostile.write(logs, name)
    return sorted(p for p in logs.iterdir() if p.is_dir())


def _kraft_damaged(p: Place, how: str) -> Path:
    """A KRaft log dir whose metadata log has a garbage tail or a flipped byte in its last batch."""
    logs = p.kraft()
    (log,) = sorted((logs / "__cluster_metadata-0").glob("*.log"))
    data = bytearray(log.read_bytes())
    if how == "garbage-tail":
        data += b"\x07" * 40
    else:
        data[-20] ^= 0xFF  # inside the last batch, which replay after the snapshot reads
    log.write_bytes(bytes(data))
    return logs


# (command, its arguments before and after where --json goes) for one damaged partition.
Build = Callable[[Place, Path], tuple[list[str], list[str]]]
PARTITION_RUNS: dict[str, Build] = {
    "dump-log": lambda p, d: (["dump-log"], ["--deep", *map(str, sorted(d.iterdir()))]),
    "validate": lambda p, d: (["validate"], ["--deep", str(d)]),
    "read": lambda p, d: (["read"], ["--earliest", str(d)]),
    "offsets-at": lambda p, d: (["offsets-at"], [str(d)]),
    "retention": lambda p, d: (["retention"], [str(d)]),
    "truncate --dry-run": lambda p, d: (
        ["truncate"],
        ["--dry-run", "--backup-dir", str(p.tmp / "bk"), str(d)],
    ),
    "scan": lambda p, d: (["scan"], [str(d)]),
    "replicas diff": lambda p, d: (
        ["replicas", "diff"],
        [str(KAFKA09 / "gzip-0"), str(p.copy(d, f"replica-of-{d.name}/gzip-0"))],
    ),
}


def _said(objs: list[dict]) -> list[str]:
    return [o[k] for o in objs for k in _SAID if isinstance(o.get(k), str) and len(o[k]) >= 8]


def _errors_in(objs: list[dict]) -> list[str]:
    """What in a stream is an error: objects that name one, and a summary's counts of them."""
    found = []
    for o in objs:
        t = o.get("type")
        if t in ("problem", "error", "unreadable", "refused") or (
            t in ("finding", "note") and o.get("severity") == "error"
        ):
            found.append(f"{t} {o.get('kind') or o.get('message') or o.get('reason')}")
        if o.get("status") in _BAD_STATUS:
            found.append(f"{t} status {o['status']}")
        if t == "offset" and o.get("error"):
            found.append(f"offset not answered: {o['error']}")
        if t == "summary":
            found += [f"summary {k}={o[k]}" for k in _COUNTS if isinstance(o.get(k), int) and o[k] > 0]
    return found


def _check(name: str, before: list[str], after: list[str], tmp: Path) -> list[str]:
    """What breaks the rule in one command's two runs (empty: nothing)."""
    out_args = lambda tag: ["--out", str(tmp / f"scan-{tag}")] if before == ["scan"] else []  # noqa: E731
    text = run_ktool(*before, *out_args("text"), *after)
    js = run_ktool(*before, "--json", *out_args("json"), *after)
    where = f"{name} {' '.join(after[-1:])}"
    bad = []
    if text.exit_code != js.exit_code:
        bad.append(f"{where}: exit {text.exit_code} as text, {js.exit_code} with --json")
    try:
        objs = [json.loads(line) for line in js.stdout.splitlines()]
    except ValueError:
        return [*bad, f"{where}: --json printed a line that is not JSON"]
    said = _said(objs)
    for line in dict.fromkeys(text.stderr.splitlines() + js.stderr.splitlines()):
        if line.strip() and not any(s in line for s in said):
            bad.append(f"{where}: stderr said {line[:160]!r}; the --json stream does not")
    errors = _errors_in(objs)
    if errors and js.exit_code == 0:
        bad.append(f"{where}: exit 0 with {errors[:3]} in the stream")
    if js.exit_code in (1, 3) and not errors:
        bad.append(f"{where}: exit {js.exit_code}, and the --json stream names no error")
    return bad


@pytest.mark.parametrize("command", sorted(PARTITION_RUNS))
def test_what_a_command_prints_on_a_damaged_partition_is_in_its_json_and_its_exit_code(
    command, tmp_path_factory
) -> None:
    root = tmp_path_factory.mktemp("findings")
    place = Place(root)
    bad = []
    for part in _damaged(root):
        if command == "dump-log" and not any(part.iterdir()):
            continue  # no file to name
        before, after = PARTITION_RUNS[command](place, part)
        bad += _check(command, before, after, root / part.name)
    assert bad == []


@pytest.mark.parametrize("how", ["garbage-tail", "flipped-byte"])
@pytest.mark.parametrize("sub", ["show", "check"])
def test_what_metadata_prints_on_a_damaged_metadata_log_is_in_its_json_and_its_exit_code(
    sub, how, tmp_path
) -> None:
    logs = _kraft_damaged(Place(tmp_path), how)
    assert _check(f"metadata {sub}", ["metadata", sub], [str(logs)], tmp_path) == []


def test_several_partitions_at_once_are_counted_alike(tmp_path) -> None:
    """The damaged partitions named together: each command's stderr lines are still all in its stream."""
    gone = tmp_path / "gone-0"  # and a path that is not there
    parts = [*_damaged(tmp_path), gone]
    bad = []
    for before, after in (
        (["validate"], ["--deep", *map(str, parts)]),
        (["truncate"], ["--dry-run", "--backup-dir", str(tmp_path / "bk"), *map(str, parts)]),
        (["retention"], list(map(str, parts))),
        (["offsets-at"], [str(parts[0].parent), str(gone)]),
        (["dump-log"], ["--deep", *(str(f) for p in parts[:-1] for f in sorted(p.iterdir())), str(gone)]),
    ):
        bad += _check(before[0], before, after, tmp_path)
    assert bad == []
