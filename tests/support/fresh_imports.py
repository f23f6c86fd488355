"""Which modules a command imports from a fresh start, for many commands from one interpreter.

The start-up tests ask what `ktool ARGS` imports before it is done. A fresh interpreter per command
answers that at 0.2 s of CPU each (interpreter, site, `kafka_tools.cli.main`), most of it the same for
every command. Here one interpreter imports `kafka_tools.cli.main` -- the first thing each command did in
its own interpreter -- and nothing else, then forks a child per command: each child starts from that
same state, runs the command with stdout on a pipe, and reports its `sys.modules`. The parent uses only
what the interpreter had loaded before (`sys`, `os`, builtins): no module it imports could hide a
command's import of it (`json` for one). The child's stdin is /dev/null; its stderr is the caller's
(pytest shows it beside a failure).
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from dataclasses import dataclass

# The server: a request is one line, `repr((args, prefix))`; the answer one line, `repr((code, modules,
# stdout))` with the modules whose names start with `prefix` ('' for all). Builtins only.
_SERVER = r"""
import os, sys
from kafka_tools.cli.main import cli
answers = os.fdopen(os.dup(1), "w")
null = os.open(os.devnull, os.O_RDONLY)
while True:
    request = sys.stdin.readline()
    if not request:
        break
    args, prefix = eval(request)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_end)
        os.dup2(null, 0)
        os.dup2(write_end, 1)
        code = 0
        try:
            cli.main(args, prog_name="ktool")
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        except BaseException:
            code = -1
        try:
            sys.stdout.flush()
        except BaseException:
            pass
        mods = sorted(m for m in sys.modules if m.startswith(prefix))
        os.write(1, ("\0MODULES " + repr((code, mods)) + "\n").encode())
        os._exit(0)
    os.close(write_end)
    chunks = []
    while True:
        chunk = os.read(read_end, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    os.waitpid(pid, 0)
    out, _, result = b"".join(chunks).rpartition(b"\0MODULES ")
    code, mods = eval(result) if result else (-2, [])
    answers.write(repr((code, mods, out.decode(errors="replace"))) + "\n")
    answers.flush()
"""


@dataclass(frozen=True)
class Run:
    """One command's exit code, the modules it had imported when done, and what it wrote to stdout."""

    code: int
    modules: frozenset[str]
    stdout: str


class FreshImports:
    """One server interpreter, a forked child per command (see the module's docstring)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SERVER],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )

    def run(self, args: list[str], prefix: str = "") -> Run:
        """`ktool ARGS` in a child; the modules whose names start with `prefix`."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(repr((list(args), prefix)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the start-up server died (exit {self.proc.poll()}) running {args}"
        code, modules, stdout = ast.literal_eval(line)
        assert code >= 0, f"{args}: {'no answer' if code == -2 else 'an exception other than SystemExit'}"
        return Run(code, frozenset(modules), stdout)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def command_env() -> dict[str, str]:
    """The caller's environment without what changes a command's imports (pure Python, colour)."""
    env = {k: v for k, v in os.environ.items() if k not in ("KTOOL_PURE_PYTHON", "FORCE_COLOR")}
    env["NO_COLOR"] = "1"
    return env
