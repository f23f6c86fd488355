"""Forked workers never collect the garbage of the process that forked them (log/workers/fork_heap.py).

A child collecting its parent's garbage runs that garbage's destructors in the wrong process: a
confluent-kafka client left in a reference cycle (a test calling ktool in-process did, in CI) is torn
down by librdkafka without its threads, and the child dies of SIGSEGV. Each place ktool forks workers
is checked: dump-log's file workers, its batch helpers, and the forked walkers of validate and split.
Each child here collects garbage at once, as a busy worker soon would on its own; the parent's
garbage, a cycle with a finalizer that notes the pid it runs in, must be finalized in the parent."""

from __future__ import annotations

import gc
import os
import time
from pathlib import Path

from kafka_tools.cli import dump_parallel
from kafka_tools.log.workers import batch_lines, forked
from tests.independent import FIXTURES
from tests.log.test_dump_batch_lines import big_segment
from tests.support.cli import run_ktool


class _Garbage:
    """A reference cycle whose finalizer appends the pid it runs in to `log`."""

    def __init__(self, log: Path) -> None:
        self.log = log
        self.me = self

    def __del__(self) -> None:
        with open(self.log, "a") as f:
            f.write(f"{os.getpid()}\n")


def _finalized_in(log: Path, run) -> list[int]:
    """The pids `_Garbage` made just before `run()` was finalized in. Automatic collection is off
    meanwhile, so that only a child's explicit collection (or the parent's, after) can free it."""
    was = gc.isenabled()
    gc.collect()
    gc.disable()
    try:
        _Garbage(log)
        run()
    finally:
        if was:
            gc.enable()
    gc.collect()
    return [int(line) for line in log.read_text().split()]


def _collecting_in_children(function):
    parent = os.getpid()

    def wrapped(*args, **kwargs):
        if os.getpid() != parent:
            gc.collect()
        return function(*args, **kwargs)

    return wrapped


def test_dump_log_file_workers_leave_the_parents_garbage_alone(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(dump_parallel, "_render_into", _collecting_in_children(dump_parallel._render_into))
    files = sorted(str(p) for p in (FIXTURES / "generated" / "v2").rglob("*.log"))
    assert len(files) > 3

    def dump() -> None:
        result = run_ktool("dump-log", "--deep-iteration", "--jobs", "3", *files)
        assert (result.exit_code, result.stderr) == (0, "")

    assert _finalized_in(tmp_path / "pids", dump) == [os.getpid()]


def test_dump_log_batch_helpers_leave_the_parents_garbage_alone(tmp_path: Path, monkeypatch) -> None:
    segment = big_segment(tmp_path / "orders-0" / "00000000000000000000.log")
    made = []
    monkeypatch.setattr(batch_lines, "_made", _collecting_in_children(batch_lines._made))
    monkeypatch.setattr(batch_lines, "_serve", _counting(batch_lines._serve, tmp_path / "served"))

    def dump() -> None:
        result = run_ktool("dump-log", "--deep-iteration", "--jobs", "2", str(segment))
        made.append(result.exit_code)

    assert _finalized_in(tmp_path / "pids", dump) == [os.getpid()]
    assert made == [1]  # the damaged batches big_segment holds
    assert (tmp_path / "served").read_text().strip(), "no batch helper ran"


def _counting(function, log: Path):
    def wrapped(*args, **kwargs):
        with open(log, "a") as f:
            f.write(f"{os.getpid()}\n")
        return function(*args, **kwargs)

    return wrapped


def _slow_call(k: int) -> tuple[int, int]:
    time.sleep(0.01)  # every process gets calls
    return k, os.getpid()


def test_forked_walkers_leave_the_parents_garbage_alone(tmp_path: Path) -> None:
    answers = []
    work = _collecting_in_children(_slow_call)
    run = lambda: answers.extend(forked.forked_results(work, [(k,) for k in range(40)], 3))  # noqa: E731
    assert _finalized_in(tmp_path / "pids", run) == [os.getpid()]
    assert [k for k, _ in answers] == list(range(40))
    assert {pid for _, pid in answers} - {os.getpid()}, "no forked walker answered"


def test_a_kafka_client_left_in_a_cycle_does_not_kill_a_worker(monkeypatch) -> None:
    """What CI met: a confluent-kafka client left in a reference cycle, then dump-log --jobs in the same
    process. Destroyed in a worker, it killed the worker (a subscribed consumer: SIGABRT; CI's: SIGSEGV)
    and the dump waited for ever."""
    from confluent_kafka import Consumer

    monkeypatch.setattr(dump_parallel, "_render_into", _collecting_in_children(dump_parallel._render_into))
    files = sorted(str(p) for p in (FIXTURES / "generated" / "v2").rglob("*.log"))
    one = run_ktool("dump-log", "--json", "--jobs", "1", *files)
    was = gc.isenabled()
    gc.disable()
    try:
        holder = type("Holder", (), {})()
        holder.me = holder
        holder.client = Consumer({"bootstrap.servers": "127.0.0.1:1", "group.id": "g", "log_level": 0})
        holder.client.subscribe(["orders"])
        del holder
        many = run_ktool("dump-log", "--json", "--jobs", "3", *files)
    finally:
        if was:
            gc.enable()
        gc.collect()
    assert (many.exit_code, many.stderr) == (0, "")
    assert many.stdout == one.stdout


def test_the_heap_is_thawed_after_the_workers_unless_start_up_froze_it() -> None:
    """In-process (a test, an embedding program) the heap is given back to the collector; after ktool's
    start-up froze its own objects, they stay frozen (unfreezing would undo start_up.py's work)."""
    from kafka_tools.log.workers.fork_heap import frozen_for_fork

    gc.unfreeze()
    with frozen_for_fork():
        with frozen_for_fork():
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() > 0  # the outer one still holds
    assert gc.get_freeze_count() == 0
    gc.freeze()  # as start_up.resume_collection() does
    try:
        with frozen_for_fork():
            pass
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()
