"""Answers read from a KRaft log dir by a user other than the broker's (issue 50's class of mistake, in
what came after it): Kafka writes `__cluster_metadata-0/*.checkpoint` mode 0400, so another user cannot
open a snapshot. Where the log still holds every record (a real 4.4.0 log dir: its log starts at 0),
the answer is the broker user's, with one line naming the snapshot not read; where the snapshot held
records the log no longer does, one line and exit 3, never topics, brokers or configs from part of
the metadata (before: `no partitions`, `no broker`, a retention preview on Kafka's defaults, exit 0)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafka_tools.errors import InputError
from kafka_tools.metadata.load import load_image
from tests.log.test_retention import HOUR, NOW, part_of, v2_log
from tests.log.test_retention_kraft_configs import _story
from tests.metadata.kraft_log import write_log_dir
from tests.support.as_user import run_ktool_as
from tests.support.cli import run_ktool

USER = "nobody"


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A temporary directory the other user can enter (pytest's own are root's alone)."""
    root = Path(tempfile.mkdtemp(prefix="ktool-as-user-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root)


def _copies(tmp_path: Path, log_from: int) -> tuple[Path, Path]:
    """Two copies (the second warms the imports as root) of a KRaft log dir whose snapshot holds the
    records below offset 10, mode 0400 as Kafka writes it, and whose log starts at `log_from`."""
    out = []
    for name in ("dir", "warm"):
        root = write_log_dir(tmp_path / name, _story(), log_from=log_from, snapshot_at=10)
        for topic in ("orders", "ledger", "plain"):
            v2_log(root, topic, [NOW - 3 * HOUR, NOW])
        for snap in (root / "__cluster_metadata-0").glob("*.checkpoint"):
            os.chmod(snap, 0o400)
        out.append(root)
    return out[0], out[1]


def _as_user(args: list[str], root: Path, warm: Path):
    return run_ktool_as(USER, [a.format(d=root) for a in args], [a.format(d=warm) for a in args])


SNAPSHOT = f"{10:020d}-{1:010d}.checkpoint"


@pytest.mark.parametrize(
    "args", [["topics", "--metadata-log", "{d}"], ["brokers", "--metadata-log", "{d}", "--json"]]
)
def test_an_image_missing_what_an_unreadable_snapshot_held_is_one_line_and_exit_3(open_tmp, args) -> None:
    root, warm = _copies(open_tmp, log_from=10)
    run = _as_user(args, root, warm)
    assert (run.exit_code, run.stdout) == (3, ""), run
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr, run.stderr
    assert SNAPSHOT in run.stderr and "permission denied" in run.stderr, run.stderr
    assert "the metadata image cannot be built without it" in run.stderr


def test_the_cluster_id_needs_only_meta_properties(open_tmp) -> None:
    root, warm = _copies(open_tmp, log_from=10)
    run = _as_user(["cluster-id", "--metadata-log", "{d}"], root, warm)
    assert (run.exit_code, run.stdout, run.stderr) == (0, "Y2x1c3Rlci1pZC1jbHVzdA\n", "")


def test_retention_says_the_topic_configs_were_not_read_instead_of_previewing_on_defaults(open_tmp) -> None:
    """orders has retention.ms 2 h in the snapshot: read from part of the image the preview said 30 h
    (the cluster default), exit 0."""
    root, warm = _copies(open_tmp, log_from=10)
    run = _as_user(["retention", "--now", str(NOW), "{d}/orders-0"], root, warm)
    assert run.exit_code == 3, run
    assert run.stderr.count("\n") == 1 and SNAPSHOT in run.stderr and "topic configs not read" in run.stderr


def test_where_the_log_holds_every_record_the_answer_is_the_brokers_users_and_the_snapshot_named(
    open_tmp,
) -> None:
    root, warm = _copies(open_tmp, log_from=0)
    mine = _as_user(["topics", "--metadata-log", "{d}", "--json"], root, warm)
    brokers_user = run_ktool("topics", "--metadata-log", str(root), "--json")  # root opens the snapshot
    assert (mine.exit_code, brokers_user.exit_code, brokers_user.stderr) == (0, 0, ""), mine
    assert '"topic":"orders"' in mine.stdout and mine.stdout == brokers_user.stdout
    assert mine.stderr.count("\n") == 1 and SNAPSHOT in mine.stderr and "built without it" in mine.stderr
    retention = _as_user(["retention", "--json", "--now", str(NOW), "{d}/orders-0"], root, warm)
    assert retention.exit_code == 0, retention
    lines = [json.loads(x) for x in retention.stdout.splitlines() if x.startswith("{")]
    settings = part_of(lines, "orders-0")["settings"]
    assert settings["retentionMs"] == {"value": 2 * HOUR, "source": "KRaft topic config"}


def test_a_log_gap_without_any_snapshot_is_named_by_the_gap(tmp_path) -> None:
    from kafka_tools.metadata.load import load_whole_image

    root = write_log_dir(tmp_path / "a", _story(), log_from=10, snapshot_at=10)
    assert load_whole_image(root).image.topic_by_name("orders") is not None
    (root / "__cluster_metadata-0" / SNAPSHOT).unlink()
    missing = load_image(root).missing_records() or ""
    assert "the log starts at offset 10 but the image needs the records from 0" in missing
    with pytest.raises(InputError, match="the log starts at offset 10"):
        load_whole_image(root)
