"""A real Kafka 0.9.0.1 broker under write load, for checking ktool on a running broker.

Short segments (`log.segment.bytes`), retention by size checked every second or two, an index entry
every `log.index.interval.bytes`, and producers writing as fast as librdkafka goes (plain, gzip and
snappy topics): segments roll, the preallocated `.index` is trimmed at each roll, old segments are
renamed `.deleted` and removed, all while ktool reads. Used by tests/log/test_live_broker.py and
bench/live_soak.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.servers import LIBRDKAFKA_09, KafkaBroker, ZooKeeperServer

TOPICS = {"live-plain": "none", "live-gzip": "gzip", "live-snappy": "snappy"}
PARTITIONS = 2

LIVE_BROKER_PROPERTIES: dict[str, object] = {
    "auto.create.topics.enable": "false",
    "num.partitions": PARTITIONS,
    "log.segment.bytes": 256 * 1024,
    "log.retention.bytes": 1024 * 1024,
    "log.retention.check.interval.ms": 1500,
    "log.index.interval.bytes": 1024,
    "log.segment.delete.delay.ms": 3000,  # `.deleted` files linger a little, as in production
    "log.flush.offset.checkpoint.interval.ms": 1000,
    "log.cleaner.enable": "false",
}

# One process per run: librdkafka producers, one per topic (its codec), as fast as they go.
_PRODUCER = r"""
import json, signal, sys
from confluent_kafka import Producer
bootstrap, conf, topics = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
running = [True]
signal.signal(signal.SIGTERM, lambda *_: running.__setitem__(0, False))
producers = []
for topic, codec in topics.items():
    producers.append((topic, Producer({"bootstrap.servers": bootstrap, **conf, "compression.codec": codec,
                                       "linger.ms": 5, "queue.buffering.max.messages": 200000})))
payload = b"v" * 120
n = 0
while running[0]:
    for topic, p in producers:
        for _ in range(200):
            n += 1
            try:
                p.produce(topic, key=b"k%d" % (n % 97), value=b"%d " % n + payload)
            except BufferError:
                p.poll(0.01)
                break
        p.poll(0)
for _, p in producers:
    p.flush(10)
"""


@dataclass
class LoadedBroker:
    """ZooKeeper, one broker with the properties above, its topics, and the producers."""

    workdir: Path
    properties: Mapping[str, object] = field(default_factory=lambda: dict(LIVE_BROKER_PROPERTIES))
    zookeeper: ZooKeeperServer | None = None
    broker: KafkaBroker | None = None
    producer: subprocess.Popen | None = None

    @property
    def log_dir(self) -> Path:
        assert self.broker is not None
        return self.broker.log_dir

    def partition_dirs(self) -> list[Path]:
        return [self.log_dir / f"{t}-{p}" for t in TOPICS for p in range(PARTITIONS)]

    def start(self) -> LoadedBroker:
        self.zookeeper = ZooKeeperServer().start()
        self.broker = KafkaBroker(
            self.zookeeper, properties=self.properties, workdir=self.workdir / "broker", heap="-Xmx384M"
        ).start()
        for topic in TOPICS:
            self.broker.create_topic(topic, PARTITIONS)
        self.start_producers()
        return self

    def start_producers(self) -> None:
        import json

        assert self.broker is not None
        self.producer = subprocess.Popen(
            [
                sys.executable,
                "-c",
                _PRODUCER,
                self.broker.bootstrap,
                json.dumps(LIBRDKAFKA_09),
                json.dumps(TOPICS),
            ],
            stdout=subprocess.DEVNULL,
            stderr=open(self.workdir / "producer.log", "ab"),
            start_new_session=True,
        )

    def stop_producers(self) -> None:
        if self.producer is not None and self.producer.poll() is None:
            self.producer.send_signal(signal.SIGTERM)
            try:
                self.producer.wait(30)
            except subprocess.TimeoutExpired:
                self.producer.kill()
                self.producer.wait(10)
        self.producer = None

    def stop(self) -> bool:
        """Producers, then the broker (cleanly: the directory is kept), then ZooKeeper."""
        self.stop_producers()
        ok = self.broker.stop(clean=True, cleanup=False) if self.broker is not None else False
        if self.zookeeper is not None:
            self.zookeeper.stop()
        return ok

    def __enter__(self) -> LoadedBroker:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()

    def watermarks(self, topic: str, partition: int) -> tuple[int, int]:
        """(earliest, latest) as the broker serves them now: ListOffsets, GetOffsetShell's request."""
        from confluent_kafka import Consumer, TopicPartition

        assert self.broker is not None
        c = Consumer({"bootstrap.servers": self.broker.bootstrap, **LIBRDKAFKA_09, "group.id": "ktool-live"})
        try:
            return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=20)
        finally:
            c.close()

    def wait_rolled_and_deleted(self, timeout: float = 120.0) -> None:
        """Until every partition has rolled and lost its first segment to retention (the event the
        commands must live with), or raise."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.producer is not None and self.producer.poll() is not None:
                raise RuntimeError(f"producers exited with {self.producer.returncode}")
            if all(_first_base(d) > 0 for d in self.partition_dirs()):
                return
            time.sleep(0.5)
        raise RuntimeError("segments did not roll and expire in time")


def _first_base(path: Path) -> int:
    try:
        bases = [int(n[:-4]) for n in os.listdir(path) if n.endswith(".log") and n[:-4].isdigit()]
    except OSError:
        return 0
    return min(bases) if bases else 0


# -- ktool's commands against it, and what counts as a bad outcome ------------------------------------


@dataclass
class Outcome:
    """One command run: its exit code (negative: killed by that signal), its max RSS, and what was
    wrong with it (empty: it behaved)."""

    command: str
    exit_code: int
    max_rss_kib: int
    problems: list[str] = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""


def run_ktool(
    ktool: str, *args: str, timeout: float = 120, env: dict | None = None
) -> tuple[int, str, str, int]:
    """(exit code, stdout, stderr, max RSS KiB) of one run of the console script."""
    import tempfile

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([ktool, *args], stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return (
            proc.returncode,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
            usage.ru_maxrss,
        )


def _common_problems(code: int, err: str) -> list[str]:
    problems = []
    if code < 0:
        problems.append(f"killed by signal {-code}")
    if "Traceback" in err:
        problems.append("traceback: " + err.strip().splitlines()[-1])
    return problems


def _json_lines(text: str) -> list[dict]:
    import json

    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


def command_round(loaded: LoadedBroker, ktool: str, env: dict | None = None) -> list[Outcome]:
    """Every command once against the running broker's log dir, each judged:

    * no signal, no traceback, ever;
    * validate: exit 0, and every finding is an in-flight one;
    * read / offsets-at: exit 0, answers within what the broker serves (ListOffsets before and after);
    * truncate (--dry-run and --force): exit 3, the lock named in one line, nothing written.
    """
    log_dir = str(loaded.log_dir)
    outcomes: list[Outcome] = []
    topic, partition = "live-gzip", 0
    part_dir = str(loaded.log_dir / f"{topic}-{partition}")
    before = {(t, p): loaded.watermarks(t, p) for t in TOPICS for p in range(PARTITIONS)}

    def run(name: str, *args: str) -> Outcome:
        code, out, err, rss = run_ktool(ktool, *args, env=env)
        o = Outcome(name, code, rss, _common_problems(code, err), out, err)
        outcomes.append(o)
        return o

    low = before[(topic, partition)][1] - 200  # near the end: retention does not reach it for seconds
    o_offset = run("read --offset", "read", part_dir, "--offset", str(low + 10), "-n", "5", "--json")
    o = run("validate", "validate", "--json", log_dir)
    findings = [x for x in _json_lines(o.stdout) if x.get("type") == "finding"]
    if o.exit_code != 0:
        o.problems.append(f"validate exit {o.exit_code}: {o.stderr.strip()[:300]}")
    bad = [f for f in findings if f["kind"] != "in-flight"]
    if bad:
        o.problems.append(f"validate: {len(bad)} findings not in flight, first: {bad[0]}")

    o_latest = run("read --latest", "read", part_dir, "--latest", "-n", "3", "--json")
    o_earliest = run("offsets-at earliest", "offsets-at", "--json", "--time", "earliest", log_dir)
    o_end = run("offsets-at latest", "offsets-at", "--json", "--time", "latest", log_dir)
    o_ret = run("retention", "retention", log_dir)
    newest = max((n for n in os.listdir(part_dir) if n.endswith(".log")), default="")
    o_dump = run("dump-log", "dump-log", os.path.join(part_dir, newest))  # the segment being written
    backup = Path(loaded.workdir) / "truncate-backup"
    o_dry = run("truncate --dry-run", "truncate", "--dry-run", log_dir)
    o_cut = run("truncate --force", "truncate", "--force", "--backup-dir", str(backup), log_dir)
    after = {(t, p): loaded.watermarks(t, p) for t in TOPICS for p in range(PARTITIONS)}

    lo_b, hi_b = before[(topic, partition)]
    lo_a, hi_a = after[(topic, partition)]
    for o in (o_latest, o_offset):
        if o.exit_code != 0:
            o.problems.append(f"exit {o.exit_code}: {o.stderr.strip()[:300]}")
            continue
        offsets = [
            r["offset"]
            for r in _json_lines(o.stdout)
            if "offset" in r and r.get("type") in ("record", "message")
        ]
        if not offsets:
            o.problems.append(f"no records printed: {o.stdout[:200]}")
        elif min(offsets) < lo_b or max(offsets) >= hi_a:
            o.problems.append(f"offsets {min(offsets)}..{max(offsets)} outside the broker's [{lo_b}, {hi_a})")
        elif o is o_offset and min(offsets) != low + 10:
            o.problems.append(f"read --offset {low + 10} began at {min(offsets)}")
    for o, which in ((o_earliest, 0), (o_end, 1)):
        if o.exit_code != 0:
            o.problems.append(f"exit {o.exit_code}: {o.stderr.strip()[:300]}")
            continue
        lines = _json_lines(o.stdout)
        if not lines or lines[-1].get("type") != "summary":
            o.problems.append(f"the --json stream does not end with a summary: {o.stdout[-200:]}")
        answers = {(x["topic"], x["partition"]): x["offset"] for x in lines if x.get("type") == "offset"}
        for key, (b, a) in ((k, (before[k], after[k])) for k in before):
            got = answers.get(key)
            if got is None or not (b[which] <= got <= a[which]):
                o.problems.append(f"{key}: {got} not within the broker's {b[which]}..{a[which]}")
    for o in (o_ret, o_dump):
        if o.exit_code not in (0,):
            o.problems.append(f"exit {o.exit_code}: {o.stderr.strip()[:300]}")
    for o in (o_dry, o_cut):
        lines = [ln for ln in o.stderr.splitlines() if ln.strip()]
        if o.exit_code != 3 or ".lock" not in o.stderr or len(lines) != 1:
            o.problems.append(
                f"not refused for the broker's lock: exit {o.exit_code}: {o.stderr.strip()[:300]}"
            )
    if backup.exists():
        o_cut.problems.append(f"truncate wrote {backup}")
    return outcomes
