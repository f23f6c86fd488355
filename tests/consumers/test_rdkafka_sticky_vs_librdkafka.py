"""Proof (issue 52): ktool's model of librdkafka's cooperative-sticky assignor (consumers/rdkafka_sticky.py)
predicts what real librdkafka consumers end up with, offline: confluent-kafka consumers in a child process
on librdkafka's own mock cluster (tests/support/rdkafka_mock_group.py), the leader running the bundled
librdkafka's assignor.

Seeded random memberships: 3 to 8 members join with unequal subscriptions (or, one seed in three, all
alike: librdkafka's other path) to 1 to 4 topics of 1 to 12 partitions, then members leave and join. Each
settled step is predicted from the step before (every member owning what it held, in one generation; a
newcomer owning nothing, last in the coordinator's order) and must equal what the consumers hold. The mock
cluster cannot add partitions to a topic: growth is proved on real brokers
(tests/modern/test_rebalance_plan_modern.py). CI runs 2 seeds; the exhaustive tier 20.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
from pathlib import Path

import pytest

from kafka_tools.consumers.classic_member import ClassicMember
from kafka_tools.consumers.rdkafka_sticky import cooperative_sticky_assign

pytest.importorskip("confluent_kafka")

ROOT = Path(__file__).resolve().parents[2]


def scenario(seed: int) -> dict:
    rng = random.Random(f"rdkafka-cooperative-sticky-{seed}")
    names = rng.sample(string.ascii_lowercase, rng.randint(1, 4))  # created in an order not by name
    topics = {f"{n}-{seed}": rng.randint(1, 12) for n in names}
    alike = seed % 3 == 0

    def subscription() -> list[str]:
        return sorted(topics) if alike else rng.sample(sorted(topics), rng.randint(1, len(topics)))

    size = rng.randint(3, 8)
    steps: list[list] = [["join", subscription()] for _ in range(size)]
    for _ in range(rng.randint(3, 5)):
        if size > 1 and rng.random() < 0.55:
            steps.append(["leave", rng.randrange(size)])
            size -= 1
        else:
            steps.append(["join", subscription()])
            size += 1
    return {"topics": topics, "steps": steps}


def observe(plan: dict) -> list[dict]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.rdkafka_mock_group"],
        input=json.dumps(plan), capture_output=True, text=True, cwd=ROOT, timeout=900,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def members_before(
    previous: list[dict], step: list, after: list[dict], generation: int
) -> list[ClassicMember]:
    """What the leader reads at the step's rebalance: who stays, owning what it held, one generation."""
    staying = [m for i, m in enumerate(previous) if not (step[0] == "leave" and i == step[1])]
    members = [
        ClassicMember(
            m["id"], tuple(m["topics"]), owned=[tuple(tp) for tp in m["owned"]], generation=generation
        )
        for m in staying
    ]
    if step[0] == "join":
        members.append(ClassicMember(after[-1]["id"], tuple(after[-1]["topics"])))
    return members


def compare(seed: int) -> tuple[int, list[str]]:
    plan = scenario(seed)
    states = observe(plan)
    assert len(states) == len(plan["steps"])
    previous: list[dict] = []
    mismatches = []
    for generation, state in enumerate(states):
        members = members_before(previous, state["step"], state["members"], generation)
        predicted = cooperative_sticky_assign(members, plan["topics"]).assignment
        held = {m["id"]: sorted(tuple(tp) for tp in m["owned"]) for m in state["members"]}
        if {m: sorted(tps) for m, tps in predicted.items()} != held:
            mismatches.append(f"seed {seed} step {generation} {state['step']}: {predicted} != {held}")
        previous = state["members"]
    return len(states), mismatches


@pytest.mark.parametrize("seed", [0, 1])
def test_the_model_predicts_every_settled_step_of_librdkafka_consumers(seed):
    steps, mismatches = compare(seed)
    assert not mismatches, "\n".join(mismatches)
    assert steps >= 6


@pytest.mark.exhaustive
def test_the_model_predicts_20_seeded_memberships_of_librdkafka_consumers():
    results = [compare(seed) for seed in range(2, 22)]
    mismatches = [line for _, lines in results for line in lines]
    print(f"{sum(n for n, _ in results)} settled steps compared over 20 memberships")
    assert not mismatches, "\n".join(mismatches)


def test_librdkafka_consumers_refuse_the_eager_sticky_assignor():
    """Why the plan refuses librdkafka's `sticky`: the client registers none."""
    from confluent_kafka import Consumer, KafkaException

    with pytest.raises(KafkaException, match="Unsupported partition.assignment.strategy: sticky"):
        Consumer(
            {"group.id": "g", "partition.assignment.strategy": "sticky", "bootstrap.servers": "127.0.0.1:1"}
        )
