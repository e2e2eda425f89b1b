"""The simulation core: conservation, determinism, common random numbers, workflows and staffing."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import csr_marl
from csr_marl.analysis import mean_ci
from csr_marl.config import load_scenario
from csr_marl.policies import HeuristicPolicy, make_policy
from csr_marl.sim import ContactCenter, IllegalActionError, Phase
from csr_marl.sim.arrivals import arrival_times


def drive(center: ContactCenter, policy, check_every_step: bool = True) -> None:
    while (decision := center.next_decision()) is not None:
        if check_every_step:
            center.check_conservation()
        center.decide(policy(decision))


@pytest.mark.parametrize("name", ["standard_day", "surge", "night_shift", "mmc", "two_tier"])
@pytest.mark.parametrize("policy", ["random", "heuristic", "escalate_all"])
def test_no_ticket_is_lost(name: str, policy: str) -> None:
    scn = load_scenario(name, overrides={"horizon_minutes": 180, "warmup_minutes": 0})
    center = ContactCenter(scn, seed=7)
    drive(center, make_policy(policy, scn, center.streams["policy"]))
    center.check_conservation()
    f = center.flow
    assert f["arrived"] > 0
    assert f["arrived"] == f["resolved"] + f["abandoned"] + f["closed_unresolved"] + center.in_system()
    k = center.result().kpis
    assert k["offered"] >= k["answered"] >= k["resolved"] - k["reopened"] * 0
    assert 0 <= k["abandonment_rate"] <= 1


def test_same_seed_same_result_and_other_seed_differs(standard_day) -> None:
    a = csr_marl.simulate(standard_day, policy="random", seed=11, log=True)
    b = csr_marl.simulate(standard_day, policy="random", seed=11, log=True)
    c = csr_marl.simulate(standard_day, policy="random", seed=12)
    assert a.kpis == b.kpis or all(
        (math.isnan(x) and math.isnan(b.kpis[k])) or x == b.kpis[k] for k, x in a.kpis.items()
    )
    assert a.log == b.log and a.reward_components == b.reward_components
    assert a.flow != c.flow


def test_common_random_numbers_across_staffing(standard_day) -> None:
    """Two staffing variants with one seed see the same customers (arrival times, texts, tiers)."""
    few = csr_marl.simulate(standard_day, seed=3, overrides={"staffing.resolver": 7}, log=True)
    many = csr_marl.simulate(standard_day, seed=3, overrides={"staffing.resolver": 14}, log=True)
    first = lambda log: sorted((r["ticket_id"], r["arrival"], r["tier"], r["template"], r["priority"]) for r in log if r["contact"] == 0)  # noqa: E731
    assert first(few.log) == first(many.log)
    assert few.kpis["asa_minutes"] > many.kpis["asa_minutes"]  # the headline: the resolver queue
    assert few.kpis["service_level"] < many.kpis["service_level"]


def test_constant_and_profile_arrival_rates() -> None:
    scn = load_scenario("standard_day")
    counts = {0: [], 1: [], 2: []}  # profile periods [0,60) 50/h, [60,180) 85/h, [180,300) 105/h
    for seed in range(30):
        times = np.array(list(arrival_times(scn.arrivals, 480, np.random.default_rng(seed))))
        counts[0].append(np.sum(times < 60))
        counts[1].append(np.sum((times >= 60) & (times < 180)))
        counts[2].append(np.sum((times >= 180) & (times < 300)))
    for period, expected in ((0, 50.0), (1, 170.0), (2, 210.0)):
        mean, low, high = mean_ci(counts[period], 0.99)
        assert low <= expected <= high, (period, mean, low, high)


def test_surge_multiplies_the_rate() -> None:
    scn = load_scenario("surge")
    inside, before = [], []
    for seed in range(30):
        times = np.array(list(arrival_times(scn.arrivals, 480, np.random.default_rng(seed))))
        before.append(np.sum((times >= 60) & (times < 120)))  # 85/h
        inside.append(np.sum((times >= 120) & (times < 180)))  # 85/h x 2.5
    mean_in, low, high = mean_ci(inside, 0.99)
    assert low <= 85 * 2.5 <= high
    assert mean_in > 2 * np.mean(before)


def test_shift_changes_headcount_and_staff_finish_their_ticket() -> None:
    scn = load_scenario("night_shift")
    center = ContactCenter(scn, seed=1, log=True)
    policy = HeuristicPolicy(scn)
    busy_at_change = None
    while (d := center.next_decision()) is not None:
        if busy_at_change is None and center.now >= 180:
            busy_at_change = [s.name for s in center.staff if not s.on_duty]
        center.decide(policy(d))
    assert busy_at_change == ["resolver_2"]
    # resolver_2 is off after minute 180; it started nothing after that.
    agents = {s.name: s for s in center.staff}
    assert not agents["resolver_2"].on_duty and agents["resolver_0"].on_duty
    k = center.result().kpis
    available = 3 * 180 + 2 * 300
    assert center.kpis.available["resolver"] == pytest.approx(available)
    assert 0 < k["occupancy_resolver"] < 1


def test_off_shift_staff_finish_current_ticket() -> None:
    # One resolver leaves at minute 10 while working: the ticket still completes.
    scn = load_scenario("mmc", overrides={
        "staffing.resolver": 1, "staffing.shifts": [{"at_minute": 10, "resolver": 0}],
        "handle_times.tools.respond_user": {"dist": "deterministic", "mean_minutes": 15}, "warmup_minutes": 0,
    })
    res = csr_marl.simulate(scn, seed=0, log=True)
    first = res.log[0]
    assert first["outcome"] == "resolved" and first["end"] > 10
    assert all(r["answered_at"] is None or r["answered_at"] < 10 for r in res.log)


def test_zero_triage_uses_the_customers_own_labels_and_no_desk_masks_escalation() -> None:
    scn = load_scenario("night_shift")
    center = ContactCenter(scn, seed=2, log=True)
    seen_work = False
    while (d := center.next_decision()) is not None:
        assert d.role == "resolver"
        if d.phase is Phase.WORK:
            seen_work = True
            assert d.tool_action("escalate_issue") not in d.legal
            assert d.mask()[d.tool_action("escalate_issue")] == 0
        center.decide(d.tool_action("respond_user") if d.phase is Phase.WORK else d.legal[0])
    assert seen_work
    for record in center.result().log:
        assert record["assigned_category"] == record["declared_category"]


def test_premature_response_closes_unresolved_and_the_customer_returns() -> None:
    scn = load_scenario("night_shift", overrides={"customers.reopen": {"probability": 1.0, "delay": {"dist": "deterministic", "mean_minutes": 5}, "max_returns": 1}})
    center = ContactCenter(scn, seed=4, log=True)
    while (d := center.next_decision()) is not None:
        center.decide(d.tool_action("respond_user") if d.phase is Phase.WORK else d.legal[0])
    res = center.result()
    unresolved = [r for r in res.log if r["outcome"] == "closed_unresolved" and r["contact"] == 0]
    assert unresolved, "tickets needing steps must not be resolved by an immediate response"
    returned = {r["ticket_id"] for r in res.log if r["contact"] == 1}
    assert {r["ticket_id"] for r in unresolved if r["end"] + 5 < 480} <= returned
    assert res.kpis["reopened"] > 0 and res.kpis["first_contact_resolution"] < 1


def test_tool_workflow_rewards_and_facts() -> None:
    """Facts stay hidden until their tool runs; needed steps pay, wasted and repeated ones cost."""
    from csr_marl.config.domain import FACT_REVEALED_BY

    scn = load_scenario("standard_day", overrides={"staffing.triage": 0, "staffing.escalation": 0})
    center = ContactCenter(scn, seed=5, track_rewards=True)
    heuristic = HeuristicPolicy(scn)
    target, agent, fact, script, observed = None, None, "", [], []
    while (d := center.next_decision()) is not None:
        steps = [(a, v) for c, a, v in center.rewards.drain() if c == "step"]
        observed.extend(v for a, v in steps if a == agent)
        if d.phase is Phase.WORK and target is None and d.ticket.facts:
            target, agent = d.ticket, d.agent
            fact = sorted(target.facts)[0]
            tool = FACT_REVEALED_BY[fact]
            wasted = next(t for t in ("reset_account", "update_shipping", "troubleshoot") if t not in target.requirement.steps)
            script = [tool, tool, wasted]
            assert fact not in target.revealed
        if d.ticket is target and d.phase is Phase.WORK and script:
            if len(script) == 2:
                assert target.revealed[fact] == target.facts[fact]
            center.decide(d.tool_action(script.pop(0)))
            continue
        center.decide(heuristic(d))
    # needed (+0.2), then a repeat (-0.1), then a tool outside the workflow (-0.1)
    assert observed[:3] == [pytest.approx(0.2), pytest.approx(-0.1), pytest.approx(-0.1)]


def test_illegal_action_raises_with_a_clear_message() -> None:
    center = ContactCenter(load_scenario("standard_day"), seed=0)
    d = center.next_decision()
    assert d is not None
    with pytest.raises(IllegalActionError, match=r"triage_0 \(triage\): action 999 is not legal now"):
        center.decide(999)
    center.decide(d.legal[0])  # still pending after the refusal


def test_the_core_refuses_an_illegal_action_whatever_the_penalty() -> None:
    # The penalty and the fallback belong to the environment; the core never guesses.
    scn = load_scenario("standard_day", overrides={"rewards.illegal_action": -1.0})
    center = ContactCenter(scn, seed=0, track_rewards=True)
    d = center.next_decision()
    with pytest.raises(IllegalActionError):
        center.decide(999)
    assert center.pending is d
    assert not any(entry[0] == "illegal_action" for entry in center.rewards.drain())

def test_max_tickets_ends_the_episode_early() -> None:
    scn = load_scenario("mmc", overrides={"max_tickets": 25, "warmup_minutes": 0})
    res = csr_marl.simulate(scn, seed=0)
    assert res.flow["arrived"] == 25 and res.flow["resolved"] == 25
    assert res.end_minute < scn.horizon_minutes


def test_ticket_log_streams_to_csv_and_jsonl(tmp_path) -> None:
    scn = load_scenario("mmc", overrides={"horizon_minutes": 60, "warmup_minutes": 0})
    csv_path, jsonl_path = tmp_path / "log.csv", tmp_path / "log.jsonl"
    res = csr_marl.simulate(scn, seed=0, log=csv_path)
    csr_marl.simulate(scn, seed=0, log=jsonl_path)
    lines = csv_path.read_text().splitlines()
    assert lines[0].startswith("ticket_id,contact,arrival")
    records = [json.loads(line) for line in jsonl_path.read_text().splitlines()]
    assert len(lines) - 1 == len(records) == res.flow["arrived"]
    assert res.log is None
    with pytest.raises(ValueError, match="use a .csv or .jsonl path"):
        csr_marl.simulate(scn, seed=0, log=tmp_path / "log.txt")


def test_kpi_memory_does_not_grow_with_tickets() -> None:
    short = ContactCenter(load_scenario("mmc", overrides={"horizon_minutes": 200}), seed=0)
    drive(short, make_policy("heuristic", short.scenario, short.streams["policy"]), False)
    long = ContactCenter(load_scenario("mmc", overrides={"horizon_minutes": 2000}), seed=0)
    drive(long, make_policy("heuristic", long.scenario, long.streams["policy"]), False)
    size = lambda c: sum(len(v) for v in c.kpis.counts.values()) + len(c.kpis.wait_hist)  # noqa: E731
    assert size(short) == size(long)
    assert long.flow["arrived"] > 9 * short.flow["arrived"]


def test_mis_escalation_is_returned_to_the_resolver_queue() -> None:
    """A resolver escalates a ticket that needs no specialist; the desk returns it; both are scored."""
    scn = load_scenario("standard_day", overrides={"staffing.triage": 0})
    center = ContactCenter(scn, seed=8, track_rewards=True, log=True)
    heuristic = HeuristicPolicy(scn)
    target = None
    routing: list[tuple[str, float]] = []
    while (d := center.next_decision()) is not None:
        routing += [(a, v) for c, a, v in center.rewards.drain() if c == "routing" and d.ticket is not None]
        if d.phase is Phase.WORK and d.role == "resolver" and target is None and not d.ticket.requirement.needs_escalation:
            target = d.ticket
            center.decide(d.tool_action("escalate_issue"))
            continue
        if d.phase is Phase.WORK and d.role == "escalation" and d.ticket is target:
            center.decide(d.tool_action("return_to_resolver"))
            continue
        center.decide(heuristic(d))
    assert target is not None and target.escalated and target.stage == "resolver"
    values = sorted(v for _, v in routing)
    assert pytest.approx(-0.2) in values and pytest.approx(0.2) in values
    record = next(r for r in center.result().log if r["ticket_id"] == target.id and r["contact"] == 0)
    assert record["escalated"] and record["outcome"] in ("resolved", "closed_unresolved", "open")


def test_customers_abandon_from_every_queue() -> None:
    scn = load_scenario("standard_day", overrides={
        "staffing": {"triage": 1, "resolver": 2, "escalation": 1},
        "customers.patience": {"dist": "exponential", "mean_minutes": 5},
    })
    center = ContactCenter(scn, seed=0)
    drive(center, make_policy("escalate_all", scn, center.streams["policy"]), False)
    kpis = center.result().kpis
    assert center.flow["abandoned"] > 0
    for queue in ("triage", "resolver", "escalation"):
        assert 0 < kpis[f"abandonment_rate_{queue}"] <= 1, f"nobody abandoned the {queue} queue"


def test_results_do_not_depend_on_the_process_hash_seed() -> None:
    """Worker processes get different PYTHONHASHSEEDs; tickets and results must not notice."""
    import os
    import subprocess
    import sys

    code = (
        "import hashlib, csr_marl\n"
        "from csr_marl.sim import ContactCenter\n"
        "from csr_marl.policies import make_policy\n"
        "scn = csr_marl.load_scenario('standard_day', overrides={'horizon_minutes': 60})\n"
        "c = ContactCenter(scn, seed=3)\n"
        "p = make_policy('heuristic', scn, c.streams['policy'])\n"
        "texts = []\n"
        "while (d := c.next_decision()) is not None:\n"
        "    if d.ticket is not None: texts.append(d.ticket.text)\n"
        "    c.decide(p(d))\n"
        "print(hashlib.sha256(repr((texts, c.result().kpis)).encode()).hexdigest())\n"
    )
    digests = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2", "3")
    }
    assert len(digests) == 1
