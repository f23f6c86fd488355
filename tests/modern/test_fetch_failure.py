"""A Kafka release whose jars cannot be fetched (here: Maven offline with an empty local repository, as
on a machine without network) skips the modern-broker tests with one line naming the artifact, and
fails them under CI: a green CI must never hide a skipped real-broker test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import modern

pytestmark = pytest.mark.slow  # pytest and Maven in subprocesses
ROOT = Path(__file__).resolve().parents[2]
ARTIFACT = f"org.apache.kafka:kafka_2.13:{modern.KAFKA_4.version}"


def _offline_env(tmp_path: Path, ci: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["KTOOL_CACHE"] = str(tmp_path / "cache")
    env["KTOOL_MAVEN_ARGS"] = f"-o -Dmaven.repo.local={tmp_path / 'empty-m2'}"
    if ci:
        env["CI"] = "true"
    return env


def _pytest(tmp_path: Path, ci: bool) -> subprocess.CompletedProcess:
    test = "tests/modern/test_fixtures.py::test_kraft_one_controller_three_brokers_round_trip"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", test],
        cwd=ROOT,
        env=_offline_env(tmp_path, ci),
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_outside_ci_one_skip_line_names_the_artifact(tmp_path):
    run = _pytest(tmp_path, ci=False)
    assert run.returncode == 0, run.stdout + run.stderr
    skips = [line for line in run.stdout.splitlines() if line.startswith("SKIPPED")]
    assert len(skips) == 1 and ARTIFACT in skips[0], run.stdout
    assert (
        "1 skipped" in run.stdout
        and not (tmp_path / "cache" / f"kafka-{modern.KAFKA_4.version}" / "libs").exists()
    )


def test_under_ci_the_same_failure_fails_the_run(tmp_path):
    run = _pytest(tmp_path, ci=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert (
        "1 error" in run.stdout
        and ARTIFACT in run.stdout
        and "prerequisites must be installed in CI" in run.stdout
    )


def test_the_prefetch_of_tests_run_sh_exits_1_naming_each_artifact(tmp_path):
    run = subprocess.run(
        [sys.executable, "-m", "tests.support.modern"],
        cwd=ROOT,
        env=_offline_env(tmp_path, ci=True),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1
    lines = run.stderr.splitlines()
    assert len(lines) == len(modern.RELEASES)
    for release, line in zip(modern.RELEASES.values(), lines, strict=True):
        assert line.startswith(f"tests/support/modern: {release.artifact} could not be fetched with Maven: ")
        assert "\x1b" not in line
