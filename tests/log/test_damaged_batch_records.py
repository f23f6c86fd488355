"""A v2 batch whose fourth record is damaged (its CRC correct: the damage was written so): `dump-log
--deep-iteration` and `read` show the three records before the damage, then the finding (exit 1), as
Kafka's DumpLogSegments prints a batch's records until the one it cannot read and a consumer gets the
records before a corrupt one. The same with the C paths on or off, uncompressed or gzip, text or JSON.
And a compressed batch's lines, made in C from its decompressed bytes, are the pure-Python dump's."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from kafka_tools.format import accel
from tests.support import hostile
from tests.support.cli import run_ktool

T0 = 1_700_000_000_000


def _section(n: int, first_value: int = 0) -> bytes:
    return b"".join(
        hostile.v2_record(
            offset_delta=i, key=b"k%d" % (first_value + i), value=b"value %d" % (first_value + i)
        )
        for i in range(n)
    )


def write_partition(root: Path, codec: str) -> Path:
    """Offsets 0-3 in a good batch; 4-7 in a batch whose record 3 (offset 7) is cut to one byte;
    8-9 in a good batch after it."""
    damaged = _section(3, 4) + b"\x02"  # a record of length 1: impossible
    payload, attributes = (gzip.compress(damaged), 1) if codec == "gzip" else (damaged, 0)
    data = (
        hostile.v2_batch(_section(4), 4, 0, T0, last_offset_delta=3)
        + hostile.v2_batch(payload, 4, 4, T0, attributes=attributes, last_offset_delta=3)
        + hostile.v2_batch(_section(2, 8), 2, 8, T0, last_offset_delta=1)
    )
    part = root / "t-0"
    part.mkdir()
    (part / "00000000000000000000.log").write_bytes(data)
    return part


@pytest.fixture(params=["c", "pure"])
def paths(request, monkeypatch) -> str:
    if request.param == "c":
        if accel.C is None:
            pytest.skip("C extension not built")
    else:
        monkeypatch.setattr(accel, "C", None)
    return request.param


def _record_keys_text(out: str) -> list[str]:
    return [
        line.split(" key: ")[1].split(" ")[0] for line in out.splitlines() if line.startswith("| offset:")
    ]


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_dump_log_text_shows_the_records_before_the_damage_then_it(tmp_path, paths, codec) -> None:
    log = write_partition(tmp_path, codec) / "00000000000000000000.log"
    result = run_ktool("dump-log", "--deep-iteration", "--print-data-log", str(log))
    assert result.exit_code == 1
    assert _record_keys_text(result.stdout) == ["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k8", "k9"]
    lines = result.stdout.splitlines()
    damaged_batch = next(i for i, line in enumerate(lines) if line.startswith("baseOffset: 4 "))
    assert [line.split(" key: ")[1] for line in lines[damaged_batch + 1 : damaged_batch + 4]] == [
        "k4 payload: value 4",
        "k5 payload: value 5",
        "k6 payload: value 6",
    ]
    assert lines[damaged_batch + 4].startswith("baseOffset: 8 ")
    (finding,) = result.stderr.splitlines()
    assert "records-undecodable: record 3: length 1 is impossible" in finding
    assert "(offset 7)" in finding and "Traceback" not in result.stderr


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_dump_log_json_gives_the_records_before_the_damage_then_the_problem(tmp_path, paths, codec) -> None:
    log = write_partition(tmp_path, codec) / "00000000000000000000.log"
    result = run_ktool("dump-log", "--deep-iteration", "--print-data-log", "--json", str(log))
    assert result.exit_code == 1
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    kinds = [(o["type"], o.get("offset", o.get("baseOffset"))) for o in objs[1:-2]]
    assert objs[-2]["type"] == "file-summary" and objs[-2]["file"] == str(log)
    assert kinds == [
        ("batch", 0),
        *[("record", o) for o in range(4)],
        ("batch", 4),
        *[("record", o) for o in (4, 5, 6)],
        ("problem", 7),
        ("batch", 8),
        ("record", 8),
        ("record", 9),
    ]
    problem = objs[1 + kinds.index(("problem", 7))]
    assert problem["kind"] == "records-undecodable"
    assert problem["message"].startswith("record 3: length 1 is impossible")
    assert objs[-1]["type"] == "summary" and objs[-1]["records"] == 9 and objs[-1]["errors"] == 1


@pytest.mark.parametrize("codec", ["none", "gzip"])
@pytest.mark.parametrize("json_out", [False, True])
def test_read_shows_the_records_before_the_damage_then_exits_1(tmp_path, paths, codec, json_out) -> None:
    part = write_partition(tmp_path, codec)
    result = run_ktool("read", *(["--json"] if json_out else []), str(part), "--offset", "2")
    assert result.exit_code == 1
    if json_out:
        objs = [json.loads(line) for line in result.stdout.splitlines()]
        shown = [o["key"] for o in objs if o["type"] == "record"]
    else:
        shown = _record_keys_text(result.stdout)
    assert shown == ["k2", "k3", "k4", "k5", "k6"]
    (line,) = result.stderr.splitlines()
    assert "records undecodable: record 3: length 1 is impossible" in line and "Traceback" not in line


def test_read_of_records_before_the_damage_only_is_clean(tmp_path, paths) -> None:
    part = write_partition(tmp_path, "gzip")
    result = run_ktool("read", str(part), "--offset", "5", "--count", "2")
    assert result.exit_code == 0, result.stderr
    assert _record_keys_text(result.stdout) == ["k5", "k6"]
    result = run_ktool("read", str(part), "--offset", "5", "--count", "3")
    assert result.exit_code == 1
    assert _record_keys_text(result.stdout) == ["k5", "k6"]


def test_read_from_a_time_finds_a_record_before_the_damage(tmp_path, paths) -> None:
    part = write_partition(tmp_path, "none")
    result = run_ktool("read", str(part), "--timestamp", str(T0), "--count", "1")
    assert result.exit_code == 0, result.stderr
    assert _record_keys_text(result.stdout) == ["k0"]


@pytest.mark.skipif(accel.C is None, reason="C extension not built")
@pytest.mark.parametrize("args", [["--print-data-log"], ["--print-data-log", "--json"], ["--json"], []])
def test_compressed_batches_dump_from_their_bytes_as_the_python_reference_prints_them(
    monkeypatch, args
) -> None:
    """Compressed v2 batches (every codec) are decompressed once and their lines made in C from the
    bytes, as uncompressed ones are: the same output as the pure-Python dump, record for record."""
    from kafka_tools.format.segment import iter_log_entries
    from tests.independent import FIXTURES

    logs = sorted((FIXTURES / "generated" / "v2").glob("*/*.log"))
    codecs = {e.codec for path in logs for e in iter_log_entries(path) if hasattr(e, "codec")}
    assert codecs >= {1, 2, 3, 4}, codecs
    files = [str(p) for p in logs]
    fast = run_ktool("dump-log", "--deep-iteration", *args, *files)
    monkeypatch.setattr(accel, "C", None)
    slow = run_ktool("dump-log", "--deep-iteration", *args, *files)
    assert (fast.exit_code, fast.stdout, fast.stderr) == (slow.exit_code, slow.stdout, slow.stderr)
    assert fast.stdout.count("offset") > 100
