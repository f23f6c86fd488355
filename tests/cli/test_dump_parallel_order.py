"""`dump-log --jobs N`'s scheduling: each file is rendered by exactly one process, the output stays in
file order, and the parent does not sit idle while a worker is still at the next file to print."""

from __future__ import annotations

import io
import multiprocessing
from pathlib import Path

from kafka_tools.cli import dump_parallel
from kafka_tools.cli.dump_parallel import Claims, Rendered, _dump_in_order


class _Stdout(io.TextIOWrapper):
    def __init__(self) -> None:
        super().__init__(io.BytesIO(), encoding="utf-8")

    def text(self) -> str:
        self.flush()
        return self.buffer.getvalue().decode()


class _SlowWorker:
    """A pool of one worker that has taken file 1 and is still at it until someone asks for it."""

    def __init__(self, claims: Claims, spool_file) -> None:
        self.claims = claims
        self.spool_file = spool_file

    def apply_async(self, _fn, args):
        index, _path = args
        pool = self

        class Result:
            def __init__(self) -> None:
                self.taken = index == 1 and pool.claims.take(1)
                self.asked = False

            def ready(self) -> bool:
                return self.asked  # not before the parent has run out of files to spool

            def wait(self, _timeout: float) -> None:
                self.asked = True

            def get(self) -> Rendered | None:
                return pool.spool_file(index, "worker") if self.taken else None

        return Result()


def test_the_parent_spools_files_nobody_took_while_a_worker_is_at_the_next(
    tmp_path: Path, monkeypatch
) -> None:
    files = [f"f{i}" for i in range(5)]
    claims = Claims(multiprocessing.get_context("fork"), len(files))

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

    gone = multiprocessing.get_context("fork").RawValue("b", 0)
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


def test_a_worker_killed_at_a_file_does_not_hang_the_dump_and_the_file_is_dumped_anyway(
    tmp_path: Path, monkeypatch
) -> None:
    """A worker that dies (a signal, the OOM killer) never answers: the pool replaces the worker, not
    its file, and waited for ever. The parent names the file (and the signal, when it sees it before
    the pool reaps the worker), dumps it itself, and the output is `--jobs 1`'s."""
    import os
    import signal
    import threading

    from tests.cli.test_pipes import v2_segment
    from tests.independent import FIXTURES
    from tests.support.cli import run_ktool

    big = tmp_path / "orders-0" / "00000000000000000000.log"  # keeps the parent busy at file 0
    big.parent.mkdir()
    big.write_bytes(v2_segment(3000))
    small = sorted(str(p) for p in (FIXTURES / "generated" / "v2").rglob("*.log"))
    victim = small[-1]
    files = [str(big), *small[:-1], victim]
    parent = os.getpid()
    render_into = dump_parallel._render_into

    def dies_at_the_victim(setup, gone, path, out, err):
        if os.getpid() != parent and path == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        return render_into(setup, gone, path, out, err)

    for args in (["--deep-iteration"], ["--json", "--print-data-log"]):
        one = run_ktool("dump-log", *args, "--jobs", "1", *files)
        monkeypatch.setattr(dump_parallel, "_render_into", dies_at_the_victim)
        done: list = []
        jobs3 = ["dump-log", *args, "--jobs", "3", *files]
        worker = threading.Thread(
            target=lambda run=jobs3, into=done: into.append(run_ktool(*run)), daemon=True
        )
        worker.start()
        worker.join(60)
        monkeypatch.setattr(dump_parallel, "_render_into", render_into)
        assert done, "dump-log --jobs 3 hung on its killed worker"
        [many] = done
        assert many.exit_code == one.exit_code == 0
        assert many.stdout == one.stdout
        lines = many.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"ktool: {victim}: a dump-log worker (pid "), lines
        assert lines[0].endswith(" was killed by SIGKILL while at it; dumping it here") or lines[0].endswith(
            " ended while at it; dumping it here"
        )
