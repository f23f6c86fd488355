"""ktool run in-process as another user (tests run as root; Kafka writes some files mode 0400, which
only their owner reads): a forked child warms ktool's imports on `warm` (the interpreter's own files may
be out of that user's reach), drops to the user, runs the command and hands back what it printed."""

from __future__ import annotations

import gc
import json
import os
import pwd
from dataclasses import dataclass

import pytest

from tests.support.cli import run_ktool


@dataclass(frozen=True)
class UserRun:
    exit_code: int
    stdout: str
    stderr: str


def run_ktool_as(user: str, args: list[str], warm: list[str]) -> UserRun:
    """`ktool ARGS` as `user`, after the same command ran as root on `warm` (another copy)."""
    if os.geteuid() != 0:
        pytest.skip("switching users needs root")
    entry = pwd.getpwnam(user)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            os.close(read_fd)
            gc.freeze()  # the parent's objects (librdkafka clients among them) are never collected here
            run_ktool(*warm)
            os.setgroups([])
            os.setgid(entry.pw_gid)
            os.setuid(entry.pw_uid)
            result = run_ktool(*args)
            out = {"exit_code": result.exit_code, "stdout": result.stdout, "stderr": result.stderr}
            os.write(write_fd, json.dumps(out).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0 and data, f"the run as {user} failed"
    return UserRun(**json.loads(data))
