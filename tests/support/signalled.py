"""A Python program run in a child that prints "ready" when set, then is sent a signal: how it ended, and
how long after the signal (the interrupt tests of ktool's deadline)."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from subprocess import PIPE


@dataclass(frozen=True)
class Ended:
    returncode: int
    stdout: str  # what it printed after "ready"
    stderr: str
    took: float  # seconds from the signal to its end


def signalled(code: str, signum: int, timeout: float = 20) -> Ended:
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=PIPE, stderr=PIPE, text=True)
    try:
        assert proc.stdout.readline() == "ready\n"
        sent = time.monotonic()
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=timeout)
        took = time.monotonic() - sent
    finally:
        proc.kill()
    return Ended(proc.returncode, out, err, took)
