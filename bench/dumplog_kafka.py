"""`ktool dump-log` next to DumpLogSegments of the newest Kafka 4.x, in the same run, alternated (issue 51).

    python bench/dumplog_kafka.py                  # the broker-written set, quiet then the other core busy
    python bench/dumplog_kafka.py --rounds 5 --load busy
    python bench/dumplog_kafka.py --data generated # bench/decode.py's segments (16 MiB a codec)
    python bench/dumplog_kafka.py --json           # the result as JSON on stdout (progress on stderr)
    python bench/dumplog_kafka.py --check          # exit 1 below 10x in text or 8x in JSON

The default data is bench/broker_data.py's set: a real 4.4.0 broker's log dir (idempotent and transactional
librdkafka producers, headers, every codec; made once, cached in ~/.cache/ktool); its batch sizes, codecs
and record sizes are printed from the files. Each tool runs as a user runs it, a fresh process, start-up
included, `--deep-iteration --print-data-log` over every `.log`, stdout to a file: ktool from its installed
console script (the venv not activated), with its default options and with `--jobs 1`, in text and
`--json`; DumpLogSegments from tests/support/modern.py's jars. Every command runs once a round, the order
reversed every other round, and each ratio is taken against DumpLogSegments' run of the same round, quiet
and with `yes > /dev/null` pinned to the other core. Before any time: the outputs are checked equal as
tests/modern does (ktool's text against DumpLogSegments' field by field, line by line, with
tests/support/dumplog.py; ktool's JSON record by record: offset, timestamp, key and value sizes, sequence,
header keys, key, payload; `--jobs 1` byte-identical to the default).
"""

from __future__ import annotations

import argparse
import compileall
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

if __package__ in (None, ""):  # run as `python bench/dumplog_kafka.py`
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.decode import CODECS, data_dir, ensure_segment, log  # noqa: E402
from tests.support.dumplog import assert_same_dump, fields  # noqa: E402
from tests.support.modern import KAFKA_4, _tool_logging, java_command  # noqa: E402

TARGET_SPEEDUP = 10.0  # text
TARGET_JSON = 8.0
ARGS = ["--deep-iteration", "--print-data-log"]


def log_dir(size_mib: int) -> list[Path]:
    """One partition a codec, each holding one generated segment (a hard link, or a copy)."""
    root = data_dir() / f"dumplog-logdir-{size_mib}MiB"
    segments = []
    for codec in CODECS:
        seg = Path(ensure_segment(size_mib, codec, min(size_mib, 16))["path"])
        part = root / f"bench-{codec}-0"
        part.mkdir(parents=True, exist_ok=True)
        target = part / "00000000000000000000.log"
        if not target.exists() or target.stat().st_size != seg.stat().st_size:
            target.unlink(missing_ok=True)
            try:
                os.link(seg, target)
            except OSError:
                target.write_bytes(seg.read_bytes())
        segments.append(target)
    return segments


def timed(cmd: list[str], out: Path, runs: int) -> dict:
    """Median wall and CPU time (the child's user + system) of `cmd` writing its stdout to `out`; on a
    shared machine the wall clock also counts other processes' turns, the CPU time does not."""
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with open(out, "wb") as sink:
            start = time.perf_counter()
            proc = subprocess.run(cmd, stdout=sink, stderr=subprocess.PIPE)
            walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if proc.returncode != 0:
            raise SystemExit(f"{' '.join(cmd[:4])}…: exit {proc.returncode}: {proc.stderr.decode()[-500:]}")
    return {
        "median": statistics.median(walls),
        "min": min(walls),
        "max": max(walls),
        "cpu": statistics.median(cpus),
        "runs": runs,
    }


def check_json(ours_json: Path, theirs_text: Path) -> int:
    """ktool's JSON records against DumpLogSegments' record lines; returns the records compared."""
    mapping = {
        "offset": "offset",
        "CreateTime": "timestamp",
        "keySize": "keySize",
        "valueSize": "valueSize",
        "sequence": "sequence",
    }
    n = 0
    with open(ours_json, encoding="utf-8") as ours, open(theirs_text, encoding="utf-8") as theirs:
        records = (json.loads(line) for line in ours if line.startswith('{"type":"record"'))
        for line in theirs:
            if not line.startswith("| "):
                continue
            want = dict(fields(line.rstrip("\n")))
            rec = next(records)
            for text_name, json_name in mapping.items():
                assert str(rec[json_name]) == want[text_name], (text_name, rec, line)
            assert "[" + ",".join(rec["headerKeys"]) + "]" == want["headerKeys"], (rec, line)
            assert rec.get("key") == want.get("key") and rec.get("value") == want.get("payload"), (rec, line)
            n += 1
        assert next(records, None) is None, "ktool --json has more records"
    return n


def digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def checked(out: Path, segments: list[Path]) -> tuple[int, int]:
    """ktool's text and JSON against DumpLogSegments' output, field by field and record by record (lines
    and records compared). The check is minutes of Python on a loaded machine: the outputs' digests
    are kept beside the data once they pass, and outputs byte-identical to checked ones are not
    checked again."""
    names = ("DumpLogSegments", "text", "json")
    digests = {name: digest(out / f"dumplog-{name}.out") for name in names}
    key = hashlib.sha256("\n".join(f"{p}:{p.stat().st_size}" for p in segments).encode()).hexdigest()[:16]
    record = out / f"dumplog-checked-{key}.json"
    if record.is_file():
        kept = json.loads(record.read_text())
        if kept["digests"] == digests:
            log(f"outputs byte-identical to those checked before ({record.name})")
            return kept["lines"], kept["records"]
    theirs = (out / "dumplog-DumpLogSegments.out").read_text()
    lines = assert_same_dump((out / "dumplog-text.out").read_text(), theirs)
    records = check_json(out / "dumplog-json.out", out / "dumplog-DumpLogSegments.out")
    record.write_text(json.dumps({"digests": digests, "lines": lines, "records": records}))
    return lines, records


def ktool_script(given: str | None) -> list[str]:
    """The installed console script (as a user runs it, its venv not activated): `--ktool`, or the one
    beside this interpreter."""
    path = Path(given) if given else Path(sys.executable).with_name("ktool")
    if not path.is_file():
        raise SystemExit(f"{path}: no ktool console script (pip install the tree into a venv first)")
    return [str(path)]


def busy_core() -> subprocess.Popen:
    """The other core busy: `yes > /dev/null` pinned to the last CPU."""
    cpu = max(os.sched_getaffinity(0))
    return subprocess.Popen(["taskset", "-c", str(cpu), "yes"], stdout=subprocess.DEVNULL)


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def measure(runs: dict[str, list[str]], out: Path, rounds: int, label: str) -> dict:
    """Every command once a round, the order reversed every other round; a ratio a round against the
    DumpLogSegments run of the same round."""
    names = list(runs)
    times: dict[str, list[dict]] = {name: [] for name in names}
    loads = [load_average()]
    for n in range(rounds):
        for name in names if n % 2 == 0 else reversed(names):
            times[name].append(timed(runs[name], out / f"dumplog-{name}.out", 1))
        loads.append(load_average())
        log(f"  {label} round {n + 1}: " + ", ".join(f"{k} {v[-1]['median']:.2f}s" for k, v in times.items()))
    kafka = times["DumpLogSegments"]
    result: dict = {"load_average": loads, "s": {}, "ratio": {}, "cpu_ratio": {}}
    for name in names:
        walls = [t["median"] for t in times[name]]
        result["s"][name] = {"median": statistics.median(walls), "min": min(walls), "max": max(walls),
                             "cpu": statistics.median(t["cpu"] for t in times[name])}  # fmt: skip
        if name != "DumpLogSegments":
            ratios = [k["median"] / t["median"] for k, t in zip(kafka, times[name], strict=True)]
            cpu = [k["cpu"] / t["cpu"] for k, t in zip(kafka, times[name], strict=True)]
            result["ratio"][name] = {
                "median": statistics.median(ratios),
                "min": min(ratios),
                "max": max(ratios),
            }
            result["cpu_ratio"][name] = statistics.median(cpu)
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--data",
        choices=("broker", "generated"),
        default="broker",
        help="broker: bench/broker_data.py's set (default); generated: bench/decode.py's segments",
    )
    ap.add_argument("--size-mib", type=int, default=16, help="generated: segment size a codec (default 16)")
    ap.add_argument("--rounds", type=int, default=3, help="alternated rounds a condition (default 3)")
    ap.add_argument("--load", choices=("quiet", "busy", "both"), default="both",
                    help="quiet, the other core busy (`yes` pinned), or both (default)")  # fmt: skip
    ap.add_argument("--ktool", help="the ktool console script (default: the one beside this python)")
    ap.add_argument(
        "--baseline",
        metavar="KTOOL",
        help="another ktool console script (a base tree's venv): its --jobs 1 runs alternate with the rest, "
        "its output must be byte-identical",
    )
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)

    if args.data == "broker":
        from bench.broker_data import ensure, summary

        segments = ensure()
        shape = summary(segments)
    else:
        segments = log_dir(args.size_mib)
        shape = {"files": len(segments), "bytes": sum(s.stat().st_size for s in segments)}
    out = data_dir()
    # As an installed ktool runs: from bytecode (under PYTHONDONTWRITEBYTECODE an editable install would
    # compile every module again at each start).
    compileall.compile_dir(Path(__file__).resolve().parent.parent / "kafka_tools", quiet=1)
    files = [str(s) for s in segments]
    ktool = [*ktool_script(args.ktool), "dump-log", *ARGS]
    kafka = java_command(
        KAFKA_4,
        KAFKA_4.tools["DumpLogSegments"],
        [*ARGS, "--files", ",".join(files)],
        heap="-Xmx1g",
        options=_tool_logging(KAFKA_4),
    )
    runs = {
        "DumpLogSegments": kafka,
        "text": [*ktool, *files],
        "text --jobs 1": [*ktool, "--jobs", "1", *files],
        "json": [*ktool, "--json", *files],
        "json --jobs 1": [*ktool, "--json", "--jobs", "1", *files],
    }
    if args.baseline:
        base = [*ktool_script(args.baseline), "dump-log", *ARGS, "--jobs", "1"]
        runs |= {"base text --jobs 1": [*base, *files], "base json --jobs 1": [*base, "--json", *files]}
    log(f"checking the outputs equal ({len(files)} files) ...")
    for name, cmd in runs.items():
        timed(cmd, out / f"dumplog-{name}.out", 1)
    for name in (
        "text --jobs 1",
        "json --jobs 1",
        *(("base text --jobs 1", "base json --jobs 1") if args.baseline else ()),
    ):
        kind = "text" if "text" in name else "json"
        same = digest(out / f"dumplog-{name}.out") == digest(out / f"dumplog-{kind}.out")
        assert same, f"{name}: output not byte-identical to ktool {kind}'s"
    lines, records = checked(out, segments)
    result = {"kafka": KAFKA_4.version, "data": args.data, "shape": shape, "records": records,
              "lines_compared": lines, "cpus": os.cpu_count()}  # fmt: skip
    for condition in ("quiet", "busy") if args.load == "both" else (args.load,):
        hog = busy_core() if condition == "busy" else None
        try:
            result[condition] = measure(runs, out, args.rounds, condition)
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
    ok = all(
        result[c]["ratio"][name]["median"] >= (TARGET_SPEEDUP if name.startswith("text") else TARGET_JSON)
        for c in ("quiet", "busy")
        if c in result
        for name in result[c]["ratio"]
        if not name.startswith("base")
    )
    if args.json:
        print(json.dumps(result, indent=1))
        return 0 if ok or not args.check else 1
    mib = shape["bytes"] / (1 << 20)
    print(f"{args.data} log dir: {len(files)} files, {mib:.0f} MiB, {records:,} records; outputs equal "
          f"({lines:,} lines field by field, {records:,} JSON records; --jobs 1 byte-identical)")  # fmt: skip
    for key in ("data_batches", "control_batches", "codecs", "records_a_batch", "batch_bytes", "value_bytes"):
        if key in shape:
            print(f"  {key}: {shape[key]}")
    for condition in ("quiet", "busy"):
        if condition not in result:
            continue
        part = result[condition]
        what = "the other core running yes" if condition == "busy" else "nothing added"
        loads = f"load average {part['load_average'][0]} -> {part['load_average'][-1]}"
        print(f"{condition} ({what}; {loads}), {args.rounds} rounds:")
        for name, s in part["s"].items():
            ratio = part["ratio"].get(name)
            tail = (
                f"  {ratio['median']:.1f}x ({ratio['min']:.1f}-{ratio['max']:.1f}), "
                f"CPU {part['cpu_ratio'][name]:.1f}x"
                if ratio
                else ""
            )
            print(
                f"  {name:18} {s['median']:6.2f} s wall ({s['min']:.2f}-{s['max']:.2f}), "
                f"{s['cpu']:.2f} s CPU{tail}"
            )
    print(
        f"{'ok  ' if ok else 'MISS'} >= {TARGET_SPEEDUP:g}x text, >= {TARGET_JSON:g}x JSON "
        "(ktool's runs, the median of the rounds)"
    )
    return 0 if ok or not args.check else 1


if __name__ == "__main__":
    raise SystemExit(main())
