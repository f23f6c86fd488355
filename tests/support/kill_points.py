"""Kill a command at every write it makes: the crash harness for ktool's mutating commands.

One clean run under `strace -f` lists the write-type system calls the command makes (writes, renames,
unlinks, truncates, fsyncs, directory and file creation, owner and mode changes), numbered per system
call as strace counts them for `inject=SYSCALL:signal=KILL:when=N`. Each of those becomes a kill point:
the command is run again on a fresh copy of its input and SIGKILLed by the kernel (through strace) just
as that call is entered, so the call never happens. The caller then checks what a user would: the old
or the new state, and that a rerun finishes (or `--undo` restores) exactly.

The counts are per process and per system call (strace counts per tracee), so the harness keeps to the
command's own process: a run that forks gets only its first process's calls as kill points. An `openat`
is a write only when it creates, truncates or opens for writing: those are the ones listed, and each
killed run checks, from its own trace, that the call it killed is the one the clean run listed there
(a start-up that differs between runs would otherwise kill somewhere else unseen).

    points = write_points(argv, env=env)           # from one clean run, on a scratch copy
    for point in points:
        fresh copy of the input
        run = run_killed(argv, point, env=env)     # SIGKILLed at that call; raises if not
        ...assert old-or-new, rerun, undo...

`strace_or_unavailable()` is the fixture-side check: strace missing skips, or fails under CI (CI
installs it: tests/run.sh).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# The system calls that change a file or a directory. `openat` is filtered by its flags below.
WRITE_SYSCALLS: tuple[str, ...] = (
    "write",
    "pwrite64",
    "writev",
    "pwritev",
    "pwritev2",
    "ftruncate",
    "truncate",
    "fallocate",
    "rename",
    "renameat",
    "renameat2",
    "link",
    "linkat",
    "symlink",
    "symlinkat",
    "unlink",
    "unlinkat",
    "rmdir",
    "mkdir",
    "mkdirat",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "copy_file_range",
    "sendfile",
    "fchmod",
    "fchmodat",
    "chmod",
    "fchown",
    "fchownat",
    "chown",
    "lchown",
    "openat",
    "open",
    "creat",
)
_OPEN_WRITES = re.compile(r"O_WRONLY|O_RDWR|O_CREAT|O_TRUNC")
_LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<name>\w+)\((?P<args>.*)$")


@dataclass(frozen=True)
class KillPoint:
    """The `nth` call (1-based, as strace's `when=` counts) of `syscall` in the command's process; `call`
    is its line in the clean run's trace, for messages."""

    syscall: str
    nth: int
    call: str

    def __str__(self) -> str:
        return f"{self.syscall}#{self.nth}: {self.call}"


@dataclass(frozen=True)
class KilledRun:
    returncode: int
    killed_call: str  # the traced line of the call the kernel killed the process at
    stdout: str
    stderr: str


class KillPointError(AssertionError):
    """The harness could not do what it was asked (strace missing, a run not killed where expected)."""


def strace() -> str | None:
    return shutil.which("strace")


def strace_or_unavailable() -> str:
    """strace's path, or the test skips (fails under CI, where tests/run.sh installs it)."""
    import pytest

    path = strace()
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("strace is not installed (prerequisites must be installed in CI)", pytrace=False)
        pytest.skip("strace is not installed (apt-get install strace)")
    return path


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    # No bytecode written: a .pyc written by the first run would be a write the later runs lack.
    return {**os.environ, **(env or {}), "PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0"}


def _strace_argv(trace_file: Path, extra: Sequence[str]) -> list[str]:
    tool = strace()
    if tool is None:
        raise KillPointError("strace is not installed")
    return [tool, "-f", "-qq", "-e", "signal=none", "-o", str(trace_file), *extra]


def _calls(trace: str) -> list[tuple[str, str, str]]:
    """(pid, syscall, whole line) for each traced call, in order; resumed halves of calls interrupted by
    another thread's line are left out (their start was counted)."""
    out = []
    for line in trace.splitlines():
        m = _LINE.match(line)
        if m is None or "resumed>" in line:
            continue
        out.append((m["pid"], m["name"], line.split(None, 1)[1]))
    return out


def _is_write(name: str, line: str) -> bool:
    if name in ("openat", "open"):
        return _OPEN_WRITES.search(line) is not None
    return True


def write_points(
    argv: Sequence[str], env: Mapping[str, str] | None = None, cwd: str | os.PathLike | None = None
) -> list[KillPoint]:
    """Every write-type call the command's own process makes in one clean run, in order. The run
    changes its input: give it a scratch copy."""
    with tempfile.TemporaryDirectory(prefix="ktool-kill-points-") as tmp:
        trace_file = Path(tmp) / "trace"
        extra = ["-e", "trace=" + ",".join(WRITE_SYSCALLS), "--", *argv]
        done = subprocess.run(
            _strace_argv(trace_file, extra), env=_env(env), cwd=cwd, capture_output=True, text=True
        )
        if done.returncode != 0:
            raise KillPointError(f"the clean run failed (exit {done.returncode}): {done.stderr.strip()}")
        calls = _calls(trace_file.read_text())
    if not calls:
        return []
    main = calls[0][0]
    seen: dict[str, int] = {}
    points = []
    for pid, name, line in calls:
        if pid != main:
            continue
        seen[name] = seen.get(name, 0) + 1
        if _is_write(name, line):
            points.append(KillPoint(name, seen[name], line))
    return points


def run_killed(
    argv: Sequence[str],
    point: KillPoint,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike | None = None,
    timeout: float = 120,
) -> KilledRun:
    """Run the command and SIGKILL it as it enters `point`'s call; KillPointError when it was not killed
    there (it finished, or the call killed differs from the one the clean run made). A run whose calls
    before the point differed from the clean run's is run once more: which thread imports a module
    first (the main one, or a client's), or a directory on sys.path another process changed, can move
    the main thread's count of a call by one (CI run 8: an openat)."""
    try:
        return _killed_once(argv, point, env, cwd, timeout)
    except KillPointError as exc:
        if "the runs differ" not in str(exc):
            raise
        return _killed_once(argv, point, env, cwd, timeout)


def _killed_once(
    argv: Sequence[str],
    point: KillPoint,
    env: Mapping[str, str] | None,
    cwd: str | os.PathLike | None,
    timeout: float,
) -> KilledRun:
    with tempfile.TemporaryDirectory(prefix="ktool-kill-run-") as tmp:
        trace_file = Path(tmp) / "trace"
        extra = [
            "-e",
            f"trace={point.syscall}",
            "-e",
            f"inject={point.syscall}:signal=KILL:when={point.nth}",
            "--",
            *argv,
        ]
        done = subprocess.run(
            _strace_argv(trace_file, extra),
            env=_env(env),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        trace = trace_file.read_text()
    # strace ends with the tracee's signal: -9 from subprocess, 137 through a shell; the killed call is
    # the last one traced, without a result.
    killed = [line for line in trace.splitlines() if line.rstrip().endswith("= ?")]
    if done.returncode not in (-9, 137) or not killed:
        raise KillPointError(f"not killed at {point} (exit {done.returncode}): {done.stderr.strip()}")
    call = killed[-1].split(None, 1)[1]
    if _args(call) != _args(point.call):
        raise KillPointError(f"killed at {call!r}, not at {point} (the runs differ)")
    return KilledRun(done.returncode, call, done.stdout, done.stderr)


def _args(call: str) -> str:
    """A call's shape: its name and flags, without its result, strings and numbers (paths, timestamps,
    lengths and fds differ between runs)."""
    call = call.rsplit(" = ", 1)[0].rstrip()
    call = re.sub(r'"(?:[^"\\]|\\.)*"(?:\.\.\.)?', '"…"', call)
    return re.sub(r"\b(?:0x[0-9a-f]+|\d+)\b", "N", call)


def neither_old_nor_new(
    state: Mapping[str, str], old: Mapping[str, str], new: Mapping[str, str], temporary: str = ".ktool"
) -> list[str]:
    """The names (in digests `{name: sha256}` of a tree after a kill, before the command and after a
    clean run) whose content is neither the old nor the new one: a torn file, or one gone or made too
    soon. Names containing `temporary` are left out (the rerun must remove those: check it)."""
    names = set(state) | set(old) | set(new)
    return sorted(n for n in names if temporary not in n and state.get(n) not in (old.get(n), new.get(n)))


def distinct_and_sampled(points: list[KillPoint], ci: int = 6) -> list[KillPoint]:
    """Every point in `tests/run.sh --exhaustive`; in CI the first call of each kind (system call and the
    kind of file it names: its suffix) plus a seeded sample of `ci` more, in their order. A kill site
    that differs from its neighbours only by which file of a kind it writes is covered by its kind."""
    from tests.support.sweep import exhaustive, sample

    if exhaustive():
        return list(points)
    seen: set[tuple[str, str]] = set()
    first: list[int] = []
    for i, point in enumerate(points):
        kind = (point.syscall, _suffix_named(point.call))
        if kind not in seen:
            seen.add(kind)
            first.append(i)
    rest = [i for i in range(len(points)) if i not in set(first)]
    return [points[i] for i in sorted({*first, *sample(rest, ci)})]


def _suffix_named(call: str) -> str:
    """The suffix of the first quoted path in a traced call (`.log`, `.index`, `.json`…), or ''."""
    start = call.find('"')
    end = call.find('"', start + 1)
    if start < 0 or end < 0:
        return ""
    name = call[start + 1 : end].rsplit("/", 1)[-1]
    return name[name.rfind(".") :] if "." in name else ""
