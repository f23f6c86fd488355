"""`ktool transactions` on a log whose one batch has a flipped bit (in its header, in its records, its
transactional attribute): every batch's checksum is checked, the damaged one is a finding naming the
file and the position (exit 1), and nothing is built on it or on what follows it — the log end is
where the broker's recovery cuts the log, which is where `ktool validate` says the valid data ends."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kafka_tools.format.segment import iter_log_entries
from tests.independent import FIXTURES
from tests.support.cli import run_ktool
from tests.transactions.files import TRANSACTIONAL, hanging_log_dir

LATE = "2030-01-01T00:00:00Z"
# Byte positions inside a v2 batch (from its start): attributes (low byte), maxTimestamp, a record.
ATTRIBUTES_LOW = 22
MAX_TIMESTAMP = 35


def _flip(log: Path, base_offset: int, at: int | None, mask: int = 0x01) -> int:
    """Flip `mask` in the byte `at` of the batch starting at `base_offset` (None: its last byte, inside
    its records); return the batch's position."""
    (batch,) = [e for e in iter_log_entries(log) if e.base_offset == base_offset]
    data = bytearray(log.read_bytes())
    data[batch.position + (batch.size - 1 if at is None else at)] ^= mask
    log.write_bytes(bytes(data))
    return batch.position


def _json(result) -> list[dict]:
    return [json.loads(line) for line in result.stdout.splitlines()]


def _validated_log_end(part: Path) -> int:
    result = run_ktool("validate", "--json", str(part))
    assert result.exit_code == 1, result.output  # validate calls it damage too
    (obj,) = [o for o in _json(result) if o["type"] == "partition"]
    return obj["logEndOffset"]


def test_clearing_a_hanging_producers_transactional_bit_is_a_finding_not_a_clean_bill(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    log = d / "orders-0" / "00000000000000000000.log"
    position = _flip(log, 5, ATTRIBUTES_LOW, TRANSACTIONAL)  # producer 2000's open transaction
    text = run_ktool("transactions", "find-hanging", "--now", LATE, str(d))
    assert text.exit_code == 1, text.output
    assert f"# orders-0 at 5: {log}: position {position}: batch at offset 5: stored crc" in text.stdout
    result = run_ktool("transactions", "find-hanging", "--json", "--now", LATE, str(d))
    assert result.exit_code == 1
    objs = _json(result)
    (finding,) = [o for o in objs if o["type"] == "finding"]
    assert (finding["kind"], finding["file"], finding["position"], finding["firstOffset"]) == (
        "crc-mismatch",
        str(log),
        position,
        5,
    )
    assert objs[-1]["findings"] == 1 and objs[-1]["openTransactions"] == 0  # nothing after the cut


@pytest.mark.parametrize(
    ("where", "at", "mask"),
    [("header", MAX_TIMESTAMP, 0x01), ("records", None, 0x01), ("transactional bit", ATTRIBUTES_LOW, 0x10)],
)
def test_describe_stops_where_the_brokers_recovery_cuts(tmp_path, where, at, mask) -> None:
    """A transactional batch of a file kafka-python encoded (fixtures/generated/v2/transactions-0)."""
    part = tmp_path / "transactions-0"
    shutil.copytree(FIXTURES / "generated" / "v2" / "transactions-0", part)
    log = part / "00000000000000000000.log"
    position = _flip(log, 8, at, mask)  # offsets 8-10 of producer 7000
    result = run_ktool("transactions", "describe", "--json", str(part))
    assert result.exit_code == 1, (where, result.output)
    assert f"{log}: position {position}: batch at offset 8: stored crc" in result.stderr
    objs = _json(result)
    (described,) = [o for o in objs if o["type"] == "partition"]
    assert described["logEndOffset"] == _validated_log_end(part) == 8
    assert objs[-1]["errors"] == 1
    hanging = run_ktool("transactions", "find-hanging", "--json", str(part))
    assert hanging.exit_code == 1
    assert [(o["kind"], o["position"]) for o in _json(hanging) if o["type"] == "finding"] == [
        ("crc-mismatch", position)
    ]


def test_a_damaged_coordinator_batch_ends_the_coordinators_replay_in_every_command(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    log = d / "__transaction_state-5" / "00000000000000000000.log"
    position = _flip(log, 1, MAX_TIMESTAMP)  # app-1's Ongoing record: a byte its checksum covers
    listed = run_ktool("transactions", "list", "--json", str(d))
    assert listed.exit_code == 1, listed.output
    assert f"{log}: position {position}: batch at offset 1: stored crc" in listed.stderr
    objs = _json(listed)
    states = {o["transactionalId"]: o["state"] for o in objs if o["type"] == "transaction"}
    assert states == {"app-1": "Empty", "done": "CompleteCommit"}  # not the damaged Ongoing
    assert objs[-1]["errors"] == 1
    described = run_ktool("transactions", "describe", str(d))
    assert described.exit_code == 1 and f"position {position}" in described.stderr
    # as of the data's newest record: the copy's own clock (its files' times) would age the open ones
    hanging = run_ktool("transactions", "find-hanging", "--json", "--now", "2023-11-14T22:13:21Z", str(d))
    (finding,) = [o for o in _json(hanging) if o["type"] == "finding"]
    assert hanging.exit_code == 1
    assert (finding["kind"], finding["topic"], finding["file"], finding["position"]) == (
        "crc-mismatch",
        "__transaction_state",
        str(log),
        position,
    )


def test_a_real_brokers_log_damaged_in_a_middle_segment_ends_where_truncate_would_cut(tmp_path) -> None:
    """Kafka 0.9.0.1's own segmented-0 (13 segments of v0 messages): a bit flipped in a message of the
    third segment; describe's log end is the recovery plan's (`truncate --dry-run`), not the last
    segment's, and the ten segments after the damage are not read."""
    part = tmp_path / "segmented-0"
    shutil.copytree(FIXTURES / "kafka-0.9.0.1" / "logdir" / "segmented-0", part)
    log = part / "00000000000000000032.log"
    (message,) = [e for e in iter_log_entries(log) if e.offset == 40]
    data = bytearray(log.read_bytes())
    data[message.position + 40] ^= 0x01  # inside its key or value, which its CRC-32 covers
    log.write_bytes(bytes(data))
    result = run_ktool("transactions", "describe", "--json", str(part))
    assert result.exit_code == 1, result.output
    assert f"{log}: position {message.position}: message at offset 40: stored crc" in result.stderr
    (described,) = [o for o in _json(result) if o["type"] == "partition"]
    planned = run_ktool("truncate", "--dry-run", "--json", str(part))
    (plan,) = [o for o in _json(planned) if o["type"] == "plan"]
    assert described["logEndOffset"] == plan["newLogEndOffset"] == 40


def test_a_damaged_length_field_in_the_middle_is_damage_and_a_torn_tail_stays_a_note(tmp_path) -> None:
    """The batch length's top bit set: the entry runs past the end of the file, as a torn tail does,
    but valid batches follow it, so it is damage (validate says so too), not what a crash leaves."""
    d = hanging_log_dir(tmp_path)
    log = d / "orders-0" / "00000000000000000000.log"
    (batch,) = [e for e in iter_log_entries(log) if e.base_offset == 2]
    data = bytearray(log.read_bytes())
    data[batch.position + 8] ^= 0x40  # the length field's high byte: 1 GiB more
    log.write_bytes(bytes(data))
    result = run_ktool("transactions", "find-hanging", "--json", str(d))
    assert result.exit_code == 1, result.output
    found = [(o["kind"], o["file"], o["position"]) for o in _json(result) if o["type"] == "finding"]
    assert found == [("truncated-entry", str(log), batch.position)]
    described = run_ktool("transactions", "describe", "--json", str(d))
    (part,) = [o for o in _json(described) if o["type"] == "partition"]
    assert described.exit_code == 1 and part["logEndOffset"] == 2
