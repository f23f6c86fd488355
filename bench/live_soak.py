"""ktool on a running Kafka 0.9.0.1 broker for N minutes: every command again and again while producers
write at full speed, segments roll every 256 KiB and retention deletes every 1.5 s.

    nice -n 10 python bench/live_soak.py                 # 10 minutes
    nice -n 10 python bench/live_soak.py --minutes 4
    python bench/live_soak.py --minutes 1 --json

Each round runs validate --json, read --latest, read --offset, offsets-at (earliest, latest),
retention, dump-log of a partition, truncate --dry-run and truncate --force against the log dir (the
commands and the judgement of each outcome are tests/support/live_load.py's, the same as
tests/log/test_live_broker.py's). Printed: per command, the count of each exit code, the bad
outcomes (signals, tracebacks, false alarms, answers outside what the broker served), and the max RSS
of the command's process in the first and the last minute (flat: no growth with run time). Then the
broker is stopped cleanly and the log dir validated once more (it must be clean). Exit 1 on any bad
outcome.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.live_load import LoadedBroker, command_round, run_ktool  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--ktool", default=str(Path(sys.executable).parent / "ktool"))
    ap.add_argument("--json", action="store_true", help="the counts as one JSON object on stdout")
    args = ap.parse_args()
    codes: dict[str, Counter] = defaultdict(Counter)
    bad: dict[str, list[str]] = defaultdict(list)
    rss: dict[str, list[tuple[float, int]]] = defaultdict(list)
    rounds = 0
    with tempfile.TemporaryDirectory(prefix="ktool-soak-") as tmp:
        loaded = LoadedBroker(Path(tmp))
        with loaded:
            loaded.wait_rolled_and_deleted()
            t0 = time.monotonic()
            while time.monotonic() - t0 < args.minutes * 60:
                elapsed = time.monotonic() - t0
                for o in command_round(loaded, args.ktool):
                    codes[o.command][o.exit_code] += 1
                    bad[o.command] += o.problems
                    rss[o.command].append((elapsed, o.max_rss_kib))
                rounds += 1
                nbad = sum(map(len, bad.values()))
                print(f"round {rounds} at {elapsed:.0f} s: {nbad} bad", file=sys.stderr)
            loaded.stop()
            code, out, err, _ = run_ktool(args.ktool, "validate", "--json", str(loaded.log_dir))
            after = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
            # a clean stop may leave `.deleted` files whose delay had not passed (the broker removes
            # them when it starts): warnings, exit 0; anything else after the stop is a bad outcome
            stopped_findings = [
                x
                for x in after
                if x.get("type") == "finding"
                and not (x["kind"] == "transient-file" and x["file"].endswith(".deleted"))
            ]
            for x in stopped_findings[:5]:
                said = f"{x['severity']} {x['kind']} {x['file']}: {x['message']}"
                print(f"after the stop: {said}", file=sys.stderr)
    result = {
        "minutes": args.minutes,
        "rounds": rounds,
        "exit_codes": {c: dict(n) for c, n in codes.items()},
        "bad": {c: len(v) for c, v in bad.items()},
        "bad_examples": {c: v[:3] for c, v in bad.items() if v},
        "rss_kib_first_last_minute": {c: _first_last(v) for c, v in rss.items()},
        "stopped_validate_exit": code,
        "stopped_validate_findings": len(stopped_findings),
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(f"{rounds} rounds in {args.minutes} minutes")
        print(f"{'command':22} {'exit codes':24} {'bad':>4} {'RSS KiB first/last min':>24}")
        for c in codes:
            shown = " ".join(f"{k}x{v}" for k, v in sorted(codes[c].items()))
            first, last = result["rss_kib_first_last_minute"][c]
            print(f"{c:22} {shown:24} {len(bad[c]):>4} {first:>11} / {last:<11}")
        for c, examples in result["bad_examples"].items():
            for e in examples:
                print(f"  {c}: {e}")
        print(f"after a clean stop: validate exit {code}, {len(stopped_findings)} findings")
    return 1 if any(bad.values()) or code != 0 or stopped_findings else 0


def _first_last(samples: list[tuple[float, int]]) -> tuple[int, int]:
    first = [r for t, r in samples if t < 60] or [samples[0][1]]
    last_t = samples[-1][0]
    last = [r for t, r in samples if t > last_t - 60] or [samples[-1][1]]
    return int(statistics.median(first)), int(statistics.median(last))


if __name__ == "__main__":
    sys.exit(main())
