"""A short coverage-guided run of every fuzz harness against the C extension built by clang with
AddressSanitizer and UBSan (tests/fuzz/build.py), seeded from fixtures/ and ../shared/realworld: any
memory error, undefined behaviour, uncaught exception or C-vs-Python disagreement fails the test and
leaves the input in the test's directory (save it under tests/fuzz/regressions/TARGET/).

Time per harness: KTOOL_FUZZ_SECONDS when set; 300 in `tests/run.sh --exhaustive`; otherwise 30 when
`kafka_tools/format/csrc/` changed since it was last fuzzed at length (tests/fuzz/fuzzed-csrc.sha1, written
by `python -m tests.fuzz.build --record` after a clean exhaustive run), and 3 when it did not: the seeds
and every kept regression replayed under the sanitizers, and a short run past them. The long runs are in
tests/fuzz/README.md."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.fuzz import build, seeds
from tests.fuzz.targets import TARGETS
from tests.support.sweep import exhaustive

MISSING = build.available()
pytestmark = [pytest.mark.sanitizer, pytest.mark.skipif(MISSING is not None, reason=MISSING or "")]


def _seconds() -> int:
    if "KTOOL_FUZZ_SECONDS" in os.environ:
        return int(os.environ["KTOOL_FUZZ_SECONDS"])
    if exhaustive():
        return 300
    return 3 if build.csrc_fuzzed() else 30


SECONDS = _seconds()


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("fuzz")
    so = build.build()  # from the cache while the sources, clang and Python are unchanged
    seeds.write(work / "seeds")
    return so, work


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_harness_finds_nothing(target: str, sanitized) -> None:
    so, work = sanitized
    corpus = work / f"corpus-{target}"
    corpus.mkdir()
    kept = Path(__file__).parent / "regressions" / target  # every input a harness stopped on
    args = [
        f"-max_total_time={SECONDS}",
        f"-max_len={seeds.MAX_LEN}",
        "-print_final_stats=1",
        f"-artifact_prefix={work}/{target}-",
        str(corpus),
        str(work / "seeds" / target),
    ]
    args += [str(kept)] if kept.is_dir() else []
    result = subprocess.run(
        build.harness_command(target, so, *args),
        capture_output=True,
        text=True,
        env=build.harness_env(),
        cwd=work,
        timeout=SECONDS * 4 + 300,
    )
    tail = result.stderr[-4000:]
    assert result.returncode == 0, tail
    assert "runtime error" not in result.stderr and "ERROR: AddressSanitizer" not in result.stderr, tail
    runs = int(re.search(r"stat::number_of_executed_units: (\d+)", result.stderr).group(1))
    assert runs > 100, tail  # it ran: each input is checked by C and by Python
