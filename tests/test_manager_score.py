"""The manager's score, and a team reward that follows it: staff time, priority x tier, send-backs."""

from __future__ import annotations

import math

import pytest
from extras import need

import csr_marl
from csr_marl.analysis.manager_score import manager_score, score_result
from csr_marl.config.scenario import Manager
from csr_marl.sim import ContactCenter
from csr_marl.sim.decisions import Phase, decode_triage, encode_triage
from csr_marl.sim.rewards import PRICED, SHAPING


@pytest.mark.parametrize("policy", ["heuristic", "route_all_to_desk"])
def test_a_days_priced_reward_is_the_scaled_managers_score(policy: str) -> None:
    """Over a whole standard_day the priced components sum to score_scale x the score; the rest of the
    team return is exactly the shaping components."""
    scenario = csr_marl.load_scenario("standard_day")
    result = csr_marl.simulate(scenario, policy=policy, seed=3)
    score = score_result(result, scenario.manager)
    scale = scenario.rewards.score_scale
    priced = sum(result.reward_components[c] for c in PRICED)
    shaping = sum(result.reward_components[c] for c in SHAPING)
    assert priced == pytest.approx(scale * score.total, rel=1e-9, abs=1e-6)
    assert result.team_return - scale * score.total == pytest.approx(shaping, abs=1e-6)
    assert score.lines["staff_time"] < 0 and score.lines["resolutions"] > 0
    assert score.idle_staff <= 0 and score.net <= score.total


def test_class_weights_price_an_urgent_enterprise_customer_above_a_low_basic_one() -> None:
    rates = Manager()
    row = {"offered": 1, "resolved": 0, "abandoned": 1, "sla_breached": 1, "queue_minutes": 60.0}
    urgent = manager_score(rates, {}, {"urgent/enterprise": row}).total
    low = manager_score(rates, {}, {"low/basic": row}).total
    assert urgent == pytest.approx(32 * low)  # (4 x 4) / (0.5 x 1)
    desk = manager_score(rates, {"handled_minutes_escalation": 60.0}, {}).lines["staff_time"]
    resolver = manager_score(rates, {"handled_minutes_resolver": 60.0}, {}).lines["staff_time"]
    assert desk == 2 * resolver == -64.0


def _first_ticket_to_the_desk(needs_desk: bool) -> tuple[ContactCenter, list]:
    """A one-ticket standard_day whose triage sends it to the desk, which sends it straight back."""
    for seed in range(40):
        center = ContactCenter(csr_marl.load_scenario("standard_day", {"max_tickets": 1, "customers.reopen.probability": 0.0}), seed, track_rewards=True)
        entries: list = []
        decision = center.next_decision()
        assert decision is not None and decision.phase is Phase.TRIAGE
        if decision.ticket.requirement.needs_escalation != needs_desk:
            continue
        category, priority, _ = decode_triage(decision.legal[0])
        while decision is not None:
            if decision.phase is Phase.TRIAGE:
                action = encode_triage(category, priority, "escalation")
            elif decision.role == "escalation" and decision.phase is Phase.WORK:
                action = decision.tool_action("return_to_resolver")
                if action not in decision.legal:
                    action = decision.tool_action("respond_user")
            elif decision.phase is Phase.WORK:
                action = decision.tool_action("respond_user")
            else:
                action = decision.legal[0]
            center.decide(action)
            entries += center.rewards.drain()
            decision = center.next_decision()
        entries += center.rewards.drain()
        return center, entries
    raise AssertionError("no seed gave such a first ticket")


def test_a_send_back_only_undoes_the_misroute_and_the_bounce_costs_desk_time() -> None:
    center, entries = _first_ticket_to_the_desk(needs_desk=False)
    routing = [(agent, value) for component, agent, value in entries if component == "routing"]
    triage = [v for a, v in routing if a.startswith("triage")]
    desk = [v for a, v in routing if a.startswith("escalation")]
    assert len(triage) == 1 and triage[0] < 0 and desk == [pytest.approx(-triage[0])]
    desk_time = sum(v for c, a, v in entries if c == "staff_time" and a and a.startswith("escalation"))
    assert desk_time < 0  # the desk's minutes on the bounce are paid for
    assert center.kpis.summary()["handled_minutes_escalation"] > 0


def test_sending_back_a_ticket_that_needs_the_desk_costs() -> None:
    _, entries = _first_ticket_to_the_desk(needs_desk=True)
    desk = [v for c, a, v in entries if c == "routing" and a.startswith("escalation")]
    assert desk and all(v < 0 for v in desk)


def test_simulate_and_sweep_report_the_managers_score() -> None:
    from csr_marl.whatif.records import metric_names, replication_record

    scenario = csr_marl.load_scenario("standard_day", {"horizon_minutes": 60})
    result = csr_marl.simulate(scenario, policy="heuristic", seed=0)
    record = replication_record(result, scenario.manager)
    assert {"manager_score", "manager_net"} <= set(metric_names())
    assert record["manager_score"] == pytest.approx(score_result(result, scenario.manager).total)
    assert math.isnan(replication_record(result)["manager_score"])  # no rates given: not made up


def test_manager_rates_refuse_unknown_or_missing_keys() -> None:
    with pytest.raises(ValueError, match="manager.tier_weight"):
        csr_marl.load_scenario("standard_day", {"manager.tier_weight": {"basic": 1.0}})
    with pytest.raises(ValueError, match="staff_per_hour"):
        csr_marl.load_scenario("standard_day", {"manager.staff_per_hour.triage": -1.0})


def test_the_single_role_tasks_keep_the_seeds_flat_scale() -> None:
    """tasks/* price nothing by the manager: a resolution pays +0.5 x the tier weight, staff time is free."""
    scenario = csr_marl.load_scenario("tasks/resolve")
    assert scenario.rewards.pricing == "flat"
    result = csr_marl.simulate(scenario, policy="heuristic", seed=1)
    weight = scenario.rewards.tier_weight
    resolved = sum(row["resolved"] * 0.5 * weight[key.split("/")[1]] for key, row in result.by_class.items())
    assert resolved > 0 and result.reward_components["resolution"] == pytest.approx(resolved)
    assert result.reward_components["staff_time"] == 0.0


def test_splitting_team_costs_for_training_divides_the_managers_team_wide_rates() -> None:
    need("tianshou")
    from csr_marl.train import TrainConfig

    config = TrainConfig(scenario="standard_day", reward_mode="individual", split_team_costs=True, steps=1000)
    trained_on, judged_on = config.training_scenario(), config.evaluation_scenario()
    assert trained_on.manager.abandonment == pytest.approx(judged_on.manager.abandonment / 14)
    assert trained_on.manager.waiting_per_hour == pytest.approx(judged_on.manager.waiting_per_hour / 14)
