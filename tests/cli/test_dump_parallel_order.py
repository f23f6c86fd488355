"""`dump-log --jobs N`'s scheduling: each file is rendered by exactly one process, the output stays in
file order, the parent renders every file no worker has and waits only for the workers' ones, and a
worker that dies, is stopped or hangs costs time, never the dump."""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

import pytest

from kafka_tools.cli import dump_parallel
from kafka_tools.cli.dump_parallel import Rendered, Setup, _InOrder
from kafka_tools.log.reads.dump_events import DumpOptions
from kafka_tools.log.workers import children, pool
from tests.support import pool_calls


class _Stdout(io.TextIOWrapper):
    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8")

    def text(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode()


class _SlowPool:
    """A pool of one worker that is handed the last file and is still at it until everything else
    is done: it answers once the parent asks for a file it has not got."""

    def __init__(self, spool_file) -> None:
        self.spool_file = spool_file
        self.handed: list[int] = []
        self.busy_with: int | None = None
        self.waits = 0

    def idle(self) -> list[object]:
        return [] if self.handed else [object()]

    def send(self, worker, key, work, args, output=None) -> bool:
        self.handed.append(key)
        self.busy_with = key
        return True

    def wait(self, timeout: float = 0.0) -> list[pool.Answer]:
        self.waits += 1
        if timeout == 0 or self.busy_with is None:
            return []  # still at it, as long as the parent has files of its own to spool
        key, self.busy_with = self.busy_with, None
        return [pool.Answer(key, True, self.spool_file(key, "worker"))]


def test_the_parent_renders_every_file_no_worker_has_and_waits_only_at_the_workers(
    tmp_path: Path, monkeypatch
) -> None:
    files = [f"f{i}" for i in range(5)]

    def spool_file(index: int, who: str) -> Rendered:
        out, err = tmp_path / f"{index}.out", tmp_path / f"{index}.err"
        out.write_text(f"{files[index]} by {who}\n")
        err.write_bytes(b"")
        return Rendered(str(out), str(err), 0, None)

    stdout = _Stdout()
    monkeypatch.setattr(dump_parallel.sys, "stdout", stdout)

    def render_here(path: str) -> int:
        stdout.write(f"{path} here\n")
        return 0

    setup = Setup(DumpOptions(), False, "utf8", "utf8", "utf-8", "strict", str(tmp_path))
    (tmp_path / "gone").write_bytes(b"\0")
    slow = _SlowPool(spool_file)
    code = _InOrder(files, setup, slow, None, render_here, None, None).dump()  # type: ignore[arg-type]
    assert code == 0
    # File 0 straight to stdout; the worker has the last file (4) from the start; the parent printed
    # 1, 2 and 3 straight to stdout as it came to them (no spool), and waited only for 4: the files
    # are handed from the back, so everything after a worker's file is a worker's too.
    assert slow.handed == [4]
    assert stdout.text().splitlines() == ["f0 here", "f1 here", "f2 here", "f3 here", "f4 by worker"]


# What a worker does at the victim file, and the end of the line the parent says about it
FATES = {
    "killed": " was killed by SIGKILL while at it; dumping it here",
    "stopped": " was stopped while at it; dumping it here",
    "hung": " made no progress for 1 s while at it; dumping it here",
}


@pytest.mark.parametrize("fate", list(FATES))
def test_a_worker_killed_stopped_or_hung_at_a_file_does_not_hang_the_dump(
    tmp_path: Path, monkeypatch, fate: str
) -> None:
    """A worker that dies (a signal, the OOM killer), is stopped (SIGSTOP, a debugger) or hangs never
    answers: multiprocessing's pool replaced a dead worker, not its file, and waited for ever. The
    parent names the file and what became of its worker, dumps it itself, and the output is `--jobs
    1`'s; no worker is left."""
    from tests.cli.test_pipes import v2_segment
    from tests.independent import FIXTURES
    from tests.support.cli import run_ktool

    monkeypatch.setattr(children, "STALL", 1.0)  # a hang is seen after 1 s without progress
    big = tmp_path / "orders-0" / "00000000000000000000.log"  # keeps the parent busy at file 0
    big.parent.mkdir()
    big.write_bytes(v2_segment(3000))
    small = sorted(str(p) for p in (FIXTURES / "generated" / "v2").rglob("*.log"))
    # The worker takes the last file first and answers it, then meets the victim: the answer it gave
    # before it failed is still printed in its place.
    victim = small[-2]
    files = [str(big), *small]
    said = FATES[fate]
    pool_calls.spawned(monkeypatch)
    pool_calls.started_at_once(monkeypatch)
    monkeypatch.setenv("KTOOL_TEST_VICTIM", victim)
    monkeypatch.setenv("KTOOL_TEST_FATE", fate)
    real = dump_parallel.render_spooled

    for args in (["--deep-iteration"], ["--json", "--print-data-log"]):
        one = run_ktool("dump-log", *args, "--jobs", "1", *files)
        monkeypatch.setattr(dump_parallel, "render_spooled", pool_calls.render_spooled_with_fate)
        done: list = []
        jobs3 = ["dump-log", *args, "--jobs", "3", *files]
        worker = threading.Thread(
            target=lambda run=jobs3, into=done: into.append(run_ktool(*run)), daemon=True
        )
        worker.start()
        worker.join(60)
        monkeypatch.setattr(dump_parallel, "render_spooled", real)
        assert done, f"dump-log --jobs 3 hung on its {fate} worker"
        [many] = done
        assert many.exit_code == one.exit_code == 0
        assert many.stdout == one.stdout
        lines = many.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ktool: {victim}: a dump-log worker (pid "), lines
        assert lines[0].endswith(said), lines
        pid = int(lines[0].split("(pid ")[1].split(")")[0])
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # killed and reaped
