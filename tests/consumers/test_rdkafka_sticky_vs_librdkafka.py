"""Proof (issue 52): ktool's model of librdkafka's cooperative-sticky assignor (consumers/rdkafka_sticky.py)
predicts what real librdkafka consumers end up with, offline: confluent-kafka consumers in a child process
on librdkafka's own mock cluster (tests/support/rdkafka_mock_group.py), the leader running the bundled
librdkafka's assignor.

Seeded random memberships: 3 to 8 members join with unequal subscriptions (or, one seed in three, all
alike: librdkafka's other path) to 1 to 4 topics of 1 to 12 partitions, then members leave and join. Each
settled step is predicted from the step before (every member owning what it held, in one generation; a
newcomer owning nothing, last in the coordinator's order) and must equal what the consumers hold; where
the leader aborts (an assertion in its partition movements: the child dies), the model must say it does,
in that step. A step where the model declines (the leader would read memory it freed) is counted apart, as
is one where a rebalance, by the leader's own log, read other members or owned counts than the model's
(a member that rejoined after the mock's wait keeps its older metadata); each rebalance's assignor output
in the leader's log must equal the model's too.
The mock cluster cannot add partitions to a topic: growth is proved on real brokers
(tests/modern/test_rebalance_plan_modern.py). CI runs 2 seeds side by side; the exhaustive tier 20, four
at a time.
"""

from __future__ import annotations

import json
import random
import re
import string
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from kafka_tools.consumers.assignors import AssignmentError
from kafka_tools.consumers.classic_member import ClassicMember
from kafka_tools.consumers.rdkafka_movements import LeaderFault, UndefinedAssignment
from kafka_tools.consumers.rdkafka_sticky import cooperative_sticky_assign, rebalances

pytest.importorskip("confluent_kafka")
pytestmark = pytest.mark.slow  # a child process of consumers per membership, a minute of rebalances each

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


def observe(plan: dict) -> tuple[list[dict], str]:
    """The settled steps, and the child's error output when its leader aborted (else ""); the step it
    aborted in names the newcomer that joined in it."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.rdkafka_mock_group"],
        input=json.dumps(plan), capture_output=True, text=True, cwd=ROOT, timeout=900,
    )  # fmt: skip
    states = [json.loads(line) for line in done.stdout.splitlines()]
    for state, log in zip(states, done.stderr.split("STEP ")[1:], strict=False):
        state["rounds"] = leader_rounds(log)
    if done.returncode == 0:
        return states, ""
    assert "rdkafka_sticky_assignor.c" in done.stderr or done.returncode < 0, done.stderr[-2000:]
    step = plan["steps"][len(states)]
    if step[0] == "join":  # the newcomer's id, from the leader's log of its last rebalance's members
        last = done.stderr.rsplit("assignor for", 1)[-1]
        known = {m["id"] for m in (states[-1]["members"] if states else [])}
        ids = [i for i in re.findall(r'Member "([^"]+)"(?: \(me\))? with', last) if i not in known]
        assert len(ids) == 1, last[-2000:]
        states.append({"step": step, "newcomer": ids[0]})
    return states, done.stderr.strip().splitlines()[-1]


def leader_rounds(log: str) -> list[dict]:
    """Each rebalance the leader ran in a step, from its assignor log: what it read (each member in
    order, with how many partitions it said it owned) and what its assignor returned."""
    rounds = []
    for section in log.split("running cooperative-sticky assignor for")[1:]:
        read = [[m, int(n)] for m, n in re.findall(r'Member "([^"]+)"(?: \(me\))? with (\d+) owned', section)]
        assigned: dict[str, list[list]] = {}
        member = None
        for line in section.splitlines():
            found = re.search(r'Member "([^"]+)"(?: \(me\))? assigned', line)
            if found:
                member = assigned.setdefault(found.group(1), [])
            elif member is not None and (tp := re.search(r"\]:\s+(\S+) \[(\d+)\]\s*$", line)):
                member.append([tp.group(1), int(tp.group(2))])
        rounds.append({"read": read, "assigned": {m: sorted(tps) for m, tps in assigned.items()}})
    return rounds


def members_before(
    previous: list[dict], step: list, after: list[dict] | None, generation: int
) -> list[ClassicMember]:
    """What the leader reads at the step's rebalance: who stays, owning what it held, one generation; a
    newcomer (its id known once it joined) owns nothing."""
    staying = [m for i, m in enumerate(previous) if not (step[0] == "leave" and i == step[1])]
    members = [
        ClassicMember(
            m["id"], tuple(m["topics"]), owned=[tuple(tp) for tp in m["owned"]], generation=generation
        )
        for m in staying
    ]
    if step[0] == "join":
        if not after:
            raise AssertionError(f"the newcomer of {step} has no member id: nothing to predict with")
        members.append(ClassicMember(after[-1]["id"], tuple(sorted(step[1]))))
    return members


@dataclass
class Verdict:
    matched: int = 0
    aborted: int = 0  # the leader aborted where the model says it does
    undefined: int = 0  # the model declines: the leader reads freed memory there
    late: int = 0  # a rebalance read a member's older metadata (it rejoined late): the step not compared
    mismatches: list[str] = field(default_factory=list)


def judge(plan: dict, states: list[dict], fault: str, seed: int) -> Verdict:
    """Each settled step against the model's prediction from the step before; the step the leader
    aborted in against the model's fault."""
    verdict = Verdict()
    previous: list[dict] = []
    settled = [s for s in states if "members" in s]
    for generation, step in enumerate(plan["steps"][: len(settled) + (1 if fault else 0)]):
        state = settled[generation] if generation < len(settled) else None
        newcomer = [{"id": s["newcomer"]} for s in states[generation:] if "newcomer" in s]
        members = members_before(previous, step, state["members"] if state else newcomer, generation)
        if state and not rounds_agree(members, plan["topics"], state.get("rounds", []), verdict, seed, step):
            previous = state["members"]
            continue
        try:
            predicted = cooperative_sticky_assign(members, plan["topics"]).assignment
        except UndefinedAssignment:
            verdict.undefined += 1
        except LeaderFault as exc:
            if state is None:
                verdict.aborted += 1
            else:
                verdict.mismatches.append(f"seed {seed} step {generation} {step}: {exc}, yet it settled")
        else:
            if state is None:
                verdict.mismatches.append(f"seed {seed} step {generation} {step}: predicted, yet {fault}")
                continue
            held = {m["id"]: sorted(tuple(tp) for tp in m["owned"]) for m in state["members"]}
            if {m: sorted(tps) for m, tps in predicted.items()} == held:
                verdict.matched += 1
            else:
                verdict.mismatches.append(f"seed {seed} step {generation} {step}: {predicted} != {held}")
        previous = state["members"] if state else previous
    return verdict


def rounds_agree(members, topics, logged: list[dict], verdict: Verdict, seed: int, step: list) -> bool:
    """Each rebalance the leader logged against the model's: the same inputs (else a member rejoined
    late: counted, not compared), then the same assignor output (else a mismatch). False: the step's
    outcome is not to be compared."""
    try:
        modelled = list(rebalances(members, topics))
    except AssignmentError:
        return True  # the step's own comparison judges a fault
    for number, ((read, target, _, _), seen) in enumerate(zip(modelled, logged, strict=False), 1):
        if seen["read"] != [[m.member_id, len(m.owned)] for m in read]:
            verdict.late += 1
            return False
        if {m: sorted([t, p] for t, p in tps) for m, tps in target.items()} != seen["assigned"]:
            verdict.mismatches.append(
                f"seed {seed} {step} rebalance {number}: {target} != {seen['assigned']}"
            )
            return False
    return True


def compare(seed: int) -> Verdict:
    plan = scenario(seed)
    return judge(plan, *observe(plan), seed)


CI_SEEDS = (0, 1)


@pytest.fixture(scope="module")
def ci_verdicts():
    """CI's seeds observed at once: each is one to two minutes of waiting on the mock's rebalances and
    a few seconds of CPU, so side by side they cost the lane the longest one's wall, not their sum."""
    pool = ThreadPoolExecutor(len(CI_SEEDS))
    futures = {seed: pool.submit(compare, seed) for seed in CI_SEEDS}
    yield futures
    pool.shutdown(cancel_futures=True)


@pytest.mark.parametrize("seed", CI_SEEDS)
def test_the_model_predicts_every_settled_step_of_librdkafka_consumers(ci_verdicts, seed):
    verdict = ci_verdicts[seed].result()
    assert not verdict.mismatches, "\n".join(verdict.mismatches)
    assert verdict.matched >= 6 and not verdict.undefined


@pytest.mark.exhaustive
@pytest.mark.timeout(2400)
def test_the_model_predicts_20_seeded_memberships_of_librdkafka_consumers():
    # 4 groups at once: each waits on its mock's rebalances, a minute or two a membership, little CPU
    with ThreadPoolExecutor(4) as pool:
        verdicts = list(pool.map(compare, range(2, 22)))
    mismatches = [line for v in verdicts for line in v.mismatches]
    print(
        f"20 memberships: {sum(v.matched for v in verdicts)} settled steps matched, "
        f"{sum(v.aborted for v in verdicts)} aborted leaders predicted, "
        f"{sum(v.undefined for v in verdicts)} steps declined (freed memory read), "
        f"{sum(v.late for v in verdicts)} steps not compared (a member rejoined late: the leader read older "
        "metadata than the step's)"
    )
    assert not mismatches, "\n".join(mismatches)
