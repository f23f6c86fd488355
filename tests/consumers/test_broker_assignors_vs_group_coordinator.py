"""ktool's ports of the broker's consumer-group assignors (KIP-848: uniform, range) against Kafka 4.4.0's
own group-coordinator classes, offline (ServerAssignorOracle.java, no broker): seeded random groups with
real-looking member ids and topic ids, static members, target assignments to keep; through
`plan_live_group`, so the broker's HashMap orders (members by id, topics by id) are what is checked."""

from __future__ import annotations

import base64
import random
import subprocess
from pathlib import Path

import pytest

from kafka_tools.consumers.classic_member import ClassicMember
from kafka_tools.consumers.modern_plan import LiveGroup, plan_live_group
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
    topics = {f"t{i}": rng.randint(1, 8) for i in range(rng.randint(1, 4))}
    ids = {t: uuid(rng) for t in topics}
    common = tuple(sorted(rng.sample(sorted(topics), rng.randint(1, len(topics)))))
    members = []
    for i in range(rng.randint(1, 8)):
        mixed = assignor == "range" and rng.random() < 0.5
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
    current = {tp: m for m, tps in targets.items() for tp in tps}
    return LiveGroup("g", "consumer", assignor, members, current, topics, targets, "STABLE", ids)


def line(group: LiveGroup) -> str:
    ids = group.topic_ids
    specs = [
        f"{m.member_id};{m.instance_id or '-'};{','.join(ids[t] for t in m.topics)};"
        + ",".join(f"{ids[t]}@{p}" for t, p in group.targets[m.member_id])
        for m in group.members
    ]
    subscribed = {t for m in group.members for t in m.topics}
    counts = ",".join(f"{ids[t]}:{n}" for t, n in group.partitions.items() if t in subscribed)
    return "\t".join([group.assignor, counts, "|".join(specs)])


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
        name = {v: k for k, v in group.topic_ids.items()}
        java = {}
        for entry in answer.split("|"):
            member, _, tps = entry.partition("=")
            for tp in filter(None, tps.split(",")):
                topic_id, p = tp.split("@")
                java[(name[topic_id], int(p))] = member
        plan = plan_live_group(group)
        mine = {tp: owner for tp, owner in plan.proposed.items() if owner is not None}
        assert mine == java, line(group)
