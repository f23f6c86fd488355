"""ktool on a running Kafka 0.9.0.1 broker under load: producers at full speed (plain, gzip, snappy),
segments rolling every 256 KiB with an index entry every 1 KiB, retention deleting every 1.5 s. Every
command is run again and again while the broker writes, rolls and deletes (tests/support/live_load.py
judges each run): no traceback, no signal, validate exit 0 with in-flight findings only, read and
offsets-at answers within what the broker served before and after (ListOffsets), truncate refused in
one line naming the lock with nothing written. Then the broker is stopped cleanly and the same log dir
validates clean, its log end offsets the broker's last ones."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.live_load import PARTITIONS, TOPICS, LoadedBroker, command_round
from tests.support.script import ktool_script, run_script
from tests.support.sweep import rounds

pytestmark = [pytest.mark.slow, pytest.mark.server]

MIN_ROUNDS = 3
# Rounds for at least this long (a round is 9 runs of ktool; the broker rolls a segment every 256 KiB and
# deletes every 1.5 s, so 10 s meets it at work several times over); 40 s, the soak, in the sweep.
MIN_SECONDS = rounds(ci=10, full=40)


def test_every_command_behaves_on_a_running_broker_then_validates_clean_when_stopped(
    tmp_path: Path, kafka09_home: Path
) -> None:
    pytest.importorskip("confluent_kafka")  # the producers and ListOffsets (librdkafka)
    ktool = ktool_script()
    outcomes = []
    with LoadedBroker(tmp_path) as loaded:
        loaded.wait_rolled_and_deleted()
        started, done = time.monotonic(), 0
        while done < MIN_ROUNDS or time.monotonic() - started < MIN_SECONDS:
            outcomes += command_round(loaded, ktool)
            done += 1
        loaded.stop_producers()
        final = {(t, p): loaded.watermarks(t, p) for t in TOPICS for p in range(PARTITIONS)}
        stopped_cleanly = loaded.stop()
    bad = [f"{o.command}: {p}" for o in outcomes for p in o.problems]
    assert not bad, "\n".join(bad[:20])
    ran = {o.command for o in outcomes}
    assert {"validate", "read --latest", "offsets-at latest", "retention", "truncate --force"} <= ran
    # the run really met the broker at work: in-flight findings were reported on the way
    assert any('"kind":"in-flight"' in o.stdout for o in outcomes if o.command == "validate")

    assert stopped_cleanly
    result = run_script("validate", "--json", str(loaded.log_dir))
    objs = [json.loads(line) for line in result.stdout.splitlines()]
    findings = [o for o in objs if o["type"] == "finding"]
    assert result.returncode == 0, result.stderr
    # a clean stop may leave `.deleted` files whose delay had not passed: the broker removes them at start
    assert all(f["kind"] == "transient-file" and f["file"].endswith(".deleted") for f in findings), findings
    ends = {o["dir"]: o["logEndOffset"] for o in objs if o["type"] == "partition"}
    ends = {name: end for name, end in ends.items() if name.startswith("live-")}  # not __consumer_offsets
    assert ends == {f"{t}-{p}": high for (t, p), (_, high) in final.items()}
    assert objs[-1]["inFlight"] == 0 and objs[-1]["errors"] == 0
