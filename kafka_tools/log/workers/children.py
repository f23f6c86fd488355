"""Forked children as every parallel command needs them: started with the signals they must have,
watched while the parent waits for them, and ended with bounded waits, whatever they are doing.

Why one place: each fork mechanism had its own (multiprocessing's pool in dump-log, which ended its
workers by SIGTERM and then joined them for ever: a worker forked while the parent's SIGTERM handler
was still installed could lose that SIGTERM to CPython's "ignored due to race condition" and wait on
the pool's queue for ever, 1 run in 30 of a three-file dump). Here:

- `fork_child()` forks with SIGINT and SIGTERM blocked, so the child sets SIGINT ignored (Ctrl-C is
  the parent's to handle) and SIGTERM to its default before it can receive either; it also dies with
  its parent (PR_SET_PDEATHSIG), so no child outlives a parent ended by any means.
- `Watch` tells whether a child the parent waits on is still worth waiting for: it ended, it is
  stopped (SIGSTOP, a debugger) or it has made no progress (no CPU time, no output) for `STALL` s.
- `end_children()` ends children by SIGKILL (neither ignored nor raced) and reaps them, waiting at
  most `REAP` s in all (a child in an uninterruptible read is left to init rather than waited for).
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

STOPPED_FOR = 1.0  # seconds a child may stay stopped before it is given up (a Ctrl-Z and fg is shorter)
STALL = 10.0  # seconds without CPU time nor output before a running child is given up
REAP = 1.0  # seconds end_children() waits for the killed children to be reaped, in all
_SIGNALS = {signal.SIGINT, signal.SIGTERM}
_PR_SET_PDEATHSIG = 1


def fork_child(body: Callable[[], int], register: Callable[[int], None]) -> int:
    """Fork; in the child run `body()` and end with its return value (1 on any exception) without
    running the parent's exit handlers or flushing its buffers; in the parent, `register(pid)` before
    a signal can interrupt (so whoever ends the children knows this one), and the pid."""
    sys.stdout.flush()  # nothing buffered is left for the child's copy of it
    sys.stderr.flush()
    import ctypes  # noqa: F401 - here, not in the child, whose time may be counted (TAB completion)

    parent = os.getpid()
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        raise
    if pid:
        try:
            register(pid)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)  # a signal that came meanwhile is raised here
        return pid
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.set_wakeup_fd(-1)  # its signals are its own: not for the parent's watcher (cli/interrupts.py)
        _die_with(parent)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)
        code = body()
    except BaseException:  # noqa: BLE001 - the parent sees the exit status and does the work itself
        pass
    finally:
        os._exit(code)


def _die_with(parent: int) -> None:
    """SIGKILL when the parent ends (Linux); a parent already gone ends the child now."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
    except (OSError, AttributeError, ImportError):
        return
    if os.getppid() != parent:
        os._exit(1)


def how_it_ended(status: int) -> str:
    """A wait status in the words a stderr line uses: "was killed by SIGSEGV", "exited with status 1"."""
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            return f"was killed by {signal.Signals(number).name}"
        except ValueError:
            return f"was killed by signal {number}"
    return f"exited with status {os.waitstatus_to_exitcode(status)}"


def reap(pid: int) -> str | None:
    """How the child `pid` ended (reaped now), or None while it runs."""
    try:
        done, status = os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return "ended"
    return how_it_ended(status) if done else None


def end_children(pids: Iterable[int], within: float = REAP) -> None:
    """SIGKILL each child of `pids` still there and reap them, waiting `within` seconds at most."""
    left = []
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
            left.append(pid)
        except ProcessLookupError:
            reap(pid)  # ended already: a zombie until reaped
    deadline = time.monotonic() + within
    while left:
        left = [pid for pid in left if reap(pid) is None]
        if not left or time.monotonic() > deadline:
            return
        time.sleep(0.005)


def _stat(pid: int) -> tuple[str, int] | None:
    """The child's state letter and CPU ticks (user + system) from /proc, None when unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            text = f.read()
    except OSError:
        return None
    fields = text[text.rfind(b")") + 2 :].split()
    return fields[0].decode(), int(fields[11]) + int(fields[12])


@dataclass
class Watch:
    """One child the parent is waiting for, looked at between bounded waits: `verdict()` says why it
    is no longer worth waiting for, or None. `progress()` adds what the parent sees of its output."""

    pid: int
    output: Callable[[], int] = lambda: 0
    _seen: tuple = ()
    _since: float = field(default_factory=time.monotonic)
    _stopped_since: float | None = None

    def verdict(self) -> str | None:
        """ "was killed by SIGKILL", "was stopped", "made no progress for 10 s" (the child is then
        killed), or None while it is worth waiting for."""
        if (ended := reap(self.pid)) is not None:
            return ended
        now = time.monotonic()
        stat = _stat(self.pid)
        if stat is not None and stat[0] in "Tt":
            self._stopped_since = self._stopped_since or now
            if now - self._stopped_since >= STOPPED_FOR:
                end_children([self.pid])
                return "was stopped"
            return None
        self._stopped_since = None
        seen = (stat, self.output())
        if seen != self._seen:
            self._seen, self._since = seen, now
        elif now - self._since >= STALL:
            end_children([self.pid])
            return f"made no progress for {STALL:g} s"
        return None
