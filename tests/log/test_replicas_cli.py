"""`ktool replicas diff` as an operator runs it: exit codes, the table, JSON Lines, `--records`, and
the real-world log dirs of ../shared/realworld (a replica against itself and against copies cut or
altered at known places; skipped when that folder is absent)."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from tests.independent import REALWORLD as SHARED_REALWORLD
from tests.independent import needs_realworld
from tests.support.cli import run_ktool
from tests.support.replica_logs import TOPIC, Batch, values, write_replica

REALWORLD = SHARED_REALWORLD / "kafka-2.x-logdir"


def diff(*args: str) -> tuple[int, str, str]:
    result = run_ktool("replicas", "diff", *args)
    return result.exit_code, result.stdout, result.stderr


def objects(stdout: str, kind: str) -> list[dict]:
    return [o for o in map(json.loads, stdout.splitlines()) if o.get("type") == kind]


def frames(path: Path) -> list[tuple[int, int, int]]:
    """(position, base offset, size) of each entry, from the 12-byte frame headers (test-side)."""
    data, out, pos = path.read_bytes(), [], 0
    while pos + 12 <= len(data):
        offset, size = struct.unpack_from(">qi", data, pos)
        out.append((pos, offset, size + 12))
        pos += size + 12
    return out


@pytest.fixture
def diverged(tmp_path):
    """Broker 1 wrote a3..a5 alone (epoch 1); broker 2, elected uncleanly, b3..b4 (epoch 2)."""
    shared = Batch(0, values("x", 0, 3))
    a = write_replica(tmp_path / "a", 1, [shared, Batch(1, values("a", 3, 3))], epochs=[(0, 0), (1, 3)])
    b = write_replica(tmp_path / "b", 2, [shared, Batch(2, values("b", 3, 2))], epochs=[(0, 0), (2, 3)])
    return a, b


def test_diverged_replicas_exit_1_and_name_the_offsets(diverged) -> None:
    a, b = diverged
    code, out, _ = diff(str(a.log_dir), str(b.log_dir))
    assert code == 1
    assert "broker 1 and broker 2: diverged at offset 3" in out
    assert "if broker 2 leads: broker 1 truncates to 3, losing offsets 3..5 (3 records" in out
    assert "if broker 1 leads: broker 2 truncates to 3, losing offsets 3..4 (2 records" in out
    assert "KIP-966 would keep broker 2 (last epoch 2, log end 5)" in out


def test_json_lines_have_stable_fields_and_a_summary(diverged) -> None:
    a, b = diverged
    code, out, _ = diff("--json", str(a.path), str(b.path))
    assert code == 1
    replicas = objects(out, "replica")
    assert [r["replica"] for r in replicas] == ["broker 1", "broker 2"]
    assert replicas[1]["leaderEpochs"] == [{"epoch": 0, "startOffset": 0}, {"epoch": 2, "startOffset": 3}]
    assert (replicas[0]["logEndOffset"], replicas[0]["highWatermark"], replicas[0]["rank"]) == (6, 6, 2)
    (comparison,) = objects(out, "comparison")
    assert comparison["firstDifference"] == 3 and comparison["status"] == "diverged"
    assert comparison["epochsPartAt"] == 3
    (r,) = comparison["ranges"]
    assert (r["startOffset"], r["endOffset"], [s["records"] for s in r["sides"]]) == (3, 5, [2, 2])
    assert [s["bytes"] for s in r["sides"]] == [a.batches[1][2], b.batches[1][2]]
    trunc = {(t["leader"], t["follower"]): t for t in objects(out, "truncation")}
    t = trunc["broker 2", "broker 1"]
    assert (t["rule"], t["truncateTo"], t["lostRecords"], t["lostBytes"]) == (
        "leader-epoch",
        3,
        3,
        a.batches[1][2],
    )
    (summary,) = objects(out, "summary")
    assert summary == {
        "type": "summary",
        "topic": TOPIC,
        "partition": 0,
        "replicas": 2,
        "status": "diverged",
        "firstDifference": 3,
        "ranking": ["broker 2", "broker 1"],
        "newEpoch": 3,
        "entriesCompared": comparison["entriesCompared"],
    }


def test_records_lists_exactly_what_each_side_would_lose(diverged) -> None:
    a, b = diverged
    code, out, _ = diff("--records", "--json", str(a.path), str(b.path))
    assert code == 1
    lines = [json.loads(x) for x in out.splitlines()]
    lost: dict[str, list[str]] = {}
    current = None
    for o in lines:
        if o["type"] == "truncation":
            current = lost.setdefault(o["follower"], [])
        elif o["type"] == "record":
            current.append(o["value"])
    assert lost == {
        "broker 1": [v.decode() for v in values("a", 3, 3)],
        "broker 2": [v.decode() for v in values("b", 3, 2)],
    }
    code, text, _ = diff("--records", str(a.path), str(b.path))
    assert "records broker 1 would lose if broker 2 leads (offsets 3..5):" in text
    assert "| offset: 3 " in text and "payload: a-3" in text


def test_identical_and_lagging_replicas_exit_0(tmp_path) -> None:
    batches = [Batch(0, values("x", 4 * i, 4)) for i in range(5)]
    a = write_replica(tmp_path / "a", 1, batches, epochs=[(0, 0)])
    b = write_replica(tmp_path / "b", 2, batches, epochs=[(0, 0)])
    c = write_replica(tmp_path / "c", 3, batches[:3], epochs=[(0, 0)])
    code, out, _ = diff(str(a.path), str(b.path), str(c.path))
    assert code == 0
    assert "broker 1 and broker 2: identical, offsets 0..19" in out
    assert "broker 1 and broker 3: the same records where both hold them (offsets 0..11)" in out
    assert "if broker 3 leads: broker 1 truncates to 12, losing offsets 12..19 (8 records" in out


def test_kraft_log_dirs_are_named_by_their_node_id(diverged) -> None:
    """A KRaft broker's meta.properties (version 1) names it by `node.id`, with no `broker.id`: the
    replicas are `broker N` as in ZooKeeper mode, not their paths."""
    for built, node in zip(diverged, (4, 5), strict=True):
        (built.log_dir / "meta.properties").write_text(
            f"#\nnode.id={node}\ndirectory.id=mP5vVRBhQNo6FcS5qkWgsg\nversion=1\ncluster.id=GNVUbYsrReGpeG8GxI0sxA\n"
        )
    code, out, _ = diff(*(str(b.log_dir) for b in diverged))
    assert code == 1
    assert "if broker 5 leads: broker 4 truncates to 3, losing offsets 3..5 (3 records" in out


def test_an_empty_replica_is_behind_and_would_take_everything_from_the_other(tmp_path) -> None:
    full = write_replica(tmp_path / "a", 1, [Batch(0, values("x", 0, 5))], epochs=[(0, 0)])
    empty = tmp_path / "b" / f"{TOPIC}-0"
    empty.mkdir(parents=True)
    (empty / "00000000000000000000.log").write_bytes(b"")
    code, out, _ = diff(str(full.path), str(empty))
    assert code == 0
    assert "one of them holds no record (an empty replica)" in out
    assert f"if {empty} leads: broker 1 (" not in out  # labels are paths: b has no meta.properties
    assert f"if {empty} leads: {full.path} truncates to 0, losing offsets 0..4 (5 records" in out


def test_usage_and_unreadable_exit_codes(tmp_path, diverged) -> None:
    a, _ = diverged
    code, _, err = diff(str(a.path))
    assert code == 2 and "two or more copies" in err
    code, _, err = diff(str(a.path), str(tmp_path / "missing"))
    assert code == 3 and err.count("\n") == 1 and "missing: no such file or directory" in err
    other = write_replica(tmp_path / "o", 3, [Batch(0, [b"x"])], partition=1)
    code, _, err = diff(str(a.path), str(other.path))
    assert code == 2 and "not copies of one partition" in err
    # a log dir of several partitions needs --partition
    write_replica(tmp_path / "a", 1, [Batch(0, [b"y"])], partition=1)
    code, _, err = diff(str(a.log_dir), str(other.log_dir))
    assert code == 2 and "--partition" in err
    code, _, _ = diff("--partition", f"{TOPIC}-1", str(a.log_dir), str(other.log_dir))
    assert code == 1  # y and x at offset 0


def test_a_damaged_batch_where_a_probe_reads_is_exit_3(tmp_path, diverged) -> None:
    a, b = diverged
    seg = a.path / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    struct.pack_into(">B", data, 16, 9)  # the second batch's magic becomes 9
    data[a.batches[0][2] + 16] = 9
    seg.write_bytes(bytes(data))
    code, _, err = diff(str(a.path), str(b.path))
    assert code == 3 and "unknown magic 9" in err and err.count("\n") == 1


def test_nothing_is_written(diverged) -> None:
    a, b = diverged
    before = {p: p.read_bytes() for r in (a, b) for p in r.log_dir.rglob("*") if p.is_file()}
    diff("--records", str(a.path), str(b.path))
    after = {p: p.read_bytes() for r in (a, b) for p in r.log_dir.rglob("*") if p.is_file()}
    assert before == after


# ------------------------------------------------------------------------------- real world


@pytest.mark.parametrize("partition", ["__consumer_offsets-18", "first_topic-2"])
def test_a_realworld_replica_against_itself_is_identical(partition) -> None:
    needs_realworld()
    code, out, _ = diff("--json", str(REALWORLD / partition), str(REALWORLD / partition))
    assert code == 0
    (comparison,) = objects(out, "comparison")
    assert comparison["status"] == "identical"
    assert all(t["lostOffsets"] == 0 for t in objects(out, "truncation"))


def _copy(tmp_path: Path, partition: str) -> Path:
    dest = tmp_path / "copy"
    shutil.copytree(REALWORLD, dest, ignore=shutil.ignore_patterns("__consumer_offsets-[!1]*"))
    for p in dest.rglob("*"):
        p.chmod(0o755 if p.is_dir() else 0o644)
    dest.chmod(0o755)
    return dest / partition


def test_a_realworld_copy_cut_at_a_batch_is_a_prefix_and_the_tail_is_what_it_lacks(tmp_path) -> None:
    needs_realworld()
    part = "__consumer_offsets-18"
    copy = _copy(tmp_path, part)
    seg = copy / "00000000000000000000.log"
    entries = frames(seg)
    position, cut_offset, _ = entries[len(entries) // 2]
    seg.write_bytes(seg.read_bytes()[:position])
    code, out, _ = diff("--json", str(REALWORLD / part), str(copy))
    assert code == 0
    (comparison,) = objects(out, "comparison")
    assert comparison["status"] == "prefix" and comparison["commonEndOffset"] == cut_offset
    t = next(t for t in objects(out, "truncation") if t["follower"].startswith(str(REALWORLD)))
    size = (REALWORLD / part / "00000000000000000000.log").stat().st_size
    assert (t["lostStartOffset"], t["lostEndOffset"], t["lostBytes"]) == (cut_offset, 499, size - position)


def _alter(seg: Path, position: int, size: int, fix_crc: bool) -> None:
    data = bytearray(seg.read_bytes())
    data[position + size - 1] ^= 0x01  # the last byte of the batch: inside its last record
    if fix_crc:
        struct.pack_into(">I", data, position + 17, crc32c(bytes(data[position + 21 : position + size])))
    seg.write_bytes(bytes(data))


def test_a_realworld_batch_altered_in_the_middle_is_found_by_the_full_compare(tmp_path) -> None:
    needs_realworld()
    part = "__consumer_offsets-12"
    copy = _copy(tmp_path, part)
    seg = copy / "00000000000000000000.log"
    entries = frames(seg)
    position, base, size = entries[len(entries) // 3]
    last = entries[len(entries) // 3 + 1][1] - 1
    _alter(seg, position, size, fix_crc=True)  # a different record with a valid CRC
    code, out, _ = diff("--json", "--full", str(REALWORLD / part), str(copy))
    assert code == 1
    (comparison,) = objects(out, "comparison")
    assert [(r["startOffset"], r["endOffset"]) for r in comparison["ranges"]] == [(base, last + 1)]


def test_a_realworld_last_batch_corrupted_is_damage_not_divergence(tmp_path) -> None:
    needs_realworld()
    part = "__consumer_offsets-18"
    copy = _copy(tmp_path, part)
    seg = copy / "00000000000000000000.log"
    position, base, size = frames(seg)[-1]
    _alter(seg, position, size, fix_crc=False)  # a bit flipped: the stored CRC no longer matches
    code, out, err = diff("--json", str(REALWORLD / part), str(copy))
    assert code == 3, (out, err)
    assert f"{seg}: position {position}" in err and "damage, not divergence" in err
    assert not objects(out, "comparison")


def _flip_payload_byte(built, batch_index: int) -> int:
    """One byte of a batch's last value flipped, its stored CRC left as it was (disk damage); the
    batch's last offset, which names it."""
    first, last, _ = built.batches[batch_index]
    seg = sorted(built.path.glob("*.log"))[batch_index // 4]
    data = bytearray(seg.read_bytes())
    position, _, length = next(f for f in frames(seg) if f[1] == first)
    data[position + length - 3] ^= 0x20
    seg.write_bytes(bytes(data))
    return last


@pytest.mark.parametrize("magic", [2, 1, 0])
def test_a_copy_with_a_flipped_payload_byte_is_damage_not_identical_or_divergence(tmp_path, magic) -> None:
    batches = [Batch(0, values("x", i * 5, 5)) for i in range(10)]
    a = write_replica(tmp_path / "a", 2, batches, magic=magic, epochs=[(0, 0)] if magic == 2 else None)
    b = write_replica(tmp_path / "b", 3, batches, magic=magic, epochs=[(0, 0)] if magic == 2 else None)
    code, _, err = diff(str(a.log_dir), str(b.log_dir))
    assert code == 0, err

    if magic == 2:
        damaged_offset = _flip_payload_byte(b, 5)
    else:  # one message a value: the message holding offset 27
        seg = sorted(b.path.glob("*.log"))[1]
        data = bytearray(seg.read_bytes())
        position, damaged_offset, length = next(f for f in frames(seg) if f[1] == 27)
        data[position + length - 3] ^= 0x20
        seg.write_bytes(bytes(data))
    code, out, err = diff(str(a.log_dir), str(b.log_dir))
    assert code == 3, (out, err)
    assert "damage, not divergence" in err and f"offset {damaged_offset}" in err
    assert "diverged" not in out and "identical" not in out
    assert len(err.strip().splitlines()) == 1
