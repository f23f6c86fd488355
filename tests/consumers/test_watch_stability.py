"""`groups watch`'s verdicts a runbook trusts: stable means the group exists, has members and owns
what it consumes; one rebalance is one started/finished pair, verified once ownership has settled."""

from __future__ import annotations

import json
import time

from kafka_tools.consumers.group_tracker import QUIET, GroupTracker
from kafka_tools.zk.layout import ConsumerMember
from tests.support.script import run_script
from tests.support.watch import create_topic, range_plan, register_broker

TOPIC, PARTITIONS = "orders", 6
TOPICS = {TOPIC: list(range(PARTITIONS))}


def _members(*names: str) -> dict[str, ConsumerMember]:
    return {n: ConsumerMember(n, {TOPIC: 1}, "static") for n in names}


def _events(tracker: GroupTracker, now: float, members, owners) -> list[str]:
    return [name for name, _ in tracker.update(now, members, owners, TOPICS, [TOPIC])]


def test_a_group_with_no_members_is_never_stable() -> None:
    typo = GroupTracker("billnig", grace=30)
    _events(typo, 0.0, {}, {})
    assert typo.stable is False
    assert typo.state_fields()["stable"] is False

    # every consumer of a settled group died: its registrations and owners are gone
    group = GroupTracker("billing", grace=30)
    one = range_plan(["billing_c1"], TOPIC, PARTITIONS)
    _events(group, 0.0, _members("billing_c1"), one)
    assert group.stable is True
    _events(group, 10.0, {}, {})
    _events(group, 20.0, {}, {})
    assert group.stable is False


def test_a_group_subscribed_to_nothing_that_exists_is_not_stable() -> None:
    tracker = GroupTracker("billing", grace=30)
    members = {"billing_c1": ConsumerMember("billing_c1", {"no-such-topic": 1}, "static")}
    tracker.update(0.0, members, {}, TOPICS, [TOPIC])
    assert tracker.stable is False


def test_a_join_is_one_rebalance_verified_after_the_owners_moved() -> None:
    """The second member registers long after the owners last changed: the rebalance does not
    'finish' at once with nothing moved and start again when the members release their partitions."""
    tracker = GroupTracker("billing", grace=30)
    one = range_plan(["billing_c1"], TOPIC, PARTITIONS)
    two = range_plan(["billing_c1", "billing_c2"], TOPIC, PARTITIONS)
    both = _members("billing_c1", "billing_c2")
    events = _events(tracker, 0.0, _members("billing_c1"), one)
    assert tracker.stable is True

    events += _events(tracker, 100.0, both, one)  # c2 registers; c1 still holds everything
    events += _events(tracker, 100.0 + QUIET / 30, both, one)  # a read before anyone released
    released = {tp: o for tp, o in one.items() if two[tp] == o}
    events += _events(tracker, 100.0 + QUIET / 25, both, released)  # c1 let go of c2's share
    assert tracker.stable is False
    events += _events(tracker, 100.0 + QUIET / 20, both, two)  # c2 claimed it
    assert events.count("rebalance-started") == 1
    assert events.count("rebalance-finished") == 1
    finished = tracker.update(100.1, both, two, TOPICS, [TOPIC])  # nothing new
    assert finished == []
    assert tracker.stable is True and tracker.verification.ok


def test_a_join_nobody_acts_on_finishes_only_after_the_quiet_period() -> None:
    tracker = GroupTracker("billing", grace=30)
    one = range_plan(["billing_c1"], TOPIC, PARTITIONS)
    both = _members("billing_c1", "billing_c2")
    tracker.update(0.0, _members("billing_c1"), one, TOPICS, [TOPIC])
    out = tracker.update(100.0, both, one, TOPICS, [TOPIC])
    assert [n for n, _ in out] == ["member-joined", "rebalance-started"]
    assert tracker.update(100.0 + QUIET / 2, both, one, TOPICS, [TOPIC]) == []
    late = dict(tracker.update(100.0 + QUIET, both, one, TOPICS, [TOPIC]))
    assert late["rebalance-finished"]["durationMs"] == round(QUIET * 1000)
    assert late["rebalance-verified"]["ok"] is False


def test_until_stable_on_a_group_that_never_appears_times_out_with_exit_1(zk_root) -> None:
    zk = zk_root.zk
    register_broker(zk, 0)
    zk.create("/controller", b'{"version":1,"brokerid":0,"timestamp":"1"}', makepath=True)
    create_topic(zk, TOPIC, PARTITIONS)
    t0 = time.monotonic()
    result = run_script(
        "groups",
        "watch",
        "billnig",
        "--zookeeper",
        zk_root.connect,
        "--until-stable",
        "--timeout",
        "2",
        "--json",
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert time.monotonic() - t0 >= 2
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert any(e.get("event") == "timeout" for e in events)
    state = [e for e in events if e.get("event") == "group-state"]
    assert state and state[-1]["stable"] is False and state[-1]["members"] == []

    once = run_script("groups", "watch", "billnig", "--zookeeper", zk_root.connect, "--once", "--json")
    state = [json.loads(line) for line in once.stdout.splitlines() if '"group-state"' in line]
    assert state[-1]["stable"] is False


def test_sigterm_ends_a_watch_as_ctrl_c_does_with_its_summary_and_exit_143(zk_root) -> None:
    """What `timeout` and service managers send: the summary line, one line on stderr, exit 143."""
    import signal

    from tests.support.watch import WatchProcess

    zk = zk_root.zk
    register_broker(zk, 0)
    create_topic(zk, TOPIC, PARTITIONS)
    with WatchProcess("billing", "--zookeeper", zk_root.connect, "--json") as watch:
        watch.event("broker-joined")
        watch.proc.send_signal(signal.SIGTERM)
        assert watch.wait() == 143, watch.stderr()
        assert watch.proc.stderr.read() == "ktool: terminated\n"
        rest = watch.rest()
    assert rest and rest[-1]["type"] == "summary"
