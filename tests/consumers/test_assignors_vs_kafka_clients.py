"""ktool's ports of the classic assignors against kafka-clients' own classes (4.4.0, run offline: no
broker), on seeded random groups: members with and without group.instance.id, equal and mixed
subscriptions, owned partitions from several generations (some claimed twice). Every case's assignment
must equal Java's: range, roundrobin, sticky (what a member owned in its user data) and cooperative-sticky
(Java returns the first of its two rebalances: the assignment less the partitions that change owner)."""

from __future__ import annotations

import random
import struct
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from kafka_tools.consumers.assignors import AssignmentError
from kafka_tools.consumers.classic_member import ClassicMember
from kafka_tools.consumers.member_order import JAVA
from kafka_tools.consumers.range_assignor import range_assign
from kafka_tools.consumers.roundrobin_assignor import roundrobin_assign
from kafka_tools.consumers.sticky_assignor import COOPERATIVE_STICKY, STICKY, sticky_assign
from tests.support.modern import classpath
from tests.support.sweep import rounds

ORACLE = Path(__file__).resolve().parents[1] / "support" / "kafka_modern" / "clients" / "AssignorOracle.java"
STRATEGIES = ("range", "roundrobin", STICKY, COOPERATIVE_STICKY)


@pytest.fixture(scope="module")
def oracle(kafka4_release, tmp_path_factory) -> list[str]:
    out = tmp_path_factory.mktemp("assignor-oracle")
    libs = classpath(kafka4_release)
    subprocess.run(["javac", "-nowarn", "-cp", libs, "-d", str(out), str(ORACLE)], check=True, timeout=300)
    return ["java", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", f"{out}:{libs}", "AssignorOracle"]


def random_group(rng: random.Random, strategy: str):
    topics = {f"t{i}": rng.randint(1, 8) for i in range(rng.randint(1, 4))}
    names = rng.sample(
        [f"consumer-{i}" for i in range(10)] + [f"m{rng.getrandbits(32):x}" for _ in range(4)],
        rng.randint(1, 8),
    )
    equal = rng.random() < 0.5
    common = sorted(rng.sample(sorted(topics), rng.randint(1, len(topics))))
    members = []
    all_tps = [(t, p) for t, n in topics.items() for p in range(n)]
    for name in names:
        subscribed = common if equal else sorted(rng.sample(sorted(topics), rng.randint(1, len(topics))))
        owned = [tp for tp in all_tps if rng.random() < 0.3] if "sticky" in strategy else []
        generation = rng.choice([-1, 3, 4, 4]) if owned else -1
        instance = f"i{rng.randint(0, 9)}" if rng.random() < 0.3 else None
        members.append(ClassicMember(name, tuple(subscribed), instance, owned, generation))
    instances = [m.instance_id for m in members if m.instance_id]
    if len(instances) != len(set(instances)):  # an instance id belongs to one member
        for i, member in enumerate(members):
            member.instance_id = None if member.instance_id is None else f"{member.instance_id}-{i}"
    return topics, members


def line(strategy, topics, members) -> str:
    specs = [
        f"{m.member_id};{m.instance_id or '-'};{m.generation};{','.join(m.topics)};"
        + ",".join(f"{t}@{p}" for t, p in m.owned)
        for m in members
    ]
    # the leader passes the metadata of the topics its members subscribe to (AbstractPartitionAssignor)
    subscribed = {t for m in members for t in m.topics}
    counts = ",".join(f"{t}:{n}" for t, n in topics.items() if t in subscribed)
    return "\t".join([strategy, counts, "|".join(specs)])


def ours(strategy, topics, members) -> dict[str, list]:
    if strategy == "range":
        return range_assign(members, topics, JAVA)
    if strategy == "roundrobin":
        return roundrobin_assign(members, topics, JAVA)
    if strategy == STICKY:  # what it owned travels in its user data, as StickyAssignor writes it
        members = [eager(m) for m in members]
        return sticky_assign(members, topics, STICKY).assignment
    result = sticky_assign(members, topics, COOPERATIVE_STICKY)
    return {m: [tp for tp in tps if tp not in result.transferring] for m, tps in result.assignment.items()}


def eager(member: ClassicMember) -> ClassicMember:
    """The member as the eager StickyAssignor's subscription carries it: owned partitions and generation in
    StickyAssignorUserData v1 (topic, partitions; generation), none in the subscription's own fields."""
    by_topic: dict[str, list[int]] = {}
    for t, p in member.owned:
        by_topic.setdefault(t, []).append(p)
    data = struct.pack(">i", len(by_topic))
    for t, ps in by_topic.items():
        data += struct.pack(">h", len(t)) + t.encode() + struct.pack(">i", len(ps))
        data += b"".join(struct.pack(">i", p) for p in ps)
    data += struct.pack(">i", member.generation if member.generation is not None else -1)
    return ClassicMember(member.member_id, member.topics, member.instance_id, [], None, user_data=data)


def test_every_assignment_equals_kafka_clients(oracle):
    rng = random.Random(52)
    cases = [(s, *random_group(rng, s)) for _ in range(rounds(ci=100, full=2000)) for s in STRATEGIES]
    stdin = "".join(line(*case) + "\n" for case in cases)
    answers = subprocess.run(oracle, input=stdin, capture_output=True, text=True, timeout=300)
    assert answers.returncode == 0, answers.stderr[-3000:]
    lines = [out.removeprefix("=> ") for out in answers.stdout.splitlines() if out.startswith("=> ")]
    failures = 0
    for case, answer in zip(cases, lines, strict=True):
        if answer.startswith("!"):  # kafka-clients fails this rebalance: the plan refuses it too
            with pytest.raises(AssignmentError, match="kafka-clients fails"):
                ours(*case)
            failures += 1
            continue
        java = {}
        for entry in answer.split("|"):
            member, _, tps = entry.partition("=")
            java[member] = sorted((t, int(p)) for t, p in (x.split("@") for x in tps.split(",") if x))
        mine = {m: sorted(tps) for m, tps in ours(*case).items()}
        assert mine == java, line(*case)
    print(f"{len(cases)} cases, kafka-clients failed {failures}")
    assert failures < len(cases) // 10


# --- racks (KIP-881): members with client.rack, replicas on racks ---------------------------------------

RACKS = ("r0", "r1", "r2")


def random_racked_group(rng: random.Random, strategy: str):
    """A group whose members send racks and whose partitions' replicas sit on racks: all racks now and
    then (the rack-aware path stays off), a rackless replica or none at all sometimes."""
    topics, members = random_group(rng, strategy)
    if "sticky" in strategy and rng.random() < 0.5:  # the constrained builder: equal subscriptions
        for member in members:
            member.topics = members[0].topics
    everywhere = rng.random() < 0.15
    replica_racks = {}
    for t, n in topics.items():
        for p in range(n):
            if everywhere:
                racks = set(RACKS)
            else:
                racks = set(rng.sample(RACKS, rng.choice([0, 1, 1, 2, 2, 3])))
            if rng.random() < 0.05:
                racks.add("~")  # a replica on a broker without broker.rack
            replica_racks[(t, p)] = frozenset(racks)
    for member in members:
        member.rack = rng.choice([*RACKS, *RACKS, None, "r9"])
    return topics, members, replica_racks


def racked_line(strategy, topics, members, replica_racks) -> str:
    fields = line(strategy, topics, members).split("\t")
    subscribed = {t for m in members for t in m.topics}
    fields[1] = ",".join(
        f"{t}:{n}:" + "/".join("+".join(sorted(replica_racks[(t, p)])) for p in range(n))
        for t, n in topics.items()
        if t in subscribed
    )
    fields[2] = "|".join(
        f"{spec};{m.rack or ''}" for spec, m in zip(fields[2].split("|"), members, strict=True)
    )
    return "\t".join(fields)


def racked_ours(strategy, topics, members, replica_racks) -> dict[str, list]:
    racks = {tp: frozenset(r for r in rs if r != "~") for tp, rs in replica_racks.items()}
    if strategy == "range":
        return range_assign(members, topics, JAVA, racks)
    if strategy == STICKY:
        racked = [eager(m) for m in members]
        for mine, member in zip(racked, members, strict=True):
            mine.rack = member.rack
        return sticky_assign(racked, topics, STICKY, racks).assignment
    result = sticky_assign(members, topics, COOPERATIVE_STICKY, racks)
    return {m: [tp for tp in tps if tp not in result.transferring] for m, tps in result.assignment.items()}


def test_every_rack_aware_assignment_equals_kafka_clients(oracle):
    """Range and the sticky assignors (equal and unequal subscriptions) with racks equal Java's."""
    rng = random.Random("52-racks")
    strategies = ("range", STICKY, COOPERATIVE_STICKY)
    cases = [(s, *random_racked_group(rng, s)) for _ in range(rounds(ci=150, full=1000)) for s in strategies]
    stdin = "".join(racked_line(*case) + "\n" for case in cases)
    answers = subprocess.run(oracle, input=stdin, capture_output=True, text=True, timeout=300)
    assert answers.returncode == 0, answers.stderr[-3000:]
    lines = [out.removeprefix("=> ") for out in answers.stdout.splitlines() if out.startswith("=> ")]
    refused = Counter()
    for case, answer in zip(cases, lines, strict=True):
        try:
            mine = {m: sorted(tps) for m, tps in racked_ours(*case).items()}
        except AssignmentError as exc:  # kafka-clients fails this rebalance: the plan refuses it too
            assert "kafka-clients fails" in str(exc) and answer.startswith("!"), (str(exc), answer)
            refused[case[0]] += 1
            continue
        assert not answer.startswith("!"), (answer, racked_line(*case))
        java = {}
        for entry in answer.split("|"):
            member, _, tps = entry.partition("=")
            java[member] = sorted((t, int(p)) for t, p in (x.split("@") for x in tps.split(",") if x))
        assert mine == java, racked_line(*case)
    print(f"{len(cases)} cases, kafka-clients failed {dict(refused)}")
    assert sum(refused.values()) < len(cases) // 10
