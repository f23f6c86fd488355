"""A segment shortened while ktool reads it through a memory map: never SIGBUS (exit 135, or -7 seen
from Python), in C and in the pure-Python walk. ktool's own `truncate --force` is refused while a
validate holds the log dir's shared map lock (format/mapping.py); anyone else's cut (`os.truncate`, a
broker) ends the reader with one line naming the file and exit 3. The race is made to happen, not
waited for: the cut comes once the segment shows in the reader's /proc/PID/maps."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.logs import write_log_dir
from tests.support.script import ktool_script, script_env

pytestmark = pytest.mark.slow

BATCHES = 600_000  # one-record batches of 172 bytes: a 103 MB segment, seconds of `validate --deep -j 1`
DAMAGED = BATCHES - 10  # a batch near the end: cutting there loses valid ones, so truncate needs --force
MODES = {"c": {}, "pure": {"KTOOL_PURE_PYTHON": "1"}}


@pytest.fixture(scope="module")
def large_segment(tmp_path_factory) -> tuple[Path, bytes]:
    """(the segment, its bytes): one partition, one large segment, one batch's CRC broken near its end."""
    root = tmp_path_factory.mktemp("large") / "logs"
    write_log_dir(root, partitions=1, segments=1, batches=BATCHES, records=1, value_bytes=100)
    seg = root / "gen-0" / f"{0:020d}.log"
    data = bytearray(seg.read_bytes())
    width = len(data) // BATCHES
    data[DAMAGED * width + 100] ^= 0xFF
    return seg, bytes(data)


def _fresh(large_segment, tmp_path: Path) -> Path:
    """A copy of the damaged log dir for one test (a test cuts it)."""
    seg, data = large_segment
    part = tmp_path / "logs" / seg.parent.name
    part.mkdir(parents=True)
    (part / seg.name).write_bytes(data)
    return part / seg.name


def _tree(pid: int) -> list[int]:
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for child in f.read().split():
                    out += _tree(int(child))
    except OSError:
        pass
    return out


def _maps(pid: int, path: Path) -> bool:
    """`path` is mapped by `pid` or a process it started."""
    for p in _tree(pid):
        try:
            with open(f"/proc/{p}/maps") as f:
                if str(path) in f.read():
                    return True
        except OSError:
            pass
    return False


def _validate_while(seg: Path, mode: str, cut, jobs: int = 1) -> tuple[int, str, str]:
    """Run `validate --deep -j JOBS` on the segment's partition; once it maps the segment, `cut()`."""
    proc = subprocess.Popen(
        [ktool_script(), "validate", "--deep", "-j", str(jobs), str(seg.parent)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=script_env(MODES[mode]),
    )
    deadline = time.monotonic() + 120
    while proc.poll() is None and not _maps(proc.pid, seg):
        assert time.monotonic() < deadline, "validate never mapped the segment"
        time.sleep(0.002)
    assert proc.poll() is None, "validate ended before it mapped the segment"
    cut()
    out, err = proc.communicate(timeout=600)
    return proc.returncode, out, err


def _said_changed_under_us(code: int, out: str, err: str, seg: Path) -> bool:
    """The map's guard ended the command with its one line; or a read (pread, a range's own map) found
    the file shorter than the walk began with and said it of that file (exit 3)."""
    guarded = err == f"ktool: {seg}: changed under us (shortened while read)\n"
    read = (
        err == ""
        and f"ERROR {seg}: unreadable-file: cannot be read: changed under us (shortened while read)" in out
    )
    return code == 3 and (guarded or read)


@pytest.mark.parametrize("jobs", [1, 2])
@pytest.mark.parametrize("mode", MODES)
def test_a_segment_cut_by_another_process_is_one_line_not_sigbus(large_segment, tmp_path, mode, jobs) -> None:
    """With `-j 2` the segment is split into ranges walked by the pool's workers: a range that now
    starts past the file's end is no error of its own; the walker that touches a lost page says it."""
    seg = _fresh(large_segment, tmp_path)
    code, out, err = _validate_while(seg, mode, lambda: os.truncate(seg, 1000), jobs)
    assert code not in (-7, 135), "validate was killed by SIGBUS"
    # A map touched past the new end says so; a walk that read after the cut (a range's own pread or
    # map, opened later) reports the file as it now is: its lost tail, as the broker's recovery would.
    now_as_it_is = code == 1 and err == "" and "all in tails" in out.splitlines()[-1]
    assert _said_changed_under_us(code, out, err, seg) or now_as_it_is, (code, err, out[-300:])


@pytest.mark.parametrize("mode", MODES)
def test_ktool_truncate_does_not_cut_a_segment_validate_has_mapped(large_segment, tmp_path, mode) -> None:
    """Truncate is refused (exit 3, one line) while validate maps the log dir's files; validate then
    reports the damage as it is, the file whole."""
    seg = _fresh(large_segment, tmp_path)
    size = seg.stat().st_size
    truncated: list[subprocess.CompletedProcess] = []

    def cut() -> None:
        args = ["truncate", "--force", "--backup-dir", str(tmp_path / "backup"), str(seg.parent)]
        truncated.append(
            subprocess.run([ktool_script(), *args], capture_output=True, text=True, env=script_env())
        )

    code, out, err = _validate_while(seg, mode, cut)
    (t,) = truncated
    assert code not in (-7, 135), "validate was killed by SIGBUS"
    assert t.returncode == 3, t.stdout + t.stderr
    assert t.stderr.splitlines()[-1] == (
        f"ktool: {seg.parent.parent}: another ktool (validate, dump-log, read, scan) is reading it through "
        "memory maps; run again when it ends"
    )
    assert seg.stat().st_size == size
    assert code == 1, err
    assert "crc-mismatch" in out and f"{seg.parent.name} " in out
