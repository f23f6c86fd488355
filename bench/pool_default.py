"""The default `--jobs` against `--jobs 1` (issue 51: the default must never be slower under load), through
the console script: `validate`, `dump-log --print-data-log` and `dump-log --json --print-data-log`, on a
log dir of many segments and on one big segment, alternated rounds, quiet-ish and with a `yes >
/dev/null` hog on the other core. The data is the test generator's (tests/support/logs.py: v2 batches
of 50 records of 100-byte values, uncompressed), not a broker's: what is measured is the worker pool's
start and its spools, which do not depend on the codec.

    python bench/pool_default.py [--rounds 3] [--dir /tmp/ktool-pool-bench]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _ktool() -> str:
    return str(Path(sys.executable).with_name("ktool"))


def _data(where: Path) -> tuple[list[str], list[str]]:
    """A log dir of 40 segments (60 MB), and one segment of 45 MB."""
    sys.path.insert(0, str(ROOT))
    from tests.support.logs import write_log_dir

    many, big = where / "many", where / "big"
    if not many.exists():
        write_log_dir(many, partitions=4, segments=10, batches=270, records=50, value_bytes=100)
    if not big.exists():
        write_log_dir(big, partitions=1, segments=1, batches=8000, records=50, value_bytes=100)
    return sorted(str(p) for p in many.rglob("*.log")), sorted(str(p) for p in big.rglob("*.log"))


def _once(args: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run([_ktool(), *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    took = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"ktool {' '.join(args[:3])}: exit {done.returncode}: {done.stderr[-300:]!r}")
    return took


def _uptime() -> str:
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default="/tmp/ktool-pool-bench")
    a = parser.parse_args()
    many, big = _data(Path(a.dir))
    inputs = {"log dir, 40 files": many, "one 45 MB file": big}
    commands = {
        "validate": ["validate"],
        "dump-log text": ["dump-log", "--print-data-log"],
        "dump-log --json": ["dump-log", "--json", "--print-data-log"],
    }
    for hog in (False, True):
        hog_process = subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) if hog else None
        try:
            print(f"\n{'with a yes hog' if hog else 'no hog'}; load before {_uptime()}")
            for iname, files in inputs.items():
                for cname, command in commands.items():
                    target = [os.path.dirname(os.path.dirname(files[0]))] if cname == "validate" else files
                    got: dict[str, list[float]] = {"default": [], "--jobs 1": []}
                    for r in range(a.rounds):
                        order = ("default", "--jobs 1") if r % 2 == 0 else ("--jobs 1", "default")
                        for name in order:
                            extra = [] if name == "default" else ["--jobs", "1"]
                            got[name].append(_once([*command, *extra, *target]))
                    d, one = statistics.median(got["default"]), statistics.median(got["--jobs 1"])
                    print(
                        f"{iname:18} {cname:16} default {d:6.2f} s ({min(got['default']):.2f}-"
                        f"{max(got['default']):.2f})  --jobs 1 {one:6.2f} s ({min(got['--jobs 1']):.2f}-"
                        f"{max(got['--jobs 1']):.2f})  ratio {one / d:.2f}x"
                    )
            print(f"load after {_uptime()}")
        finally:
            if hog_process is not None:
                hog_process.kill()
                hog_process.wait()
    shutil.rmtree(a.dir, ignore_errors=True)


if __name__ == "__main__":
    main()
