"""`ktool groups watch` against the session's real ZooKeeper, with consumers simulated by kazoo.

The simulated members write the znodes as Kafka's ZookeeperConsumerConnector writes them
(tests/support/watch.py); the watch runs as a subprocess with --json and is read line by line. The
real 0.9.0.1 consumers are in test_groups_watch_e2e.py. Also: Burrow-style lag statuses (pure), and
the refused-port fail fast for every ZooKeeper command.
"""

from __future__ import annotations

import json
import signal
import time
import types

import pytest

from kafka_tools.consumers.lag_status import ERR, OK, STALL, STOP, WARN, PartitionWindow, Sample, evaluate
from tests.support.script import run_script
from tests.support.servers import ZooKeeperServer, free_port
from tests.support.watch import (
    WatchProcess,
    apply_plan,
    claim,
    create_topic,
    range_plan,
    register_broker,
    register_member,
)

GROUP = "billing"
TOPIC = "orders"
PARTITIONS = 6


def _cluster(zk) -> None:
    register_broker(zk, 0, ephemeral=False)
    create_topic(zk, TOPIC, PARTITIONS)
    zk.create("/controller", b'{"version":1,"brokerid":0,"timestamp":"1"}')
    zk.ensure_path(f"/consumers/{GROUP}")


def _owner_events(events: list[dict], since: int) -> dict[tuple[str, int], tuple]:
    return {
        (e["topic"], e["partition"]): (e["from"], e["to"])
        for e in events[since:]
        if e.get("event") == "owner-changed"
    }


# --------------------------------------------------------------------------- lag status (pure)


def _samples(offsets, ends, owned=True):
    return [Sample(float(i), o, e, owned) for i, (o, e) in enumerate(zip(offsets, ends, strict=True))]


@pytest.mark.parametrize(
    ("offsets", "ends", "owned", "status"),
    [
        ([5, 8, 10], [10, 12, 10], True, OK),  # caught up at the last sample
        ([5, 6, 7, 8], [10, 12, 14, 16], True, WARN),  # moving, lag 5 6 7 8: falling behind
        ([5, 5, 5], [9, 9, 10], True, STALL),  # owned, offset stuck, lag > 0
        ([5, 5, 5], [9, 9, 10], False, STOP),  # nobody owns it: nobody commits
        ([None, None, None], [3, 3, 3], True, STOP),  # never committed
        ([7, 4, 5], [9, 9, 9], True, ERR),  # rewind
        ([12, 12, 12], [10, 10, 10], True, ERR),  # past the log end
        ([5, 6, 9], [10, 12, 14], True, OK),  # moving, lag not growing at every sample
        ([5, 5], [9, 9], True, OK),  # too few samples to judge
    ],
)
def test_lag_status_follows_burrows_rules(offsets, ends, owned, status) -> None:
    assert evaluate(_samples(offsets, ends, owned)) == status


def test_lag_status_change_is_reported_once_and_the_window_slides() -> None:
    window = PartitionWindow()
    changes = [window.add(s) for s in _samples([5] * 12, [5, 5] + [9] * 10)]
    assert changes[0] == (None, OK)
    assert [c for c in changes[1:] if c] == [(OK, STALL)]
    # a zero lag anywhere in the window means OK: STALL once both left the 10-sample window
    assert changes.index((OK, STALL)) == 11
    assert len(window.samples) == 10


# --------------------------------------------------------------------------- the view a step reads


class _ScriptedMirror:
    """ZnodeMirror's reading side over a dict of children and data; each `refresh` applies the next
    scripted change, as a watch firing between two reads would."""

    def __init__(self, children: dict[str, dict], data: dict[str, bytes], script: list) -> None:
        self._children, self._data, self._script = children, data, script
        self.tracked: set[str] = set()

    def refresh(self) -> None:
        if self._script:
            self._script.pop(0)(self)

    def track_children(self, path: str, with_data: bool = False) -> bool:
        new = path not in self.tracked
        self.tracked.add(path)
        return new

    track_data = track_children

    def children(self, path: str) -> dict:
        return dict(self._children.get(path, {})) if path in self.tracked else {}

    def data(self, path: str) -> bytes | None:
        return self._data.get(path) if path in self.tracked else None

    def take_changes(self):
        return set(), []


def test_a_member_seen_between_two_reads_waits_for_its_topics_partitions() -> None:
    """A member registered while a step reads: its rebalance plans the topic's partitions, never a
    rebalance 'finished' at once with nothing planned (seen in CI under load)."""
    from kafka_tools.consumers.group_tracker import WatchOptions
    from kafka_tools.consumers.watch import GroupWatch
    from tests.support.watch import registration

    topic_data = json.dumps({"version": 1, "partitions": {str(p): [0] for p in range(PARTITIONS)}}).encode()
    children = {"/brokers/ids": {}, "/brokers/topics": {TOPIC: None}, f"/consumers/{GROUP}/ids": {}}
    data = {f"/brokers/topics/{TOPIC}": topic_data}

    def member_registers(mirror) -> None:
        mirror._children[f"/consumers/{GROUP}/ids"]["billing_c1"] = registration({TOPIC: 1})

    # the member registers at the fourth read, while a later step reads (a step used to read twice)
    nothing = [lambda m: None] * 3
    mirror = _ScriptedMirror(children, data, [*nothing, member_registers])
    events = []
    no_zk = types.SimpleNamespace(add_listener=lambda listener: None)  # the scripted mirror reads instead
    watch = GroupWatch(no_zk, WatchOptions(groups=[GROUP]), events.append)
    watch.mirror = mirror
    for path in ("/brokers/ids", "/brokers/topics", f"/consumers/{GROUP}/ids", f"/consumers/{GROUP}/owners"):
        mirror.track_children(path)
    watch._track_group(GROUP)
    watch.step(initial=True)
    for _ in range(4):
        watch.step()
    finished = [e.fields for e in events if e.event == "rebalance-finished"]
    started = [e.fields for e in events if e.event == "rebalance-started"]
    assert [s["reason"] for s in started] == ["member joined"]
    assert finished == []  # nobody claimed anything: still rebalancing, 6 partitions planned
    assert watch.trackers[GROUP].verification.planned == dict.fromkeys(
        [(TOPIC, p) for p in range(PARTITIONS)], "billing_c1-0"
    )


# --------------------------------------------------------------------------- simulated members


def test_joins_and_leaves_are_rebalances_verified_against_the_range_plan(zk_root) -> None:
    zk = zk_root.zk
    _cluster(zk)
    with WatchProcess(GROUP, "--zookeeper", zk_root.connect, "--json") as watch:
        assert watch.event("broker-joined")["initial"] is True
        watch.event("controller-moved", to=0)

        register_member(zk, GROUP, "billing_c1", {TOPIC: 1})
        joined = watch.event("member-joined", member="billing_c1")
        assert (
            joined["subscription"] == {TOPIC: 1}
            and joined["pattern"] == "static"
            and joined["group"] == GROUP
        )
        watch.event("rebalance-started", reason="member joined")
        one = range_plan(["billing_c1"], TOPIC, PARTITIONS)
        mark = len(watch.seen)
        apply_plan(zk, GROUP, {}, one)
        done = watch.event("rebalance-finished")
        assert (
            done["moved"] == PARTITIONS and done["matchesPlan"] is True and done["members"] == ["billing_c1"]
        ), watch.story()
        assert _owner_events(watch.seen, mark) == {tp: (None, o) for tp, o in one.items()}
        assert watch.event("rebalance-verified")["ok"] is True

        register_member(zk, GROUP, "billing_c2", {TOPIC: 1})
        watch.event("member-joined", member="billing_c2")
        two = range_plan(["billing_c1", "billing_c2"], TOPIC, PARTITIONS)
        mark = len(watch.seen)
        apply_plan(zk, GROUP, one, two)
        done = watch.event("rebalance-finished")
        moved = {tp: (one[tp], two[tp]) for tp in two if one[tp] != two[tp]}
        assert done["moved"] == len(moved) == 3
        assert _owner_events(watch.seen, mark) == moved

        # c1 leaves: its registration goes first, then the owners move to c2
        zk.delete(f"/consumers/{GROUP}/ids/billing_c1")
        watch.event("member-left", member="billing_c1")
        watch.event("rebalance-started", reason="member left")
        last = range_plan(["billing_c2"], TOPIC, PARTITIONS)
        apply_plan(zk, GROUP, two, last)
        assert watch.event("rebalance-finished")["moved"] == 3
        assert watch.event("rebalance-verified")["ok"] is True

    result = run_script("groups", "watch", GROUP, "--zookeeper", zk_root.connect, "--until-stable", "--json")
    assert result.returncode == 0, result.stderr
    state = [e for e in map(json.loads, result.stdout.splitlines()) if e.get("event") == "group-state"]
    assert state[0]["stable"] is True and state[0]["verified"] is True
    assert {(o["topic"], o["partition"]): o["owner"] for o in state[0]["owners"]} == last


def test_added_partitions_a_broker_and_a_new_controller_are_events(zk_root) -> None:
    zk = zk_root.zk
    _cluster(zk)
    register_member(zk, GROUP, "billing_c1", {TOPIC: 1})
    plan = range_plan(["billing_c1"], TOPIC, PARTITIONS)
    apply_plan(zk, GROUP, {}, plan)
    with WatchProcess(GROUP, "--zookeeper", zk_root.connect, "--json") as watch:
        watch.event("member-joined", member="billing_c1")
        register_broker(zk, 1)
        assert watch.event("broker-joined", broker=1)["port"] == 9092
        zk.set("/controller", b'{"version":1,"brokerid":1,"timestamp":"2"}')
        watch.event("controller-moved", to=1, **{"from": 0})
        assignment = {"version": 1, "partitions": {str(p): [0] for p in range(PARTITIONS + 2)}}
        zk.set(f"/brokers/topics/{TOPIC}", json.dumps(assignment).encode())
        added = watch.event("partitions-added", topic=TOPIC)
        assert (added["from"], added["to"]) == (PARTITIONS, PARTITIONS + 2)
        watch.event("rebalance-started", reason="partitions added")
        wider = range_plan(["billing_c1"], TOPIC, PARTITIONS + 2)
        apply_plan(zk, GROUP, plan, wider)
        done = watch.event("rebalance-finished")
        assert (done["moved"], done["partitions"], done["matchesPlan"]) == (2, PARTITIONS + 2, True)
        zk.delete("/brokers/ids/1")
        watch.event("broker-left", broker=1)


def test_a_partition_held_by_a_dead_member_is_stuck_and_until_stable_times_out(zk_root) -> None:
    zk = zk_root.zk
    _cluster(zk)
    register_member(zk, GROUP, "billing_c1", {TOPIC: 1})
    plan = range_plan(["billing_c1"], TOPIC, PARTITIONS)
    for (topic, p), owner in plan.items():
        claim(zk, GROUP, topic, p, "billing_gone-0" if p == 2 else owner)  # a dead member's node

    with WatchProcess(GROUP, "--zookeeper", zk_root.connect, "--json", "--grace", "1") as watch:
        started = watch.event("rebalance-started")
        assert started["reason"] == "in progress when the watch started"
        stuck = watch.event("partition-stuck", timeout=10)
        assert (stuck["topic"], stuck["partition"]) == (TOPIC, 2)
        assert stuck["owner"] == "billing_gone-0" and stuck["expectedOwner"] == "billing_c1-0"
        assert stuck["unownedForMs"] >= 1000
        # the dead member's session ends: the partition is claimed by its planned owner
        zk.delete(f"/consumers/{GROUP}/owners/{TOPIC}/2")
        claim(zk, GROUP, TOPIC, 2, "billing_c1-0")
        assert watch.event("partition-recovered", partition=2)["owner"] == "billing_c1-0"
        assert watch.event("rebalance-finished")["matchesPlan"] is True

    zk.delete(f"/consumers/{GROUP}/owners/{TOPIC}/2")
    claim(zk, GROUP, TOPIC, 2, "billing_gone-0")
    t0 = time.monotonic()
    result = run_script(
        "groups",
        "watch",
        GROUP,
        "--zookeeper",
        zk_root.connect,
        "--until-stable",
        "--timeout",
        "2",
        "--grace",
        "1",
    )
    assert result.returncode == 1, result.stderr
    assert 2 <= time.monotonic() - t0 < 15
    lines = result.stdout.splitlines()
    assert " timeout " in lines[-2]
    assert lines[-1].split()[1:3] == ["group-state", f"group={GROUP}"] and "stable=false" in lines[-1]
    assert '"owner":"billing_gone-0"' in lines[-1]


def test_once_prints_the_state_as_events(zk_root) -> None:
    zk = zk_root.zk
    _cluster(zk)
    register_member(zk, GROUP, "billing_host1-1463000000000-0a1b2c3d", {TOPIC: 1})
    with WatchProcess(GROUP, "--zookeeper", zk_root.connect, "--json", "--once") as watch:
        assert watch.wait() == 0
        events = watch.rest()
    assert events.pop() == {"type": "summary", "events": len(events)}
    names = [e.get("event") for e in events]
    assert names[:2] == ["broker-joined", "controller-moved"] and names[-1] == "group-state"
    member = next(e for e in events if e.get("event") == "member-joined")
    assert member["host"] == "host1" and member["initial"] is True
    state = events[-1]
    assert state["members"] == ["billing_host1-1463000000000-0a1b2c3d"] and state["stable"] is False
    assert [u["partition"] for u in state["unowned"]] == list(range(PARTITIONS))
    assert all(set(e) >= {"ts", "event", "group"} for e in events)


def test_all_follows_groups_that_appear_and_ctrl_c_is_130(zk_root) -> None:
    zk = zk_root.zk
    _cluster(zk)
    with WatchProcess("--all", "--zookeeper", zk_root.connect) as watch:  # text, piped
        # Its first view printed (brokers come after /consumers is watched): a group made now appears.
        watch.text_until(" broker-joined ")
        register_member(zk, "audit", "audit_c1", {TOPIC: 1})
        lines = watch.text_until(" member-joined group=audit member=audit_c1 ")
        assert any(" group-appeared group=audit" in x for x in lines), lines
        watch.proc.send_signal(signal.SIGINT)
        assert watch.wait() == 130, watch.stderr()
        assert watch.proc.stderr.read() == "ktool: interrupted\n"


@pytest.mark.server  # its own ZooKeeper, stopped and started again: no fixture to show it
def test_connection_loss_and_session_expiry_are_events_and_the_state_is_read_again(tmp_path) -> None:
    from kazoo.client import KazooClient

    server = ZooKeeperServer(workdir=tmp_path / "zk").start()
    member = KazooClient(server.connect_string, timeout=4)
    try:
        admin = KazooClient(server.connect_string)
        admin.start(timeout=10)
        _cluster(admin)
        admin.stop()
        member.start(timeout=10)
        register_member(member, GROUP, "billing_c1", {TOPIC: 1})
        args = [GROUP, "--zookeeper", server.connect_string, "--zk-session-timeout", "4", "--json"]
        with WatchProcess(*args) as watch:
            watch.event("member-joined", member="billing_c1")
            server.stop(cleanup=False)
            watch.event("connection-suspended", timeout=20)
            member.stop()  # its session ends while ZooKeeper is away
            # No wait for the outage to outlast the session timeouts: a restarted ZooKeeper gives every
            # session it reloads a fresh timeout, so the member's expires 4 s after the restart however
            # long the server was away, and the watch's either reconnects in time or is told it expired.
            server.start()
            watch.expect(
                "session expiry or reconnect",
                lambda e: e.get("event") in ("session-expired", "connection-restored"),
                60,
            )
            left = watch.event("member-left", member="billing_c1", timeout=60)
            assert left["group"] == GROUP
    finally:
        member.close()
        server.stop()


ZK_COMMANDS = [
    ["brokers"],
    ["topics"],
    ["cluster-id"],
    ["groups", "list"],
    ["groups", "describe", "g"],
    ["groups", "rebalance-plan", "g"],
    ["groups", "watch", "g"],
    ["groups", "watch", "--all", "--until-stable"],
    ["offsets", "export", "--group", "g"],
]


@pytest.mark.slow  # a fresh interpreter per command
@pytest.mark.parametrize("command", ZK_COMMANDS, ids=" ".join)
def test_every_zookeeper_command_reports_a_refused_port_without_waiting(command) -> None:
    # A refused port is known at once: well under the 30 s timeout given (how fast, under 2 s on an idle
    # machine, is a figure for bench/, not for a test on a shared CI box).
    port = free_port()
    t0 = time.monotonic()
    result = run_script(*command, "--zookeeper", f"127.0.0.1:{port}", "--zk-timeout", "30")
    elapsed = time.monotonic() - t0
    assert result.returncode == 3, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert result.stderr == f"ktool: cannot connect to ZooKeeper 127.0.0.1:{port}: connection refused\n"
    assert elapsed < 10, elapsed


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give GROUP… or --all (not both)"),
        (["g", "--all"], "give GROUP… or --all (not both)"),
        (["g", "--timeout", "5"], "--timeout goes with --until-stable"),
        (["g", "--once", "--until-stable"], "--once and --until-stable exclude each other"),
    ],
)
def test_usage_errors_are_one_line_exit_2(args, message) -> None:
    from tests.support.cli import run_ktool

    result = run_ktool("groups", "watch", *args, "--zookeeper", "127.0.0.1:1")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"ktool: {message}\n"
