"""Ctrl-C (SIGINT) and SIGTERM: exit 130 and 143 from the first line of ktool on, never a traceback,
and never a line of stdout cut in two.

Both signals raise where the program is (KeyboardInterrupt, and `Terminated` for SIGTERM), so every
`finally` cleans up as after Ctrl-C: children killed, temporary files removed, what was written
flushed. Except inside a write: a function marked `@whole` (stdout's write, write_bytes, send_file
and flush, cli/pipe.py) is never cut, nor is a destructor (`__del__`: what it raises is lost, with a
traceback on stderr; the signal is raised once it has returned, by the GRACE timer at the latest).
A signal that lands in one is kept and raised once the outermost such function has returned
(`deliver()`), so stdout always ends at the end of a write, and every write ktool makes ends a line.
The handler itself only looks at the stack and sets a number: nothing else runs in the middle of a
write. Unless the write is still blocked `GRACE` s later (stdout's reader stopped
reading): then the signal is raised in it and stdout is pointed at /dev/null, so that ktool still
ends within a second; only then may the last line its reader gets be cut.

The program itself (kafka_tools/__main__.py, `install(last_resort=True)`) also ends at the latest
`DEADLINE` s after the first signal, whatever its clean-up is waiting for (a library's thread joined
without a timeout, a server that does not answer a goodbye): the one line, the exit code, and
`os._exit` -- as if killed there, which every mutating command's journal is built to survive. ktool
run inside another program (a test calling `main`) never exits under it that way.

A signal may reach another thread than the main one (Linux gives it to any thread that does not block
it: a library's, Spark's py4j, kazoo's). Python then runs the handler only when the main thread next
runs Python code, and a main thread blocked in a call (a py4j answer from the JVM) did not, for 1.2 to
7 s of a Spark scan. So the program's own process also watches signals on a thread of its own
(`set_wakeup_fd`): the deadline is armed at once, and the main thread is woken by a no-op `POKE` signal
sent to it alone, which ends its call with EINTR, so Python runs the handler there.

kafka_tools/__main__.py keeps a signal from its first line until these handlers are installed: the
window in which a signal still meets Python's defaults is the interpreter's own start-up (`site`, the
console script's `import re`): `python -c pass` took 0.2-0.45 s here at a load of 6-12 on 2 cores
(tests/cli/test_signals.py counts the runs a signal ended there apart).
"""

from __future__ import annotations

import _signal as signal  # signal.py's three enums (Signals, Handlers, Sigmasks): 3 M instructions
import os
import sys
from _thread import allocate_lock
from typing import TYPE_CHECKING

from kafka_tools.errors import EXIT_INTERRUPTED, EXIT_TERMINATED, Terminated

if TYPE_CHECKING:  # imported by every command's first line: nothing more than it needs
    from collections.abc import Callable
    from types import CodeType, FrameType
    from typing import NoReturn, TypeVar

    F = TypeVar("F", bound=Callable)

_WHOLE: set[CodeType] = set()
pending = 0  # a signal that came inside a whole write, raised when that write has ended
_DEPTH = 12  # frames looked at above the one a signal lands in
GRACE = 0.5  # seconds a whole write may hold a signal back (its reader may have stopped reading)
_SIGNALS = (signal.SIGINT, signal.SIGTERM)
POKE = signal.SIGURG  # wakes the main thread (ignored by default: a stray one from outside harms nothing)
_handled = False  # the handler of the first signal has run (on the main thread)
_watching = False
DEADLINE = 1.0  # seconds from the first signal to the program's end, clean-up or not
_last_resort = False  # the program's own process (see install)
_arming = allocate_lock()  # held once the deadline is armed
_said = False  # the one line is written


def whole(function: F) -> F:
    """Mark `function` as one a signal never interrupts; it must end with
    `if interrupts.pending: interrupts.deliver()`."""
    _WHOLE.add(function.__code__)
    return function


def _exception(signum: int) -> KeyboardInterrupt:
    return Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


def _inside_whole(frame: FrameType | None) -> bool:
    return _inside(frame, lambda code: code in _WHOLE or _is_finalizer(code))


def _inside(frame: FrameType | None, test: Callable[[CodeType], bool]) -> bool:
    """Whether `test` holds for the code of `frame` or of one of the _DEPTH frames above it."""
    for _ in range(_DEPTH):
        if frame is None:
            return False
        if test(frame.f_code):
            return True
        frame = frame.f_back
    return False


def _is_finalizer(code: CodeType) -> bool:
    """A destructor, or a weak reference's callback of the import system (a module lock dropped as its
    import ends: CI saw a SIGTERM there print "Exception ignored in" and a traceback, and exit 0)."""
    if code.co_name == "__del__":
        return True
    return code.co_name == "cb" and code.co_filename == "<frozen importlib._bootstrap>"


def _inside_finalizer(frame: FrameType | None) -> bool:
    """A destructor runs (a map closed as its object goes): an exception raised in it is printed as
    "Exception ignored in ..." with a traceback and lost, so a signal there waits until it returns."""
    return _inside(frame, _is_finalizer)


def _arm(signum: int) -> None:
    """From the first signal on, a thread that ends the program DEADLINE s later if it is still
    running (started with `_thread`: a daemon that nothing at exit waits for). Once, whichever of the
    handler and the watcher comes first."""
    if not _last_resort or not _arming.acquire(False):
        return
    import _thread

    _thread.start_new_thread(_end_at_deadline, (signum,))


def _end_at_deadline(signum: int) -> None:
    import time

    time.sleep(DEADLINE)
    say(_exception(signum))
    os._exit(exit_code(_exception(signum)))


def line_due() -> bool:
    """True for the one caller that writes the line a signal ends ktool with (the program's own
    process says it once: its clean-up or the deadline, whichever comes first)."""
    global _said
    if _said:
        return False
    _said = _last_resort
    return True


def say(exc: BaseException) -> None:
    """The one line a signal ends ktool with, written to fd 2 (stderr may be what holds it up)."""
    if not line_due():
        return
    words = "terminated" if isinstance(exc, Terminated) else "interrupted"
    try:
        sys.stderr.flush()
        os.write(2, f"ktool: {words}\n".encode())
    except (OSError, ValueError):
        pass


def _watch() -> None:
    """Called on the main thread. The watcher thread reads each signal's number, written by Python's C
    handler to the wakeup pipe in whichever thread the signal reached; for SIGINT and SIGTERM it arms
    the deadline and, until the handler has run, pokes the main thread."""
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)
    signal.signal(POKE, _on_poke)
    import _thread

    _thread.start_new_thread(_watcher, (read_end, _thread.get_ident()))


def _watcher(read_end: int, main: int) -> None:
    while True:
        try:
            received = os.read(read_end, 64)
        except OSError:
            return
        if not received:
            return
        for signum in received:
            if signum in _SIGNALS:
                _arm(signum)
                if not _handled:
                    signal.pthread_kill(main, POKE)


def _on_poke(signum: int, frame: FrameType | None) -> None:
    """Nothing: the poke only ends the main thread's blocking call, so that Python runs the pending
    SIGINT or SIGTERM handler there."""


def _on_signal(signum: int, frame: FrameType | None) -> None:
    global pending, _handled
    _handled = True
    _arm(signum)
    if _inside_whole(frame):
        pending = signum
        signal.setitimer(signal.ITIMER_REAL, GRACE)  # a write stdout's reader holds up is not waited for
        return
    raise _exception(signum)


def _on_alarm(signum: int, frame: FrameType | None) -> None:
    """GRACE after a signal, the whole write still runs: its reader has stopped reading (a paused
    `less`). The signal is raised in it, and stdout points at /dev/null from now on, so nothing at
    exit waits for that reader either. A signal kept in a destructor (which calls no `deliver()`)
    is raised now, outside it; in one still, a moment later."""
    global pending
    if not pending:
        return
    if _inside_finalizer(frame):
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        return
    if not _inside_whole(frame):
        signum, pending = pending, 0
        raise _exception(signum)
    signum, pending = pending, 0
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    raise _exception(signum)


def raise_now(signum: int) -> NoReturn:
    """Raise what `signum` raises (a signal kept before the handlers were installed)."""
    _arm(signum)
    raise _exception(signum)


def deliver() -> None:
    """Raise the signal kept during a whole write, unless a whole write is still running below."""
    global pending
    if pending and not _inside_whole(sys._getframe(2)):
        signal.setitimer(signal.ITIMER_REAL, 0)
        signum, pending = pending, 0
        raise _exception(signum)


def install(last_resort: bool = False) -> None:
    """SIGINT and SIGTERM raise (KeyboardInterrupt, Terminated) outside whole writes. Idempotent; a
    signal a caller set to be ignored (`nohup`, a shell's background job) stays ignored. A launcher
    that blocked them to cover the interpreter's start-up has them delivered now. `last_resort`: this
    process is ktool's own, which ends DEADLINE s after a signal at the latest."""
    global _last_resort, _watching
    _last_resort = _last_resort or last_resort
    for signum in _SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            signal.signal(signum, _on_signal)
    signal.signal(signal.SIGALRM, _on_alarm)
    if _last_resort and not _watching:
        _watching = True
        _watch()
    signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)


def exit_code(exc: BaseException) -> int:
    return EXIT_TERMINATED if isinstance(exc, Terminated) else EXIT_INTERRUPTED


def exit_interrupted(exc: BaseException) -> NoReturn:
    """The one line and the exit code; no signal is heeded any more (the exit is decided), and what
    stdout holds is written (whole lines: every write is)."""
    for signum in _SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    say(exc)
    raise SystemExit(exit_code(exc))


def exit_with(code: int | str | None, last: Callable[[], object] | None = None) -> NoReturn:
    """The command's own exit, unless a signal was kept and not raised yet; no signal is heeded any
    more (the interpreter's shutdown is not interrupted), nor in `last`, run then."""
    if pending:
        exit_interrupted(_exception(pending))
    for signum in _SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    if last is not None:
        last()
    raise SystemExit(code)
