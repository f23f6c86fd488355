"""Memory bounds for compressed input, measured as the peak RSS of the installed `ktool` in a child
process (ru_maxrss of the children of a fresh Python, so nothing else is counted): a batch that
inflates past the 256 MiB cap is stopped there, validate walks it as a stream (below 100 MB), and
dump-log never holds more than the cap's budget."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_tools.format.compression import MAX_DECOMPRESSED
from kafka_tools.format.stream_check import WHOLE_LIMIT
from tests.support.bombs import write_bomb
from tests.support.script import ktool_script, script_env

pytestmark = pytest.mark.slow

MB = 1 << 20
VALIDATE_BUDGET = 100 * MB
DUMP_BUDGET = MAX_DECOMPRESSED + 96 * MB  # the cap, plus the interpreter and one piece in flight
_PEAK = """
import resource, subprocess, sys
p = subprocess.run(sys.argv[1:], capture_output=True, text=True)
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux: KiB
sys.stdout.write(f"{rss}\\n{p.returncode}\\n{p.stderr}\\0{p.stdout}")
"""


def peak(*args: str) -> tuple[int, int, str, str]:
    """Peak RSS in bytes, exit code, stderr and stdout of `ktool ARGS` in its own child process."""
    out = subprocess.run(
        [sys.executable, "-c", _PEAK, ktool_script(), *args],
        capture_output=True,
        text=True,
        env=script_env(),
        timeout=600,
        check=True,
    ).stdout
    head, stdout = out.split("\0", 1)
    rss, code, stderr = head.split("\n", 2)
    return int(rss), int(code), stderr, stdout


BOMBS = [(2, "gzip", 1 << 30), (2, "snappy", 272 * MB), (2, "lz4", 272 * MB), (2, "zstd", 272 * MB)]
BOMBS += [(1, "gzip", 272 * MB), (1, "snappy", 272 * MB), (1, "lz4", 272 * MB), (1, "zstd", 272 * MB)]


@pytest.fixture(scope="module", params=BOMBS, ids=[f"v{m}-{c}" for m, c, _ in BOMBS])
def bomb(request, tmp_path_factory) -> Path:
    magic, codec, total = request.param
    return write_bomb(tmp_path_factory.mktemp("bombs"), magic, codec, total)


def test_validate_walks_a_bomb_as_a_stream(bomb: Path) -> None:
    rss, code, _, out = peak("validate", "--json", str(bomb))
    assert code == 1
    (finding,) = [o for o in map(json.loads, out.splitlines()) if o["type"] == "finding"]
    assert finding["kind"] == "records-undecodable"
    assert f"past the {MAX_DECOMPRESSED}-byte limit" in finding["message"]
    assert rss < VALIDATE_BUDGET, f"validate peaked at {rss // MB} MB"


def test_dump_log_stops_a_bomb_at_the_cap_within_its_budget(bomb: Path) -> None:
    rss, code, err, _ = peak("dump-log", "--deep-iteration", str(bomb))
    assert code == 1
    assert f"past the {MAX_DECOMPRESSED}-byte limit" in err
    assert rss < DUMP_BUDGET, f"dump-log peaked at {rss // MB} MB"


@pytest.mark.parametrize("magic", [1, 2])
@pytest.mark.parametrize("codec", ["gzip", "lz4"])
def test_a_large_valid_batch_walked_as_a_stream_is_clean(tmp_path: Path, magic: int, codec: str) -> None:
    """Past WHOLE_LIMIT validate walks the records as a stream: a valid batch is clean, with the record
    count dump-log decodes."""
    segment = write_bomb(tmp_path, magic, codec, WHOLE_LIMIT * 3)
    rss, code, err, out = peak("validate", "--json", str(segment))
    assert code == 0, out
    summary = [o for o in map(json.loads, out.splitlines()) if o["type"] == "summary"][-1]
    _, dump_code, dump_err, dump_out = peak("dump-log", "--json", "--deep-iteration", str(segment))
    assert dump_code == 0, dump_err
    dumped = [o for o in map(json.loads, dump_out.splitlines()) if o["type"] == "summary"][-1]
    assert summary["records"] == dumped["records"] > WHOLE_LIMIT // 1100
    assert rss < VALIDATE_BUDGET
