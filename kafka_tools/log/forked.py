"""Calls run in forked processes, each taking the next call nobody has taken: how one large segment's
ranges are walked on several cores (log/parallel.py's split), when the caller has started no thread.

Why processes, not threads, for those ranges: every walker hands its mapped pages back as it goes
(`madvise(MADV_DONTNEED)`, which keeps the RSS flat), and in one process each such call flushes the
TLB of every core the process runs on, by an interrupt the other walker's core must take (in a
virtual machine, an exit to the host on both sides); Python's mmap also holds the GIL through the
call, so the other walker, back from C, waits. On 2 vCPUs, 4 GiB, ten alternated rounds with the
machine otherwise held off (bench/README.md, issue 27): ranges on 2 threads 1.58x one walker after
start-up in two sets, the same ranges in 2 processes 1.67x and 1.77x (system time 28 ms, not 64).

The values come back through a pipe in `marshal`'s format (loaded at every start; pickle's import
cost 3.6 ms), so this is for calls whose values are small and plain (a range's BatchRun, made a
tuple, with no index targets in it). A call that raised, or whose process died, is run again by
the caller: no answer is lost, and its error is the caller's own, raised as parallel.all_results
raises one.
"""

from __future__ import annotations

import marshal
import os
import struct
from collections.abc import Callable
from typing import Any

_TOKEN = struct.Struct("<H")  # a call's index, as read from the shared pipe: 2 bytes, one read each
# Every token is written before any walker reads: they must fit the smallest pipe Linux gives (one
# page, for a user past fs.pipe-user-pages-soft). A split makes RANGES_A_THREAD a core: 512 cores.
MAX_CALLS = 2048


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
    """`work(*args)` for each of `calls`, on `processes` processes: `processes - 1` forked now and this
    one, each taking the next call from a pipe that holds every call's index once. The values in
    `calls`' order (a forked process's as `from_wire(marshal.loads(marshal.dumps(to_wire(value))))`);
    the first call's exception raised once every call has ended. A call a forked process did not
    answer (it raised, or the process died) is run here."""
    if len(calls) > MAX_CALLS:
        raise ValueError(f"{len(calls)} calls: at most {MAX_CALLS}")
    tokens, feed = os.pipe()
    try:
        os.write(feed, b"".join(_TOKEN.pack(k) for k in range(len(calls))))
    finally:
        os.close(feed)
    children: list[tuple[int, int]] = []
    done: dict[int, tuple[bool, Any]] = {}
    try:
        for _ in range(processes - 1):
            child = _fork_taker(work, calls, tokens, to_wire)
            if child is None:
                break  # no process to be had: this one takes the rest
            children.append(child)
        done.update(_take(work, calls, tokens))
        for pid, answers in children:
            done.update((k, (True, from_wire(v))) for k, v in _answers_of(answers).items())
            os.close(answers)
            os.waitpid(pid, 0)
        children = []
    finally:
        os.close(tokens)
        for pid, answers in children:  # interrupted (Ctrl-C): stop the walkers, leave no zombie
            os.close(answers)
            _stop(pid)
    for k in range(len(calls)):
        if k not in done:
            done[k] = _call(work, calls[k])
    for k in range(len(calls)):
        ok, value = done[k]
        if not ok:
            raise value
    return [done[k][1] for k in range(len(calls))]


def _call(work: Callable[..., Any], args: tuple) -> tuple[bool, Any]:
    try:
        return True, work(*args)
    except Exception as exc:  # the call's answer; Ctrl-C is at once
        return False, exc


def _take(work: Callable[..., Any], calls: list[tuple], tokens: int) -> dict[int, tuple[bool, Any]]:
    """The calls this process takes from the pipe until it is empty, and their answers."""
    done = {}
    while len(token := os.read(tokens, _TOKEN.size)) == _TOKEN.size:
        (k,) = _TOKEN.unpack(token)
        done[k] = _call(work, calls[k])
    return done


def _fork_taker(
    work: Callable[..., Any], calls: list[tuple], tokens: int, to_wire: Callable[[Any], Any]
) -> tuple[int, int] | None:
    """A forked process taking calls; (its pid, the pipe its answers come through), or None when
    no process can be started."""
    answers, out = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(answers)
        os.close(out)
        return None
    if pid:
        os.close(out)
        return pid, answers
    # The child: it takes calls, writes the values of those that returned and ends at once (no exit
    # handler, no flush of the parent's buffers, no destructor of objects the parent owns).
    code = 1
    try:
        os.close(answers)
        values = {k: to_wire(value) for k, (ok, value) in _take(work, calls, tokens).items() if ok}
        with os.fdopen(out, "wb") as f:
            f.write(marshal.dumps(values))
        code = 0
    except BaseException:  # noqa: BLE001 - the caller runs what this one did not answer
        pass
    finally:
        os._exit(code)


def _answers_of(fd: int) -> dict[int, Any]:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    try:
        return marshal.loads(b"".join(chunks)) if chunks else {}
    except (EOFError, ValueError, TypeError):  # a child cut off while writing: its calls run again
        return {}


def _stop(pid: int) -> None:
    import signal

    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except OSError:
        pass
