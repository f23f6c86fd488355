"""The JSON guard reads its input once: a string that never closes (`"` then `\\"` a million times), a
megabyte of quotes, a backslash last, brackets inside strings, a million `[` cost what the parser
costs, not hours. The guard once retried a string pattern at every `"` and read to the end from each:
8 KiB 0.4 s, 32 KiB 10 s, a 200 KB quorum-state still checked after 26 minutes.

The hostile inputs run in a child with a timeout, so a quadratic guard fails the test instead of
hanging it; their CPU time (not wall time: other work on the machine does not count) is bounded
generously, the answers exactly."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_tools import bounded_json
from kafka_tools.errors import EXIT_FINDINGS
from tests.support.script import run_script, script_env

MIB = 1 << 20
HOSTILE = {
    "escaped quotes, never closed": b'"' + b'\\"' * (MIB // 2),
    "a megabyte of quotes after a list": b'["a",' + b'"' * MIB,
    "unterminated strings after 65 brackets": b"[" * 65 + b'"\\' * (MIB // 2),
    "a backslash last": b'"' + b"a" * MIB + b"\\",
    "brackets inside a string": b'"' + b"[" * MIB + b'"',
    "brackets inside a string never closed": b'"' + b"[{" * (MIB // 2),
    "a million [": b"[" * MIB,
    "60 levels then escaped quotes": b"[" * 60 + b'"' + b'\\"' * (MIB // 2),
}
ANSWERS = {
    "escaped quotes, never closed": "invalid JSON: Unterminated string starting at: line 1 column 1 (char 0)",
    "a megabyte of quotes after a list": "invalid JSON: Expecting ',' delimiter: line 1 column 8 (char 7)",
    "unterminated strings after 65 brackets": "JSON nested deeper than 64 levels",
    "a backslash last": "invalid JSON: Unterminated string starting at: line 1 column 1 (char 0)",
    "brackets inside a string": None,  # parsed: the string itself
    "brackets inside a string never closed": (
        "invalid JSON: Unterminated string starting at: line 1 column 1 (char 0)"
    ),
    "a million [": "JSON nested deeper than 64 levels",
    "60 levels then escaped quotes": (
        "invalid JSON: Unterminated string starting at: line 1 column 61 (char 60)"
    ),
}
CPU_BOUND = 2.0  # seconds of CPU per input; about 0.05 on an idle core (bench figures in the commit)

_TIMED = """
import json, sys, time
from kafka_tools import bounded_json
from tests.zk.test_json_guard_linear import HOSTILE
for name, data in HOSTILE.items():
    start = time.process_time()
    try:
        bounded_json.loads(data)
        answer = None
    except bounded_json.JsonRejected as exc:
        answer = str(exc)
    print(json.dumps([name, answer, time.process_time() - start]), flush=True)
"""


def test_hostile_megabyte_inputs_are_answered_in_linear_time() -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", _TIMED], capture_output=True, text=True, timeout=60, cwd=root, env=script_env()
    )
    assert done.returncode == 0, done.stderr
    timed = {name: (answer, cpu) for name, answer, cpu in map(json.loads, done.stdout.splitlines())}
    assert {name: answer for name, (answer, _cpu) in timed.items()} == ANSWERS
    slow = {name: round(cpu, 3) for name, (_answer, cpu) in timed.items() if cpu > CPU_BOUND}
    assert not slow, slow


def test_a_200_kb_quorum_state_of_escaped_quotes_is_one_finding(tmp_path: Path) -> None:
    """The reproduction: `validate` of a log dir whose quorum-state is `"` and 100,000 `\\"` (26
    minutes and still running before)."""
    from tests.metadata.kraft_log import write_log_dir

    logs = write_log_dir(tmp_path / "logs")
    quorum = logs / "__cluster_metadata-0" / "quorum-state"
    quorum.write_bytes(b'"' + b'\\"' * 100_000)
    result = run_script("validate", "--json", str(logs), timeout=60)
    assert result.returncode == EXIT_FINDINGS, result.stderr
    found = [o for o in map(json.loads, result.stdout.splitlines()) if o.get("file") == str(quorum)]
    assert [f["message"] for f in found] == [
        "line 1: invalid JSON: Unterminated string starting at: line 1 column 1 (char 0)"
    ], found


# The guard before it was made linear: its answer is the reference for every text it finished on.
_OLD_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)

_text = st.text(alphabet=st.sampled_from(list('[]{}"\\ab,:1 ')), max_size=60)
_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet=st.sampled_from(list('[]{}"\\a\n'))),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_what_lies_outside_strings_is_what_the_old_pattern_left(value) -> None:
    """On every text the parser accepts, the bytes outside strings are exactly those the old pattern
    left, so the depth the guard counts (and its accept or reject) is unchanged."""
    data = json.dumps(value).encode()
    assert bounded_json._outside_strings(data) == _OLD_STRING.sub(b"", data)
    assert bounded_json.loads(data) == value


@settings(max_examples=300, deadline=None)
@given(_text)
def test_accept_or_reject_as_before_on_any_short_text(text: str) -> None:
    """Any text (most of them not JSON): accepted exactly when the old guard accepted it."""
    data = text.encode()
    old_outside = _OLD_STRING.sub(b"", data)
    old_brackets = old_outside.translate(None, bytes(b for b in range(256) if b not in b"[]{}"))
    depth, deepest = 0, 0
    for c in old_brackets:
        depth += 1 if c in b"[{" else -1
        deepest = max(deepest, depth)
    try:
        old = ("ok", json.loads(data)) if deepest <= 3 else ("rejected", None)
    except ValueError:
        old = ("rejected", None)
    try:
        new = ("ok", bounded_json.loads(data, max_depth=3))
    except bounded_json.JsonRejected:
        new = ("rejected", None)
    assert new == old
