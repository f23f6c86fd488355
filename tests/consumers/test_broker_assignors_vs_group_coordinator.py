"""ktool's ports of the broker's consumer-group assignors (KIP-848: uniform, range) against Kafka 4.4.0's
own group-coordinator classes, offline (ServerAssignorOracle.java, no broker): seeded random groups with
real-looking member ids and topic ids, static members, target assignments to keep; through
`plan_live_group`, so the broker's HashMap orders (members by id, topics by id) are what is checked.
A second run after a member joins or leaves starts from the first run's own output, whose maps the
assignor sized itself, each member's topics listed in their map's order as ConsumerGroupDescribe lists
them: the case a live group is in at every rebalance but its first."""

from __future__ import annotations

import base64
import random
import subprocess
from pathlib import Path

import pytest

from kafka_tools.consumers.classic_member import ClassicMember
from kafka_tools.consumers.modern_plan import LiveGroup, plan_live_group
from kafka_tools.format.java_hash import java_hashmap_order, java_uuid_hash
from tests.support.modern import classpath
from tests.support.sweep import rounds

ORACLE = (
    Path(__file__).resolve().parents[1] / "support" / "kafka_modern" / "clients" / "ServerAssignorOracle.java"
)


@pytest.fixture(scope="module")
def oracle(kafka4_release, tmp_path_factory) -> list[str]:
    out = tmp_path_factory.mktemp("server-assignor-oracle")
    libs = classpath(kafka4_release)
    subprocess.run(["javac", "-nowarn", "-cp", libs, "-d", str(out), str(ORACLE)], check=True, timeout=300)
    return [
        "java",
        "-XX:TieredStopAtLevel=1",
        "-XX:+UseSerialGC",
        "-cp",
        f"{out}:{libs}",
        "ServerAssignorOracle",
    ]


def uuid(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(16)).rstrip(b"=").decode()


def random_group(rng: random.Random, assignor: str) -> LiveGroup:
    # 12 topics now and then: a HashSet copied from them has 32 buckets, one put into has 16
    count = 12 if rng.random() < 0.1 else rng.randint(1, 4)
    topics = {f"t{i}": rng.randint(1, 8) for i in range(count)}
    ids = {t: uuid(rng) for t in topics}
    common = tuple(sorted(rng.sample(sorted(topics), rng.randint(1, len(topics)))))
    members = []
    for i in range(rng.randint(1, 8)):
        mixed = rng.random() < 0.5  # uniform: the heterogeneous builder
        subscribed = (
            tuple(sorted(rng.sample(sorted(topics), rng.randint(1, len(topics))))) if mixed else common
        )
        instance = f"i{i}" if rng.random() < 0.3 else None
        members.append(ClassicMember(uuid(rng), subscribed, instance))
    targets: dict[str, list] = {m.member_id: [] for m in members}
    for t, n in topics.items():
        takers = [m.member_id for m in members if t in m.topics]
        for p in range(n):
            if takers and rng.random() < 0.6:
                targets[rng.choice(takers)].append((t, p))
    for member, tps in targets.items():  # listed as a map replayed from its record iterates
        order, _ = java_hashmap_order(
            list(dict.fromkeys(t for t, _ in tps)), lambda t: java_uuid_hash(ids[t])
        )
        targets[member] = sorted(tps, key=lambda tp: (order.index(tp[0]), tp[1]))
    current = {tp: m for m, tps in targets.items() for tp in tps}
    return LiveGroup("g", "consumer", assignor, members, current, topics, targets, "STABLE", ids)


def line(group: LiveGroup, what_if: str = "") -> str:
    ids = group.topic_ids
    specs = [
        f"{m.member_id};{m.instance_id or '-'};{','.join(ids[t] for t in m.topics)};"
        + ",".join(f"{ids[t]}@{p}" for t, p in group.targets[m.member_id])
        for m in group.members
    ]
    subscribed = {t for m in group.members for t in m.topics}
    counts = ",".join(f"{ids[t]}:{n}" for t, n in group.partitions.items() if t in subscribed)
    return "\t".join([group.assignor, counts, "|".join(specs), *([what_if] if what_if else [])])


def owners(group: LiveGroup, answer: str) -> dict[str, list[tuple[str, int]]]:
    """Each member's partitions as the oracle lists them (its map's iteration order)."""
    name = {v: k for k, v in group.topic_ids.items()}
    out: dict[str, list[tuple[str, int]]] = {}
    for entry in answer.split("|"):
        member, _, tps = entry.partition("=")
        out[member] = [(name[tp.split("@")[0]], int(tp.split("@")[1])) for tp in filter(None, tps.split(","))]
    return out


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_every_assignment_equals_the_group_coordinators(oracle, assignor):
    rng = random.Random(f"52-{assignor}")
    groups = [random_group(rng, assignor) for _ in range(rounds(ci=150, full=3000))]
    answers = subprocess.run(
        oracle, input="".join(line(g) + "\n" for g in groups), capture_output=True, text=True, timeout=300
    )
    assert answers.returncode == 0, answers.stderr[-3000:]
    lines = [out.removeprefix("=> ") for out in answers.stdout.splitlines() if out.startswith("=> ")]
    for group, answer in zip(groups, lines, strict=True):
        assert not answer.startswith("!"), (answer, line(group))
        java = {tp: member for member, tps in owners(group, answer).items() for tp in tps}
        plan = plan_live_group(group)
        mine = {tp: owner for tp, owner in plan.proposed.items() if owner is not None}
        assert mine == java, line(group)


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_the_next_assignment_after_a_join_or_a_leave_equals_the_group_coordinators(oracle, assignor):
    """Reproduced the live miss (uniform, 1 of 12 partitions): ktool ordered each member's target topics
    as a HashMap of 16 buckets would; the assignor's own maps are smaller; the broker lists their order."""
    rng = random.Random(f"52-next-{assignor}")
    cases = []
    for _ in range(rounds(ci=150, full=3000)):
        group = random_group(rng, assignor)
        homogeneous = len({m.topics for m in group.members}) == 1
        if len(group.members) > 1 and (not homogeneous or rng.random() < 0.5):
            what_if = "-" + rng.choice(group.members).member_id
        else:
            what_if = "+" + uuid(rng)
        cases.append((group, what_if))
    answers = subprocess.run(
        oracle,
        input="".join(line(g, w) + "\n" for g, w in cases),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert answers.returncode == 0, answers.stderr[-3000:]
    firsts = [out.removeprefix("=> ") for out in answers.stdout.splitlines() if out.startswith("=> ")]
    nexts = [out.removeprefix("=>> ") for out in answers.stdout.splitlines() if out.startswith("=>> ")]
    checked = 0
    for (group, what_if), first, answer in zip(cases, firsts, nexts, strict=True):
        if first.startswith("!") or answer.startswith("!"):
            continue
        targets = owners(group, first)
        current = {tp: m for m, tps in targets.items() for tp in tps}
        live = LiveGroup(
            "g",
            "consumer",
            assignor,
            group.members,
            current,
            group.partitions,
            targets,
            "STABLE",
            group.topic_ids,
        )
        who = what_if[1:]
        plan = plan_live_group(
            live, add=[who] if what_if[0] == "+" else [], remove=[who] if what_if[0] == "-" else []
        )
        mine = {tp: owner for tp, owner in plan.proposed.items() if owner is not None}
        java = {tp: member for member, tps in owners(group, answer).items() for tp in tps}
        assert mine == java, (line(group, what_if), first)
        checked += 1
    assert checked >= len(cases) * 9 // 10
