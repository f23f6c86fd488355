"""`truncate --dry-run` predicts the real run: the same exit code, the same refusals in the same words,
on every damaged fixture, with and without --force, and for a link the real run refuses."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.independent import FIXTURES
from tests.support.cli import run_ktool

CORRUPT = FIXTURES / "generated" / "corrupt"
PARTITIONS = sorted(p.name for p in CORRUPT.iterdir() if p.is_dir())


def _outcome(result) -> tuple[int, list[str], dict]:
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    refusals = [o["reason"] for o in objs if o["type"] in ("refused", "unreadable")]
    summary = {k: v for k, v in objs[-1].items() if k in ("partitions", "refused", "unreadable")}
    return result.exit_code, refusals, summary


def test_there_are_damaged_partitions_to_try() -> None:
    assert len(PARTITIONS) >= 10


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("name", PARTITIONS)
def test_a_dry_run_exits_and_refuses_as_the_real_run(tmp_path, name, force) -> None:
    dry, real = tmp_path / "dry" / name, tmp_path / "real" / name
    shutil.copytree(CORRUPT / name, dry)
    shutil.copytree(CORRUPT / name, real)
    extra = ["--force"] if force else []
    backups = ["--backup-dir", str(tmp_path / "backups")]
    predicted = run_ktool("truncate", "--json", "--dry-run", *extra, *backups, str(dry))
    done = run_ktool("truncate", "--json", *extra, *backups, str(real))
    p_code, p_refusals, p_summary = _outcome(predicted)
    code, refusals, summary = _outcome(done)
    assert (p_code, p_summary) == (code, summary), (predicted.stderr, done.stderr)
    assert [r.replace(str(dry), "X") for r in p_refusals] == [r.replace(str(real), "X") for r in refusals]


def test_a_dry_run_says_the_link_the_real_run_refuses(tmp_path) -> None:
    part = tmp_path / "logs" / "orders-0"
    shutil.copytree(CORRUPT / "v2-trailing-garbage-0", part)
    segment = part / "00000000000000000000.log"
    outside = tmp_path / "elsewhere.log"
    segment.rename(outside)
    os.symlink(outside, segment)
    backups = ["--backup-dir", str(tmp_path / "backups")]
    predicted = run_ktool("truncate", "--dry-run", *backups, str(part))
    done = run_ktool("truncate", *backups, str(part))
    assert predicted.exit_code == done.exit_code == 3, (predicted.stderr, done.stderr)
    assert "link" in predicted.stderr and predicted.stderr.strip().splitlines()[-1] in done.stderr
    assert outside.stat().st_size == (CORRUPT / "v2-trailing-garbage-0" / segment.name).stat().st_size


def test_a_dry_run_refuses_a_backup_dir_inside_the_log_dir_as_the_real_run(tmp_path) -> None:
    log_dir = tmp_path / "logs"
    shutil.copytree(CORRUPT / "v2-trailing-garbage-0", log_dir / "orders-0")
    (log_dir / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    inside = ["--backup-dir", str(log_dir / "backups")]
    predicted = run_ktool("truncate", "--dry-run", *inside, str(log_dir))
    done = run_ktool("truncate", *inside, str(log_dir))
    assert predicted.exit_code == done.exit_code == 2
    assert predicted.stderr == done.stderr and "put backups elsewhere" in done.stderr


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]])
def test_a_backup_dir_that_is_a_file_is_one_line_exit_3(tmp_path, dry_run) -> None:
    part = tmp_path / "logs" / "orders-0"
    shutil.copytree(CORRUPT / "v2-trailing-garbage-0", part)
    (tmp_path / "a-file").write_text("")
    result = run_ktool("truncate", *dry_run, "--backup-dir", str(tmp_path / "a-file"), str(part))
    assert result.exit_code == 3
    assert (
        result.stderr
        == f"ktool: {tmp_path / 'a-file'}: cannot be the backup directory: a file, not a directory\n"
    )


def test_a_dry_run_names_the_leader_epochs_the_run_keeps(tmp_path) -> None:
    """The plan says how many leader-epoch-checkpoint entries survive (the broker's truncateFromEnd: those
    starting below the new log end), and the real run leaves exactly those; null when none is dropped."""
    from kafka_tools.format.checkpoints import read_leader_epoch_checkpoint
    from tests.log.test_truncate_safety import damaged_segmented

    def plan(part) -> dict:
        result = run_ktool("truncate", "--json", "--dry-run", "--force", str(part))
        return next(o for o in map(json.loads, result.stdout.splitlines()) if o["type"] == "plan")

    part = damaged_segmented(tmp_path)  # cut in segment 0: the new log end is 50
    checkpoint = part / "leader-epoch-checkpoint"
    before = [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(checkpoint).entries]
    planned = plan(part)
    assert planned["newLogEndOffset"] == 50 and before == [(0, 0), (1, 33), (2, 78)]
    assert planned["leaderEpochCheckpoint"] == {"file": str(checkpoint), "keepEntries": 2}
    done = run_ktool("truncate", "--force", "--backup-dir", str(tmp_path / "bk"), str(part))
    assert done.exit_code == 0, done.stderr
    after = [(e.epoch, e.start_offset) for e in read_leader_epoch_checkpoint(checkpoint).entries]
    assert after == before[:2]

    (tmp_path / "again").mkdir()
    last = damaged_segmented(tmp_path / "again", "00000000000000000100.log")  # a tail: no epoch lost
    assert plan(last)["leaderEpochCheckpoint"] is None
