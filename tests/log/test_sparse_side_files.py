"""Side files far larger than their entries: a broker preallocates `.index`/`.timeindex` with
`setLength` (a sparse file of `segment.index.bytes`, zeros after the entries), and a damaged or hostile
dir can hold any length. Beside a one-record segment, 8 GiB sparse `.index`/`.timeindex` and a 4 GiB
`.txnindex` cost what their entries cost: every command answers as it does with the broker's default
10 MiB, within a flat memory budget (the peak RSS of the child process), well inside its timeout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_tools.format import index
from tests.support.logs import T0, write_log_dir
from tests.support.script import ktool_script, script_env

MB = 1 << 20
GB = 1 << 30
BUDGET = 300 * MB
TIMEOUT = 120  # seconds: a safety net, not a speed assertion (each command takes well under one)
AS_LIMIT = 4 * GB  # address space of the child: reading a file whole fails at once, never swaps the host
WIDTHS = {"index": 8, "timeindex": 12, "txnindex": 34}
HUGE = {"index": 8 * GB, "timeindex": 8 * GB, "txnindex": 4 * GB}
DEFAULT = 10 * MB  # the broker's segment.index.bytes

_PEAK = """
import resource, subprocess, sys
limit = int(sys.argv[1])
def cap():
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
try:
    p = subprocess.run(sys.argv[3:], capture_output=True, text=True, preexec_fn=cap, timeout=int(sys.argv[2]))
except subprocess.TimeoutExpired:
    p = subprocess.CompletedProcess(sys.argv[3:], -1, "", "timed out")
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux: KiB
sys.stdout.write(f"{rss}\\n{p.returncode}\\n{p.stderr}\\0{p.stdout}")
"""


def peak(*args: str) -> tuple[int, int, str, str]:
    """Peak RSS in bytes, exit code, stderr and stdout of `ktool ARGS` in its own child process."""
    limit, wait = str(AS_LIMIT), str(TIMEOUT)
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, limit, wait, ktool_script(), *args],
        capture_output=True,
        text=True,
        env=script_env(),
        timeout=TIMEOUT + 30,
        check=True,
    ).stdout
    head, stdout = out.split("\0", 1)
    rss, code, stderr = head.split("\n", 2)
    return int(rss), int(code), stderr, stdout


def _sized(part: Path, sizes: dict[str, int]) -> None:
    """The segment's side files made zeros of these sizes, each rounded down to whole entries as the
    broker sizes its preallocation (sparse: no disk used)."""
    for ext, size in sizes.items():
        path = part / f"{0:020d}.{ext}"
        with open(path, "wb"):
            pass
        os.truncate(path, size - size % WIDTHS[ext])


@pytest.fixture
def partition(tmp_path: Path) -> Path:
    write_log_dir(tmp_path / "logs", partitions=1, segments=1, batches=1, records=1)
    return tmp_path / "logs" / "gen-0"


def _commands(part: Path) -> dict[str, list[str]]:
    first = str(part / f"{0:020d}")
    return {
        "validate": ["validate", str(part.parent)],
        "retention": ["retention", "--now", str(T0 + 3_600_000), str(part)],
        "truncate": ["truncate", "--dry-run", str(part)],
        "read": ["read", "--timestamp", str(T0), str(part)],
        "offsets-at": ["offsets-at", "--time", str(T0), str(part.parent)],
        "dump-log-index": ["dump-log", first + ".index"],
        "dump-log-timeindex": ["dump-log", first + ".timeindex"],
        "dump-log-txnindex": ["dump-log", first + ".txnindex"],
    }


@pytest.mark.slow  # a ktool process per command on a huge sparse file: CI's offline lane, not the fast tier
@pytest.mark.parametrize("command", list(_commands(Path("x"))))
def test_huge_sparse_side_files_cost_what_their_entries_cost(partition: Path, command: str) -> None:
    args = _commands(partition)[command]
    _sized(partition, HUGE)
    rss, code, err, out = peak(*args)
    assert rss < BUDGET, f"{command} peaked at {rss // MB} MB"
    _sized(partition, dict.fromkeys(HUGE, DEFAULT))
    _, small_code, small_err, small_out = peak(*args)
    assert (code, out, err) == (small_code, small_out, small_err)
    assert code == 0, err


def test_the_entries_end_at_the_last_one_not_all_zeros(tmp_path: Path) -> None:
    """Entries at the start, a zero run, one entry written far beyond it (not a preallocated tail:
    validate reports it), then 8 GiB of holes: found without reading the holes, and the zero run
    between counted, not listed."""
    path = tmp_path / f"{0:020d}.index"
    with open(path, "wb") as f:
        f.write(index.OFFSET_INDEX_ENTRY.pack(0, 0) + index.OFFSET_INDEX_ENTRY.pack(3, 4096))
        f.seek(MB)
        f.write(index.OFFSET_INDEX_ENTRY.pack(9, 8192))
    os.truncate(path, 8 * GB)
    entries, tail = index.read_offset_index(path, 100)
    assert [(e.slot, e.offset, e.position) for e in entries] == [
        (0, 100, 0),
        (1, 103, 4096),
        (MB // 8, 109, 8192),
    ]
    assert (tail.entries, tail.zero_entries, tail.trailing_bytes) == (MB // 8 + 1, GB - MB // 8 - 1, 0)
    assert (tail.gap.entries, tail.gap.first_slot) == (MB // 8 - 2, 2)
    assert index.last_entry(path, index.OFFSET_INDEX_ENTRY) == (9, 8192)


def test_an_all_zero_txnindex_has_no_aborted_transaction(tmp_path: Path) -> None:
    path = tmp_path / f"{0:020d}.txnindex"
    entry = index.TXN_INDEX_ENTRY.pack(0, 7, 10, 12, 10)
    path.write_bytes(entry)
    os.truncate(path, 34 * (GB // 34))
    entries, tail = index.read_txn_index(path)
    assert [(e.producer_id, e.first_offset, e.last_offset) for e in entries] == [(7, 10, 12)]
    assert tail.zero_entries == GB // 34 - 1
