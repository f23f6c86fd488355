"""Starting Spark for `ktool scan`: quietly, on the machine's Java, and failing with one clear line.

Before anything is launched: pyspark must import, a Java new enough for it must be where Spark's own
launcher looks (`$JAVA_HOME/bin/java`, else `java` on PATH), and a cluster master must answer on its
port. The JVM's output (Spark's log4j noise, the executors' Python stderr) goes to a log file unless
`verbose`; the file is named in every error and removed after a clean run.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import warnings
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from kafka_tools.errors import InputError, KtoolError, UsageError, os_reason
from kafka_tools.pipeline.shipped import built_extension

DEFAULT_MASTER = "local[*]"
PROBE_TIMEOUT = 5.0
JOB_GROUP = "ktool-scan"
# HotSpot's C2 compiler spent ~2 of the JVM's 2.9 CPU s of a 256 MiB `scan --out` under local[1], compiling
# code that runs for seconds (bench/README.md, "scan --out at the decoder's speed"); C1 alone: 0.3.
LIGHT_JIT = "-XX:TieredStopAtLevel=1"
_LOCAL = re.compile(r"local(\[(\*|\d+)(,\d+)?\])?$")


class MasterLost(InputError):
    """The cluster's master went away: stopping the SparkContext must not wait for it."""


@dataclass
class SparkSettings:
    master: str = DEFAULT_MASTER
    conf: dict[str, str] = field(default_factory=dict)
    verbose: bool = False
    executor_timeout: float = 120.0  # cluster masters: seconds to wait for a first executor
    app_name: str = "ktool scan"
    log_file: str | None = None  # --spark-log: Spark's log goes (and stays) there
    # The JVM only schedules and writes small tables (the Python tasks decode and write the large
    # ones): a local master's JVM then compiles with C1 only (LIGHT_JIT). See `start`.
    light_jvm: bool = False

    @property
    def is_local(self) -> bool:
        return bool(_LOCAL.match(self.master))


@dataclass
class SparkHandle:
    spark: object  # pyspark.sql.SparkSession
    master: str
    startup_seconds: float
    owned: bool  # started here (and stopped here); False: an active session was reused
    log_path: str | None = None
    shipped: str | None = None  # the zip of kafka_tools sent to a cluster's executors


def require_pyspark():
    try:
        import pyspark
    except ImportError:
        raise InputError(
            "pyspark is not installed: pip install 'pyspark[sql]>=4,<5' (Spark 4 runs on Java 17+)"
        ) from None
    return pyspark


# Libraries whose Python warnings are theirs to fix, not the user's to read (PySpark's FutureWarning
# about pandas >= 3 at import, py4j's, pandas' and pyarrow's deprecations).
_QUIET_MODULES = ("pyspark", "py4j", "pandas", "pyarrow")


def quiet_library_warnings() -> None:
    """Keep the Python warnings of Spark's libraries out of ktool's stderr (unless --verbose): stderr
    carries ktool's own diagnostics, one line each."""
    for module in _QUIET_MODULES:
        warnings.filterwarnings("ignore", module=rf"{module}(\.|$)")
    # PySpark logs a failed query's error with its stack to stderr itself; ktool says it in one line.
    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger", "pyspark", "py4j"):
        logging.getLogger(name).disabled = True


def java_command() -> str:
    """The java Spark's launcher will run, checked to exist and to be new enough for this pyspark."""
    pyspark = require_pyspark()
    home = os.environ.get("JAVA_HOME")
    if home:
        java = os.path.join(home, "bin", "java")
        if not os.access(java, os.X_OK):
            raise InputError(
                f"Java not found: JAVA_HOME={home} has no bin/java (Spark needs Java 17 or newer)"
            )
    else:
        found = shutil.which("java")
        if found is None:
            raise InputError("Java not found: Spark needs Java 17 or newer (install it, or set JAVA_HOME)")
        java = found
    needed = 17 if int(pyspark.__version__.split(".")[0]) >= 4 else 8
    major = java_major_version(java)
    if major is not None and major < needed:
        raise InputError(f"{java} is Java {major}: Spark {pyspark.__version__} needs Java {needed} or newer")
    return java


def java_major_version(java: str) -> int | None:
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InputError(f"{java} does not run: {exc}") from None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if not match:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def check_master(master: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Fail fast on a master URL Spark would wait on: nothing listening, or yarn without a config."""
    local = _LOCAL.match(master)
    if local:
        if local.group(2) == "0":
            raise UsageError(f"--master {master}: a local master needs at least one thread (local[1])")
        return
    if master.startswith("spark://"):
        endpoints = [_host_port(hp, 7077) for hp in master[len("spark://") :].split(",")]
    elif master.startswith("k8s://"):
        url = master[len("k8s://") :]
        parts = urlsplit(url if "://" in url else f"https://{url}")
        endpoints = [(parts.hostname or "", parts.port or (80 if parts.scheme == "http" else 443))]
    elif master == "yarn":
        if not (os.environ.get("HADOOP_CONF_DIR") or os.environ.get("YARN_CONF_DIR")):
            raise InputError(
                "--master yarn needs HADOOP_CONF_DIR or YARN_CONF_DIR to find the ResourceManager"
            )
        return
    else:
        raise UsageError(
            f"--master {master}: expected local[N], local[*], spark://HOST:PORT, yarn or k8s://URL"
        )
    reasons = []
    for host, port in endpoints:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            reasons.append(f"{host}:{port}: {os_reason(exc)}")
    raise InputError(f"Spark master {master} unreachable ({'; '.join(reasons)})")


def _host_port(text: str, default: int) -> tuple[str, int]:
    host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    try:
        return host.strip("[]"), int(port) if port else default
    except ValueError:
        raise UsageError(f"--master: bad port in {text!r}") from None


@contextmanager
def spark_session(settings: SparkSettings) -> Iterator[SparkHandle]:
    """A SparkSession for the scan: the active one if there is one (a notebook, the tests), else one
    started here and stopped on the way out."""
    if not settings.verbose:
        quiet_library_warnings()  # before pyspark is imported: it warns as it loads
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        yield SparkHandle(active, active.sparkContext.master, 0.0, owned=False)
        return
    java_command()
    check_master(settings.master)
    handle = start(settings)
    keep_log = bool(settings.log_file)  # else Spark's log is kept only where a message points to it
    stop_timeout = None
    try:
        yield handle
    except MasterLost:
        stop_timeout = 10.0  # stopping would wait for the master to unregister the application
        keep_log = bool(handle.log_path)
        raise
    except KtoolError as exc:
        keep_log = keep_log or (bool(handle.log_path) and handle.log_path in str(exc))
        raise
    except KeyboardInterrupt:
        raise
    except BaseException:
        keep_log = bool(handle.log_path)
        if keep_log:
            print(f"ktool: Spark's log: {handle.log_path}", file=sys.stderr)
        raise
    finally:
        _stop(handle.spark, stop_timeout)
        from kafka_tools.pipeline.output import discard_leftovers

        discard_leftovers()
        with _suppress():
            if handle.shipped:
                os.unlink(handle.shipped)
            if handle.log_path and not settings.verbose and not keep_log:
                os.unlink(handle.log_path)


def _stop(spark, timeout: float | None) -> None:
    """spark.stop(), waiting at most `timeout` seconds (None: as long as it takes)."""
    if timeout is None:
        spark.stop()
        return
    thread = threading.Thread(target=lambda: _quietly(spark.stop), name="ktool-spark-stop", daemon=True)
    thread.start()
    thread.join(timeout)


def _quietly(call: Callable[[], object]) -> None:
    try:
        call()
    except Exception:  # noqa: BLE001 - Spark is going down anyway
        pass


def spark_conf(settings: SparkSettings) -> dict[str, str]:
    """The settings `start` gives Spark: ktool's defaults, then the user's --conf over them. (For a
    local master, sets the workers' Python and path in this environment, which the JVM inherits.)"""
    defaults = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        "spark.sql.adaptive.enabled": "true",
    }
    python = worker_python(settings)
    if python:
        defaults["spark.pyspark.python"] = python
    if settings.is_local:
        _local_worker_env()
        defaults.update({"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"})
        if settings.light_jvm:  # a user's spark.driver.extraJavaOptions replaces it
            defaults["spark.driver.extraJavaOptions"] = LIGHT_JIT
    return {**defaults, **settings.conf}


def start(settings: SparkSettings) -> SparkHandle:
    """Launch the JVM and the SparkContext (the caller has checked Java and the master)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    t0 = time.perf_counter()
    conf = SparkConf().setMaster(settings.master).setAppName(settings.app_name)
    for key, value in spark_conf(settings).items():
        conf.set(key, value)
    log_path = None
    popen: dict = {}
    if settings.log_file:
        log_path = os.path.abspath(settings.log_file)
    elif not settings.verbose:
        fd, log_path = tempfile.mkstemp(prefix="ktool-spark-", suffix=".log")
        os.close(fd)
    if log_path:
        try:
            log = open(log_path, "ab")  # noqa: SIM115 (the JVM keeps writing to it after we return)
        except OSError as exc:
            raise InputError(f"--spark-log {log_path}: {os_reason(exc)}") from None
        popen = {"stdout": log, "stderr": log}
    try:
        gateway = launch_gateway(conf, popen_kwargs=popen)
        sc = SparkContext(conf=conf, gateway=gateway)
    except Exception as exc:  # pyspark raises its own runtime errors, py4j its own: all mean "no Spark"
        raise InputError(f"Spark did not start: {_first_line(exc, log_path)}{_see(log_path)}") from None
    except KeyboardInterrupt:
        if log_path and not settings.log_file:
            os.unlink(log_path)
        raise
    sc.setLogLevel("INFO" if settings.verbose else "WARN")
    if not settings.verbose:
        # py4j logs through the root logger (a traceback per broken call when a scan is interrupted).
        logging.getLogger().addHandler(logging.NullHandler())
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _interrupt(sc, signal.getsignal(signal.SIGINT)))
    spark = SparkSession(sc)
    handle = SparkHandle(spark, settings.master, 0.0, owned=True, log_path=log_path)
    try:
        if not settings.is_local:
            handle.shipped = package_zip()
            sc.addPyFile(handle.shipped)
            extension = built_extension()
            if extension:
                sc.addFile(extension)
            wait_for_executors(sc, settings.executor_timeout, settings.master, log_path)
    except BaseException:
        spark.stop()
        raise
    handle.startup_seconds = time.perf_counter() - t0
    return handle


def _interrupt(sc, previous):
    """Ctrl-C: cancel Spark's jobs from another thread and interrupt the main one. (PySpark's own handler
    cancels them on the main thread, in the middle of its py4j call: a cascade of tracebacks.) The
    handler before it (ktool's own, cli/interrupts.py) then runs as it would have: it raises, defers
    inside a section that must not be cut, and arms the deadline that ends the process 1 s after the
    signal whatever Spark's clean-up waits for."""

    def cancel() -> None:
        try:
            sc.cancelAllJobs()
        except Exception:  # noqa: BLE001 - Spark may be stopping already; the interrupt goes on anyway
            pass

    def handler(signum, frame) -> None:
        threading.Thread(target=cancel, name="ktool-cancel", daemon=True).start()
        if callable(previous):
            return previous(signum, frame)
        raise KeyboardInterrupt

    return handler


def worker_python(settings: SparkSettings) -> str | None:
    """The interpreter Spark's Python workers run, made effective. PySpark takes it from
    `$PYSPARK_PYTHON` when the SparkContext starts (default `python3` on the workers' PATH);
    `spark.pyspark.python` only reaches it through spark-submit, which ktool does not use. So: the
    user's `--conf spark.pyspark.python`, else their `$PYSPARK_PYTHON`, else for a local master this
    very interpreter (the `python3` on PATH may be any Python, without ktool's dependencies: ktool run
    from a virtualenv that is not activated, or from pipx); a cluster's executors keep `python3` on
    their own PATH unless told otherwise."""
    chosen = settings.conf.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON")
    if not chosen and settings.is_local:
        chosen = sys.executable
    if chosen:
        os.environ["PYSPARK_PYTHON"] = chosen
    return chosen


def _local_worker_env() -> None:
    """Python workers of a local master are forked by the JVM, which inherits this environment: put
    the directory holding `kafka_tools` first on their path, so they run this very code (a source
    checkout too), with its C extension."""
    root = str(Path(__file__).resolve().parents[2])
    current = os.environ.get("PYTHONPATH", "")
    if root not in current.split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (root, current) if p)


def package_zip() -> str:
    """kafka_tools as a zip of its Python sources, for executors on other machines (the optional C
    extension is left out: it was built for this machine; the pure-Python decoder stands in)."""
    pkg = Path(__file__).resolve().parents[1]
    fd, path = tempfile.mkstemp(prefix="kafka_tools-", suffix=".zip")
    os.close(fd)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for f in sorted(pkg.rglob("*.py")):
            if "__pycache__" not in f.parts:
                zf.write(f, f.relative_to(pkg.parent).as_posix())
    return path


def wait_for_executors(sc, timeout: float, master: str, log_path: str | None) -> None:
    """A cluster with no worker to give accepts the job and waits forever: give it `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sc._jsc.sc().getExecutorMemoryStatus().size() > 1:  # the driver counts as one
            return
        time.sleep(0.5)
    raise InputError(f"no executor joined from {master} within {timeout:.0f} s{_see(log_path)}")


def _first_line(exc: BaseException, log_path: str | None) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    last = _last_log_line(log_path)
    return f"{line} ({last})" if last else line


def _last_log_line(log_path: str | None) -> str | None:
    if not log_path:
        return None
    try:
        lines = [ln.strip() for ln in Path(log_path).read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return None
    errors = [ln for ln in lines if "Exception" in ln or "Error" in ln]
    return (errors or lines or [None])[-1]


def _see(log_path: str | None) -> str:
    return f"; Spark's log: {log_path}" if log_path else ""


@contextmanager
def _suppress():
    try:
        yield
    except OSError:
        pass
