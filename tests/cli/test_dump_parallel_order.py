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

            def ready(self) -> bool:
                return False

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
