"""A Spark standalone cluster on loopback, started from the pyspark install itself (tests, bench).

One master and N workers, each a `spark-class org.apache.spark.deploy.…` JVM with its own ports, work
directory and log file under one temporary directory; ready when the master's web UI (`/json/`) lists
every worker ALIVE (no fixed sleep); stopped by process id. Each worker runs in its own process group,
so killing a worker (SIGKILL) takes its executor and that executor's Python workers with it, as a
machine going away would.

    with StandaloneCluster(workers=2) as cluster:
        subprocess.run(["ktool", "scan", "--master", cluster.url, …])
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from tests.support.servers import free_port, wait_for_port


class ClusterError(RuntimeError):
    pass


def spark_home() -> Path:
    import pyspark

    return Path(pyspark.__file__).resolve().parent


class StandaloneCluster:
    def __init__(self, workers: int = 2, cores: int = 1, memory: str = "1g", root: str | None = None) -> None:
        self.root = Path(root or tempfile.mkdtemp(prefix="ktool-spark-cluster-"))
        self.n_workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.master: subprocess.Popen | None = None
        self.workers: list[subprocess.Popen] = []

    # -- processes ---------------------------------------------------------------------------------

    def _env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
        env["SPARK_HOME"] = str(spark_home())
        env["SPARK_DAEMON_MEMORY"] = "256m"
        # the master and the workers (not the executors): C1 and the serial collector, as the test brokers
        # (they mostly wait; C2's compiler threads are CPU spent at their start; issue 51)
        env["SPARK_DAEMON_JAVA_OPTS"] = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
        env["SPARK_LOCAL_IP"] = "127.0.0.1"
        env["SPARK_LOG_DIR"] = str(self.root)
        # Executors start Python workers with the driver's PYSPARK_PYTHON, found on this PATH: the
        # interpreter running the tests first (it has ktool's dependencies; ktool itself is shipped).
        env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), env.get("PATH", "")])
        return env

    def _spawn(self, name: str, cls: str, *args: str) -> subprocess.Popen:
        log = open(self.root / f"{name}.log", "ab")  # noqa: SIM115 (the JVM keeps it)
        cmd = [str(spark_home() / "bin" / "spark-class"), cls, *args]
        try:
            return subprocess.Popen(
                cmd,
                env=self._env(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: its executors go with it
                cwd=self.root,
            )
        finally:
            log.close()

    def start(self) -> StandaloneCluster:
        self.master = self._spawn(
            "master",
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--webui-port",
            str(self.ui_port),
        )
        wait_for_port("127.0.0.1", self.ui_port, timeout=90, proc=self.master)
        for i in range(self.n_workers):
            self.start_worker(i)
        self.wait_for_workers(self.n_workers)
        return self

    def start_worker(self, i: int) -> subprocess.Popen:
        work = self.root / f"worker{i}"
        work.mkdir(exist_ok=True)
        proc = self._spawn(
            f"worker{i}",
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            "127.0.0.1",
            "--port",
            str(free_port()),
            "--webui-port",
            str(free_port()),
            "--cores",
            str(self.cores),
            "--memory",
            self.memory,
            "--work-dir",
            str(work),
            self.url,
        )
        if i < len(self.workers):
            self.workers[i] = proc
        else:
            self.workers.append(proc)
        return proc

    def state(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        return sum(1 for w in self.state().get("workers", []) if w.get("state") == "ALIVE")

    def wait_for_workers(self, n: int, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.master is not None and self.master.poll() is not None:
                raise ClusterError(
                    f"the master exited ({self.master.returncode}); see {self.root}/master.log"
                )
            try:
                if self.alive_workers() >= n:
                    return
            except (OSError, ValueError):
                # Not up yet, or up but not ready: Jetty listens on the UI port before the master's
                # handlers are attached, and meanwhile /json/ answers with an HTML page (seen under load).
                pass
            time.sleep(0.2)
        raise ClusterError(f"{n} workers did not register within {timeout:.0f} s; logs in {self.root}")

    # -- faults --------------------------------------------------------------------------------------

    def python_workers_of(self, i: int) -> list[int]:
        """Pids of the Python processes under worker `i` (its executor's Python workers): tasks ran or
        run there."""
        group = self.workers[i].pid
        out = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if os.getpgid(int(entry.name)) != group:
                    continue
                cmd = (entry / "cmdline").read_bytes()
            except (OSError, ProcessLookupError):
                continue
            if b"pyspark" in cmd and b"java" not in cmd.split(b"\0")[0]:
                out.append(int(entry.name))
        return out

    def kill_worker(self, i: int) -> None:
        """SIGKILL worker `i`, its executor and their Python workers (its process group)."""
        with _gone():
            os.killpg(self.workers[i].pid, signal.SIGKILL)
        self.workers[i].wait(30)

    def kill_master(self) -> None:
        assert self.master is not None
        with _gone():
            os.killpg(self.master.pid, signal.SIGKILL)
        self.master.wait(30)

    # -- stop ----------------------------------------------------------------------------------------

    def stop(self, keep_logs: bool = False) -> None:
        for proc in [*self.workers, self.master]:
            if proc is None or proc.poll() is not None:
                continue
            with _gone():
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                with _gone():
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(10)
        if not keep_logs:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> StandaloneCluster:
        try:
            return self.start()
        except BaseException:
            self.stop(keep_logs=True)
            raise

    def __exit__(self, *exc) -> None:
        self.stop(keep_logs=exc[0] is not None)


class _gone:
    """Ignore a process that has exited already."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind, value, tb) -> bool:
        return kind is not None and issubclass(kind, ProcessLookupError)
