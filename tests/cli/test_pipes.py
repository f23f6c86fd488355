"""Exit codes that hold under a pipe: `ktool … | head -1` and `ktool … | true` with `set -o pipefail`
exit with the code the data deserves (0 clean, 1 findings), and findings still reach stderr when the
reader left early. Everything runs through the installed console script in a real bash pipeline."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import struct
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from tests.support.script import run_pipeline, run_script

pytestmark = pytest.mark.slow  # dozens of bash pipelines around the console script: not the fast tier

BATCHES = 3000  # enough output (hundreds of KB) that the reader is gone long before ktool is done


def v2_segment(batches: int) -> bytes:
    out = bytearray()
    for base in range(batches):
        b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
        b.append(0, timestamp=1_700_000_000_000 + base, key=b"k%d" % base, value=b"v" * 40, headers=[])
        buf = bytearray(b.build())
        struct.pack_into(">q", buf, 0, base)
        out += buf
    return bytes(out)


@pytest.fixture(scope="module")
def log_dirs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("pipes")
    data = v2_segment(BATCHES)
    out = {}
    for name, tail in (("clean", b""), ("corrupt", b"\x00\x00\x00\x00\x00\x00\x00\x07" + b"\xff" * 64)):
        part = root / name / "orders-0"
        part.mkdir(parents=True)
        (part / "00000000000000000000.log").write_bytes(data + tail)
        (root / name / "recovery-point-offset-checkpoint").write_text("0\n1\norders 0 0\n")
        out[name] = root / name
    return out


def segment(d: Path) -> Path:
    return d / "orders-0" / "00000000000000000000.log"


COMMANDS = {
    "dump-log": lambda d: ["dump-log", "--deep-iteration", str(segment(d))],
    "dump-log --json": lambda d: ["dump-log", "--json", "--print-data-log", str(segment(d))],
    "validate": lambda d: ["validate", str(d)],
    "validate --json": lambda d: ["validate", "--json", str(d)],
    "truncate --dry-run": lambda d: ["truncate", "--dry-run", str(d)],
}
EXPECTED = {("clean", c): 0 for c in COMMANDS} | {("corrupt", c): 1 for c in COMMANDS}
EXPECTED[("corrupt", "truncate --dry-run")] = 0  # a plan printed is not a finding


@pytest.mark.parametrize("reader", ["head -1", "true"])
@pytest.mark.parametrize("data", ["clean", "corrupt"])
@pytest.mark.parametrize("command", list(COMMANDS))
def test_exit_code_under_pipefail_is_the_datas(log_dirs, command, data, reader) -> None:
    args = COMMANDS[command](log_dirs[data])
    alone = run_script(*args)
    assert alone.returncode == EXPECTED[(data, command)], alone.stderr
    piped = run_pipeline(f'"$KTOOL" {shlex.join(args)} | {reader}')
    assert piped.returncode == alone.returncode, piped.stderr
    assert "Traceback" not in piped.stderr and "Broken pipe" not in piped.stderr, piped.stderr
    # What the reader never saw is still said on stderr: the problem, or the verdict. That can be
    # checked only where the reader provably missed output: `true` leaves before ktool writes, and an
    # output larger than the pipe's buffer cannot all be taken by `head -1` (a small one may be, in one
    # read, before head leaves: then the reader did receive it all and nothing is owed on stderr).
    missed = reader == "true" or len(alone.stdout) > 1 << 17
    if alone.returncode == 1 and missed:
        assert piped.stderr.strip(), "a failing exit code with nothing on stderr"
        assert "size-below-minimum" in piped.stderr or "corrupt:" in piped.stderr, piped.stderr
    if reader == "head -1":
        assert len(piped.stdout.splitlines()) == 1


def test_dump_log_stops_printing_when_the_reader_leaves(log_dirs) -> None:
    # In --json, problems are objects on stdout; once the reader left, the one at the end of the
    # segment is said on stderr instead, once.
    path = shlex.quote(str(segment(log_dirs["corrupt"])))
    piped = run_pipeline(f'"$KTOOL" dump-log --json {path} | head -1')
    assert piped.returncode == 1
    lines = piped.stderr.splitlines()
    assert len(lines) == 1 and "size-below-minimum" in lines[0], piped.stderr


# -- the commands that read ZooKeeper, and scan ----------------------------------------------------

ZK_COMMANDS = ["brokers", "topics", "groups list", "offsets export --all-groups"]


@pytest.mark.parametrize("reader", ["head -1", "true"])
@pytest.mark.parametrize("command", ZK_COMMANDS)
def test_zookeeper_commands_keep_their_exit_code_under_pipefail(zk_root, command, reader) -> None:
    from tests.zk.test_zk_reader import write_kafka09_cluster

    write_kafka09_cluster(zk_root)
    for b in range(2, 40):  # enough brokers that `brokers` writes after the reader has left
        zk_root.write(
            f"/brokers/ids/{b}",
            json.dumps(
                {
                    "version": 2,
                    "host": "h",
                    "port": 9092,
                    "jmx_port": -1,
                    "timestamp": "1463000000000",
                    "endpoints": ["PLAINTEXT://h:9092"],
                }
            ),
        )
    args = [*command.split(), "--zookeeper", zk_root.connect]
    alone = run_script(*args)
    assert alone.returncode == 0, alone.stderr
    piped = run_pipeline(f'"$KTOOL" {shlex.join(args)} | {reader}')
    assert (piped.returncode, piped.stderr) == (0, "")


@pytest.mark.parametrize("reader", ["head -1", "true"])
def test_a_zookeeper_error_keeps_exit_3_under_pipefail(zk_root, reader) -> None:
    from tests.zk.test_zk_reader import write_kafka09_cluster

    write_kafka09_cluster(zk_root)
    zk_root.write("/brokers/ids/2", "{not json")
    args = ["brokers", "--zookeeper", zk_root.connect]
    piped = run_pipeline(f'"$KTOOL" {shlex.join(args)} | {reader}')
    assert piped.returncode == 3
    assert piped.stderr.startswith("ktool: malformed znode /brokers/ids/2") and piped.stderr.count("\n") == 1


@pytest.mark.spark  # `ktool scan` runs a local Spark in the subprocess
@pytest.mark.parametrize(("data", "reader", "code"), [("clean", "head -1", 0), ("corrupt", "true", 1)])
def test_scan_keeps_its_exit_code_under_pipefail(log_dirs, data, reader, code) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("java is not installed")
    piped = run_pipeline(f'"$KTOOL" scan --no-progress {shlex.quote(str(log_dirs[data]))} | {reader}')
    assert piped.returncode == code, piped.stderr
    assert "Traceback" not in piped.stderr


@pytest.mark.parametrize("command", ["dump-log", "dump-log --json", "validate"])
def test_a_full_stdout_is_named_not_the_segment_being_read(log_dirs, command) -> None:
    """`> /dev/full` (a full disk behind a redirect) is the output's failure: one line naming stdout,
    exit 3; a message naming the segment would read as the log disk being full."""
    target = log_dirs["clean"] if command == "validate" else segment(log_dirs["clean"])
    args = [*command.split(), str(target)]
    full = run_pipeline(f'"$KTOOL" {shlex.join(args)} > /dev/full')
    assert full.returncode == 3, full.stderr
    assert full.stderr.splitlines() == ["ktool: stdout: no space left on device"], full.stderr
