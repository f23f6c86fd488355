"""Real modern Kafka (3.9, 4.x) on 127.0.0.1: the jars from Maven Central, brokers started with ``java -cp``.

Plain classes and functions, wrapped in session fixtures by tests/conftest.py:

* :func:`kafka_libs` fetches a release's jars once (``mvn dependency:copy-dependencies`` on
  ``tests/support/kafka_modern/pom.xml``) into ``$KTOOL_CACHE/kafka-<version>/libs``; a second run
  fetches nothing. Concurrent callers are serialised by a lock file, the directory moved into place
  whole, so a half-fetched cache is never used. ``$KTOOL_MAVEN_ARGS`` adds Maven options (a mirror's
  settings, ``-o`` offline).
* :class:`ModernCluster` starts KRaft (one combined controller+broker, or one controller and N
  brokers; the storage formatted first with ``StorageTool``) or, for 3.9, ZooKeeper mode against a
  given ZooKeeper. Free ports, 127.0.0.1 only; ready when every broker answers a Metadata request;
  ``stop()`` stops and reaps every process. Each node writes its own log to ``<node>/server.log``.
* :func:`run_tool` runs one of Kafka's own tools (the oracles) from the same jars, by a short name
  mapped to the class that release keeps it in.
"""

from __future__ import annotations

import base64
import fcntl
import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
import zipfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.servers import ServerError, _stop_process, _tail, cache_dir, free_port

POM = Path(__file__).with_name("kafka_modern") / "pom.xml"
HOST = "127.0.0.1"


@dataclass(frozen=True)
class Release:
    """One Kafka release the suite runs, and where that release keeps each tool."""

    version: str
    tools: Mapping[str, str]

    @property
    def major(self) -> int:
        return int(self.version.split(".", 1)[0])

    @property
    def profile(self) -> str:
        """The pom's profile: the logging backend that release ships (log4j2 from 4.0, reload4j before)."""
        return "kafka4" if self.major >= 4 else "kafka3"

    @property
    def artifact(self) -> str:
        return f"org.apache.kafka:kafka_2.13:{self.version}"


_COMMON_TOOLS = {
    "StorageTool": "kafka.tools.StorageTool",
    "GetOffsetShell": "org.apache.kafka.tools.GetOffsetShell",
    "TransactionsCommand": "org.apache.kafka.tools.TransactionsCommand",
    "ConsumerGroupCommand": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "LogDirsCommand": "org.apache.kafka.tools.LogDirsCommand",
    "LeaderElectionCommand": "org.apache.kafka.tools.LeaderElectionCommand",
    "ProducerPerformance": "org.apache.kafka.tools.ProducerPerformance",  # Java's transactional producer
    "TopicCommand": "org.apache.kafka.tools.TopicCommand",
    "MetadataQuorumCommand": "org.apache.kafka.tools.MetadataQuorumCommand",
    "ReassignPartitionsCommand": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "DelegationTokenCommand": "org.apache.kafka.tools.DelegationTokenCommand",
}
KAFKA_4 = Release(
    "4.4.0",
    {
        **_COMMON_TOOLS,
        "DumpLogSegments": "org.apache.kafka.tools.DumpLogSegments",
        "ConfigCommand": "org.apache.kafka.tools.ConfigCommand",
    },
)
KAFKA_3 = Release(
    "3.9.2",
    {
        **_COMMON_TOOLS,
        "DumpLogSegments": "kafka.tools.DumpLogSegments",
        "ConfigCommand": "kafka.admin.ConfigCommand",
        "MetadataShell": "org.apache.kafka.shell.MetadataShell",
    },
)
RELEASES = {release.version: release for release in (KAFKA_4, KAFKA_3)}


# The client compiler only: a broker restarted several times in one test starts in about 3/4 of the time
# (17 s against 23 s measured on 2 busy cores); a test that measures throughput should not use it.
FAST_START = ("-XX:TieredStopAtLevel=1",)


class FetchError(ServerError):
    """A release's jars could not be fetched (no network, no Maven, an unknown version)."""


# --------------------------------------------------------------------------- the jars


def _complete(libs: Path, release: Release) -> bool:
    return (libs / f"kafka_2.13-{release.version}.jar").is_file() and (libs / ".complete").is_file()


def kafka_libs(release: Release) -> Path:
    """The directory of every jar ``release`` needs, fetched with Maven the first time."""
    home = cache_dir() / f"kafka-{release.version}"
    libs = home / "libs"
    if _complete(libs, release):
        return libs
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _complete(libs, release):
            return libs
        if shutil.which("mvn") is None:
            raise FetchError(f"{release.artifact}: mvn is not installed (apt-get install maven)")
        work = Path(tempfile.mkdtemp(prefix=".libs-", dir=home))
        try:
            cmd = [
                "mvn",
                "-q",
                "-B",
                "-Dstyle.color=never",
                *shlex.split(os.environ.get("KTOOL_MAVEN_ARGS", "")),
                "-f",
                str(POM),
                f"-Dkafka.version={release.version}",
                f"-P{release.profile}",
                "dependency:copy-dependencies",
                f"-DoutputDirectory={work}",
            ]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=home)
            if proc.returncode != 0 or not (work / f"kafka_2.13-{release.version}.jar").is_file():
                errors = [line for line in (proc.stdout + proc.stderr).splitlines() if "[ERROR]" in line]
                reason = errors[0].replace("[ERROR] ", "") if errors else f"mvn exited {proc.returncode}"
                reason = re.sub(r"\x1b\[[0-9;]*m", "", reason)
                raise FetchError(f"{release.artifact} could not be fetched with Maven: {reason[:300]}")
            (work / ".complete").write_text(release.version + "\n")
            if libs.exists():  # a broken earlier attempt
                shutil.rmtree(libs)
            os.replace(work, libs)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return libs


def classpath(release: Release) -> str:
    return str(kafka_libs(release) / "*")


GROUP_MEMBER = Path(__file__).resolve().parent / "kafka_modern" / "clients" / "GroupMember.java"


def compiled(release: Release, source: Path) -> Path:
    """The classes of one Java source file compiled against ``release``'s jars: once per source text and
    release, kept in the cache beside the jars (a javac run is seconds of CPU; several modules run the
    same client)."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    classes = kafka_libs(release).parent / "compiled" / f"{source.stem}-{digest}"
    if classes.is_dir():
        return classes
    classes.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{source.stem}-", dir=classes.parent))
    try:
        javac = ["javac", "-nowarn", "-cp", classpath(release), "-d", str(work), str(source)]
        subprocess.run(javac, check=True, timeout=300, capture_output=True)
        try:
            os.replace(work, classes)
        except OSError:  # another session compiled it meanwhile
            pass
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return classes


def group_member_command(release: Release) -> list[str]:
    """The command that runs GroupMember.java (a kafka-clients consumer of `release`), compiled once."""
    classes = compiled(release, GROUP_MEMBER)
    libs = classpath(release)
    return ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{classes}:{libs}", "GroupMember"]


# Kafka's LocalTieredStorage (a real RemoteStorageManager keeping the remote segments in a directory) is
# in the kafka-storage *test* jar. Maven Central has it for 3.9.x (the pom's kafka3 profile fetches it
# into the libs) and for 4.0.0-4.3.1, not for 4.4.0 (checked 2026-11-28 with `mvn dependency:get
# -Dartifact=org.apache.kafka:kafka-storage:4.4.0:jar:test`): a 4.4.0 broker loads 4.3.1's, a plugin of
# the public RemoteStorageManager interface (KIP-405). It names one internal class 4.4.0 moved,
# LogContext: kafka_modern/compat/LogContext.java, compiled beside it, gives it the old name.
LOCAL_TIERED_STORAGE = {4: "org.apache.kafka:kafka-storage:4.3.1:jar:test"}
COMPAT_SOURCES = Path(__file__).resolve().parent / "kafka_modern" / "compat"


def local_tiered_storage(release: Release) -> list[Path]:
    """What a broker of ``release`` needs beside its libs to load LocalTieredStorage (fetched with Maven
    and compiled the first time, cached beside the libs): nothing for 3.9, whose libs hold it."""
    artifact = LOCAL_TIERED_STORAGE.get(release.major)
    if artifact is None:
        return []
    _group, name, version, _type, classifier = artifact.split(":")
    home = cache_dir() / f"kafka-{release.version}" / "plugins"
    jar = home / f"{name}-{version}-{classifier}.jar"
    compat = home / "compat-classes"
    if jar.is_file() and compat.is_dir():
        return [jar, compat]
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not jar.is_file():
            if shutil.which("mvn") is None:
                raise FetchError(f"{artifact}: mvn is not installed (apt-get install maven)")
            cmd = ["mvn", "-q", "-B", *shlex.split(os.environ.get("KTOOL_MAVEN_ARGS", "")), "dependency:copy",
                   f"-Dartifact={artifact}", f"-DoutputDirectory={home}"]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=home)
            if proc.returncode != 0 or not jar.is_file():
                raise FetchError(f"{artifact} could not be fetched with Maven (mvn exited {proc.returncode})")
        if not compat.is_dir():
            work = Path(tempfile.mkdtemp(prefix=".compat-", dir=home))
            sources = [str(p) for p in sorted(COMPAT_SOURCES.glob("*.java"))]
            proc = subprocess.run(
                ["javac", "-nowarn", "-cp", classpath(release), "-d", str(work), *sources],
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            if proc.returncode != 0:
                shutil.rmtree(work, ignore_errors=True)
                raise FetchError(f"{COMPAT_SOURCES} did not compile: {proc.stderr.strip()[:300]}")
            os.replace(work, compat)
    return [jar, compat]
    home.mkdir(parents=True, exist_ok=True)
    if shutil.which("mvn") is None:
        raise FetchError(f"{artifact}: mvn is not installed (apt-get install maven)")
    with open(home / ".fetch.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not jar.is_file():
            cmd = ["mvn", "-q", "-B", *shlex.split(os.environ.get("KTOOL_MAVEN_ARGS", "")), "dependency:copy",
                   f"-Dartifact={artifact}", f"-DoutputDirectory={home}"]  # fmt: skip
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=home)
            if proc.returncode != 0 or not jar.is_file():
                raise FetchError(f"{artifact} could not be fetched with Maven (mvn exited {proc.returncode})")
    return [jar]


_TOOL_LOG4J2 = """\
status = error
appender.err.type = Console
appender.err.name = ERR
appender.err.target = SYSTEM_ERR
appender.err.layout.type = PatternLayout
appender.err.layout.pattern = %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.err.ref = ERR
"""
_TOOL_LOG4J = """\
log4j.rootLogger=WARN, err
log4j.appender.err=org.apache.log4j.ConsoleAppender
log4j.appender.err.Target=System.err
log4j.appender.err.layout=org.apache.log4j.PatternLayout
log4j.appender.err.layout.ConversionPattern=%p %m (%c)%n
"""
_SERVER_LOG4J2 = """\
status = error
appender.file.type = File
appender.file.name = FILE
appender.file.fileName = {log}
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""
_SERVER_LOG4J = """\
log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.kafka.request.logger=WARN
log4j.logger.org.apache.zookeeper=WARN
"""


def _logging_options(release: Release, config: Path) -> list[str]:
    if release.major >= 4:
        return [f"-Dlog4j2.configurationFile={config}"]
    return [f"-Dlog4j.configuration=file:{config}"]


def _tool_logging(release: Release) -> list[str]:
    """Tools log warnings to stderr only, so their stdout is the data a test parses."""
    config = cache_dir() / f"kafka-{release.version}" / "tools-logging.properties"
    text = _TOOL_LOG4J2 if release.major >= 4 else _TOOL_LOG4J
    if not config.is_file() or config.read_text() != text:
        tmp = config.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, config)
    return _logging_options(release, config)


def java_command(
    release: Release,
    main: str,
    args: Sequence[str],
    *,
    heap: str = "-Xmx256m",
    options: Sequence[str] = (),
    extra_classpath: Sequence[Path] = (),
) -> list[str]:
    return [
        "java",
        heap,
        "-Djava.awt.headless=true",
        "-Dfile.encoding=UTF-8",
        "-Djava.net.preferIPv4Stack=true",
        *options,
        "-cp",
        os.pathsep.join([classpath(release), *map(str, extra_classpath)]),
        main,
        *args,
    ]


def _class_archive(release: Release, main: str) -> Path:
    """Where the class-data archive of one tool's classes is kept: per release, tool and JDK (an archive
    a JVM did not write is ignored by it, silently with ``-Xlog:cds*=off``, but never rewritten)."""
    java = Path(shutil.which("java") or "java").resolve()
    jdk = java.parent.parent / "release"
    key = uuid.uuid5(uuid.NAMESPACE_URL, f"{java}:{jdk.read_text() if jdk.is_file() else ''}").hex[:12]
    return kafka_libs(release).parent / "class-archives" / f"{main}-{key}.jsa"


def _run_archived(
    release: Release,
    key: str,
    main: str,
    args: Sequence[str],
    *,
    timeout: float,
    extra_classpath: Sequence[Path] = (),
    **run,
) -> subprocess.CompletedProcess:
    """``java main args`` as a Kafka tool runs: C1, the serial collector, tools' logging on stderr, and
    its classes from the class-data archive (AppCDS) kept under ``key``, which its first run writes at exit
    (under a name of its own, then moved: two lanes may run the tool at once)."""
    archive = _class_archive(release, key)
    if archive.is_file():
        cds, written = [f"-XX:SharedArchiveFile={archive}"], None
    else:
        archive.parent.mkdir(parents=True, exist_ok=True)
        written = archive.with_name(f".{archive.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
        cds = [f"-XX:ArchiveClassesAtExit={written}"]
    options = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xlog:cds*=off", *cds, *_tool_logging(release)]
    cmd = java_command(release, main, args, options=options, extra_classpath=extra_classpath)
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=timeout, **run)
        if written is not None and proc.returncode == 0 and written.is_file():
            os.replace(written, archive)
    finally:
        if written is not None:
            written.unlink(missing_ok=True)
    return proc


def run_tool(
    release: Release, tool: str, args: Sequence[str], *, timeout: float = 300, check: bool = True
) -> subprocess.CompletedProcess:
    """Run Kafka's own ``tool`` (a key of ``release.tools``) from the release's jars; stdout is its data.

    Each tool's classes come from a class-data archive (AppCDS) its first run writes at exit: a tool run
    is mostly class loading, 1.4-1.6 s of CPU for DumpLogSegments on a small segment, 0.9-1.0 s from the
    archive (issue 51; hundreds of tool runs in CI). The output is the same byte for byte."""
    main = release.tools.get(tool)
    if main is None:
        raise ServerError(f"Kafka {release.version} has no {tool} in the fetched jars")
    proc = _run_archived(release, main, main, args, timeout=timeout, text=True, stdin=subprocess.DEVNULL)
    if check and proc.returncode != 0:
        raise ServerError(f"{tool} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-4000:]}")
    return proc


TOOL_BATCH = Path(__file__).resolve().parent / "kafka_modern" / "clients" / "ToolBatch.java"


def _tool_batch_jar(release: Release) -> Path:
    """ToolBatch.java's classes as a jar (a class-data archive leaves out classes from a directory)."""
    classes = compiled(release, TOOL_BATCH)
    jar = classes.with_suffix(".jar")
    if not jar.is_file():
        work = jar.with_name(f".{jar.name}.{os.getpid()}-{uuid.uuid4().hex[:8]}")
        with zipfile.ZipFile(work, "w") as archive:
            for path in sorted(classes.rglob("*.class")):
                archive.write(path, path.relative_to(classes).as_posix())
        os.replace(work, jar)
    return jar


def run_tool_batch(
    release: Release, tool: str, arg_lists: Sequence[Sequence[str]], *, timeout: float = 300
) -> list[str]:
    """Kafka's own ``tool`` run on each argument list in turn, in one JVM (ToolBatch.java: the tool's main
    as it is, its Exit.exit caught): each run's stdout, in order. A run that exits non-zero fails, as
    :func:`run_tool` does. The same output as one ``run_tool`` each, without a JVM's start each."""
    main = release.tools.get(tool)
    if main is None:
        raise ServerError(f"Kafka {release.version} has no {tool} in the fetched jars")
    lines = []
    for args in arg_lists:
        assert not any(c in arg for arg in args for c in "\t\n"), args
        lines.append("\t".join(args))
    stdin = "".join(f"{line}\n" for line in lines).encode()
    jar = _tool_batch_jar(release)  # its name holds the source's digest: so does the archive's
    proc = _run_archived(
        release,
        f"{jar.stem}-{main}",
        "ToolBatch",
        [main],
        timeout=timeout,
        extra_classpath=[jar],
        input=stdin,
    )
    stderr = proc.stderr.decode(errors="replace")
    if proc.returncode != 0:
        raise ServerError(f"{tool} (a batch of {len(lines)}) exited {proc.returncode}:\n{stderr[-4000:]}")
    outputs, data = [], proc.stdout
    for args in arg_lists:
        header, _, data = data.partition(b"\n")
        tag, code, size = header.decode().split(" ")
        assert tag == "#tool-batch", header
        if int(code) != 0:
            raise ServerError(f"{tool} {' '.join(args)} exited {code}:\n{stderr[-4000:]}")
        outputs.append(data[: int(size)].decode())
        data = data[int(size) :]
    return outputs


def random_cluster_id() -> str:
    """A cluster id as Kafka's ``Uuid.randomUuid()`` prints it (22 base64url characters, no leading '-')."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


# --------------------------------------------------------------------------- processes


@dataclass
class Node:
    """One Kafka process: its id, roles, directory (config, log dir, server.log) and ports."""

    node_id: int
    roles: str  # "broker,controller", "broker", "controller" or "zk-broker"
    workdir: Path
    port: int | None = None  # the PLAINTEXT (client) listener, None on a controller
    controller_port: int | None = None
    proc: subprocess.Popen | None = None
    listener_ports: dict[str, int] = field(default_factory=dict)  # further listeners (SSL, SASL_SSL, …)

    @property
    def log_dir(self) -> Path:
        return self.workdir / "data"

    @property
    def server_log(self) -> Path:
        return self.workdir / "server.log"

    @property
    def config(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles


BROKER_DEFAULTS: dict[str, str] = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "offsets.topic.replication.factor": "1",
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.replication.factor": "1",
    "transaction.state.log.min.isr": "1",
    "transaction.state.log.num.partitions": "1",
    "group.initial.rebalance.delay.ms": "0",
    "auto.create.topics.enable": "false",
    "controlled.shutdown.enable": "true",
    # Tests write records with fixed, years-old timestamps: the broker's time retention (checked every
    # 5 minutes) would delete them in the middle of a test. A test that wants retention sets it per topic.
    "log.retention.ms": "-1",
}


class ModernCluster:
    """Real Kafka ``release`` on 127.0.0.1 in ``workdir``.

    ``mode``: ``"combined"`` (one KRaft node, controller and broker), ``"split"`` (one KRaft controller
    and ``brokers`` brokers) or ``"zookeeper"`` (3.x only: ``brokers`` brokers against ``zookeeper``, a
    connect string with a chroot of its own). ``properties`` go into every broker's server.properties.
    ``listeners`` adds listeners beside PLAINTEXT on every broker (name -> security protocol: their
    ``listener.name.*`` settings go in ``properties``); ``format_args`` are given to KRaft's
    ``StorageTool format`` (e.g. ``--add-scram``); ``controller_properties`` go into every KRaft
    controller's (a combined node gets both); ``jvm_options`` go on every node's ``java`` command
    (``FAST_START``: a test that restarts its broker several times); ``node_properties`` go into one
    broker's, by node id (``{1: {"broker.rack": "r1"}}``).
    """

    def __init__(
        self,
        release: Release,
        mode: str,
        workdir: Path,
        *,
        brokers: int = 1,
        zookeeper: str | None = None,
        properties: Mapping[str, object] | None = None,
        listeners: Mapping[str, str] | None = None,
        format_args: Sequence[str] = (),
        startup_timeout: float = 120.0,
        extra_classpath: Sequence[Path] = (),
        jvm_options: Sequence[str] = (),
        controller_properties: Mapping[str, object] | None = None,
        node_properties: Mapping[int, Mapping[str, object]] | None = None,
    ) -> None:
        if mode not in ("combined", "split", "zookeeper"):
            raise ValueError(f"unknown mode {mode!r}")
        if mode == "zookeeper" and (release.major >= 4 or not zookeeper):
            raise ValueError("ZooKeeper mode needs Kafka 3.x and a ZooKeeper connect string")
        self.release = release
        self.mode = mode
        self.workdir = Path(workdir)
        self.zookeeper = zookeeper
        self.properties = {k: str(v) for k, v in (properties or {}).items()}
        self.controller_properties = {k: str(v) for k, v in (controller_properties or {}).items()}
        self.node_properties = {
            n: {k: str(v) for k, v in ps.items()} for n, ps in (node_properties or {}).items()
        }
        self.startup_timeout = startup_timeout
        self.listeners = dict(listeners or {})
        self.format_args = list(format_args)
        self.extra_classpath = list(extra_classpath)  # plugins the brokers load (a remote storage manager)
        self.jvm_options = list(jvm_options)
        self.cluster_id = random_cluster_id()
        self.nodes: list[Node] = []
        if mode == "combined":
            self.nodes.append(
                Node(1, "broker,controller", self.workdir / "node-1", free_port(HOST), free_port(HOST))
            )
        elif mode == "split":
            self.nodes.append(Node(100, "controller", self.workdir / "controller-100", None, free_port(HOST)))
            self.nodes += [
                Node(i, "broker", self.workdir / f"broker-{i}", free_port(HOST))
                for i in range(1, brokers + 1)
            ]
        else:
            self.nodes += [
                Node(i, "zk-broker", self.workdir / f"broker-{i}", free_port(HOST)) for i in range(brokers)
            ]
        for node in self.brokers:
            node.listener_ports = {name: free_port(HOST) for name in self.listeners}

    # ----------------------------------------------------------------- addresses
    @property
    def brokers(self) -> list[Node]:
        return [node for node in self.nodes if node.is_broker]

    @property
    def running(self) -> bool:
        """Whether any of its nodes runs (a cluster stopped after its last test does not)."""
        return any(node.proc is not None and node.proc.poll() is None for node in self.nodes)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"{HOST}:{node.port}" for node in self.brokers)

    def bootstrap_of(self, listener: str) -> str:
        """The bootstrap servers of one of the further ``listeners``."""
        return ",".join(f"{HOST}:{node.listener_ports[listener]}" for node in self.brokers)

    def broker(self, node_id: int) -> Node:
        return next(node for node in self.brokers if node.node_id == node_id)

    # ----------------------------------------------------------------- configuration
    def _voters(self) -> str:
        return ",".join(
            f"{n.node_id}@{HOST}:{n.controller_port}" for n in self.nodes if "controller" in n.roles
        )

    def _server_properties(self, node: Node) -> dict[str, str]:
        props: dict[str, str] = {"log.dirs": str(node.log_dir)}
        client = [f"PLAINTEXT://{HOST}:{node.port}"] if node.is_broker else []
        client += [f"{name}://{HOST}:{port}" for name, port in node.listener_ports.items()]
        protocols = {"PLAINTEXT": "PLAINTEXT", **self.listeners}
        if node.roles == "zk-broker":
            props |= {
                "broker.id": str(node.node_id),
                "zookeeper.connect": self.zookeeper or "",
                "listeners": ",".join(client),
                "advertised.listeners": ",".join(client),
                "zookeeper.connection.timeout.ms": "30000",
            }
        else:
            listeners = list(client)
            if node.is_broker:
                props["advertised.listeners"] = ",".join(client)
                props["inter.broker.listener.name"] = "PLAINTEXT"
            if "controller" in node.roles:
                listeners.append(f"CONTROLLER://{HOST}:{node.controller_port}")
            protocols["CONTROLLER"] = "PLAINTEXT"
            props |= {
                "process.roles": node.roles,
                "node.id": str(node.node_id),
                "controller.quorum.voters": self._voters(),
                "controller.listener.names": "CONTROLLER",
                "listeners": ",".join(listeners),
            }
        props["listener.security.protocol.map"] = ",".join(f"{k}:{v}" for k, v in protocols.items())
        if "controller" in node.roles:
            props |= self.controller_properties
        if node.is_broker:
            props = {
                **BROKER_DEFAULTS,
                **props,
                **self.properties,
                **self.node_properties.get(node.node_id, {}),
            }
        return props

    def _write_config(self, node: Node) -> None:
        node.workdir.mkdir(parents=True, exist_ok=True)
        props = self._server_properties(node)
        node.config.write_text("".join(f"{key}={value}\n" for key, value in props.items()))
        template = _SERVER_LOG4J2 if self.release.major >= 4 else _SERVER_LOG4J
        (node.workdir / "log4j.properties").write_text(template.format(log=node.server_log))

    def _format(self, node: Node) -> None:
        if node.roles == "zk-broker" or (node.log_dir / "meta.properties").is_file():
            return
        run_tool(
            self.release,
            "StorageTool",
            [
                "format",
                "-t",
                self.cluster_id,
                "-c",
                str(node.config),
                "--ignore-formatted",
                *self.format_args,
            ],
            timeout=120,
        )

    # ----------------------------------------------------------------- life cycle
    def start(self) -> ModernCluster:
        try:
            for node in self.nodes:
                self._write_config(node)
                self._format(node)
            for node in self.nodes:
                self.start_node(node, wait=False)
            self.wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def add_nodes(self, nodes: Sequence[Node]) -> None:
        """Join nodes to a running cluster: each configured knowing all (a quorum of new controllers),
        formatted (with ``cluster_id``) and started, not waited for (KRaft controllers joining a
        ZooKeeper-mode cluster for the migration: KIP-866)."""
        self.nodes += nodes
        for node in nodes:
            self._write_config(node)
            self._format(node)
        for node in nodes:
            self.start_node(node, wait=False)

    @property
    def voters(self) -> str:
        """controller.quorum.voters of the cluster's KRaft controllers."""
        return self._voters()

    def reconfigure(self, node: Node) -> None:
        """Restart ``node`` with its server.properties written again from the cluster's settings now."""
        self.stop_node(node)
        self._write_config(node)
        self.start_node(node)

    def start_node(self, node: Node, *, wait: bool = True) -> None:
        """Start (or restart, on the same ports and log dir) one node."""
        if node.proc is not None and node.proc.poll() is None:
            raise ServerError(f"node {node.node_id} is already running")
        cmd = java_command(
            self.release,
            "kafka.Kafka",
            [str(node.config)],
            heap="-Xmx512m",
            options=[
                "-XX:+UseSerialGC",
                # C1 only: a test broker lives for seconds to minutes, and C2's compiler threads were a
                # third of its start (start to ready 8.3-9.4 s of CPU, 5.3-5.7 s with C1 only; issue 51)
                "-XX:TieredStopAtLevel=1",
                *self.jvm_options,
                *_logging_options(self.release, node.workdir / "log4j.properties"),
            ],
            extra_classpath=self.extra_classpath,
        )
        with open(node.workdir / "stdout.log", "ab") as out:
            node.proc = subprocess.Popen(
                cmd,
                cwd=node.workdir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        if wait:
            self.wait_ready([node])

    def wait_ready(self, nodes: Sequence[Node] | None = None) -> None:
        """Until every broker of ``nodes`` answers a Metadata request naming all of them (the start-up
        wait is on readiness, never a sleep); a process that exits first fails at once with its log."""
        from confluent_kafka.admin import AdminClient

        nodes = list(nodes or self.nodes)
        want = {node.node_id for node in self.brokers}
        deadline = time.monotonic() + self.startup_timeout
        for node in nodes:
            if not node.is_broker:
                continue
            admin = AdminClient(
                {
                    "bootstrap.servers": f"{HOST}:{node.port}",
                    "socket.timeout.ms": 2000,
                    "log_level": 0,
                    "logger": _quiet,
                }
            )
            while True:
                self._check_alive()
                try:
                    seen = set(admin.list_topics(timeout=2).brokers)
                except Exception:  # noqa: BLE001 - not answering yet
                    seen = set()
                if want <= seen:
                    break
                if time.monotonic() > deadline:
                    raise ServerError(
                        f"Kafka {self.release.version} node {node.node_id} not ready within "
                        f"{self.startup_timeout}s (saw brokers {sorted(seen)}):\n{self.logs()}"
                    )
                time.sleep(0.2)

    def _check_alive(self) -> None:
        for node in self.nodes:
            if node.proc is not None and node.proc.poll() is not None:
                code = node.proc.returncode
                node.proc = None
                raise ServerError(
                    f"Kafka {self.release.version} node {node.node_id} exited with {code}:\n"
                    f"{self.logs([node])}"
                )

    def start_stopped(self) -> None:
        """Start again every node a test stopped or killed, and wait until they are ready (a shared
        cluster is whole again for the next test)."""
        stopped = [node for node in self.nodes if node.proc is None or node.proc.poll() is not None]
        for node in stopped:
            node.proc = None
            self.start_node(node, wait=False)
        if stopped:
            self.wait_ready(stopped)

    def stop_node(self, node: Node, *, kill: bool = False, timeout: float = 60) -> None:
        """SIGKILL (a crash) or SIGTERM (a clean shutdown, SIGKILL after ``timeout``), then reap."""
        if node.proc is not None:
            _stop_process(node.proc, signal.SIGKILL if kill else signal.SIGTERM, timeout)
            node.proc = None

    def stop(self) -> None:
        """Brokers first, controllers last (a broker's controlled shutdown needs its controller)."""
        for node in sorted(self.nodes, key=lambda n: "controller" in n.roles):
            self.stop_node(node)

    def logs(self, nodes: Sequence[Node] | None = None, lines: int = 60) -> str:
        """The tail of each node's own log, for a failed test's report."""
        parts = []
        for node in nodes or self.nodes:
            parts.append(
                f"--- node {node.node_id} ({node.roles}) {node.server_log}\n{_tail(node.server_log, lines)}"
            )
            stdout = node.workdir / "stdout.log"
            if stdout.is_file() and stdout.stat().st_size:
                parts.append(f"--- node {node.node_id} stdout\n{_tail(stdout, 20)}")
        return "\n".join(parts)

    def __enter__(self) -> ModernCluster:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _quiet(*_args) -> None:
    """librdkafka's log while a broker starts (connection refused) is noise."""


def partition_dir(node: Node, topic: str, partition: int = 0) -> Path:
    return node.log_dir / f"{topic}-{partition}"


TRANSIENT = (".deleted", ".cleaned", ".swap", ".part")  # files a running broker is replacing or removing


def copy_live_dir(source: Path, target: Path) -> Path:
    """A running broker's directory as it is now (a partition's, or ``__cluster_metadata-0``): its files,
    without those the broker is writing, replacing or removing (which may vanish while copied)."""
    target.mkdir(parents=True)
    for path in source.iterdir():
        if path.name.endswith(TRANSIENT) or not path.is_file():
            continue
        try:
            shutil.copy2(path, target / path.name)
        except FileNotFoundError:  # removed since the listing (a segment deleted, a snapshot replaced)
            continue
    return target


def create_topic(
    cluster: ModernCluster,
    topic: str,
    *,
    partitions: int = 1,
    replication: int = 1,
    config: Mapping[str, object] | None = None,
    timeout: float = 60,
) -> None:
    """Create ``topic`` with the Admin API and wait until every partition has a leader."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    new = NewTopic(
        topic,
        num_partitions=partitions,
        replication_factor=replication,
        config={k: str(v) for k, v in (config or {}).items()},
    )
    admin.create_topics([new])[topic].result(timeout=timeout)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic, timeout=5).topics.get(topic)
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) == partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            break
        time.sleep(0.1)
    else:
        raise ServerError(f"topic {topic} has no leader within {timeout}s")
    # A broker answers with the new leader a moment before it has created the replica's directory (it
    # applies the metadata, then makes the log): the tests read those directories next.
    by_id = {node.node_id: node for node in cluster.brokers}
    dirs = [
        partition_dir(by_id[r], topic, n)
        for n, p in meta.partitions.items()
        for r in p.replicas
        if r in by_id
    ]
    while missing := [d for d in dirs if not d.is_dir()]:
        if time.monotonic() > deadline:
            raise ServerError(f"{missing[0]}: not created within {timeout}s of the topic")
        time.sleep(0.1)


def commit_offsets(cluster: ModernCluster, group: str, offsets: Mapping[tuple[str, int], int]) -> None:
    """`offsets` committed for `group` with the Admin API (a group with offsets and no member), asked again
    while the coordinator of a broker just started is still creating or loading __consumer_offsets (it
    says so per partition, or does not answer yet)."""
    from concurrent.futures import TimeoutError as FutureTimeout

    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        future = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, tps)], request_timeout=5
        )[group]
        try:
            if not any(tp.error for tp in future.result(timeout=10).topic_partitions):
                return
        except (KafkaException, FutureTimeout, TimeoutError):
            pass
        time.sleep(0.2)
    raise ServerError(f"offsets of group {group} not committed within 90 s")


def main() -> int:
    """``python -m tests.support.modern``: fetch every release's jars now (tests/run.sh does, before pytest),
    one line per release that cannot be fetched; exit 1 then."""
    failed = 0
    for release in RELEASES.values():
        try:
            print(f"Kafka {release.version}: {kafka_libs(release)}")
        except ServerError as exc:
            print(f"tests/support/modern: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
