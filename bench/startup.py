"""Start-up of every command on a small input, against `python -c pass` in the same run.

    python bench/startup.py            # 15 runs of each command, interleaved
    python bench/startup.py --quick    # 5 runs
    python bench/startup.py --json     # the result as JSON on stdout (progress on stderr)
    python bench/startup.py --check    # exit 1 when a median is more than 0.06 s over python -c pass
    python bench/startup.py --tree DIR # the same commands from another checkout (PYTHONPATH=DIR): old vs new
    python bench/startup.py --script   # through the installed `ktool` console script beside this Python
    python bench/startup.py --every    # also every subcommand's --help (each command's module imported)
    python bench/startup.py --instructions  # also each command's instructions (valgrind), load-proof

Each command runs as `python -m kafka_tools ...` (the interpreter running this script), or with
--script as the `ktool` console script installed beside it (as a user runs it, from a virtualenv
that need not be activated; it skips `-m`'s runpy), on the small
fixtures in fixtures/generated (a 4 KiB v2 segment, its partition, its log dir); the runs of all
commands are interleaved, so a burst of load on the shared machine touches each alike. Reported: the
median and min wall clock, and the median CPU time (user + sys of the child, from wait4), which load
inflates less than wall time; `over pass` is the median wall minus `python -c pass`'s. Bytecode is
written and used (PYTHONDONTWRITEBYTECODE is dropped for the children), as in an installed ktool.

On a shared machine wall and CPU time move with the load; --instructions adds the instructions each
command executes (one run under valgrind's callgrind, the same on a busy machine as on an idle one),
and `over pass` in millions of instructions.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if __package__ in (None, ""):  # run as `python bench/startup.py`
    sys.path.insert(0, str(ROOT))

from bench.decode import format_table, log  # noqa: E402

TARGET_OVER_PASS_S = 0.06  # issue 51: every command within 0.06 s of `python -c pass`
V2 = ROOT / "fixtures" / "generated" / "v2"
SEGMENT = V2 / "none-0" / "00000000000000000000.log"

COMMANDS: dict[str, list[str]] = {
    "validate FILE": ["validate", str(SEGMENT)],
    "validate --json FILE": ["validate", "--json", str(SEGMENT)],
    "validate LOGDIR": ["validate", str(V2)],
    "dump-log FILE": ["dump-log", str(SEGMENT)],
    "dump-log --deep --json FILE": ["dump-log", "--deep-iteration", "--json", str(SEGMENT)],
    "read PART --offset 1": ["read", str(V2 / "none-0"), "--offset", "1"],
    "offsets-at LOGDIR --time earliest": ["offsets-at", str(V2), "--time", "earliest"],
    "truncate --dry-run PART": ["truncate", "--dry-run", str(V2 / "none-0")],
    "retention LOGDIR": ["retention", str(V2)],
    "--version": ["--version"],
}


def every_help() -> dict[str, list[str]]:
    """`ktool X --help` for each leaf command of the tree: the start-up of each command's own module
    (the ones that need a server are measured up to the point they would connect)."""
    import click

    from kafka_tools.cli.main import cli

    def walk(cmd: click.Command, words: list[str]) -> list[list[str]]:
        if isinstance(cmd, click.Group):
            return [w for name, sub in sorted(cmd.commands.items()) for w in walk(sub, [*words, name])]
        return [words]

    return {" ".join(w) + " --help": [*w, "--help"] for w in walk(cli.load_all(), [])}


def run_once(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> tuple[float, float, int]:
    """Wall and CPU (user + sys) seconds of one run, and its exit code."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=cwd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode


def instructions(cmd: list[str], env: dict[str, str], cwd: str | None = None) -> int | None:
    """Instructions one run executes (valgrind --tool=callgrind), or None without valgrind."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    out = subprocess.run(
        [valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=cwd,
    )
    found = re.search(r"Collected : (\d+)", out.stderr)
    return int(found[1]) if found else None


def measure(
    runs: int, tree: str | None, script: bool = False, count: bool = False, every: bool = False
) -> dict:
    env = {**os.environ, "NO_COLOR": "1"}
    # As installed (pip compiles every module): the untimed first run writes the .pyc files, which
    # an environment with PYTHONDONTWRITEBYTECODE would otherwise recompile on every run.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # `python -m` puts the working directory first on sys.path: run in the tree measured. The console
    # script finds ktool as installed (its virtualenv's site-packages), as a user's shell runs it.
    cwd = str(Path(tree).resolve()) if tree else str(ROOT)
    if tree or not script:
        env["PYTHONPATH"] = cwd
    else:
        env.pop("PYTHONPATH", None)
    cases = {"python -c pass": [sys.executable, "-c", "pass"]}
    program = [str(console_script())] if script else [sys.executable, "-m", "kafka_tools"]
    commands = {**COMMANDS, **every_help()} if every else COMMANDS
    cases.update({name: [*program, *args] for name, args in commands.items()})
    walls: dict[str, list[float]] = {k: [] for k in cases}
    cpus: dict[str, list[float]] = {k: [] for k in cases}
    codes: dict[str, int] = {}
    for name, cmd in cases.items():  # one untimed run each: page cache, .pyc files
        codes[name] = run_once(cmd, env, cwd)[2]
    for _ in range(runs):
        for name, cmd in cases.items():
            wall, cpu, _ = run_once(cmd, env, cwd)
            walls[name].append(wall)
            cpus[name].append(cpu)
    counts = {name: instructions(cmd, env, cwd) if count else None for name, cmd in cases.items()}
    base = statistics.median(walls["python -c pass"])
    rows = []
    for name in cases:
        med = statistics.median(walls[name])
        rows.append(
            {
                "command": name,
                "median_s": med,
                "min_s": min(walls[name]),
                "cpu_s": statistics.median(cpus[name]),
                "over_pass_s": med - base,
                "exit_code": codes[name],
                "instructions": counts[name],
            }
        )
    entry = "ktool console script" if script else "python -m kafka_tools"
    return {"runs": runs, "tree": tree or str(ROOT), "entry": entry, "load": os.getloadavg(), "rows": rows}


def console_script() -> Path:
    """The `ktool` script pip installed beside this interpreter (bin/ of its virtualenv)."""
    path = Path(sys.executable).parent / "ktool"
    if not path.is_file():
        raise SystemExit(f"bench/startup.py: no console script {path} (pip install -e . in that environment)")
    return path


def missed(result: dict) -> list[str]:
    return [
        f"{r['command']}: {r['over_pass_s'] * 1000:.0f} ms over python -c pass"
        for r in result["rows"]
        if r["over_pass_s"] > TARGET_OVER_PASS_S
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="5 runs")
    ap.add_argument("--tree", help="run another checkout's kafka_tools (PYTHONPATH)")
    ap.add_argument("--script", action="store_true", help="run the `ktool` console script, not python -m")
    ap.add_argument("--instructions", action="store_true", help="count instructions too (valgrind)")
    ap.add_argument("--every", action="store_true", help="also every subcommand's --help")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    runs = 5 if args.quick else args.runs
    count = len(COMMANDS) + (len(every_help()) if args.every else 0)
    log(f"start-up: {count} commands + python -c pass, {runs} runs each, interleaved")
    result = measure(runs, args.tree, args.script, args.instructions, args.every)
    if args.json:
        print(json.dumps(result))
    else:
        cols = ["command", "median ms", "min ms", "CPU ms", "over pass ms", "exit"]
        base = result["rows"][0]["instructions"]  # python -c pass
        if base is not None:
            cols += ["M instr", "over pass M"]
        rows = [
            [
                r["command"],
                f"{r['median_s'] * 1000:.0f}",
                f"{r['min_s'] * 1000:.0f}",
                f"{r['cpu_s'] * 1000:.0f}",
                f"{r['over_pass_s'] * 1000:+.0f}",
                str(r["exit_code"]),
            ]
            + (
                [f"{r['instructions'] / 1e6:.0f}", f"{(r['instructions'] - base) / 1e6:+.0f}"]
                if base is not None and r["instructions"] is not None
                else []
            )
            for r in result["rows"]
        ]
        for line in format_table(cols, rows):
            print(line)
        print("{}; load average {:.2f} {:.2f} {:.2f}".format(result["entry"], *result["load"]))
    bad = missed(result)
    for b in bad:
        log(f"[MISS] {b}")
    return 1 if args.check and bad else 0


if __name__ == "__main__":
    sys.exit(main())
