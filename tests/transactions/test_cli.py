"""`ktool transactions list|describe|find-hanging` through the real CLI: the rows, the abort command
printed, --now and --max-transaction-timeout, and the exit codes (0 none, 1 findings, 3 unreadable)."""

from __future__ import annotations

import json

from tests.support.cli import run_ktool
from tests.transactions.files import T0, hanging_log_dir, stamp

LATE = "2030-01-01T00:00:00Z"


def test_find_hanging_reports_the_unknown_producer_with_its_abort_command(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    result = run_ktool("transactions", "find-hanging", "--now", LATE, str(d))
    assert result.exit_code == 1, result.stderr
    cmd = "kafka-transactions.sh --bootstrap-server BROKER:PORT abort"
    cmd += " --topic orders --partition 0 --start-offset 5"
    assert cmd in result.stdout.splitlines()
    assert "producer id 2000" in result.stdout


def test_find_hanging_is_quiet_on_the_datas_own_clock_and_under_a_long_timeout(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    for args in ([], ["--now", LATE, "--max-transaction-timeout", str(10 * 365 * 24 * 60)]):
        result = run_ktool("transactions", "find-hanging", *args, str(d))
        assert result.exit_code == 0, result.stderr
        assert result.stdout.endswith(": no hanging transaction found\n") and result.stdout.count("\n") == 1


def test_find_hanging_json_rows(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    result = run_ktool("transactions", "find-hanging", "--json", "--now", LATE, str(d))
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    (finding,) = [o for o in objs if o["type"] == "finding"]
    assert (finding["kind"], finding["producerId"], finding["firstOffset"], finding["recordsBehind"]) == (
        "hanging",
        2000,
        5,
        6,
    )
    assert objs[-1]["type"] == "summary" and objs[-1]["findings"] == 1 and objs[-1]["openTransactions"] == 2


def test_list_and_describe_show_the_coordinator_and_the_last_stable_offset(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    listed = run_ktool("transactions", "list", "--json", str(d))
    assert listed.exit_code == 0
    ids = {
        o["transactionalId"]: o
        for o in map(json.loads, listed.stdout.splitlines())
        if o["type"] == "transaction"
    }
    assert ids["app-1"]["state"] == "Ongoing" and ids["app-1"]["partitions"] == ["orders-0"]
    assert ids["done"]["state"] == "CompleteCommit" and ids["app-1"]["coordinatorPartition"] == 5
    described = run_ktool("transactions", "describe", "--json", "--transactional-id", "app-1", str(d))
    objs = [json.loads(line) for line in described.stdout.splitlines()]
    (part,) = [o for o in objs if o["type"] == "partition"]
    assert (part["lastStableOffset"], part["logEndOffset"]) == (5, 11)
    assert [t["producerId"] for t in part["openTransactions"]] == [2000, 1000]
    missing = run_ktool("transactions", "describe", "--transactional-id", "nobody", str(d))
    assert missing.exit_code == 2 and "'nobody'" in missing.stderr


def test_an_unreadable_log_dir_is_one_line_and_exit_3(tmp_path) -> None:
    result = run_ktool("transactions", "find-hanging", str(tmp_path / "missing"))
    assert result.exit_code == 3
    assert result.stderr.strip().count("\n") == 0 and "missing" in result.stderr


def test_a_running_brokers_in_flight_tail_is_never_a_finding(tmp_path) -> None:
    from tests.support.locks import lock_held_elsewhere

    d = hanging_log_dir(tmp_path)
    log = d / "orders-0" / "00000000000000000000.log"
    data = log.read_bytes()
    log.write_bytes(data + data[-40:-3])  # a batch being appended: its first bytes only
    stamp(d, T0 + 60_000)  # appended then: the copy's clock stays the data's
    count = ("--transaction-partitions", "50")  # a ZooKeeper broker's log dir does not hold it
    stopped = run_ktool("transactions", "find-hanging", *count, str(d))
    assert stopped.exit_code == 0 and "replayed up to there" in stopped.stderr  # a copy: said
    with lock_held_elsewhere(d / ".lock"):
        live = run_ktool("transactions", "find-hanging", *count, str(d))
    assert (live.exit_code, live.stderr) == (0, "") and "no hanging transaction found" in live.stdout


def test_an_unreadable_segment_is_one_line_naming_it_and_exit_3(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    for name in ("orders-0", "__transaction_state-5"):
        seg = d / name / "00000000000000000000.log"
        saved = seg.read_bytes()
        seg.unlink()
        seg.symlink_to(tmp_path / "unmounted" / "segment.log")  # a disk that is not there
        for command in ("find-hanging", "list", "describe"):
            result = run_ktool("transactions", command, "--transaction-partitions", "50", str(d))
            if command == "list" and name == "orders-0":
                assert result.exit_code == 0  # list reads the coordinator alone
                continue
            assert result.exit_code == 3, (name, command, result.stderr)
            assert result.stderr.count("\n") == 1 and str(seg) in result.stderr
        seg.unlink()
        seg.write_bytes(saved)


def test_without_the_coordinators_partitions_nothing_is_called_hanging_and_it_is_said(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    result = run_ktool("transactions", "find-hanging", "--now", LATE, str(d / "orders-0"))
    assert result.exit_code == 0 and result.stdout == (
        "1 partition and 0 __transaction_state partitions read, 2 open transactions; "
        "clock 2030-01-01T00:00:00.000+00:00 (--now): no hanging transaction found\n"
    )
    assert "no __transaction_state partition among LOGDIRs" in result.stderr


def test_a_torn_coordinator_tail_is_a_note_and_what_precedes_it_is_read(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    seg = d / "__transaction_state-5" / "00000000000000000000.log"
    seg.write_bytes(seg.read_bytes()[:-7])  # the Ongoing record cut: app-1 is Empty as far as the files say
    result = run_ktool("transactions", "list", "--json", str(d))
    assert result.exit_code == 0 and "replayed up to there" in result.stderr
    states = {o["transactionalId"]: o["state"] for o in map(json.loads, result.stdout.splitlines()[:-1])}
    assert states == {"app-1": "Empty", "done": "CompleteCommit"}


def test_a_partition_count_no_file_holds_is_said_once_and_no_id_is_judged_by_a_guess(tmp_path) -> None:
    """A ZooKeeper broker's log dir holds no __transaction_state partition count: `app-1` in partition 5
    is where it belongs with 50 partitions, not with 7; ktool knows neither and says so."""
    d = hanging_log_dir(tmp_path)
    result = run_ktool("transactions", "list", str(d))
    assert result.exit_code == 0, result.stderr
    assert result.stderr.count("\n") == 1 and "cannot be read from the log dirs" in result.stderr
    assert "2 present, the highest __transaction_state-32" in result.stderr
    given = run_ktool("transactions", "list", "--transaction-partitions", "7", str(d))
    assert given.exit_code == 1 and "hashes to partition" in given.stderr


def test_a_quiet_copy_is_judged_by_the_newest_time_its_files_hold(tmp_path) -> None:
    """Nothing written after the transaction: the data's newest timestamp is its own, but the broker ran
    on (its checkpoints rewritten, the KRaft metadata log appended to): their times are the copy's clock,
    and the output says which. --now still decides."""
    import os

    d = hanging_log_dir(tmp_path)
    checkpoint = d / "replication-offset-checkpoint"
    checkpoint.write_text("0\n0\n")
    later = T0 + 60_000 + 16 * 60_000  # past the 15-minute transaction timeout
    os.utime(checkpoint, ns=(later * 1_000_000, later * 1_000_000))
    result = run_ktool("transactions", "find-hanging", "--json", str(d))
    assert result.exit_code == 1, result.stderr
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["producerId"] for o in objs if o["type"] == "finding"] == [2000]
    assert objs[-1]["nowMs"] == later and objs[-1]["clockSource"] == f"mtime of {checkpoint}"
    text = run_ktool("transactions", "find-hanging", str(d))
    assert f"(mtime of {checkpoint}): 1 finding" in text.stdout.splitlines()[-1]
    earlier = run_ktool("transactions", "find-hanging", "--now", str(T0 + 60_000), str(d))
    assert earlier.exit_code == 0 and "(--now): no hanging transaction found" in earlier.stdout


def test_list_says_what_it_read_and_that_nothing_was_found(tmp_path) -> None:
    d = hanging_log_dir(tmp_path)
    result = run_ktool("transactions", "list", "--transaction-partitions", "50", str(d))
    assert result.exit_code == 0 and result.stdout.splitlines()[-1] == (
        "2 transactional ids from 2 __transaction_state partitions read"
    )
    empty = run_ktool("transactions", "list", str(d / "orders-0"))
    assert (empty.exit_code, empty.stdout) == (
        0,
        "no __transaction_state partition among the log dirs: no transactional id read\n",
    )
