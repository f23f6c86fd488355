"""Every input a fuzz harness ever stopped on (tests/fuzz/regressions/TARGET/*), replayed through the
same check with the ordinary build: C and the pure-Python reference agree on it, and nothing escapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafka_tools.format import record_reader as rr
from tests.fuzz.targets import TARGETS

HERE = Path(__file__).parent / "regressions"
INPUTS = sorted(p for p in HERE.glob("*/*") if p.is_file())

pytestmark = pytest.mark.skipif(not rr.HAS_SPEEDUPS, reason="C extension not built")


def test_every_target_has_regressions_kept() -> None:
    assert {p.parent.name for p in INPUTS} <= set(TARGETS)
    assert len(INPUTS) >= 2


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_saved_input_agrees(path: Path) -> None:
    TARGETS[path.parent.name](path.read_bytes())


def test_every_seed_of_the_fixtures_agrees() -> None:
    from tests.fuzz.seeds import seeds

    found = seeds()
    assert all(found.values()), {k: len(v) for k, v in found.items()}
    for target, items in found.items():
        for item in sorted(items)[:150]:
            TARGETS[target](item)
