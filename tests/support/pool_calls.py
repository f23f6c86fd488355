"""Calls a test hands the worker pool (log/workers/pool.py): module-level, so that a spawned worker finds
them by name, and told apart from the caller by KTOOL_TEST_CALLER (the pid of the test's process)."""

from __future__ import annotations

import os
import signal

from kafka_tools.log.checks import partition_checks
from kafka_tools.log.workers import parallel, pool

_range_run = parallel._range_run  # the real one, whatever a test puts in its place in the caller


def in_worker() -> bool:
    return str(os.getpid()) != os.environ.get("KTOOL_TEST_CALLER")


def square_and_pid(k: int) -> tuple[int, int]:
    return k * k, os.getpid()


def square_or_raise(k: int) -> int:
    if k % 7 == 3:
        raise ValueError(f"call {k}")
    return k * k


def negated(k: int) -> int:
    return -k


def range_run_dies_in_worker(*args):
    """A worker killed mid-way (the OOM killer, a signal); the caller walks as usual."""
    if in_worker():
        os.kill(os.getpid(), signal.SIGKILL)
    return _range_run(*args)


def later_ranges_fail(path, start, *rest):
    if start:
        raise OSError(f"{path}: cannot read at {start}")
    return _range_run(path, start, *rest)


def worker_fds(k: int) -> list[int]:
    """The descriptors open in the process that runs the call (the one listing /proc/self/fd left out);
    slow enough for a worker to start and take some."""
    import time

    time.sleep(0.05)
    listed = [int(fd) for fd in os.listdir("/proc/self/fd")]
    return sorted(fd for fd in listed if os.path.exists(f"/proc/self/fd/{fd}"))


def spawned(monkeypatch) -> list[int]:
    """Count the workers the pool spawns (by pid, in the caller); KTOOL_TEST_CALLER set for them."""
    monkeypatch.setenv("KTOOL_TEST_CALLER", str(os.getpid()))
    pids: list[int] = []
    real = pool._spawn

    def spawn():
        worker = real()
        if worker is not None:
            pids.append(worker.pid)
        return worker

    monkeypatch.setattr(pool, "_spawn", spawn)
    return pids


def started_at_once(monkeypatch) -> None:
    """Every pool waits for its workers to be ready before its caller goes on: on small inputs (walked
    faster than a worker starts) the workers then take calls too."""
    real = pool.Pool.__init__

    def init(self, processes: int) -> None:
        real(self, processes)
        assert self.started(30), "a worker did not start within 30 s"

    monkeypatch.setattr(pool.Pool, "__init__", init)


# -- validate's segment checks, as a test sees which process walked what ----------------------------------

_check_segment = partition_checks.check_segment
first: list[bool] = []  # this process's first check has been made


def _wait_for(path: str, text: str) -> None:
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            with open(path) as f:
                if text in f.read():
                    return
        except FileNotFoundError:
            pass
        time.sleep(0.001)


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def check_segment_logged(seg, *args):
    """Writes `pid path` to $KTOOL_TEST_WALKED. With $KTOOL_TEST_TOOK set, the caller's first check
    and a worker's first check wait (up to 10 s) for each other, so that on small fixtures (walked
    faster than a worker starts) both walk one."""
    took, walked = os.environ.get("KTOOL_TEST_TOOK"), os.environ["KTOOL_TEST_WALKED"]
    if took and not first:
        first.append(True)
        if not in_worker():
            _wait_for(took, "took")
        else:
            _append(took, f"took {os.getpid()}\n")
            _wait_for(walked, f"{os.environ['KTOOL_TEST_CALLER']} ")
    report = _check_segment(seg, *args)
    _append(walked, f"{os.getpid()} {seg.log}\n")
    return report


def check_segment_unreadable(seg, *args):
    """The first segment a worker takes cannot be read, in any process ($KTOOL_TEST_BAD names it);
    the caller holds its first segment until a worker has one. Who tried it: $KTOOL_TEST_TRIED."""
    bad, tried = os.environ["KTOOL_TEST_BAD"], os.environ["KTOOL_TEST_TRIED"]
    if in_worker() and not os.path.exists(bad):
        with open(bad, "w") as f:
            f.write(str(seg.log))
    elif not in_worker() and not os.path.exists(tried):
        _wait_for(bad, "")
    if os.path.exists(bad) and open(bad).read() == str(seg.log):
        _append(tried, f"{os.getpid()}\n")
        raise PermissionError(13, "Permission denied", str(seg.log))
    return _check_segment(seg, *args)


def check_segment_dies_in_worker(seg, *args):
    """A worker killed holding a segment (its name in $KTOOL_TEST_DIED); the caller waits for that."""
    died = os.environ["KTOOL_TEST_DIED"]
    if in_worker():
        _append(died, f"{seg.log}\n")
        os.kill(os.getpid(), signal.SIGKILL)
    _wait_for(died, "/")
    return _check_segment(seg, *args)


def check_segment_interrupted(seg, *args):
    """Ctrl-C in the caller; a worker holds its call until it is killed."""
    if not in_worker():
        raise KeyboardInterrupt
    import time

    time.sleep(600)
    return _check_segment(seg, *args)


# -- dump-log's files ------------------------------------------------------------------------------------


def render_spooled_with_fate(setup, index: int, path: str):
    """In a worker (where dump_parallel.render_spooled is the real one), at the file $KTOOL_TEST_VICTIM:
    killed, stopped or hung ($KTOOL_TEST_FATE)."""
    import time

    from kafka_tools.cli import dump_parallel

    if path == os.environ.get("KTOOL_TEST_VICTIM"):
        fate = os.environ["KTOOL_TEST_FATE"]
        if fate == "killed":
            os.kill(os.getpid(), signal.SIGKILL)
        elif fate == "stopped":
            os.kill(os.getpid(), signal.SIGSTOP)
        else:
            time.sleep(3600)
    return dump_parallel.render_spooled(setup, index, path)
