"""`ktool groups reset-offsets` without a server: kafka-consumer-groups' spellings (durations, --topic
T:0,2, the CSV plan) read as Kafka reads them, and every usage mistake one line with exit 2 before any
server is asked."""

from __future__ import annotations

import json

import pytest

from kafka_tools.consumers.migration import PartitionMove
from kafka_tools.consumers.reset import export_csv, parse_duration, parse_topic, read_plan_csv
from kafka_tools.errors import InputError, UsageError
from tests.support.cli import run_ktool


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("PT1H30M", 90 * 60_000),
        ("P1D", 86_400_000),
        ("P2DT3H4M5S", ((2 * 24 + 3) * 60 + 4) * 60_000 + 5000),
        ("PT0.5S", 500),
        ("PT-6H", -6 * 3_600_000),
        ("-P1D", -86_400_000),
        ("pt15m", 15 * 60_000),
    ],
)
def test_durations_read_as_java_reads_them(text, ms) -> None:
    assert parse_duration(text) == ms


@pytest.mark.parametrize("text", ["", "P", "PT", "1H", "P1H", "PT1D", "P1Y", "PT1H30"])
def test_a_malformed_duration_is_a_usage_error(text) -> None:
    with pytest.raises(UsageError, match="ISO-8601 duration"):
        parse_duration(text)


def test_topic_scopes() -> None:
    assert parse_topic("orders") == ("orders", None)
    assert parse_topic("orders:2,0,2") == ("orders", (0, 2))
    for bad in ("orders:x", ":1", "orders:-1"):
        with pytest.raises(UsageError):
            parse_topic(bad)


def test_the_csv_plan_in_both_of_kafka_consumer_groups_forms(tmp_path) -> None:
    plan = tmp_path / "plan.csv"
    plan.write_text("orders,0,5\norders,1,7\n\n")
    assert read_plan_csv(plan, "g") == {("orders", 0): 5, ("orders", 1): 7}
    plan.write_text("g,orders,0,5\nother,orders,0,9\ng,payments,2,3\n")
    assert read_plan_csv(plan, "g") == {("orders", 0): 5, ("payments", 2): 3}
    plan.write_text("orders,0,5\norders,one,7\n")
    with pytest.raises(InputError, match=r"plan.csv:2: not `topic,partition,offset`"):
        read_plan_csv(plan, "g")
    with pytest.raises(InputError, match="no such file"):
        read_plan_csv(tmp_path / "absent.csv", "g")


def test_export_writes_what_from_file_reads(tmp_path) -> None:
    moves = [
        PartitionMove("g", "orders", 0, None, 4, 9, "write"),
        PartitionMove("g", "orders", 1, None, None, None, "no-source-offset"),
        PartitionMove("g", "payments", 2, None, 3, 3, "unchanged"),
    ]
    text = export_csv(moves)
    assert text == "orders,0,9\npayments,2,3\n"
    (tmp_path / "plan.csv").write_text(text)
    assert read_plan_csv(tmp_path / "plan.csv", "g") == {("orders", 0): 9, ("payments", 2): 3}


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["g", "--to-earliest"], "give the scope: --all-topics or --topic"),
        (["g", "--all-topics"], "give exactly one target"),
        (["g", "--all-topics", "--to-earliest", "--to-latest"], "given: --to-earliest, --to-latest"),
        (["g", "--all-topics", "--to-earliest", "--dry-run", "--execute"], "--dry-run or --execute"),
        (["g", "--all-topics", "--to-earliest", "--export", "--json"], "--export (CSV) or --json"),
        (["g", "--all-topics", "--to-earliest", "--force"], "--force goes with --undo"),
        (["g", "--all-topics", "--to-earliest", "--log-dir", "/x"], "--log-dir answers --to-datetime"),
        (["g", "--all-topics", "--by-duration", "1h"], "ISO-8601 duration"),
        (["g", "--topic", "t:x", "--to-earliest"], "partition numbers"),
        (["--all-topics", "--to-earliest"], "name the GROUP"),
    ],
)
def test_usage_mistakes_are_one_line_and_exit_2(args, says) -> None:
    # The bootstrap server is a closed port: a usage error must be said before any server is asked.
    result = run_ktool("groups", "reset-offsets", *args, "--bootstrap-server", "127.0.0.1:9")
    assert result.exit_code == 2, result.output
    assert says in result.stderr and "Traceback" not in result.output
    assert result.stdout == ""


def test_shift_by_takes_a_negative_number() -> None:
    """`--shift-by -5` (kafka-consumer-groups' spelling) is a value, not an unknown option: the command
    goes on to ask the broker (refused here, exit 3), not a usage error."""
    result = run_ktool(
        "groups",
        "reset-offsets",
        "g",
        "--all-topics",
        "--shift-by",
        "-5",
        "--bootstrap-server",
        "127.0.0.1:9",
    )
    assert result.exit_code == 3, result.output
    assert "127.0.0.1:9" in result.stderr


def test_undo_of_a_zookeeper_journal_without_zookeeper_is_a_usage_error(tmp_path) -> None:
    journal = tmp_path / "reset-offsets-1.json"
    partition = {"group": "g", "topic": "t", "partition": 0, "zookeeper": 5, "kafka": None, "offset": 9,
                 "status": "verified"}  # fmt: skip
    journal.write_text(
        json.dumps(
            {"format": 1, "state": "applied", "options": {"source": "file", "target": "zookeeper"},
             "groups": [{"group": "g", "partitions": [partition]}]}
        )
    )  # fmt: skip
    result = run_ktool("groups", "reset-offsets", "--undo", str(journal), "--bootstrap-server", "127.0.0.1:9")
    assert result.exit_code == 2, result.output
    assert "the journal holds ZooKeeper offsets: give --zookeeper" in result.stderr
