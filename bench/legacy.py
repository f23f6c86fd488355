"""Message sets (magic 0/1, Kafka 0.8-0.10): ktool next to its pure-Python self, kafka-python and Kafka
0.9.0.1's own DumpLogSegments, side by side in one run, with peak RSS.

    python bench/legacy.py              # the 600,000-message v0 segment, 3 runs each, + compressed + 1 GiB memory
    python bench/legacy.py --quick      # 60,000 messages, 1 run, 128 MiB memory check: a smoke run
    python bench/legacy.py --json       # the result as JSON on stdout (progress on stderr)
    python bench/legacy.py --check      # exit 1 when a target is missed

Every command runs as a child process (the CLI as users run it: `python -m kafka_tools …`, stdout to
/dev/null), one after the other, on a warm page cache; wall clock median of the runs, peak RSS from
the child's rusage (`wait4`). Kafka's DumpLogSegments runs through `kafka-run-class.sh` of the same
Kafka 0.9.0.1 install the tests use (tests/support/servers.py `kafka_home()`), JVM start-up included,
as ktool's Python start-up is. See bench/README.md.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as `python bench/legacy.py`: make `bench` (and ktool) importable
    sys.path.insert(0, str(ROOT))

from bench.decode import MiB, data_dir, format_table, log, warm_page_cache  # noqa: E402

MESSAGES = 600_000
TARGET_DUMP_VS_KAFKA = 2.0  # ktool at least 2x faster than DumpLogSegments
TARGET_VALIDATE_GB_S = 1.0
TARGET_COMPRESSED_VS_DECOMPRESSION = 1.5
TARGET_RSS_MB = 100.0
TARGET_V2_RECORDS_PER_S = 1e6
_HEAD = struct.Struct(">qi")


# ---------------------------------------------------------------------------------------------------
# Segments, written with kafka-python's legacy builder (as the fixtures are)


def _builder(magic: int, codec: int, wrapper_offset: int = 0, wrapper_timestamp: int = 0):
    sys.path.insert(0, str(ROOT / "fixtures"))
    from make_fixtures import BrokerLegacyBuilder  # kafka-python's builder, wrapper fields as a broker

    return BrokerLegacyBuilder(magic, codec, wrapper_offset=wrapper_offset, wrapper_timestamp=wrapper_timestamp)


def _value(i: int) -> bytes:
    # ~100 bytes of JSON-like text, different in every message
    return (f'{{"id":{i},"user":"user-{i % 9973:05d}","event":"page-view","path":"/p/{i % 613}"' + ',"ms":' +
            f'{(i * 7919) % 100000:06d}}}').ljust(100, " ").encode()


def write_plain(path: Path, messages: int, magic: int) -> None:
    """`messages` uncompressed messages, offsets 0.., keys `k<i>`, ~100-byte values."""
    ts = 1_700_000_000_000
    with open(path, "wb") as f:
        for start in range(0, messages, 5_000):  # 5,000 messages fit the builder's 1 MiB
            b = _builder(magic, 0)
            for i in range(start, min(messages, start + 5_000)):
                if b.append(i, ts + i if magic else None, f"k{i}".encode(), _value(i)) is None:
                    raise RuntimeError("the builder is full")
            f.write(b.build())


def write_compressed(path: Path, messages: int, magic: int, codec: int, per_wrapper: int = 100) -> None:
    """Wrappers of `per_wrapper` messages each (v1: relative inner offsets, as a 0.10 broker stores)."""
    ts = 1_700_000_000_000
    with open(path, "wb") as f:
        for start in range(0, messages, per_wrapper):
            n = min(per_wrapper, messages - start)
            last = start + n - 1
            b = _builder(magic, codec, wrapper_offset=last, wrapper_timestamp=ts + last if magic else 0)
            for k in range(n):
                i = start + k
                if b.append(k if magic else i, ts + i if magic else None, f"k{i}".encode(), _value(i)) is None:
                    raise RuntimeError("the builder is full")
            f.write(b.build())


def repeat_to(src: Path, dst: Path, size: int) -> int:
    """Copies of `src`'s entries until `size` bytes, each entry's offset (not covered by the CRC)
    moved on so offsets keep increasing; v1 wrappers' inner offsets are relative, so they stay right.
    Returns the number of entries."""
    data = src.read_bytes()
    spans = []
    pos = 0
    while pos < len(data):
        off, n = _HEAD.unpack_from(data, pos)
        spans.append((pos, 12 + n, off))
        pos += 12 + n
    step = spans[-1][2] + 1
    out = bytearray()
    entries = 0
    with open(dst, "wb") as f:
        rep = 0
        while True:
            for at, n, off in spans:
                if entries and f.tell() + len(out) + n > size:
                    f.write(out)
                    return entries
                out += data[at : at + n]
                struct.pack_into(">q", out, len(out) - n, off + rep * step)
                entries += 1
            f.write(out)
            out.clear()
            rep += 1


def ensure(name: str, make) -> Path:
    path = data_dir() / name
    if not path.exists():
        log(f"generating {path.name} …")
        tmp = path.with_suffix(".tmp")
        make(tmp)
        tmp.rename(path)
    return path


def in_partition(path: Path, tag: str) -> Path:
    """A copy of the segment inside its own partition directory (as `00000000000000000000.log`), the
    name Kafka's tools and ktool's dispatch expect."""
    d = data_dir() / f"{tag}-0"
    d.mkdir(exist_ok=True)
    target = d / "00000000000000000000.log"
    if not target.exists():
        os.link(path, target)
    return target


# ---------------------------------------------------------------------------------------------------
# Running things


def run_timed(cmd: list[str], env: dict | None = None, stdin=None) -> tuple[float, float, int]:
    """(wall seconds, peak RSS MB, exit code) of a child, its stdout to /dev/null."""
    with open(os.devnull, "wb") as null:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=null, stderr=subprocess.PIPE, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        proc.stderr.close()
    if proc.returncode not in (0,):
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{err[-2000:]}")
    return wall, usage.ru_maxrss / 1024, proc.returncode


def ktool_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafka_tools", *args]


def env_for(impl: str) -> dict:
    env = dict(os.environ)
    env.pop("KTOOL_PURE_PYTHON", None)
    if impl == "ktool-pure":
        env["KTOOL_PURE_PYTHON"] = "1"
    env["PYTHONPATH"] = str(ROOT)
    return env


def kafka_dump_cmd(path: Path, deep: bool = True) -> tuple[list[str], dict]:
    sys.path.insert(0, str(ROOT))
    from tests.support.servers import kafka_env, kafka_home

    home = kafka_home()
    cmd = [str(home / "bin" / "kafka-run-class.sh"), "kafka.tools.DumpLogSegments", "--files", str(path)]
    if deep:
        cmd += ["--deep-iteration", "--print-data-log"]
    return cmd, kafka_env(heap="-Xmx1G")


def median_of(runs: int, cmd: list[str], env: dict) -> dict:
    walls, rss = [], []
    for _ in range(runs):
        w, r, _ = run_timed(cmd, env)
        walls.append(w)
        rss.append(r)
    return {"median_s": statistics.median(walls), "min_s": min(walls), "max_s": max(walls), "peak_rss_mb": max(rss)}


# kafka-python: what a script on its legacy decoder does for the same job (in a child process)

KAFKA_PYTHON_VALIDATE = """
import sys
from kafka.record import MemoryRecords
data = open(sys.argv[1], 'rb').read()
r = MemoryRecords(data); n = 0
while r.has_next():
    b = r.next_batch()
    for m in b:
        if not m.validate_crc():
            raise SystemExit('bad crc')
        n += 1
print(n)
"""

KAFKA_PYTHON_DUMP = """
import sys
from kafka.record import MemoryRecords
data = open(sys.argv[1], 'rb').read()
r = MemoryRecords(data); out = sys.stdout.write
while r.has_next():
    for m in r.next_batch():
        v = m.value
        out(f'offset: {m.offset} isvalid: {str(m.validate_crc()).lower()} payloadsize: {len(v)} '
            f'crc: {m.crc} keysize: {len(m.key)} key: {m.key.decode(errors="replace")} '
            f'payload: {v.decode(errors="replace")}\\n')
"""


def decompression_alone(path: Path) -> float:
    """Seconds to decompress every wrapper's value of a gzip segment, nothing else (the floor)."""
    data = path.read_bytes()
    values = []
    pos = 0
    while pos < len(data):
        off, n = _HEAD.unpack_from(data, pos)
        magic = data[pos + 16]
        at = pos + 18 + (8 if magic else 0)
        (klen,) = struct.unpack_from(">i", data, at)
        at += 4 + max(klen, 0)
        (vlen,) = struct.unpack_from(">i", data, at)
        values.append(data[at + 4 : at + 4 + vlen])
        pos += 12 + n
    best = None
    for _ in range(3):
        t0 = time.perf_counter()
        for v in values:
            zlib.decompress(v, 47)
        t = time.perf_counter() - t0
        best = t if best is None else min(best, t)
    return best
