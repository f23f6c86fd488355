"""`ktool truncate` is the broker's recovery on any corruption: random damage to clean segments of every
generation and codec, judged by the reference recovery in tests/reference_recovery.py (written from
Kafka's LogSegment.recover, independent of ktool).

For each damaged segment: truncate keeps exactly the reference's valid prefix, or refuses and changes
nothing (damage the broker's recovery keeps, or, without --force, valid entries after the cut);
afterwards `validate` is clean; the removed bytes are in the backup; undo restores the damaged file byte
for byte; `validate` and `dump-log` never raise and agree with the reference on the valid prefix.

The bulk (REPLAY_CASES per generation) runs the service layer in-process, the very functions the CLI
calls; a smaller sample goes through the CLI. A failure names the source, the mutation and the seed;
replay it with `KTOOL_PROPERTY_SEED=<seed> pytest tests/log/test_recovery_property.py`.
"""

from __future__ import annotations

import json
import os
import random
import resource
import shutil
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st

from kafka_tools.log.checks import recovery
from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.reads.dump import dump_file
from kafka_tools.log.reads.dump_events import DumpOptions, FileEnd
from kafka_tools.log.repair import apply as repair
from kafka_tools.log.repair import undo
from kafka_tools.log.validate import validate_paths
from tests.independent import FIXTURES
from tests.reference_recovery import recover, soundness
from tests.support.cli import run_ktool
from tests.support.sweep import rounds

# Generated cases in bulk (hypothesis runs inside the tests, or a seeded sample): the property tier.
pytestmark = pytest.mark.property

SEED = int(os.environ.get("KTOOL_PROPERTY_SEED", "20261123"))
# per generation: 4 x 2600 = 10,400 in `tests/run.sh --exhaustive`, 4 x 700 in CI (a seeded share)
CASES = int(os.environ.get("KTOOL_PROPERTY_CASES", str(rounds(ci=700, full=2600))))
GEN = FIXTURES / "generated"
K09 = FIXTURES / "kafka-0.9.0.1" / "logdir"


def _logs(*patterns: str, root: Path = GEN) -> list[Path]:
    return sorted(p for pat in patterns for p in root.glob(pat) if p.stat().st_size)


SOURCES: dict[str, tuple[str, list[Path]]] = {
    "0.7": ("0.7", _logs("kafka07/*/*.kafka")),
    "v0": ("0.9", _logs("v0/*/*.log") + _logs("*-0/*.log", root=K09)),
    "v1": ("0.9", _logs("v1/*/*.log")),
    "v2": ("modern", _logs("v2/*/*.log")),
}


@dataclass(frozen=True)
class Mutation:
    kind: str
    where: float  # a fraction of the file (or of its entries, for a length field)
    arg: int
    blob: bytes

    def apply(self, data: bytes, entries: list[int], header: int) -> bytes:
        out = bytearray(data)
        at = min(int(self.where * len(out)), len(out) - 1)
        if self.kind == "flip":
            out[at] ^= 1 << (self.arg % 8)
        elif self.kind == "overwrite":
            out[at : at + len(self.blob)] = self.blob[: len(out) - at]
        elif self.kind == "zero-run":
            n = min(self.arg, len(out) - at)
            out[at : at + n] = bytes(n)
        elif self.kind == "zero-from":
            out[at:] = bytes(len(out) - at)
        elif self.kind == "cut":
            del out[at:]
        elif self.kind == "append":
            out += self.blob or b"\x01"
        elif self.kind == "append-zeros":
            out += bytes(1 + self.arg % 4096)  # a preallocated tail, not gigabytes
        elif self.kind == "length":
            pos = entries[min(int(self.where * len(entries)), len(entries) - 1)] + header
            claims = [0, -1, 0x7FFFFFFF, 1 << 30, 13, 14, 48, 49, 61]
            value = claims[self.arg % len(claims)] if self.arg < 1000 else self.arg - (1 << 31)
            struct.pack_into(">i", out, pos, value)
        return bytes(out)


MUTATIONS = st.builds(
    Mutation,
    kind=st.sampled_from(
        ["flip", "flip", "overwrite", "zero-run", "zero-from", "cut", "append", "append-zeros", "length"]
    ),
    where=st.floats(min_value=0, max_value=1, exclude_max=True),
    arg=st.integers(min_value=0, max_value=(1 << 32) - 1) | st.integers(min_value=0, max_value=999),
    blob=st.binary(min_size=1, max_size=64),
)


def _entry_positions(data: bytes, rules: str) -> list[int]:
    _, kept = recover(data, rules)
    return [e.position for e in kept]


def _intact_after(original: bytes, damaged: bytes, rules: str, cut: int) -> list[int]:
    """Original entries at or after the cut whose bytes the damage left untouched: data a cut would lose."""
    _, entries = recover(original, rules)
    return [
        e.position
        for e in entries
        if e.position >= cut
        and damaged[e.position : e.position + e.size] == original[e.position : e.position + e.size]
    ]


def check_case(source: Path, rules: str, mutation: Mutation, workdir: Path) -> str:
    """One damaged copy of `source`, checked through the services; returns what truncate did."""
    original = source.read_bytes()
    header = 0 if rules == "0.7" else 8
    damaged = mutation.apply(original, _entry_positions(original, rules), header)
    case = f"source={source.relative_to(FIXTURES)} mutation={mutation} seed={SEED}"
    shutil.rmtree(workdir, ignore_errors=True)
    part = workdir / "logs" / "t-0"
    part.mkdir(parents=True)
    log = part / source.name
    log.write_bytes(damaged)
    base = int(source.name.split(".")[0])

    prefix, kept = recover(damaged, rules)
    unsound = soundness(damaged, kept, base, rules)

    end = [e for e in dump_file(log, DumpOptions(deep_iteration=True)) if isinstance(e, FileEnd)][0]
    assert end.valid_bytes == prefix, f"dump-log's validBytes {end.valid_bytes} != {prefix}: {case}"

    result = validate_paths([part], ValidateOptions())
    report = result.partitions[0]
    assert report.segments[0].recovery_point == prefix, f"{report.segments[0].recovery_point}: {case}"
    errors = result.summary().errors
    plan = recovery.plan_from_report(report)  # the plan `ktool truncate` runs (plan_partition = this)
    assert plan.advice == report.advice

    if unsound:
        assert plan.advice == "refused" and errors, (
            f"the broker keeps {unsound!r}; ktool did not refuse: {case}"
        )
        return "refused"
    assert plan.advice != "refused", f"refused {[f.fields() for f in plan.unrepairable]}: {case}"
    if prefix == len(damaged):
        assert plan.advice == "none" and errors == 0, f"{[f.fields() for f in result.all_findings()]}: {case}"
        return "none"
    assert errors, case
    lost = _intact_after(original, damaged, rules, prefix)
    if lost:
        assert plan.advice == "truncate --force", f"would silently lose entries at {lost}: {case}"
    if plan.advice == "truncate --force":
        for pos in plan.cut.valid_after:  # what ktool calls valid after the cut is valid to the broker
            assert recover(damaged[pos:], rules)[0] > 0, f"salvaged {pos} is not valid: {case}"
    assert plan.cut is not None and plan.cut.keep_bytes == prefix, case

    backup = repair.apply_plan(plan, workdir / "backups")
    assert log.read_bytes() == damaged[:prefix], case
    manifest = json.loads((backup / repair.MANIFEST).read_text())
    cut = next(a for a in manifest["actions"] if a["action"] == "truncate")
    assert (backup / cut["backup"]).read_bytes() == damaged[prefix:], case
    after = validate_paths([part], ValidateOptions())
    assert after.summary().errors == 0, f"{[f.fields() for f in after.all_findings()]}: {case}"
    undo.undo(backup / repair.MANIFEST)
    assert log.read_bytes() == damaged, f"undo did not restore: {case}"
    assert sorted(p.name for p in part.iterdir()) == [source.name], case
    return plan.advice


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("generation", sorted(SOURCES))
def test_truncate_keeps_exactly_what_the_broker_recovery_keeps(
    generation: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What is checked here is the bytes kept, backed up and restored; crash safety (the fsyncs) is
    # tested in test_truncate_cli.py (a crash part way). Without them, 10,400 cases take minutes,
    # not tens of minutes, when other processes share the disk.
    monkeypatch.setattr(os, "fsync", lambda fd: None)
    rules, sources = SOURCES[generation]
    assert sources, generation
    outcomes: dict[str, int] = {}

    @seed(SEED)
    @settings(
        max_examples=CASES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(source=st.sampled_from(sources), mutation=MUTATIONS)
    def run(source: Path, mutation: Mutation) -> None:
        outcome = check_case(source, rules, mutation, tmp_path / "case")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1

    run()
    total = sum(outcomes.values())
    print(f"\n{generation}: {total} cases, seed {SEED}: {outcomes}")
    assert total >= CASES * 0.95
    assert outcomes.get("truncate", 0) > CASES // 10 and outcomes.get("truncate --force", 0) > 0, outcomes


def test_a_length_field_claiming_2_gib_keeps_memory_flat(tmp_path: Path) -> None:
    start = _peak_rss_mb()
    for generation, (rules, sources) in SOURCES.items():
        for source in sources:
            for where in (0.0, 0.5, 0.99):
                check_case(source, rules, Mutation("length", where, 2, b""), tmp_path / generation)
    assert _peak_rss_mb() - start < 64


CLI_SAMPLE = int(os.environ.get("KTOOL_PROPERTY_CLI_CASES", "40"))


@pytest.mark.parametrize("generation", sorted(SOURCES))
def test_the_cli_agrees_on_a_sample(generation: str, tmp_path: Path) -> None:
    """The same judgement through `ktool` itself: validate, dump-log, truncate with and without --force,
    --dry-run, --undo; exit codes 0 or 1, never a traceback."""
    rules, sources = SOURCES[generation]
    rng = random.Random(SEED)
    kinds = ["flip", "overwrite", "zero-run", "zero-from", "cut", "append", "append-zeros", "length"]
    for i in range(CLI_SAMPLE):
        source = rng.choice(sources)
        mutation = Mutation(
            rng.choice(kinds), rng.random(), rng.randrange(1 << 32), rng.randbytes(rng.randint(1, 64))
        )
        original = source.read_bytes()
        damaged = mutation.apply(original, _entry_positions(original, rules), 0 if rules == "0.7" else 8)
        case = f"cli case {i}: source={source.relative_to(FIXTURES)} mutation={mutation} seed={SEED}"
        work = tmp_path / str(i)
        part = work / "logs" / "t-0"
        part.mkdir(parents=True)
        log = part / source.name
        log.write_bytes(damaged)
        prefix, kept = recover(damaged, rules)
        unsound = soundness(damaged, kept, int(source.name.split(".")[0]), rules)

        # Exit 1 exactly when the broker's recovery would not keep the file as it is (or keeps damage).
        damaged_exit = 1 if unsound or prefix < len(damaged) else 0
        for args in (["validate", str(part)], ["dump-log", "--deep-iteration", str(log)]):
            res = run_ktool(*args)
            assert "Traceback" not in res.output, f"{args}: {res.output}: {case}"
            assert res.exit_code == damaged_exit, f"{args}: exit {res.exit_code}: {res.output}: {case}"
        validated = run_ktool("validate", "--json", str(part))
        verdict = next(json.loads(x) for x in validated.stdout.splitlines() if '"partition"' in x[:30])
        dry = run_ktool("truncate", "--dry-run", "--json", str(part))
        plan = json.loads(dry.stdout.splitlines()[0])
        assert plan["repair"] == verdict["repair"], case
        assert log.read_bytes() == damaged, case

        backups = work / "backups"
        plain = run_ktool("truncate", "--backup-dir", str(backups), str(part))
        assert dry.exit_code == plain.exit_code, case  # the dry run predicts the run
        forced = run_ktool("truncate", "--force", "--json", "--backup-dir", str(backups), str(part))
        if unsound or prefix == len(damaged):
            assert log.read_bytes() == damaged, case
            assert plain.exit_code == forced.exit_code == (1 if unsound else 0), case
            continue
        if plain.exit_code == 0:
            assert verdict["repair"] == "truncate" and log.read_bytes() == damaged[:prefix], case
            continue
        assert plain.exit_code == 1 and verdict["repair"] == "truncate --force", case
        assert forced.exit_code == 0 and log.read_bytes() == damaged[:prefix], case
        assert run_ktool("validate", str(part)).exit_code == 0, case
        manifest = next(json.loads(x)["manifest"] for x in forced.stdout.splitlines() if '"applied"' in x)
        assert run_ktool("truncate", "--undo", manifest).exit_code == 0, case
        assert log.read_bytes() == damaged, case
