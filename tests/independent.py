"""Decoding with kafka-python's record readers: an implementation independent of ktool's, used as the
reference in tests. Nothing here imports kafka_tools."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kafka.record import MemoryRecords

ROOT = Path(__file__).resolve().parents[1]  # the project
# ../shared/realworld beside the checkout; KTOOL_REALWORLD points elsewhere (a git worktree's checkout).
REALWORLD = Path(os.environ.get("KTOOL_REALWORLD") or ROOT.parent / "shared" / "realworld")
FIXTURES = ROOT / "fixtures"


def needs_realworld(module: bool = False) -> None:
    """Skip a test (or, with `module`, a whole module) that reads ../shared/realworld where a plain
    clone has no such folder; under CI (CI=true), which has it beside the checkout, fail instead, so a
    moved or missing folder is never a quiet skip there. Its README asks that its files stay out of the
    repository."""
    import pytest

    if REALWORLD.is_dir():
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{REALWORLD} is absent: CI runs beside ../shared (set KTOOL_REALWORLD otherwise)")
    pytest.skip(f"{REALWORLD} is absent (a plain clone); CI reads it", allow_module_level=module)


def segment_files() -> list[Path]:
    """Every segment of the fixtures and of ../shared/realworld (when present), in a stable order."""
    roots = [FIXTURES] + ([REALWORLD] if REALWORLD.is_dir() else [])
    files = (p for root in roots for p in root.rglob("*") if p.suffix in (".log", ".kafka"))
    return sorted(p for p in files if p.is_file())


@dataclass(frozen=True)
class RefRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple


@dataclass(frozen=True)
class RefBatch:
    magic: int
    base_offset: int
    crc_valid: bool
    records: tuple[RefRecord, ...]


def read_with_kafka_python(path: Path) -> list[RefBatch]:
    """Every batch (v2) or shallow message (v0/v1) of a segment, with its records, as kafka-python sees it."""
    records = MemoryRecords(path.read_bytes())
    batches = []
    while records.has_next():
        batch = records.next_batch()
        crc_valid = bool(batch.validate_crc())
        out = []
        for r in batch:
            ts = r.timestamp if r.timestamp is not None else -1
            headers = tuple((k, v) for k, v in (r.headers or ()))
            out.append(RefRecord(r.offset, ts, _b(r.key), _b(r.value), headers))
        batches.append(RefBatch(batch.magic, batch.base_offset, crc_valid, tuple(out)))
    return batches


def _b(value) -> bytes | None:
    return None if value is None else bytes(value)
