"""`ktool truncate`: the broker's recovery, done safely: plan, backup, lock, refusal, undo, crash."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafka_tools.cli.main import cli
from kafka_tools.format.problems import Problem
from kafka_tools.format.segment import iter_log_entries
from kafka_tools.log.files.dirs import read_partition
from kafka_tools.log.repair import apply as repair
from kafka_tools.log.repair import rebuilt_indexes
from tests.independent import FIXTURES
from tests.reference_recovery import recover, soundness
from tests.support.locks import lock_held_elsewhere

GENERATED = FIXTURES / "generated"
CORRUPT = GENERATED / "corrupt"


def truncate(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["truncate", *args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def tree_digest(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def logdir_with(tmp_path: Path, *partitions: Path) -> Path:
    logs = tmp_path / "logs"
    logs.mkdir()
    for p in partitions:
        shutil.copytree(p, logs / p.name)
    return logs


def entries(path: Path) -> list[tuple[int, int, int]]:
    out = []
    for e in iter_log_entries(path):
        if isinstance(e, Problem):
            break
        out.append((e.position, e.entry_size, e.last_offset))
    return out


def test_dry_run_prints_the_plan_and_changes_nothing(tmp_path: Path) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-trailing-garbage-0")
    before = tree_digest(logs)
    code, out, _ = truncate("--dry-run", str(logs / "v2-trailing-garbage-0"))
    assert code == 0
    assert (
        "truncate" in out and "from 3867 to 3767 bytes (cut 100)" in out and "dry run: nothing changed" in out
    )
    assert tree_digest(logs) == before


@pytest.mark.parametrize(
    "case", ["v2-trailing-garbage-0", "v2-trailing-zeros-0", "v2-cut-mid-batch-0", "v0-cut-mid-message-0"]
)
def test_tail_is_cut_at_the_last_valid_byte_and_undo_restores_it(tmp_path: Path, case: str) -> None:
    logs = logdir_with(tmp_path, CORRUPT / case)
    log = logs / case / "00000000000000000000.log"
    original = log.read_bytes()
    valid = entries(log)
    keep = valid[-1][0] + valid[-1][1]
    before = tree_digest(logs)

    code, out, err = truncate("--backup-dir", str(tmp_path / "bk"), str(logs / case))
    assert code == 0, err
    assert log.read_bytes() == original[:keep]
    assert entries(log) == valid
    assert CliRunner().invoke(cli, ["validate", str(logs / case)]).exit_code == 0
    manifest_path = next((tmp_path / "bk").glob("*/manifest.json"))
    manifest = json.loads(manifest_path.read_text())
    assert manifest["state"] == "applied"
    cut = next(a for a in manifest["actions"] if a["action"] == "truncate")
    assert (manifest_path.parent / cut["backup"]).read_bytes() == original[keep:]
    assert cut["originalSha256"] == hashlib.sha256(original).hexdigest()

    code, out, err = truncate("--undo", str(manifest_path))
    assert code == 0, err
    assert tree_digest(logs) == before


def test_backups_go_to_the_state_directory_not_the_working_one(tmp_path: Path, monkeypatch) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-trailing-garbage-0")
    cwd, state = tmp_path / "cwd", tmp_path / "state"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    code, out, err = truncate(str(logs / "v2-trailing-garbage-0"))
    assert code == 0, err
    [manifest] = (state / "ktool" / "backups").glob("v2-trailing-garbage-0-*/manifest.json")
    assert f"undo: ktool truncate --undo {manifest}" in out
    assert list(cwd.iterdir()) == []
    assert truncate("--undo", str(manifest))[0] == 0


def test_damage_in_the_middle_is_refused_without_force(tmp_path: Path) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-flipped-record-byte-0")
    before = tree_digest(logs)
    code, out, err = truncate("--backup-dir", str(tmp_path / "bk"), str(logs / "v2-flipped-record-byte-0"))
    assert code == 1
    assert "refused: 2 valid entries would be lost" in err
    assert tree_digest(logs) == before


def test_force_keeps_the_valid_entries_after_the_hole_in_the_backup(tmp_path: Path) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-flipped-record-byte-0")
    log = logs / "v2-flipped-record-byte-0/00000000000000000000.log"
    original = log.read_bytes()
    code, _, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(log.parent))
    assert code == 0, err
    assert recover(original, "modern")[0] == 920  # where the broker's recovery stops
    assert log.read_bytes() == original[:920]
    assert CliRunner().invoke(cli, ["validate", str(log.parent)]).exit_code == 0
    manifest = json.loads(next((tmp_path / "bk").glob("*/manifest.json")).read_text())
    salvage = next(a for a in manifest["actions"] if a["action"] == "truncate")["salvaged"]
    salvaged = next((tmp_path / "bk").glob(f"*/{salvage['file']}"))
    assert salvage["entries"] == 2
    assert salvaged.read_bytes() == original[2081:]  # the two intact batches after the damaged one
    assert [e[2] for e in entries(salvaged)] == [14, 20]


def test_cut_in_a_middle_segment_deletes_later_ones_only_with_force(tmp_path: Path) -> None:
    logs = logdir_with(tmp_path, GENERATED / "v2/segmented-0")
    part = logs / "segmented-0"
    middle = part / "00000000000000000050.log"
    with open(middle, "r+b") as f:
        f.truncate(middle.stat().st_size - 7)
    cut_middle = middle.read_bytes()
    before = tree_digest(logs)
    code, out, err = truncate("--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 1 and "refused" in err
    assert "delete segment 00000000000000000100.log" in out
    code, out, err = truncate("--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert code == 0, err
    assert not (part / "00000000000000000100.log").exists()
    assert not (part / "00000000000000000150.snapshot").exists()  # past the new log end
    keep, _ = recover(cut_middle, "modern")  # the broker keeps the middle segment's whole batches
    assert 0 < keep < len(cut_middle) and middle.read_bytes() == cut_middle[:keep]
    assert CliRunner().invoke(cli, ["validate", str(part)]).exit_code == 0
    assert truncate("--undo", str(next((tmp_path / "bk").glob("*/manifest.json"))))[0] == 0
    assert tree_digest(logs) == before


def test_rebuilt_index_equals_the_one_kafka_0_9_wrote(tmp_path: Path) -> None:
    # index.interval.bytes=100 in that topic; uncompressed, so first and last offsets of an entry agree.
    part = read_partition(FIXTURES / "kafka-0.9.0.1/logdir/segmented-0")
    for seg in part.segments:
        offsets, _ = rebuilt_indexes.build_indexes(seg, seg.size, 100)
        assert offsets == seg.offset_index.read_bytes(), seg.log.name


def test_rebuilt_indexes_equal_the_independently_written_ones() -> None:
    part = read_partition(GENERATED / "v2/segmented-0")
    for seg in part.segments:
        offsets, times = rebuilt_indexes.build_indexes(seg, seg.size, 2048)
        assert offsets == seg.offset_index.read_bytes(), seg.log.name
        assert times == seg.time_index.read_bytes(), seg.log.name


def test_a_held_log_dir_lock_is_refused(tmp_path: Path) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-trailing-garbage-0")
    with lock_held_elsewhere(logs / ".lock"):
        before = tree_digest(logs)
        for how in (["--dry-run"], ["--force"], []):
            for target in (logs, logs / "v2-trailing-garbage-0"):
                code, out, err = truncate(*how, "--backup-dir", str(tmp_path / "bk"), str(target))
                # one line naming the lock, exit 3, before anything is planned or written
                assert code == 3 and err.count("\n") == 1 and f"holds {logs / '.lock'}" in err, err
                assert out == "" and not (tmp_path / "bk").exists()
        assert tree_digest(logs) == before


def test_backup_inside_a_log_dir_is_a_usage_error(tmp_path: Path) -> None:
    logs = logdir_with(tmp_path, CORRUPT / "v2-trailing-garbage-0")
    (logs / "meta.properties").write_text("version=0\nbroker.id=0\n")
    code, _, err = truncate("--backup-dir", str(logs / "bk"), str(logs / "v2-trailing-garbage-0"))
    assert code == 2 and "inside the Kafka log dir" in err


@pytest.mark.parametrize("fail_at", [0, 1, 2])
def test_a_crash_part_way_leaves_old_or_new_files_and_undo_restores(
    tmp_path: Path, monkeypatch, fail_at
) -> None:
    logs = logdir_with(tmp_path, GENERATED / "v2/segmented-0")
    part = logs / "segmented-0"
    with open(part / "00000000000000000050.log", "ab") as f:
        f.write(b"\x07" * 50)  # garbage tail in the middle segment
    before = tree_digest(logs)
    real = repair._apply_actions

    def crashing(partition, actions, **kwargs):
        real(partition, actions[:fail_at], **kwargs)
        raise RuntimeError("power cut")

    monkeypatch.setattr(repair, "_apply_actions", crashing)
    with pytest.raises(RuntimeError, match="power cut"):
        CliRunner().invoke(
            cli,
            ["truncate", "--force", "--backup-dir", str(tmp_path / "bk"), str(part)],
            catch_exceptions=False,
        )
    manifest = next((tmp_path / "bk").glob("*/manifest.json"))
    assert json.loads(manifest.read_text())["state"] == "prepared"
    monkeypatch.setattr(repair, "_apply_actions", real)
    assert truncate("--undo", str(manifest))[0] == 0
    assert tree_digest(logs) == before


SOURCES = [p for p in sorted(GENERATED.glob("v*/*-0/00000000000000000000.log")) if "segmented" not in str(p)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    source=st.sampled_from(SOURCES),
    where=st.integers(min_value=0),
    how=st.sampled_from(["flip", "cut", "junk"]),
)
def test_random_damage_never_loses_a_batch_before_it(
    tmp_path_factory, source: Path, where: int, how: str
) -> None:
    tmp = tmp_path_factory.mktemp("prop")
    logs = logdir_with(tmp, source.parent)
    log = logs / source.parent.name / source.name
    data = bytearray(log.read_bytes())
    where %= len(data)
    if how == "flip":
        data[where] ^= 0x5A
    elif how == "cut":
        del data[where:]
    else:
        data[where:] = bytes(range(256))[: len(data) - where] or b"\x01"
    log.write_bytes(bytes(data))
    damaged = bytes(data)
    before_damage = [e for e in entries(source) if e[0] + e[1] <= where]
    # What the broker's recovery keeps (tests/reference_recovery.py, independent of ktool).
    rules = "modern" if source.parent.parent.name == "v2" else "0.9"
    prefix, kept_by_broker = recover(damaged, rules)
    unsound = soundness(damaged, kept_by_broker, 0, rules)
    code, out, err = truncate("--force", "--json", "--backup-dir", str(tmp / "bk"), str(log.parent))
    if unsound:  # damage the broker's recovery keeps (an offset outside every checksum): nothing changes
        assert code == 1 and "truncating cannot repair it" in err, (unsound, err)
        assert log.read_bytes() == damaged
        return
    assert code == 0, err
    assert log.read_bytes() == damaged[:prefix]  # exactly the broker's bytes: only ever cut, never rewritten
    assert entries(log)[: len(before_damage)] == before_damage
    assert CliRunner().invoke(cli, ["validate", str(log.parent)]).exit_code == 0
    applied = [o for o in map(json.loads, out.splitlines()) if o["type"] == "applied"]
    if prefix == len(damaged):  # the damage left a valid log (junk that happens to be whole): no change
        assert applied == []
        return
    manifest = applied[0]["manifest"]
    cut = next(a for a in json.loads(Path(manifest).read_text())["actions"] if a["action"] == "truncate")
    assert (Path(manifest).parent / cut["backup"]).read_bytes() == damaged[prefix:]
