"""Calls run in forked processes, each taking the next call nobody has taken: how one large segment's
ranges (parallel.py's split) and a log dir's segments (forked_scans.py) are walked on several cores, when
the caller has started no thread.

Why processes, not threads, for those ranges: every walker hands its mapped pages back as it goes
(`madvise(MADV_DONTNEED)`, which keeps the RSS flat), and in one process each such call flushes the
TLB of every core the process runs on, by an interrupt the other walker's core must take (in a
virtual machine, an exit to the host on both sides); Python's mmap also holds the GIL through the
call, so the other walker, back from C, waits. On 2 vCPUs, 4 GiB, ten alternated rounds with the
machine otherwise held off (bench/README.md, issue 27): ranges on 2 threads 1.58x one walker after
start-up in two sets, the same ranges in 2 processes 1.67x and 1.77x (system time 28 ms, not 64).

The values come back through a pipe in `marshal`'s format (loaded at every start; pickle's import
cost 3.6 ms), each as soon as its call has ended, so this is for calls whose values are small and
plain once `to_wire` has made them so (a range's BatchRun as a tuple, with no index targets in it; a
segment's report, log/workers/report_wire.py). A call that raised, or whose process died, is run again by
the caller: no answer is lost, and its error is the caller's own.
"""

from __future__ import annotations

import functools
import marshal
import os
import struct
from collections.abc import Callable
from typing import Any

from kafka_tools.log.workers.children import end_children, fork_child
from kafka_tools.log.workers.fork_heap import freeze_for_fork, thaw_after_fork

_TOKEN = struct.Struct("<H")  # a call's index, as read from the shared pipe: 2 bytes, one read each
# Every token is written before any walker reads. A pipe holds one page at least (a user past
# fs.pipe-user-pages-soft gets no more): 2048 calls (a split makes RANGES_A_THREAD a core: 512 cores).
# More calls (a log dir of many segments) ask the kernel for a larger pipe (F_SETPIPE_SZ); where it
# refuses, forked_outcomes raises TooManyCalls before anything is forked.
PAGE_CALLS = 2048
MAX_CALLS = 1 << 16  # what a token can name


class TooManyCalls(ValueError):
    """More calls than the pipe of tokens can be made to hold: nothing was forked."""


def _same(value: Any) -> Any:
    return value


def may_fork() -> bool:
    """Whether this process may fork walkers now: on Linux (where it was measured; macOS's system
    libraries are not safe to use after a fork), and no thread of this interpreter is running
    besides this one (a thread holding a lock when the process forks would leave the child that
    lock held forever)."""
    import _thread
    import sys

    count = getattr(_thread, "_count", None)
    return sys.platform.startswith("linux") and hasattr(os, "fork") and count is not None and count() == 0


def forked_results(
    work: Callable[..., Any],
    calls: list[tuple],
    processes: int,
    to_wire: Callable[[Any], Any] = _same,
    from_wire: Callable[[Any], Any] = _same,
) -> list:
    """`work(*args)` for each of `calls`, on `processes` processes (forked_outcomes): the values in
    `calls`' order; the first call's exception raised once every call has ended."""
    outcomes = forked_outcomes(work, calls, processes, to_wire, from_wire)
    for ok, value in outcomes:
        if not ok:
            raise value
    return [value for _, value in outcomes]


def forked_outcomes(
    work: Callable[..., Any],
    calls: list[tuple],
    processes: int,
    to_wire: Callable[[Any], Any] = _same,
    from_wire: Callable[[Any], Any] = _same,
    answered: Callable[[int], None] | None = None,
) -> list[tuple[bool, Any]]:
    """`work(*args)` for each of `calls`, on `processes` processes: `processes - 1` forked now and this
    one, each taking the next call from a pipe that holds every call's index once. For each call in
    `calls`' order (True, its value) or (False, its exception); a forked process's value comes back as
    `from_wire(marshal.loads(marshal.dumps(to_wire(value))))`, as soon as that call has ended. A call
    a forked process did not answer (it raised, or the process died) is run here. `answered(k)` is
    told here as each call's answer is in (a progress bar: the forked processes cannot draw it)."""
    tokens = _token_pipe(len(calls))
    children: list[_Walker] = []
    done: dict[int, tuple[bool, Any]] = {}

    def arrived(k: int, outcome: tuple[bool, Any]) -> None:
        done[k] = outcome
        if answered is not None:
            answered(k)

    def heard(walker: _Walker, wait: bool) -> None:
        for k, value in walker.answers(wait):
            arrived(k, (True, from_wire(value)))

    freeze_for_fork()
    try:
        for _ in range(processes - 1):
            child = _fork_taker(work, calls, tokens, to_wire)
            if child is None:
                break  # no process to be had: this one takes the rest
            children.append(child)
        while len(token := os.read(tokens, _TOKEN.size)) == _TOKEN.size:
            (k,) = _TOKEN.unpack(token)
            arrived(k, _call(work, calls[k]))
            for walker in children:  # what the walkers answered meanwhile, without waiting
                heard(walker, wait=False)
        while children:  # the rest of the walkers' answers, as each comes in
            heard(children[0], wait=True)
            children.pop(0).close()
    finally:
        os.close(tokens)
        for walker in children:  # interrupted (Ctrl-C): stop the walkers, leave no zombie
            walker.stop()
        thaw_after_fork()
    for k in range(len(calls)):
        if k not in done:
            arrived(k, _call(work, calls[k]))
    return [done[k] for k in range(len(calls))]


def _token_pipe(calls: int) -> int:
    """The read end of a pipe holding each call's index once."""
    if calls > MAX_CALLS:
        raise TooManyCalls(f"{calls} calls: at most {MAX_CALLS}")
    tokens, feed = os.pipe()
    try:
        if calls > PAGE_CALLS:
            import fcntl

            try:
                fcntl.fcntl(feed, fcntl.F_SETPIPE_SZ, calls * _TOKEN.size)
            except (OSError, AttributeError):
                os.close(tokens)
                raise TooManyCalls(f"{calls} calls: no pipe holds them here") from None
        os.write(feed, b"".join(_TOKEN.pack(k) for k in range(calls)))
    finally:
        os.close(feed)
    return tokens


def _call(work: Callable[..., Any], args: tuple) -> tuple[bool, Any]:
    try:
        return True, work(*args)
    except Exception as exc:  # the call's answer; Ctrl-C is at once
        return False, exc


_LENGTH = struct.Struct("<I")  # an answer's length in the walker's pipe, before its marshal bytes


class _Walker:
    """A forked process taking calls, seen from the caller: its pid and the pipe its answers come
    through, each as soon as its call has ended (a length, then `marshal` of (index, value))."""

    def __init__(self, pid: int, fd: int) -> None:
        self.pid = pid
        self.fd = fd
        self.unread = bytearray()
        os.set_blocking(fd, False)

    def answers(self, wait: bool) -> list[tuple[int, Any]]:
        """The answers whole in the pipe now; with `wait`, every answer until the walker has ended
        (an answer it was cut off while writing is left out: its call runs again)."""
        if wait:
            os.set_blocking(self.fd, True)
        out = []
        while True:
            try:
                chunk = os.read(self.fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            self.unread += chunk
            out += self._whole()
        return out

    def _whole(self) -> list[tuple[int, Any]]:
        out, buf, at = [], self.unread, 0
        while len(buf) - at >= _LENGTH.size:
            (n,) = _LENGTH.unpack_from(buf, at)
            if len(buf) - at - _LENGTH.size < n:
                break
            k, value = marshal.loads(buf[at + _LENGTH.size : at + _LENGTH.size + n])
            out.append((k, value))
            at += _LENGTH.size + n
        del buf[:at]
        return out

    def close(self) -> None:
        os.close(self.fd)
        os.waitpid(self.pid, 0)

    def stop(self) -> None:
        os.close(self.fd)
        end_children([self.pid])


def _fork_taker(
    work: Callable[..., Any], calls: list[tuple], tokens: int, to_wire: Callable[[Any], Any]
) -> _Walker | None:
    """A forked process taking calls, or None when no process can be started."""
    answers, out = os.pipe()
    started: list[_Walker] = []
    try:
        fork_child(
            functools.partial(_take_calls, work, calls, tokens, to_wire, out, answers),
            lambda pid: started.append(_Walker(pid, answers)),
        )
    except OSError:
        os.close(answers)
        return None
    finally:
        os.close(out)
    return started[0]


def _take_calls(
    work: Callable[..., Any],
    calls: list[tuple],
    tokens: int,
    to_wire: Callable[[Any], Any],
    out: int,
    answers: int,
) -> int:
    """The child: it takes calls, writes the value of each that returned as soon as it has, and ends
    at once (no exit handler, no flush of the parent's buffers, no destructor of objects the parent
    owns). A value that cannot be sent is left to the caller, which runs its call again."""
    os.close(answers)
    with os.fdopen(out, "wb") as f:
        while len(token := os.read(tokens, _TOKEN.size)) == _TOKEN.size:
            (k,) = _TOKEN.unpack(token)
            ok, value = _call(work, calls[k])
            if not ok:
                continue
            try:
                data = marshal.dumps((k, to_wire(value)))
            except (ValueError, TypeError):
                continue
            f.write(_LENGTH.pack(len(data)) + data)
            f.flush()
    return 0
