"""A short coverage-guided run of every fuzz harness against the C extension built by clang with
AddressSanitizer and UBSan (tests/fuzz/build.py), seeded from fixtures/ and ../shared/realworld: any
memory error, undefined behaviour, uncaught exception or C-vs-Python disagreement fails the test and
leaves the input in the test's directory (save it under tests/fuzz/regressions/TARGET/).

KTOOL_FUZZ_SECONDS sets the time per harness (default 30); the long runs are in tests/fuzz/README.md."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from tests.fuzz import build, seeds
from tests.fuzz.targets import TARGETS

MISSING = build.available()
pytestmark = [pytest.mark.sanitizer, pytest.mark.skipif(MISSING is not None, reason=MISSING or "")]
SECONDS = int(os.environ.get("KTOOL_FUZZ_SECONDS", "30"))


@pytest.fixture(scope="module")
def sanitized(tmp_path_factory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("fuzz")
    so = build.build(work / "build")
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
