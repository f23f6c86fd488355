"""The one worker pool: every command that works on several cores (validate's segments and a large
segment's ranges, dump-log's files) hands calls to it, and the calling process takes calls too.

Why spawned, not forked (issue 51): a forked worker inherits the parent's whole heap, and collecting
garbage the parent made runs its destructors in the wrong process (a confluent-kafka client in a cycle
killed a child by SIGSEGV, CI stop 47: hence the gc.freeze every fork needed), its locks (a thread
holding one at the fork leaves it held for ever: no fork while a thread ran) and its signal handlers.
A worker here is `sys.executable -m kafka_tools.log.workers.pool_worker` started by posix_spawn: it
owns nothing of the parent's but two pipes, preloads the decoder, ignores SIGINT (Ctrl-C is the
parent's to handle), dies with its parent (PR_SET_PDEATHSIG) and has SIGINT and SIGTERM blocked from
the spawn until it has set them so (a Ctrl-C to the terminal's process group cannot catch it
half-started). Its stdin and stdout are /dev/null: nothing it does reaches the command's output.

A worker says when it is ready (None, once the decoder is imported), and only then is it given
calls: the caller never waits for a worker's start-up (0.1-0.6 s on a loaded machine), it takes the
calls itself meanwhile. Each worker has at most one call in hand: a call is `pickle` of (key,
function, args), the function a module-level one (named, not sent), its answer `pickle` of (key,
True, value), or (key, False, None) when it raised (the caller runs it again: its error is then the
caller's own, as `--jobs 1` reports it). Every wait is bounded (`POLL`); a worker that died, is
stopped or makes no progress is found out by children.Watch, killed, and its call answered (key,
False, None) as well. `close()` kills and reaps every worker within a second (children.end_children).
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kafka_tools.log.workers.children import Watch, end_children, reap
from kafka_tools.log.workers.pool_worker import ANSWERS_FD, TASKS_FD, frame, unframe

WORKER_MODULE = "kafka_tools.log.workers.pool_worker"
POLL = 0.2  # seconds a wait for answers lasts at most before the busy workers are looked at
_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def available() -> bool:
    """Whether workers can be spawned here (Linux, where the pool was measured: posix_spawn)."""
    return sys.platform.startswith("linux") and hasattr(os, "posix_spawn")


@dataclass(eq=False)
class Worker:
    """A spawned worker as the pool sees it: its pid, its two pipes, the call in its hand."""

    pid: int
    tasks: int
    answers: int
    ready: bool = False  # it said it is ready (decoder imported): no call waits on its start-up
    key: Any = None  # the call in hand; None: idle
    watch: Watch | None = None
    unread: bytearray = field(default_factory=bytearray)


@dataclass(frozen=True, slots=True)
class Answer:
    key: Any
    ok: bool  # False: the call raised, or its worker died with it: the caller runs it again
    value: Any = None
    lost: str | None = None  # how its worker ended, when it did ("was killed by SIGKILL")
    pid: int = 0  # the worker that had it


def _none() -> int:
    return 0


class Pool:
    """`processes` spawned workers (fewer where the system refuses more: the caller's share grows)."""

    def __init__(self, processes: int) -> None:
        self.workers: list[Worker] = []
        try:
            for _ in range(processes):
                worker = _spawn()
                if worker is None:
                    break
                self.workers.append(worker)
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def started(self, within: float) -> bool:
        """Wait until every worker is ready, `within` s at most (a test making sure the workers take
        calls: the caller otherwise takes them all while the workers start)."""
        deadline = time.monotonic() + within
        while not all(w.ready for w in self.workers) and time.monotonic() < deadline:
            self.wait(min(POLL, max(0.0, deadline - time.monotonic())))
        return all(w.ready for w in self.workers)

    def idle(self) -> list[Worker]:
        return [w for w in self.workers if w.ready and w.key is None]

    def busy(self) -> bool:
        return any(w.key is not None for w in self.workers)

    def send(
        self,
        worker: Worker,
        key: Any,
        work: Callable[..., Any],
        args: tuple,
        output: Callable[[], int] = _none,
    ) -> bool:
        """Hand `work(*args)` to an idle worker (a call is small: it fits the pipe, never blocks long);
        False when the call cannot be sent (a function with no module-level name: the caller runs it).
        `output()`: how far what the call writes has grown (progress, besides the worker's CPU time)."""
        try:
            data = frame((key, work, args))
        except (pickle.PicklingError, AttributeError, TypeError):
            return False
        worker.key, worker.watch = key, Watch(worker.pid, output)
        try:
            while data:
                data = data[os.write(worker.tasks, data) :]
        except BrokenPipeError:
            pass  # it died: wait() finds it out and answers for the call
        return True

    def wait(self, timeout: float = POLL) -> list[Answer]:
        """The answers in within `timeout` s (0: those in now), and the calls of workers found dead.
        A worker still starting is heard too (it says when it is ready), never waited for."""
        busy = [w for w in self.workers if w.key is not None or not w.ready]
        if not busy:
            return []
        ready = set(select.select([w.answers for w in busy], [], [], timeout)[0])
        out: list[Answer] = []
        for worker in busy:
            if worker.answers in ready:
                chunk = os.read(worker.answers, 1 << 16)
                if chunk:
                    worker.unread += chunk
                    for message in unframe(worker.unread):
                        if message is None:
                            worker.ready = True
                            continue
                        out.append(Answer(*message, pid=worker.pid))
                        worker.key = worker.watch = None
                    continue
            if not worker.ready:  # died starting (its pipe ended): it had no call
                if worker.answers in ready:
                    end_children([worker.pid])
                    self._drop(worker)
                continue
            if worker.key is not None and (death := worker.watch.verdict() if worker.watch else None):
                out.append(Answer(worker.key, False, None, death, worker.pid))
                self._drop(worker)
            elif worker.answers in ready:  # end of file: it ended without answering
                out.append(Answer(worker.key, False, None, _how_it_ends(worker.pid), worker.pid))
                self._drop(worker)
        return out

    def _drop(self, worker: Worker) -> None:
        self.workers.remove(worker)
        os.close(worker.tasks)
        os.close(worker.answers)

    def close(self) -> None:
        """Every worker killed (SIGKILL) and reaped, within a second."""
        workers, self.workers = self.workers, []
        for worker in workers:
            os.close(worker.tasks)
            os.close(worker.answers)
        end_children(worker.pid for worker in workers)


def _how_it_ends(pid: int, within: float = 1.0) -> str:
    """How a worker whose pipe has just ended ended (reaped: it closes its pipes a moment before it
    can be), waiting `within` s at most; then it is killed."""
    deadline = time.monotonic() + within
    while (ended := reap(pid)) is None and time.monotonic() < deadline:
        time.sleep(0.002)
    if ended is None:
        end_children([pid])
        return "ended"
    return ended


def _spawn() -> Worker | None:
    """One worker started, or None when no process can be had now."""
    tasks_read, tasks = os.pipe()
    answers, answers_write = os.pipe()
    pid = None
    try:
        pid = os.posix_spawn(
            sys.executable,
            [sys.executable, "-m", WORKER_MODULE, str(os.getpid())],
            os.environ,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, os.devnull, os.O_WRONLY, 0),
                (os.POSIX_SPAWN_DUP2, tasks_read, TASKS_FD),
                (os.POSIX_SPAWN_DUP2, answers_write, ANSWERS_FD),
                *_closed_in_worker((tasks_read, answers_write)),
            ],
            setsigmask=_SIGNALS,  # blocked until the worker has ignored SIGINT (pool_worker.py)
            setsigdef=_SIGNALS,
        )
    except OSError:
        pass
    finally:
        os.close(tasks_read)
        os.close(answers_write)
        if pid is None:
            os.close(tasks)
            os.close(answers)
    return None if pid is None else Worker(pid, tasks, answers)


def _closed_in_worker(kept: tuple[int, ...]) -> list[tuple]:
    """Close actions for the descriptors this process was given inheritable by whoever started it (a
    test runner's pipe, a shell's fd 10): a worker holding one would keep its reader waiting for an
    end of file after ktool has ended. ktool's own are close-on-exec already (os.open, os.pipe)."""
    try:
        fds = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return []
    out = []
    for fd in fds:
        if fd > ANSWERS_FD and fd not in kept:
            try:
                if os.get_inheritable(fd):
                    out.append((os.POSIX_SPAWN_CLOSE, fd))
            except OSError:
                continue  # the directory listing's own descriptor, closed already
    return out


def _wired(work: Callable[..., Any], to_wire: Callable[[Any], Any], args: tuple) -> Any:
    """What a worker runs for `outcomes`: the call, its value made plain where it is made."""
    return to_wire(work(*args))


def _same(value: Any) -> Any:
    return value


def _call(work: Callable[..., Any], args: tuple) -> tuple[bool, Any]:
    try:
        return True, work(*args)
    except Exception as exc:  # the call's answer; Ctrl-C is at once
        return False, exc


def outcomes(
    work: Callable[..., Any],
    calls: list[tuple],
    processes: int,
    to_wire: Callable[[Any], Any] = _same,
    from_wire: Callable[[Any], Any] = _same,
    answered: Callable[[int], None] | None = None,
) -> list[tuple[bool, Any]]:
    """`work(*args)` for each of `calls` on `processes` processes: this one and `processes - 1`
    workers, each taking the next call nobody has taken. For each call in `calls`' order (True, its
    value) or (False, its exception). A worker's value comes back as `from_wire(to_wire(value))`
    (`work` and `to_wire` module-level functions: sent by name). A call a worker did not answer (it
    raised, or the worker died) is run here. `answered(k)` is told here as each call's answer is in
    (a progress bar: a worker cannot draw it)."""
    done: dict[int, tuple[bool, Any]] = {}
    waiting = deque(range(len(calls)))
    again: list[int] = []

    def arrived(k: int, outcome: tuple[bool, Any]) -> None:
        done[k] = outcome
        if answered is not None:
            answered(k)

    with Pool(min(processes - 1, len(calls))) as pool:
        while waiting or pool.busy():
            for worker in pool.idle():
                if waiting:
                    k = waiting.popleft()
                    if not pool.send(worker, k, _wired, (work, to_wire, calls[k])):
                        again.append(k)
            if waiting:
                k = waiting.popleft()
                arrived(k, _call(work, calls[k]))
            for answer in pool.wait(0 if waiting else POLL):
                if answer.ok:
                    arrived(answer.key, (True, from_wire(answer.value)))
                else:
                    again.append(answer.key)
            if not pool.workers and not pool.busy():
                break  # no worker left (all died): the rest is run here
    for k in [*again, *waiting]:
        arrived(k, _call(work, calls[k]))
    return [done[k] for k in range(len(calls))]


def results(
    work: Callable[..., Any],
    calls: list[tuple],
    processes: int,
    to_wire: Callable[[Any], Any] = _same,
    from_wire: Callable[[Any], Any] = _same,
) -> list:
    """`outcomes`' values in `calls`' order; the first call's exception raised once every call has ended."""
    found = outcomes(work, calls, processes, to_wire, from_wire)
    for ok, value in found:
        if not ok:
            raise value
    return [value for _, value in found]
