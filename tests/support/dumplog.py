"""`ktool dump-log` text next to DumpLogSegments' (Kafka 3.9 / 4.x): both parsed, compared field by field.

Differences kept on purpose (docs/dump-log.md): ktool's header line is `Starting offset:` (Kafka up to
3.9; 4.x says `Log starting offset:`), and ktool adds `headers: [k:v,…]` after Kafka's `headerKeys`.
Used by tests/modern and bench/dumplog_kafka.py.
"""

from __future__ import annotations

import re

FIELD = re.compile(r"(\w+): ")
KTOOL_ONLY = {"headers"}  # fields ktool prints that DumpLogSegments does not


def fields(line: str) -> list[tuple[str, str]]:
    """`offset: 0 CreateTime: … payload: a b` -> [(offset, 0), …]; a key or payload keeps its spaces."""
    names = list(FIELD.finditer(line))
    out: list[tuple[str, str]] = []
    for i, m in enumerate(names):
        if out and out[-1][0] in ("key", "payload") and m.group(1) != "payload":
            continue  # `word: ` inside a key or payload is data
        if out and out[-1][0] == "headers" and m.group(1) not in ("key", "payload"):
            continue  # and inside ktool's header values
        end = names[i + 1].start() - 1 if i + 1 < len(names) else len(line)
        out.append((m.group(1), line[m.end() : end]))
    return out


def assert_same_dump(ours: str, theirs: str) -> int:
    """Line by line: every field DumpLogSegments prints, in its order and with its value; returns the
    number of record and batch lines compared."""
    mine, ref = ours.splitlines(), theirs.splitlines()
    assert len(mine) == len(ref), f"{len(mine)} lines, DumpLogSegments {len(ref)}"
    compared = 0
    for n, (a, b) in enumerate(zip(mine, ref, strict=True), start=1):
        if b.startswith("Log starting offset: "):
            assert a == "Starting offset: " + b.removeprefix("Log starting offset: "), f"line {n}"
            continue
        if b.startswith("Dumping ") or b.startswith("Starting offset: "):
            assert a == b, f"line {n}"
            continue
        got = [(k, v) for k, v in fields(a) if k not in KTOOL_ONLY]
        assert got == fields(b), f"line {n}:\n ktool: {a}\n kafka: {b}"
        assert a.startswith("| ") == b.startswith("| ")
        compared += 1
    return compared
