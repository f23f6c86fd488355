"""Message sets (magic 0/1) in C must be indistinguishable from the pure-Python reference: the same
entries, findings, positions and output lines on every real segment, every corruption of one, and on
garbage. Each test runs ktool twice in one process, once with the C paths switched off."""

from __future__ import annotations

import json
import random
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_tools.cli.main import cli
from kafka_tools.format import accel, segment
from kafka_tools.format.message_set import iter_messages, parse_message
from kafka_tools.format.problems import Problem
from kafka_tools.format.record_reader import RecordDecodeError
from kafka_tools.format.segment import MessageRun, RunBounds, iter_log_entries
from kafka_tools.log.checks.findings import ValidateOptions
from kafka_tools.log.checks.segment_checks import scan_segment
from kafka_tools.log.validate import validate_paths
from kafka_tools.render import dump_json
from tests.independent import FIXTURES
from tests.support.reports import segment_report

pytestmark = pytest.mark.skipif(not segment.HAS_MESSAGE_RUNS, reason="C extension not built")

GENERATED = FIXTURES / "generated"
K09 = FIXTURES / "kafka-0.9.0.1" / "logdir"
SEGMENTS = sorted(
    [*GENERATED.glob("v[01]/*/*.log"), *K09.glob("*/*.log"), *GENERATED.glob("corrupt/v0-*/*.log")]
)


def pure(monkeypatch) -> None:
    """Switch every C path off, as KTOOL_PURE_PYTHON=1 does at import: format/accel's one switch."""
    monkeypatch.setattr(accel, "C", None)


def _expanded(path, runs: RunBounds | None) -> list[tuple]:
    """Entries of a walk, runs opened up into their messages; each as comparable fields."""
    out = []
    for item in iter_log_entries(path, runs=runs):
        if isinstance(item, MessageRun):
            messages = list(iter_messages(item.data, item.position))
            assert len(messages) == item.count and messages[-1].next_position == item.end
            assert (messages[0].offset, messages[-1].offset) == (item.first_offset, item.last_offset)
            out += [("m", m.position, m.offset, m.crc, m.is_valid, m.key, m.value) for m in messages]
        elif isinstance(item, Problem):
            out.append(("p", item.position, item.kind, item.message, item.offset))
        else:
            out.append(("m", item.position, item.offset, item.crc, item.is_valid, item.key, item.value))
    return out


def test_real_segments_walk_the_same_with_runs() -> None:
    runs_seen = 0
    for path in SEGMENTS:
        runs = RunBounds(keep_data=True)
        assert _expanded(path, runs) == _expanded(path, None), path
        runs_seen += sum(isinstance(i, MessageRun) for i in iter_log_entries(path, runs=RunBounds()))
    assert runs_seen > 5


def _validate_json(paths: list[str]) -> str:
    result = CliRunner().invoke(cli, ["validate", "--json", *paths], catch_exceptions=False)
    return result.stdout


def test_validate_is_the_same_on_every_real_segment_and_log_dir(monkeypatch) -> None:
    fast = [segment_report(p, {0, 128, 4096}) for p in SEGMENTS]
    trees = [str(GENERATED / "v0"), str(GENERATED / "v1"), str(K09), str(GENERATED / "corrupt")]
    fast_cli = _validate_json(trees)
    pure(monkeypatch)
    assert [segment_report(p, {0, 128, 4096}) for p in SEGMENTS] == fast
    assert _validate_json(trees) == fast_cli


def _mutations(data: bytes, rnd: random.Random, n: int):
    for _ in range(n):
        b = bytearray(data)
        how = rnd.randrange(4)
        if how == 0:  # a flipped byte anywhere (CRC, size, magic, lengths, offsets)
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
        elif how == 1:
            del b[rnd.randrange(len(b)) :]
        elif how == 2:  # an offset moved back or far ahead (not covered by the CRC)
            at = rnd.randrange(len(b) // 40) * 40
            b[at : at + 8] = rnd.choice([0, 1, 5, 2**31 + 7, 2**63 - 1]).to_bytes(8, "big")
        else:
            b[rnd.randrange(len(b)) :] = bytes(rnd.randrange(1, 200))
        yield bytes(b)


@pytest.mark.property  # 40 seeded random mutations per source, each read 6 times
@pytest.mark.parametrize("source", ["v0/none-0", "v1/none-0", "v0/gzip-0", "v1/snappy-0", "v1/lz4-0"])
def test_corrupted_copies_validate_and_dump_the_same(source: str, tmp_path: Path, monkeypatch) -> None:
    data = (GENERATED / source / "00000000000000000000.log").read_bytes()
    rnd = random.Random(source)
    copies = []
    for i, mutated in enumerate(_mutations(data, rnd, 40)):
        path = tmp_path / f"p{i}-0" / "00000000000000000000.log"
        path.parent.mkdir()
        path.write_bytes(mutated)
        copies.append(path)
    fast = [(segment_report(p, {0, 26, 52, 200}), _dump(p), _dump(p, "--json")) for p in copies]
    pure(monkeypatch)
    for path, expected in zip(copies, fast, strict=True):
        assert (segment_report(path, {0, 26, 52, 200}), _dump(path), _dump(path, "--json")) == expected, path


def _dump(path: Path, *extra: str) -> tuple[int, str, str]:
    args = ["dump-log", "--deep-iteration", "--print-data-log", *extra, str(path)]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--deep-iteration"],
        ["--print-data-log"],
        ["--print-data-log", "--json"],
        ["--json"],
        ["--print-data-log", "--value-decoder", "hex"],
        ["--print-data-log", "--key-decoder", "none", "--json"],
        ["--print-data-log", "--skip-record-metadata"],
        ["--print-data-log", "--max-bytes", "300"],
        ["--print-data-log", "--from-offset", "3"],
    ],
)
def test_dump_log_prints_the_same_in_c_and_python(args: list[str], monkeypatch) -> None:
    files = [str(p) for p in SEGMENTS]
    runner = CliRunner()
    fast = runner.invoke(cli, ["dump-log", *args, *files], catch_exceptions=False)
    with monkeypatch.context() as m:  # runs, but each message printed by the Python renderer
        m.setattr(accel, "C", accel.without("format_messages"))
        per_message = runner.invoke(cli, ["dump-log", *args, *files], catch_exceptions=False)
    pure(monkeypatch)
    reference = runner.invoke(cli, ["dump-log", *args, *files], catch_exceptions=False)
    assert (fast.exit_code, fast.stdout, fast.stderr) == (
        reference.exit_code,
        reference.stdout,
        reference.stderr,
    )
    assert (per_message.exit_code, per_message.stdout) == (reference.exit_code, reference.stdout)


def _segment_of(messages: list[tuple[bytes | None, bytes | None]], magic: int, path: Path) -> Path:
    import sys

    sys.path.insert(0, str(FIXTURES))
    from make_fixtures import BrokerLegacyBuilder

    b = BrokerLegacyBuilder(magic, 0)
    for i, (key, value) in enumerate(messages):
        b.append(i, 1_700_000_000_000 + i if magic else None, key, value)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(b.build()))
    return path


AWKWARD = [
    (b"k", b'quote " backslash \\ newline \n tab \t cr \r nul \x00 bell \x07 del \x7f'),
    (None, "caf\u00e9 \u2028 \U0001f600".encode()),
    (b"\xff\xfe bad utf-8 \xc3", b"\xe2\x82 cut \xed\xa0\x80 surrogate \xf4\x90\x80\x80 too big"),
    (b"", b""),
    (b"null value", None),
    (None, None),
]


@pytest.mark.parametrize("magic", [0, 1])
def test_awkward_keys_and_values_print_the_same(magic: int, tmp_path: Path, monkeypatch) -> None:
    path = _segment_of(AWKWARD, magic, tmp_path / "t-0" / "00000000000000000000.log")
    fast = [_dump(path), _dump(path, "--json"), _dump(path, "--json", "--value-decoder", "json")]
    for line in fast[1][1].split("\n")[:-1]:  # (U+2028 is no line break in JSON Lines)
        json.loads(line)
    pure(monkeypatch)
    assert [_dump(path), _dump(path, "--json"), _dump(path, "--json", "--value-decoder", "json")] == fast


def _inner_py(data: bytes):
    """What the Python parser makes of a decompressed inner set: (count, first, last) or the error."""
    inner = []
    pos = 0
    try:
        while pos < len(data):
            if len(data) - pos < 26:
                raise RecordDecodeError("stray", 0)
            m = parse_message(data, pos, pos, len(data))
            inner.append(m)
            pos = m.next_position
    except RecordDecodeError:
        return None
    return (len(inner), inner[0].offset, inner[-1].offset, max(m.offset for m in inner)) if inner else None


INNER = (GENERATED / "v1" / "none-0" / "00000000000000000000.log").read_bytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_inner_set_walk_agrees_with_python_on_garbage(data) -> None:
    choice = data.draw(st.integers(0, 2))
    if choice == 0:
        blob = data.draw(st.binary(max_size=200))
    else:
        cut = data.draw(st.integers(0, len(INNER)))
        blob = bytearray(INNER[:cut])
        if choice == 2 and blob:
            at = data.draw(st.integers(0, len(blob) - 1))
            blob[at] = data.draw(st.integers(0, 255))
        blob = bytes(blob)
    assert accel.C.scan_inner(blob) == _inner_py(blob)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=400), st.integers(0, 3))
def test_message_walk_agrees_with_python_on_garbage(blob: bytes, prefix: int) -> None:
    buf = INNER[: 40 * prefix] + blob
    at, count, first, last, _, _ = accel.C.scan_messages(buf, 0, len(buf), len(buf), None, 0, 2**40)
    pos, n, offsets = 0, 0, []
    while pos < len(buf):
        try:
            m = parse_message(buf, pos, pos, len(buf)) if len(buf) - pos >= 17 else None
        except (RecordDecodeError, Exception):
            m = None
        if m is None or m.codec or not m.is_valid or not 0 <= m.offset <= 2**40:
            break
        if offsets and m.offset <= offsets[-1]:
            break
        offsets.append(m.offset)
        pos = m.next_position
        n += 1
    assert (at, count) == (pos, n)
    if n:
        assert (first, last) == (offsets[0], offsets[-1])


def test_validate_memory_keeps_only_indexed_positions() -> None:
    path = GENERATED / "v0" / "none-0" / "00000000000000000000.log"
    report = scan_segment(path, ValidateOptions())
    assert report.entries > 10 and report.entry_positions == {}
    report = scan_segment(path, ValidateOptions(), index_positions={0})
    assert list(report.entry_positions) == [0]


def test_validate_jobs_gives_the_same_answer() -> None:
    trees = [str(GENERATED / "v0"), str(GENERATED / "v1"), str(K09), str(GENERATED / "corrupt")]
    one = _validate_json(["--jobs", "1", *trees])
    assert _validate_json(["--jobs", "2", *trees]) == one == _validate_json(trees)
    assert validate_paths(trees, ValidateOptions()).summary().entries > 100


@pytest.mark.parametrize("codec", [1, 2, 3])
def test_log_append_time_wrappers_print_the_same(codec: int, tmp_path: Path, monkeypatch) -> None:
    import sys

    sys.path.insert(0, str(FIXTURES))
    from make_fixtures import BrokerLegacyBuilder

    path = tmp_path / "lat-0" / "00000000000000000000.log"
    path.parent.mkdir()
    blobs = []
    for w in range(3):
        b = BrokerLegacyBuilder(
            1, codec, wrapper_offset=w * 4 + 3, wrapper_timestamp=1_800_000_000_000 + w, log_append_time=True
        )
        for k in range(4):
            b.append(k, 1_700_000_000_000 + k, b"key", f"value {w} {k}".encode())
        blobs.append(bytes(b.build()))
    path.write_bytes(b"".join(blobs))
    fast = [_dump(path), _dump(path, "--json"), _dump(path, "--deep-iteration")]
    assert ": 1800000000002 isvalid" in fast[0][1]  # the wrapper's append time on its inner messages
    pure(monkeypatch)
    assert [_dump(path), _dump(path, "--json"), _dump(path, "--deep-iteration")] == fast


V2 = sorted([*GENERATED.glob("v2/*/*.log"), *GENERATED.glob("corrupt/v2-*/*.log")])


@pytest.mark.parametrize(
    "args",
    [
        ["--deep-iteration"],
        ["--print-data-log"],
        ["--print-data-log", "--value-decoder", "hex"],
        ["--json", "--deep-iteration"],
        ["--json", "--print-data-log"],
    ],
)
def test_v2_record_lines_print_the_same_in_c_and_python(args: list[str], monkeypatch) -> None:
    files = [str(p) for p in V2]
    assert files
    fast = CliRunner().invoke(cli, ["dump-log", *args, *files], catch_exceptions=False)
    with monkeypatch.context() as m:  # records decoded, then their lines made in C (text only)
        m.setattr(accel, "C", accel.without("format_payload"))
        from_records = CliRunner().invoke(cli, ["dump-log", *args, *files], catch_exceptions=False)
    monkeypatch.setattr(accel, "C", accel.without("format_payload", "format_records"))
    reference = CliRunner().invoke(cli, ["dump-log", *args, *files], catch_exceptions=False)
    assert (fast.exit_code, fast.stdout, fast.stderr) == (
        reference.exit_code,
        reference.stdout,
        reference.stderr,
    )
    assert "headerKeys: [" in fast.stdout or '"headerKeys":[' in fast.stdout
    assert (from_records.exit_code, from_records.stdout, from_records.stderr) == (
        reference.exit_code,
        reference.stdout,
        reference.stderr,
    )


def _v2_segment_of(records: list[tuple[bytes | None, bytes | None]], path: Path) -> Path:
    from kafka.record.default_records import DefaultRecordBatchBuilder

    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for i, (key, value) in enumerate(records):
        headers = [("h", value), ("null", None)] if i % 2 else []
        b.append(i, timestamp=1_700_000_000_000 + i, key=key, value=value, headers=headers)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(b.build()))
    return path


def test_v2_awkward_and_random_bytes_print_the_same_in_c_and_python(tmp_path: Path, monkeypatch) -> None:
    # Bytes that are not UTF-8: text lines escape them (\\xNN) in C exactly as render/values.py does;
    # JSON has U+FFFD in C exactly as Python's decode("utf-8", "replace") does.
    rnd = random.Random(16)
    pieces = [b"\xe0\xa0", b"\xed\xa0\x80", b"\xf0\x90\x80", b"\xf4\x90", b"\xc0", b"\xff", b"\xe2\x82\xac"]
    pieces += [b"\xf0\x9f\x98\x80", b"a", b"\x80", b"\xc3", b"\xc3\xa9", b"\xf5", b"\xe1\x80", b"\n"]
    records = AWKWARD + [
        (bytes(rnd.randrange(256) for _ in range(rnd.randrange(9))), rnd.randbytes(rnd.randrange(40)))
        for _ in range(200)
    ]
    records += [(b"".join(rnd.choices(pieces, k=3)), b"".join(rnd.choices(pieces, k=12))) for _ in range(300)]
    path = _v2_segment_of(records, tmp_path / "t-0" / "00000000000000000000.log")
    args = [["--print-data-log"], ["--deep-iteration"], ["--json", "--print-data-log"], ["--json", "--deep"]]
    fast = [CliRunner().invoke(cli, ["dump-log", *a, str(path)], catch_exceptions=False) for a in args]
    assert "\\xed\\xa0\\x80" in fast[0].stdout and "\ufffd" not in fast[0].stdout
    assert "\ufffd" in fast[2].stdout
    for line in fast[2].stdout.split("\n")[:-1]:
        json.loads(line)
    monkeypatch.setattr(accel, "C", accel.without("format_payload", "format_records"))
    reference = [CliRunner().invoke(cli, ["dump-log", *a, str(path)], catch_exceptions=False) for a in args]
    assert [(r.exit_code, r.stdout) for r in fast] == [(r.exit_code, r.stdout) for r in reference]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_record_lines_from_bytes_agree_with_decoding_on_garbage(data) -> None:
    """format_payload (the C walk that prints v2 records from the batch's bytes) accepts exactly what
    decode_records accepts, fails with the same error, and prints what format_records prints."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    from kafka_tools.format.record_reader import decode_records_py

    b = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, 1 << 20)
    for i in range(data.draw(st.integers(0, 4))):
        headers = [("h\xe9", b"v"), ("n", None)] if i % 2 else []
        b.append(
            i,
            timestamp=1_700_000_000_000 + i,
            key=b"k%d" % i if i % 3 else None,
            value=b"v\xff" * i,
            headers=headers,
        )
    payload = bytearray(bytes(b.build())[61:])
    for _ in range(data.draw(st.integers(0, 3))):
        if payload:
            payload[data.draw(st.integers(0, len(payload) - 1))] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        payload = payload[: data.draw(st.integers(0, len(payload)))]
    count = data.draw(st.integers(0, 6))
    args = (bytes(payload), count, 100, 1_700_000_000_000, None, data.draw(st.sampled_from([-1, 5])))

    def outcome(fn):
        try:
            return ("ok", fn())
        except RecordDecodeError as exc:
            return ("error", str(exc), exc.position)

    decoded = outcome(lambda: decode_records_py(*args))
    for print_data in (False, True):
        lines = outcome(lambda p=print_data: accel.C.format_payload(*args, "CreateTime", p, False))
        if decoded[0] == "ok":
            assert lines == ("ok", accel.C.format_records(decoded[1], "CreateTime", print_data))
        else:
            assert lines == decoded
    for print_data in (False, True):  # --json's `record` objects
        lines = outcome(lambda p=print_data: accel.C.format_payload(*args, "CreateTime", p, False, '"f"', 7))
        if decoded[0] != "ok":
            assert lines == decoded
            continue
        renderer = dump_json.DumpJsonRenderer(None, print_data)  # type: ignore[arg-type]
        batch = SimpleNamespace(
            position=7, timestamp_type=SimpleNamespace(label="CreateTime"), is_control=False
        )
        objects = [renderer._record("f", batch, r, None) for r in decoded[1]]  # type: ignore[arg-type]
        text = "".join(json.dumps(o, ensure_ascii=False, separators=(",", ":")) + "\n" for o in objects)
        assert lines == ("ok", text.encode())
    checked = outcome(lambda: accel.C.format_payload(*args, "", False, True))
    assert checked == (("ok", len(decoded[1])) if decoded[0] == "ok" else decoded)
