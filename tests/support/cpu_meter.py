"""Where CI time goes, as CPU and not wall: a pytest plugin, on when ``$KTOOL_TEST_CPU`` names a directory.

The machine CI and the developers run on is shared, so a test's wall time says as much about the others'
load as about the test. CPU time does not: per test phase (setup, call, teardown) this records the wall
time and the CPU of the whole process tree pytest heads -- pytest itself and its reaped children
(``getrusage``), plus every live descendant read from ``/proc/PID/stat`` (the JVMs a fixture started:
ZooKeeper, the brokers, Spark's master and workers). A descendant is counted live while it runs and in
``RUSAGE_CHILDREN`` once reaped, so the total only grows; a JVM reaped by a process that is not ours is in
that process's ``cutime``. One line per phase goes to ``$KTOOL_TEST_CPU/<lane>.tsv`` (``$KTOOL_LANE``,
or the process id), and the session's totals to its last line: whole-lane CPU over the cores is the floor
under the lane's wall time. ``python -m tests.support.cpu_meter DIR`` sums the files it wrote.
"""

from __future__ import annotations

import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

_TICK = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Sample:
    """Wall clock and CPU seconds (user + system) of pytest's process tree at one moment."""

    wall: float
    own: float  # pytest and its reaped children
    live: float  # descendants still running (or not yet reaped), with their own reaped children

    @property
    def cpu(self) -> float:
        return self.own + self.live


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc (one pass over it)."""
    tree: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def _stat_cpu(pid: int) -> float:
    """utime + stime + cutime + cstime of one process, in seconds (0 if it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat[stat.rindex(")") + 2 :].split()
    return sum(int(v) for v in fields[11:15]) / _TICK


def sample() -> Sample:
    usage = (resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN))
    own = sum(u.ru_utime + u.ru_stime for u in usage)
    tree = _children()
    live, stack = 0.0, list(tree.get(os.getpid(), ()))
    while stack:
        pid = stack.pop()
        live += _stat_cpu(pid)
        stack.extend(tree.get(pid, ()))
    return Sample(time.monotonic(), own, live)


class CpuMeter:
    """Writes one line per test phase: nodeid, phase, wall s, CPU s (tree), and the session's totals."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.start = sample()
        self.file = out.open("w", buffering=1)  # line by line: a lane killed keeps what it measured
        self.file.write("nodeid\tphase\twall_s\tcpu_s\n")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_setup(self, item):
        yield from self._measure(item, "setup")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_call(self, item):
        yield from self._measure(item, "call")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_teardown(self, item):
        yield from self._measure(item, "teardown")

    def _measure(self, item, phase: str):
        before = sample()
        yield
        after = sample()
        self.file.write(
            f"{item.nodeid}\t{phase}\t{after.wall - before.wall:.3f}\t{after.cpu - before.cpu:.3f}\n"
        )

    def pytest_sessionfinish(self) -> None:
        end = sample()
        self.file.write(f"TOTAL\tsession\t{end.wall - self.start.wall:.3f}\t{end.cpu - self.start.cpu:.3f}\n")
        self.file.close()


# The metering process's id, set for its descendants: a pytest a test starts (as
# tests/modern/test_fetch_failure.py does) inherits $KTOOL_TEST_CPU and $KTOOL_LANE, and once opened the
# lane's file afresh, wiping what the lane had measured (its CPU is in the lane's tree already). Below a
# metered run only its own xdist workers are metered.
_METERED = "KTOOL_TEST_CPU_METERED"


def _nested(config) -> bool:
    """Started under a metered run, and not as that run's xdist worker (`workerinput`: xdist's worker)."""
    metered = os.environ.get(_METERED)
    return bool(metered) and not (hasattr(config, "workerinput") and str(os.getppid()) == metered)


def pytest_configure(config) -> None:
    where = os.environ.get("KTOOL_TEST_CPU")
    if not where or _nested(config):
        return
    os.environ[_METERED] = str(os.getpid())
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    lane = os.environ.get("KTOOL_LANE") or str(os.getpid())
    name = f"{lane}-{worker}" if worker else lane
    if worker is None and config.pluginmanager.hasplugin("dsession"):
        name += "-controller"  # xdist's controller: its workers are its children, counted in its tree
    Path(where).mkdir(parents=True, exist_ok=True)
    config.pluginmanager.register(CpuMeter(Path(where) / f"{name}.tsv"), "ktool-cpu-meter")


def summarise(where: Path, top: int = 30) -> str:
    """Each file's session wall and CPU, and the ``top`` phases by CPU across them."""
    lines, phases = [], []
    for path in sorted(where.glob("*.tsv")):
        for row in path.read_text().splitlines()[1:]:
            nodeid, phase, wall, cpu = row.split("\t")
            if nodeid == "TOTAL":
                lines.append(f"{path.stem}: wall {float(wall) / 60:.1f} min, CPU {float(cpu) / 60:.1f} min")
            else:
                phases.append((float(cpu), float(wall), phase, nodeid))
    phases.sort(reverse=True)
    lines.append(f"top {top} phases by CPU (cpu s, wall s):")
    lines += [f"{cpu:8.1f} {wall:8.1f} {phase:8} {nodeid}" for cpu, wall, phase, nodeid in phases[:top]]
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarise(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 30))
