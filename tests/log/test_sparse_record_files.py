"""Record-batch files cost the bytes really in them too, not only the side files: a 1 GiB sparse `.log`
segment (a few batches, a hole, one byte not zero at its end; 8 KB on disk) once cost `validate` 10-14 s
of CPU, reading the whole hole twice (the zero-tail check, then the search for valid data after the
damage), and a sparse KRaft `*.checkpoint` 6 s; at 8 GiB under a 4 GiB address-space limit the map
failed and the command ended "cannot allocate memory", exit 3.

Work is measured as the bytes the process read (`/proc/self/io` rchar, with mapping off so that every
read is a syscall the kernel counts): a fact of the run, not a timing. Holes are jumped with
SEEK_DATA, never read."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from tests.log.test_sparse_side_files import BUDGET, MB, peak
from tests.metadata.kraft_log import write_log_dir as write_kraft_log_dir
from tests.support.logs import write_log_dir
from tests.support.script import script_env

GIB = 1 << 30
LATER = GIB // 2 + 1001  # within the 1 GiB after damage that validate searches for valid data
READ_BUDGET = 64 * MB  # the interpreter's own files and the data on disk; a read hole is 1 GiB

_COUNTED = """
import atexit, sys
out = sys.argv.pop(1)
atexit.register(lambda: open(out, "w").write(open("/proc/self/io").read()))
from kafka_tools.cli.main import main
sys.argv[0] = "ktool"
main()
"""


def read_bytes(tmp_path: Path, *args: str) -> tuple[int, int, str]:
    """Bytes read by `ktool ARGS` run with mapping off, its exit code and its output."""
    io = tmp_path / "io.txt"
    env = {**script_env(), "KTOOL_NO_MMAP": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _COUNTED, str(io), *args], capture_output=True, text=True, env=env, timeout=120
    )
    fields = dict(line.split(": ") for line in io.read_text().splitlines())
    return int(fields["rchar"]), proc.returncode, proc.stdout + proc.stderr


def _batch_starts(data: bytes) -> list[int]:
    starts, pos = [], 0
    while pos + 12 <= len(data):
        starts.append(pos)
        pos += 12 + struct.unpack_from(">i", data, pos + 8)[0]
    return starts


def _sparse_segment(root: Path, size: int, *, later: bool) -> Path:
    """A partition whose one segment keeps its first batch, then a hole to `size` with one byte not
    zero at the end; with `later`, the other batches are written again at LATER, inside the hole (the
    valid data after damage that truncation would lose)."""
    write_log_dir(root / "logs", partitions=1, segments=1, batches=4, records=2)
    part = root / "logs" / "gen-0"
    seg = part / f"{0:020d}.log"
    data = seg.read_bytes()
    cut = _batch_starts(data)[1]
    with open(seg, "r+b") as f:
        f.truncate(cut)
        if later:
            f.seek(LATER)
            f.write(data[cut:])
        f.truncate(size)
        f.seek(size - 1)
        f.write(b"\x01")
    for side in part.glob("*.*index"):
        side.unlink()
    return part


@pytest.mark.slow  # a ktool process per command on a huge sparse file: CI's offline lane, not the fast tier
@pytest.mark.parametrize("later", [False, True], ids=["hole-then-garbage", "valid-data-past-the-hole"])
@pytest.mark.parametrize("command", ["validate", "dump-log", "truncate --dry-run"])
def test_a_1_gib_sparse_segment_is_read_by_its_data(tmp_path: Path, command: str, later: bool) -> None:
    part = _sparse_segment(tmp_path, GIB, later=later)
    seg = str(part / f"{0:020d}.log")
    args = {"validate": [command, seg], "dump-log": [command, seg]}.get(
        command, ["truncate", "--dry-run", str(part)]
    )
    nbytes, code, text = read_bytes(tmp_path, *args)
    assert "Traceback" not in text and code in (0, 1), (code, text[-2000:])
    assert nbytes < READ_BUDGET, f"{command} read {nbytes // MB} MB of a file holding a few KB"
    if command == "validate":
        kind = "valid-data-after-damage" if later else "tail: truncate repairs"
        assert kind in text, text
    if later and command == "validate":
        assert f":{LATER}: valid-data-after-damage: 3 valid entries" in text, text


def test_an_8_gib_sparse_segment_is_read_without_a_map_that_does_not_fit(tmp_path: Path) -> None:
    """Under a 4 GiB address-space limit the 8 GiB file cannot be mapped: read with pread instead,
    the same answer, not 'cannot allocate memory'."""
    part = _sparse_segment(tmp_path, 8 * GIB, later=True)
    rss, code, err, out = peak("validate", str(part / f"{0:020d}.log"))
    assert (code, rss < BUDGET) == (1, True), (code, rss, err[-2000:])
    assert f":{LATER}: valid-data-after-damage: 3 valid entries" in out + err, out + err


@pytest.mark.slow  # a ktool process per command on a huge sparse file: CI's offline lane, not the fast tier
@pytest.mark.parametrize("command", ["validate", "dump-log", "metadata show"])
def test_a_1_gib_sparse_kraft_snapshot_is_read_by_its_data(tmp_path: Path, command: str) -> None:
    root = write_kraft_log_dir(tmp_path / "kraft", log_from=5, snapshot_at=5)
    snap = next((root / "__cluster_metadata-0").glob("*.checkpoint"))
    with open(snap, "r+b") as f:
        f.truncate(GIB)
        f.seek(GIB - 1)
        f.write(b"\x01")
    args = ["metadata", "show", str(root)] if command == "metadata show" else [command, str(snap)]
    nbytes, code, text = read_bytes(tmp_path, *args)
    assert "Traceback" not in text and code in (0, 1), (code, text[-2000:])
    assert nbytes < READ_BUDGET, f"{command} read {nbytes // MB} MB of a file holding a few KB"
    assert os.stat(snap).st_blocks * 512 < MB  # still sparse: nothing was written into the hole
