"""`dump-log --jobs N`'s scheduling: each file is rendered by exactly one process, the output stays in
file order, the parent does not sit idle while a worker is still at the next file to print, and a
worker that dies, is stopped or hangs costs time, never the dump."""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from kafka_tools.cli import dump_parallel
from kafka_tools.cli.dump_parallel import Claims, Rendered, _dump_in_order
from kafka_tools.log.workers import children


class _Stdout(io.TextIOWrapper):
    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8")

    def text(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode()


class _SlowWorker:
    """A pool of one worker that has taken file 1 and is still at it until someone asks for it."""

    def __init__(self, claims: Claims, spool_file) -> None:
        self.taken = claims.take(1)
        self.spool_file = spool_file
        self.asked = False

    def ready(self, _pid: int, index: int) -> bool:
        return self.asked  # not before the parent has run out of files to spool

    def result(self, _pid: int, index: int, _path, _err, _output) -> Rendered | None:
        self.asked = True
        return self.spool_file(index, "worker") if self.taken and index == 1 else None


def test_the_parent_spools_files_nobody_took_while_a_worker_is_at_the_next(
    tmp_path: Path, monkeypatch
) -> None:
    files = [f"f{i}" for i in range(5)]
    claims = Claims(str(tmp_path), len(files))
    claims.take(0)

    def spool_file(index: int, who: str) -> Rendered:
        out, err = tmp_path / f"{index}.out", tmp_path / f"{index}.err"
        out.write_text(f"{files[index]} by {who}\n")
        err.write_bytes(b"")
        return Rendered(str(out), str(err), 0, None)

    spooled_here: list[int] = []

    def spool(index: int, path: str) -> Rendered | None:
        if not claims.take(index):
            return None
        spooled_here.append(index)
        return spool_file(index, "parent")

    stdout = _Stdout()
    monkeypatch.setattr(dump_parallel.sys, "stdout", stdout)

    def render_here(path: str) -> int:
        stdout.write(f"{path} here\n")
        return 0

    gone = bytearray(1)
    code = _dump_in_order(
        files, claims, _SlowWorker(claims, spool_file), spool, gone, None, render_here, None, None
    )
    assert code == 0
    # File 0 straight to stdout; file 1 is the worker's, still running: the parent spooled 2, 3 and 4
    # meanwhile instead of waiting, and everything came out in order.
    assert spooled_here == [2, 3, 4]
    assert stdout.text().splitlines() == [
        "f0 here",
        "f1 by worker",
        "f2 by parent",
        "f3 by parent",
        "f4 by parent",
    ]


# What a worker does at the victim file, and the end of the line the parent says about it
FATES = {
    "killed": (
        lambda: os.kill(os.getpid(), signal.SIGKILL),
        " was killed by SIGKILL while at it; dumping it here",
    ),
    "stopped": (lambda: os.kill(os.getpid(), signal.SIGSTOP), " was stopped while at it; dumping it here"),
    "hung": (lambda: time.sleep(3600), " made no progress for 1 s while at it; dumping it here"),
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
    parent = os.getpid()
    render_into = dump_parallel._render_into
    act, said = FATES[fate]

    def fails_at_the_victim(setup, gone, path, out, err):
        if os.getpid() != parent and path == victim:
            act()
        return render_into(setup, gone, path, out, err)

    for args in (["--deep-iteration"], ["--json", "--print-data-log"]):
        one = run_ktool("dump-log", *args, "--jobs", "1", *files)
        monkeypatch.setattr(dump_parallel, "_render_into", fails_at_the_victim)
        done: list = []
        jobs3 = ["dump-log", *args, "--jobs", "3", *files]
        worker = threading.Thread(
            target=lambda run=jobs3, into=done: into.append(run_ktool(*run)), daemon=True
        )
        worker.start()
        worker.join(60)
        monkeypatch.setattr(dump_parallel, "_render_into", render_into)
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
